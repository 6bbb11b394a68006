"""Ring algorithms: the bandwidth-optimal chunked ring and the naive ring.

The chunked ring (Patarasuk & Yuan, "Bandwidth optimal all-reduce
algorithms for clusters of workstations", JPDC 2009; SEED_FACTS.md section
2) cuts the data into n chunks; n-1 reduce-scatter steps leave each rank
with one fully summed chunk, n-1 all-gather steps spread them. Each rank
sends 2(n-1)/n of the data.

The naive ring (SEED_FACTS.md section 3) passes the whole message around:
a reduction that starts and ends at the root (N transfers), then a
broadcast (N-1 transfers): t = N g / BW + (N-1) g / BW.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from commsim.algorithms.base import Algorithm, Params, Problem, route_figures
from commsim.algorithms.registry import register
from commsim.collectives import Collective
from commsim.errors import AlgorithmError
from commsim.schedule import RingPattern, Schedule, ScheduleBuilder, pattern_schedule

__all__ = ["PATTERN_SENDS", "NaiveRing", "Ring"]

PATTERN_SENDS = 1 << 20
"""A ring of at least this many sends (an all-reduce over more than 724 GPUs) is planned as a
:class:`~commsim.schedule.RingPattern` (a few arrays per ring position, not per send), which
the engine replays one step at a time when the steps are symmetric."""


class RingParams(Params):
    """The ring's order."""

    order: list[int] | None = Field(None, description="rank indices in ring order (default 0, 1, ..., n-1)")


class NaiveRingParams(RingParams):
    """Order and pipelining of the naive ring."""

    chunks: int = Field(1, ge=1, le=1024, description="pieces the message is cut into and pipelined")


def _order(problem: Problem, order: list[int] | None) -> list[str]:
    if order is None:
        return list(problem.ranks)
    if sorted(order) != list(range(problem.n)):
        raise AlgorithmError(f"ring order {order} must list every rank 0..{problem.n - 1} exactly once")
    return [problem.ranks[i] for i in order]


def _worst_hop(problem: Problem, ring: list[str]) -> tuple[float, float]:
    """(largest hop latency, smallest hop bandwidth) around the ring."""
    hops = [route_figures(problem.topology, a, b) for a, b in zip(ring, ring[1:] + ring[:1])]
    return max(h[0] for h in hops), min(h[1] for h in hops)


@register
class Ring(Algorithm):
    """Chunked ring: reduce-scatter then all-gather around one ring, n chunks.

    References
    ----------
    Patarasuk & Yuan, JPDC 69(2), 2009; SEED_FACTS.md section 2.
    """

    name = "ring"
    summary = "bandwidth-optimal chunked ring: n-1 reduce-scatter + n-1 all-gather steps"
    reference = "Patarasuk & Yuan 2009; SEED_FACTS.md section 2"
    collectives = frozenset({Collective.ALL_REDUCE, Collective.REDUCE_SCATTER, Collective.ALL_GATHER})
    Params = RingParams

    def _steps(self, collective: Collective, n: int) -> tuple[int, int]:
        """(first, last+1) global steps: 0..n-2 reduce-scatter, n-1..2n-3 all-gather."""
        if collective is Collective.REDUCE_SCATTER:
            return 0, n - 1
        if collective is Collective.ALL_GATHER:
            return n - 1, 2 * n - 2
        return 0, 2 * n - 2

    def plan(self, problem: Problem) -> Schedule:
        self.check(problem)
        assert isinstance(self.params, RingParams)
        ring = _order(problem, self.params.order)
        n = len(ring)
        builder = ScheduleBuilder(problem.collective, problem.nbytes, problem.ranks)
        position = np.array([builder.device_index(r) for r in ring], dtype=np.int64)
        # after reduce-scatter, ring position i holds chunk i+1 summed: it owns it
        owners = [int(position[(c - 1) % n]) for c in range(n)]
        chunks = np.array(builder.split(problem.nbytes, n, owners), dtype=np.int64)
        first, stop = self._steps(problem.collective, n)
        if n * (stop - first) >= PATTERN_SENDS:
            # a large ring: its steps, not one row per send (see RingPattern)
            nxt = position[(np.arange(n) + 1) % n]
            pattern = RingPattern(
                position, nxt, builder.route_indices(position, nxt), chunks, first, stop, n - 1
            )
            return pattern_schedule(builder, pattern)
        # all steps at once: one row per step, one column per ring position
        steps = np.arange(first, stop)
        step, i = steps.reshape(-1, 1), np.arange(n)
        # at step s position i sends chunk i - s (mod n), in both phases
        held = i - step
        np.remainder(held, n, out=held)
        # position i's send waits for position i-1's send of the step before
        deps = builder.n_ops + (step - first - 1) * n + (i - 1) % n
        deps[0] = -1
        builder.sends(
            np.tile(position, steps.size),
            np.tile(position[(i + 1) % n], steps.size),
            chunks[held].reshape(-1),
            reduce=np.repeat(steps < n - 1, n),
            deps=deps.reshape(-1, 1),
            step=np.repeat(steps, n),
        )
        del held, deps
        return builder.build()

    def analytic_time(self, problem: Problem) -> float | None:
        """steps x (alpha + (g/n) / beta) with the slowest hop's alpha and beta.

        Exact when every hop has the same latency and bandwidth and no two
        hops share a link; otherwise an estimate.
        """
        assert isinstance(self.params, RingParams)
        ring = _order(problem, self.params.order)
        first, stop = self._steps(problem.collective, problem.n)
        latency_s, bandwidth_Bps = _worst_hop(problem, ring)
        return (stop - first) * (latency_s + problem.nbytes / problem.n / bandwidth_Bps)


@register
class NaiveRing(Algorithm):
    """Reduce around the whole ring to the root, then broadcast around it.

    References
    ----------
    SEED_FACTS.md section 3: t = N g / BW_gpu + (N-1) g / BW_gpu.
    """

    name = "naive_ring"
    summary = "whole message reduced around the ring to the root, then broadcast around it"
    reference = "SEED_FACTS.md section 3 (the book's ring all-reduce cost)"
    collectives = frozenset({Collective.ALL_REDUCE})
    Params = NaiveRingParams

    def plan(self, problem: Problem) -> Schedule:
        self.check(problem)
        assert isinstance(self.params, NaiveRingParams)
        ring = _order(problem, self.params.order)
        ring = ring[problem.root :] + ring[: problem.root]
        n, pieces = len(ring), self.params.chunks
        builder = ScheduleBuilder(problem.collective, problem.nbytes, problem.ranks)
        hops = [(ring[h % n], ring[(h + 1) % n], h < n - 1) for h in range(n)]  # reduce chain
        hops += [(ring[h], ring[h + 1], False) for h in range(n - 1)]  # broadcast chain
        # the two chains are two pipelines: channel 0 reduces, channel 1 broadcasts
        last_on_hop: list[int | None] = [None] * len(hops)
        for chunk in builder.split(problem.nbytes, pieces):
            before: int | None = None
            for h, (src, dst, reduce) in enumerate(hops):
                deps = [d for d in (before, last_on_hop[h]) if d is not None]
                before = builder.send(src, dst, chunk, reduce=reduce, deps=deps, step=h, channel=int(h >= n))
                last_on_hop[h] = before
        return builder.build()

    def analytic_time(self, problem: Problem) -> float | None:
        """(2N - 1 + chunks - 1) x (alpha + (g/chunks) / beta), slowest hop; None for chunks > N.

        With more pieces than ranks, the reduce chain and the broadcast chain
        cross the same directed links at the same time and share them, so the
        pipelined closed form no longer holds (it is then a lower bound).
        """
        assert isinstance(self.params, NaiveRingParams)
        pieces = self.params.chunks
        if pieces > problem.n:
            return None
        ring = _order(problem, self.params.order)
        latency_s, bandwidth_Bps = _worst_hop(problem, ring)
        return (2 * problem.n - 1 + pieces - 1) * (latency_s + problem.nbytes / pieces / bandwidth_Bps)
