"""Direct algorithms: every piece goes straight from where it is to where it must be.

For all-reduce this is the two-shot scheme of SEED_FACTS.md section 4 (the
"tree" all-reduce on four fully connected GPUs): cut the data into n
chunks, send chunk j straight to rank j which sums it, then rank j sends the
sum straight to everyone. Every pair of ranks talks directly, so on a fully
connected machine or a non-blocking switch all links are busy in both
directions, and there are only two latency steps: the choice for small
messages. The other collectives are their one-step direct forms; scatter
is gather reversed (the root sends slice r of its buffer to rank r).
"""

from __future__ import annotations

import numpy as np

from commsim.algorithms.base import Algorithm, NoParams, Problem
from commsim.algorithms.common import phase_time
from commsim.algorithms.registry import register
from commsim.collectives import Collective
from commsim.errors import AlgorithmError
from commsim.schedule import Schedule, ScheduleBuilder

__all__ = ["MAX_PAIRWISE_RANKS", "Direct"]

MAX_PAIRWISE_RANKS = {Collective.ALL_REDUCE: 256, Collective.REDUCE_SCATTER: 256, Collective.ALL_GATHER: 256}
MAX_PAIRWISE_RANKS[Collective.ALL_TO_ALL] = 512  # its sends are made as arrays, 4x faster
"""The most ranks ``direct`` plans the collectives that send between every pair for: n(n-1)
sends a step. All-reduce on 256 GPUs (130,560 sends) takes about 20 s; 1,024 did not finish in
ten minutes. Refused at once, before any planning."""


def _pushes(
    builder: ScheduleBuilder,
    problem: Problem,
    reduce: bool,
    step: int,
    deps_of: dict[int, list[int]] | None = None,
) -> dict[int, list[int]]:
    """Every rank sends chunk j to rank j; returns the sends into each j."""
    ranks, sent = problem.ranks, {}
    for j, owner in enumerate(ranks):
        sent[j] = [
            builder.send(
                r, owner, j, reduce=reduce, step=step, kinds=problem.kinds, deps=(deps_of or {}).get(j, ())
            )
            for r in ranks
            if r != owner
        ]
    return sent


def _fan_out(
    builder: ScheduleBuilder, problem: Problem, step: int, deps_of: dict[int, list[int]] | None = None
) -> None:
    """Rank j sends its chunk j to everyone."""
    for j, owner in enumerate(problem.ranks):
        for r in problem.ranks:
            if r != owner:
                builder.send(owner, r, j, step=step, kinds=problem.kinds, deps=(deps_of or {}).get(j, ()))


def _scatter(builder: ScheduleBuilder, problem: Problem) -> None:
    """Gather reversed: slice r of the root's buffer (``nbytes / n``) goes straight to rank r.

    Chunk r is the root's slice for rank r (owner the root, target r); the
    root's own slice stays where it is.
    """
    ranks, root, piece = problem.ranks, problem.root, problem.nbytes / problem.n
    for r in range(problem.n):
        builder.chunk(piece, owner=root, target=r, offset=r * piece)
    for r in range(problem.n):
        if r != root:
            builder.send(ranks[root], ranks[r], r, kinds=problem.kinds)


@register
class Direct(Algorithm):
    """Straight sends between every pair: two steps for all-reduce, one for the others.

    References
    ----------
    SEED_FACTS.md section 4 (four fully connected GPUs, all six links busy
    in both directions); the "two-shot" all-reduce of NCCL/oneCCL.
    """

    name = "direct"
    summary = "pieces go straight to their destination: two-shot all-reduce, one-step others"
    reference = "SEED_FACTS.md section 4 (tree all-reduce on 4 fully connected GPUs)"
    collectives = frozenset(Collective) - {Collective.SEND_RECV}
    Params = NoParams

    def check(self, problem: Problem) -> None:
        """Also refuse every-pair collectives on more ranks than :data:`MAX_PAIRWISE_RANKS` allows."""
        super().check(problem)
        limit = MAX_PAIRWISE_RANKS.get(problem.collective)
        if limit is not None and problem.n > limit:
            raise AlgorithmError(
                f"algorithm 'direct' sends between every pair of ranks: {problem.collective} on "
                f"{problem.n} ranks ({problem.n * (problem.n - 1):,} sends a step) is above its limit "
                f"of {limit} ranks; use ring, tree or halving_doubling, or fewer ranks"
            )

    def plan(self, problem: Problem) -> Schedule:
        self.check(problem)
        coll, n, ranks = problem.collective, problem.n, problem.ranks
        builder = ScheduleBuilder(coll, problem.nbytes, ranks, root=problem.root)
        root = problem.root
        if coll in (Collective.ALL_REDUCE, Collective.REDUCE_SCATTER, Collective.ALL_GATHER):
            for j in range(n):
                builder.chunk(problem.nbytes / n, owner=j)
            if coll is Collective.ALL_GATHER:
                _fan_out(builder, problem, step=0)
            else:
                sent = _pushes(builder, problem, reduce=True, step=0)
                if coll is Collective.ALL_REDUCE:
                    _fan_out(builder, problem, step=1, deps_of=sent)
        elif coll is Collective.ALL_TO_ALL:
            for src in range(n):
                for dst in range(n):
                    builder.chunk(problem.nbytes / n, owner=src, target=dst)
            # chunk src * n + dst goes from rank src to rank dst (rank i is device i);
            # a rank's piece for itself stays where it is
            src_idx, dst_idx = np.divmod(np.arange(n * n, dtype=np.int64), n)
            moving = src_idx != dst_idx
            builder.sends(src_idx[moving], dst_idx[moving], np.flatnonzero(moving), kinds=problem.kinds)
        elif coll is Collective.SCATTER:
            _scatter(builder, problem)
        else:
            per_rank = coll is Collective.GATHER
            for j in range(n if per_rank else 1):
                builder.chunk(problem.nbytes / n if per_rank else problem.nbytes, owner=j if per_rank else -1)
            for r in range(n):
                if r == root:
                    continue
                if coll is Collective.BROADCAST:
                    builder.send(ranks[root], ranks[r], 0, kinds=problem.kinds)
                elif coll is Collective.REDUCE:
                    builder.send(ranks[r], ranks[root], 0, reduce=True, kinds=problem.kinds)
                else:
                    builder.send(ranks[r], ranks[root], r, kinds=problem.kinds)
        return builder.build()

    def analytic_time(self, problem: Problem) -> float | None:
        """Sum over its steps of (latency + busiest link's load / capacity)."""
        coll, ranks, n = problem.collective, problem.ranks, problem.n
        topo, kinds = problem.topology, problem.kinds
        piece = problem.nbytes / n
        pairs = [(a, b) for a in ranks for b in ranks if a != b]
        if coll in (
            Collective.ALL_REDUCE,
            Collective.REDUCE_SCATTER,
            Collective.ALL_GATHER,
            Collective.ALL_TO_ALL,
        ):
            steps = 2 if coll is Collective.ALL_REDUCE else 1
            return steps * phase_time(topo, ((a, b, piece) for a, b in pairs), kinds)
        root = ranks[problem.root]
        size = piece if coll in (Collective.GATHER, Collective.SCATTER) else problem.nbytes
        if coll in (Collective.BROADCAST, Collective.SCATTER):
            return phase_time(topo, ((root, r, size) for r in ranks if r != root), kinds)
        return phase_time(topo, ((r, root, size) for r in ranks if r != root), kinds)
