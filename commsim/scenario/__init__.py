"""Scenarios as checked data: what is validated where, and how errors are worded.

:mod:`.messages` words pydantic's errors for users; :mod:`.cases` checks a
scenario's cases (algorithm against collective, parameters against the
algorithm's own model, ranks and root against the machine) before anything
runs, each error at its line.
"""
