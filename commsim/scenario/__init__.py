"""Scenarios as checked data: one model of a case, and where its problems are reported.

:mod:`.case` holds :class:`~commsim.scenario.case.Case` (machine, ranks,
collective, size in whole bytes, algorithm with parameters checked by its
own ``Params``, root), the one model every way in builds; :mod:`.machine`
turns a topology reference plus overrides into the machine (one function
for flags, files and sweeps); :mod:`.point` checks a sweep point as a case
before its machine is built; :mod:`.cases` and :mod:`.flags` make a file's
and the flags' cases, each problem at its line or flag; :mod:`.messages`
words pydantic's errors for users.
"""
