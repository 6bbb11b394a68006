"""Recursive halving and doubling (Rabenseifner), for power-of-two rank counts.

Reduce-scatter by recursive halving: in step s each rank swaps half of the
data it still holds with the partner whose rank differs in one bit, and
sums what it receives (each step waits for the previous exchange, like
MPI_Sendrecv); after log2(n) steps each rank holds one fully summed
chunk. All-gather by recursive doubling reverses the steps. Only 2 log2(n)
latency steps instead of the ring's 2(n-1), with the same bandwidth term
(Thakur, Rabenseifner & Gropp, "Optimization of collective communication
operations in MPICH", IJHPCA 19(1), 2005).
"""

from __future__ import annotations

from commsim.algorithms.base import Algorithm, NoParams, NotApplicableError, Problem, route_figures
from commsim.algorithms.registry import register
from commsim.collectives import Collective
from commsim.schedule import Schedule, ScheduleBuilder

__all__ = ["HalvingDoubling"]


def _exchanged(sent: list[tuple[tuple[int, int], int]], bit: int, n: int) -> dict[int, list[int]]:
    """One op of each direction of each rank's exchange in one step: its sendrecv must finish first.

    The sends of one direction of an exchange carry equal chunks over one route and start together
    (after the same previous exchange), so they finish together: waiting for one of them is waiting
    for all. Listing every op instead made each send wait on n / 2^s ops, O(n^3) dependencies in all
    (11.5 million at 256 ranks, over a minute at 512)."""
    involved: dict[int, list[int]] = {r: [] for r in range(n)}
    last: dict[int, int] = {}  # receiver -> the last op sent to it this step
    for (receiver, _), op in sent:
        last[receiver] = op
    for receiver, op in last.items():
        involved[receiver].append(op)
        involved[receiver ^ bit].append(op)
    return involved


@register
class HalvingDoubling(Algorithm):
    """Recursive-halving reduce-scatter then recursive-doubling all-gather.

    References
    ----------
    Thakur, Rabenseifner & Gropp, IJHPCA 19(1), 2005.
    """

    name = "halving_doubling"
    summary = "recursive halving + doubling: 2 log2(n) steps, bandwidth-optimal (n a power of two)"
    reference = "Thakur, Rabenseifner & Gropp 2005 (MPICH)"
    collectives = frozenset({Collective.ALL_REDUCE, Collective.REDUCE_SCATTER, Collective.ALL_GATHER})
    Params = NoParams

    def check(self, problem: Problem) -> None:
        super().check(problem)
        if problem.n & (problem.n - 1):
            raise NotApplicableError(
                f"it needs a power-of-two number of ranks, got {problem.n}; use 'ring' or 'direct'",
                self.name,
            )

    def plan(self, problem: Problem) -> Schedule:
        self.check(problem)
        n, ranks, coll = problem.n, problem.ranks, problem.collective
        builder = ScheduleBuilder(coll, problem.nbytes, ranks)
        chunks = [builder.chunk(problem.nbytes / n, owner=j) for j in range(n)]
        writes: dict[tuple[int, int], list[int]] = {}  # (rank, chunk) -> every op that wrote it there
        bits = [n >> (s + 1) for s in range(n.bit_length() - 1)]
        previous: dict[int, list[int]] = {r: [] for r in range(n)}  # a step waits for the last exchange
        if coll in (Collective.ALL_REDUCE, Collective.REDUCE_SCATTER):
            held = {r: list(range(n)) for r in range(n)}
            for step, bit in enumerate(bits):
                sent = []
                for r in range(n):
                    partner = r ^ bit
                    # the chunks of one exchange move together: one channel each
                    for channel, c in enumerate(c for c in held[r] if (c & bit) != (r & bit)):
                        op = builder.send(
                            ranks[r],
                            ranks[partner],
                            chunks[c],
                            reduce=True,
                            deps=writes.get((r, c), []) + previous[r],
                            step=step,
                            kinds=problem.kinds,
                            channel=channel,
                        )
                        sent.append(((partner, c), op))
                    held[r] = [c for c in held[r] if (c & bit) == (r & bit)]
                previous = _exchanged(sent, bit, n)
                for key, op in sent:
                    writes.setdefault(key, []).append(op)
        if coll in (Collective.ALL_REDUCE, Collective.ALL_GATHER):
            have = {r: [r] for r in range(n)}
            for step, bit in enumerate(reversed(bits), start=len(bits)):
                sent = []
                for r in range(n):
                    partner = r ^ bit
                    for channel, c in enumerate(have[r]):
                        op = builder.send(
                            ranks[r],
                            ranks[partner],
                            chunks[c],
                            deps=writes.get((r, c), []) + previous[r],
                            step=step,
                            kinds=problem.kinds,
                            channel=channel,
                        )
                        sent.append(((partner, c), op))
                have = {r: sorted(have[r] + have[r ^ bit]) for r in range(n)}
                previous = _exchanged(sent, bit, n)
                for key, op in sent:
                    writes.setdefault(key, []).append(op)
        return builder.build()

    def analytic_time(self, problem: Problem) -> float | None:
        """Per phase: log2(n) alpha + g (n-1)/(n beta), slowest pair's alpha and beta.

        Exact when every partner pair has its own path at the same speed
        (a non-blocking switch or a fully connected machine).
        """
        self.check(problem)
        n, ranks = problem.n, problem.ranks
        steps = n.bit_length() - 1
        figures = [
            route_figures(problem.topology, ranks[r], ranks[r ^ (n >> (s + 1))], problem.kinds)
            for s in range(steps)
            for r in range(n)
        ]
        latency, bandwidth = max(f[0] for f in figures), min(f[1] for f in figures)
        phases = 2 if problem.collective is Collective.ALL_REDUCE else 1
        return phases * (steps * latency + problem.nbytes * (n - 1) / n / bandwidth)
