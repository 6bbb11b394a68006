"""A third-party algorithm package in miniature, for the loopback plugin test.

It is found only through an entry point in the ``commsim.algorithms`` group
(written by the test into a temporary ``.dist-info``), never imported by
commsim itself.
"""

from __future__ import annotations

from commsim.algorithms import Algorithm, Problem
from commsim.collectives import Collective
from commsim.schedule import Schedule, ScheduleBuilder


class DirectAllReduce(Algorithm):
    """Every rank owns chunk ``i``: all others add into it, then it copies it to all.

    On N fully connected GPUs each directed link carries g/N in each of the two
    phases: t = 2 (alpha + g / (N BW)).
    """

    name = "test_plugin_direct"
    summary = "one-shot reduce-scatter + all-gather over direct links (test plugin)"
    reference = "tests/plugin_pkg (loopback plugin of commsim's test suite)"
    collectives = frozenset({Collective.ALL_REDUCE})

    def plan(self, problem: Problem) -> Schedule:
        self.check(problem)
        builder = ScheduleBuilder(problem.collective, problem.nbytes, problem.ranks)
        chunks = builder.split(problem.nbytes, problem.n, owners=range(problem.n))
        # every push before every copy: a connection serves its sends in the order they are added
        pushes = {
            owner: [builder.send(r, owner, chunk, reduce=True) for r in problem.ranks if r != owner]
            for owner, chunk in zip(problem.ranks, chunks)
        }
        for owner, chunk in zip(problem.ranks, chunks):
            for rank in problem.ranks:
                if rank != owner:
                    builder.send(owner, rank, chunk, deps=pushes[owner], step=1)
        return builder.build()


class Unnamed(DirectAllReduce):
    """The same algorithm without a name of its own: it takes its entry point's name."""

    name = ""


NOT_AN_ALGORITHM = 42
"""An entry point to this is a broken plugin."""


class Impostor(DirectAllReduce):
    """A plugin that claims a built-in's name."""

    name = "ring"
