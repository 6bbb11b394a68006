"""Several rings at once, found from the topology's direct GPU links.

The textbook's DGX-1 sync (SEED_FACTS.md section 2) decomposes the NVLink
graph into edge-disjoint Hamiltonian cycles: on the V100 box, one ring over
the doubled (NV2) links and one over the single links. Data is split across
rings in proportion to their bandwidth, and each ring runs the chunked ring
algorithm on its share; with ``bidirectional`` each ring also runs in the
opposite direction on half of its share, using the other direction of every
link.

Ring search: repeatedly take the widest Hamiltonian cycle left in the graph
of remaining direct-link capacity (bonded links count as capacity), give it
the bandwidth of its narrowest link, and subtract that along the cycle.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import Field

from commsim.algorithms.base import Algorithm, NotApplicableError, Params, Problem, route_figures
from commsim.algorithms.registry import register
from commsim.algorithms.ringsteps import add_ring, ring_chunk_owners, ring_step_range
from commsim.collectives import Collective
from commsim.errors import AlgorithmError
from commsim.schedule import Schedule, ScheduleBuilder
from commsim.topology.linkkinds import kinds_matching
from commsim.topology.model import Topology

__all__ = ["MultiRing", "direct_capacities", "find_rings", "hamiltonian_cycle"]

_SEARCH_BUDGET = 200_000


def direct_capacities(
    topology: Topology, ranks: Sequence[str], kinds: Sequence[str]
) -> dict[frozenset[str], float]:
    """Per-direction capacity of the direct links between ranks, of the allowed kinds."""
    allowed = kinds_matching(tuple(kinds))
    members = set(ranks)
    capacity: dict[frozenset[str], float] = {}
    for link in topology.links:
        if link.src in members and link.dst in members and link.kind in allowed:
            capacity[frozenset((link.src, link.dst))] = link.bandwidth_Bps
    return capacity


def hamiltonian_cycle(nodes: Sequence[str], edges: set[frozenset[str]]) -> list[str] | None:
    """A Hamiltonian cycle through ``nodes`` using ``edges`` (backtracking), or None."""
    if len(nodes) == 2:
        return list(nodes) if frozenset(nodes) in edges else None
    neighbours = {v: [u for u in nodes if frozenset((u, v)) in edges] for v in nodes}
    path, seen, budget = [nodes[0]], {nodes[0]}, [_SEARCH_BUDGET]

    def extend() -> bool:
        budget[0] -= 1
        if budget[0] < 0:
            raise AlgorithmError(
                f"ring search over {len(nodes)} GPUs gave up after {_SEARCH_BUDGET} steps; "
                "give the rings explicitly with the 'rings' parameter"
            )
        if len(path) == len(nodes):
            return frozenset((path[-1], path[0])) in edges
        for nxt in neighbours[path[-1]]:
            if nxt not in seen:
                path.append(nxt)
                seen.add(nxt)
                if extend():
                    return True
                path.pop()
                seen.discard(nxt)
        return False

    return path if extend() else None


def find_rings(
    topology: Topology, ranks: Sequence[str], kinds: Sequence[str], max_rings: int | None = None
) -> list[tuple[list[str], float]]:
    """Rings (device orders) and their per-direction bandwidth, widest first.

    Raises
    ------
    AlgorithmError
        If not even one Hamiltonian cycle exists over the allowed links.
    """
    remaining = direct_capacities(topology, ranks, kinds)
    rings: list[tuple[list[str], float]] = []
    while max_rings is None or len(rings) < max_rings:
        found = None
        for level in sorted({c for c in remaining.values() if c > 0}, reverse=True):
            cycle = hamiltonian_cycle(list(ranks), {e for e, c in remaining.items() if c >= level})
            if cycle is not None:
                found = cycle
                break
        if found is None:
            break
        hops = _hops(found)
        width = min(remaining[h] for h in hops)
        for hop in hops:
            remaining[hop] -= width
        rings.append((found, width))
    if not rings:
        raise NotApplicableError(
            f"no Hamiltonian cycle over direct {'/'.join(kinds)} links between "
            f"{ranks[0]}..{ranks[-1]} ({len(ranks)} GPUs) of topology {topology.name!r}; "
            "allow other kinds with 'kinds', give 'rings' explicitly, or use 'ring' (routed)"
        )
    return rings


def _hops(cycle: list[str]) -> list[frozenset[str]]:
    if len(cycle) == 2:
        return [frozenset(cycle)]
    return [frozenset((a, b)) for a, b in zip(cycle, cycle[1:] + cycle[:1])]


class MultiRingParams(Params):
    """How rings are found or given, and whether both directions are used."""

    kinds: list[str] = Field(["nvlink"], description="link kinds or families the rings may use")
    rings: list[list[int]] | None = Field(None, description="explicit rings as rank-index orders")
    bidirectional: bool = Field(True, description="also run every ring in the opposite direction")
    max_rings: int | None = Field(None, ge=1, description="use at most this many rings")


@register
class MultiRing(Algorithm):
    """Rings found from the topology (or given), data split by ring bandwidth.

    References
    ----------
    SEED_FACTS.md section 2 (DGX-1 double ring, ~6 ms for 160 MB); NCCL
    builds several rings ("channels") over NVLink the same way.
    """

    name = "multi_ring"
    summary = "edge-disjoint rings over direct links, data split by ring bandwidth, both directions"
    reference = "SEED_FACTS.md section 2 (the DGX-1 double ring)"
    collectives = frozenset({Collective.ALL_REDUCE, Collective.REDUCE_SCATTER, Collective.ALL_GATHER})
    Params = MultiRingParams

    def rings(self, problem: Problem) -> list[tuple[list[str], float]]:
        """The rings used and their per-direction bandwidth."""
        assert isinstance(self.params, MultiRingParams)
        if self.params.rings is None:
            return find_rings(problem.topology, problem.ranks, self.params.kinds, self.params.max_rings)
        rings = []
        for order in self.params.rings:
            if sorted(order) != list(range(problem.n)):
                raise AlgorithmError(f"ring {order} must list every rank 0..{problem.n - 1} exactly once")
            devices = [problem.ranks[i] for i in order]
            width = min(
                route_figures(problem.topology, a, b, self.params.kinds)[1]
                for a, b in zip(devices, devices[1:] + devices[:1])
            )
            rings.append((devices, width))
        return rings

    def _directions(self, ring: list[str]) -> list[list[str]]:
        assert isinstance(self.params, MultiRingParams)
        if self.params.bidirectional and len(ring) > 2:
            return [ring, [ring[0], *ring[:0:-1]]]
        return [ring]

    def plan(self, problem: Problem) -> Schedule:
        self.check(problem)
        assert isinstance(self.params, MultiRingParams)
        rings = self.rings(problem)
        total = sum(width for _, width in rings)
        builder = ScheduleBuilder(problem.collective, problem.nbytes, problem.ranks)
        channel = 0  # every ring and direction is a channel of its own, as NCCL's rings are
        for ring, width in rings:
            directions = self._directions(ring)
            share = problem.nbytes * width / total / len(directions)
            for devices in directions:
                positions = np.array([builder.device_index(d) for d in devices], dtype=np.int64)
                owners = ring_chunk_owners(positions)
                chunks = builder.split(share, len(devices), owners)
                add_ring(
                    builder,
                    devices,
                    chunks,
                    problem.collective,
                    direct=self.params.rings is None,
                    kinds=self.params.kinds,
                    channel=channel,
                )
                channel += 1
        return builder.build()

    def analytic_time(self, problem: Problem) -> float | None:
        """steps x (alpha + g / (n x total ring bandwidth x directions)).

        Exact for rings over disjoint direct links with equal latencies.
        """
        rings = self.rings(problem)
        first, stop = ring_step_range(problem.collective, problem.n)
        directions = len(self._directions(rings[0][0]))
        total = sum(width for _, width in rings) * directions
        latency = max(
            route_figures(problem.topology, a, b, None)[0]
            for ring, _ in rings
            for a, b in zip(ring, ring[1:] + ring[:1])
        )
        return (stop - first) * (latency + problem.nbytes / problem.n / total)
