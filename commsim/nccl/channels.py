"""NCCL's rings on a box with a direct GPU fabric: as many channels as it takes to use every link.

On machines whose GPUs are joined directly (NVLink meshes such as the 4-GPU
HGX boards and the DGX-1 cube meshes, NVLink-bridged PCIe pairs, AMD xGMI
meshes) NCCL's channel search builds several rings over different orders of
the GPUs, one channel each, until the links are full; a hop without a
direct link goes over PCIe. The bus bandwidth those channels reach together
is the largest total rate of rings that the directed links can carry:

    maximise  sum_c r_c   subject to   sum_{c uses l} r_c <= capacity(l)  for every directed link l

over every directed Hamiltonian cycle ``c`` of the ranks whose hops are all
direct fabric links, or, when no such cycle exists (GPUs bridged in pairs),
over every cycle, each hop taking its route (a direct link where there is
one, else PCIe): NCCL searches NVLink-only rings first. A ring all-reduce whose ranks
each send at ``r`` has bus bandwidth ``r`` (nccl-tests' busbw = algbw x
2(n-1)/n, and the ring moves 2(n-1)/n of the buffer per rank), so the
optimum is the bus bandwidth of the channels together. The linear programme
is solved with SciPy's HiGHS (``scipy.optimize.linprog``).

Example: four GPUs with six NVLink 4 links between every pair (HGX H100
4-GPU, 150 GB/s per pair and direction). One Hamiltonian ring in both
directions uses four of the six pairs: 2 x 150 = 300 GB/s. The three
Hamiltonian cycles in both directions use each directed pair twice, so each
runs at 75 GB/s and together they reach 6 x 75 = 450 GB/s, every link full.

References
----------
NCCL ``src/graph/search.cc`` (ring search over NVLink, then PCIe, channel
duplication) and ``src/graph/rings.cc``.
"""

from __future__ import annotations

import itertools
import math

from commsim.nccl.machine import GPU_FABRICS
from commsim.topology.model import Topology

__all__ = ["MAX_RING_RANKS", "ring_packing", "ring_packing_busbw"]

_GBPS = 1e9

MAX_RING_RANKS = 8
"""Largest box whose rings are enumerated ((n-1)! directed cycles: 5,040 for 8 GPUs)."""


def _routes(topology: Topology, ranks: tuple[str, ...]) -> dict[tuple[int, int], tuple[int, ...]]:
    """Link indices of the route between every ordered pair of ranks."""
    return {
        (i, j): topology.route(ranks[i], ranks[j]) for i, j in itertools.permutations(range(len(ranks)), 2)
    }


def _hops(cycle: tuple[int, ...]) -> list[tuple[int, int]]:
    return list(zip(cycle, cycle[1:] + cycle[:1]))


def _direct(topology: Topology, route: tuple[int, ...]) -> bool:
    """Whether a route is one GPU-to-GPU fabric link (NVLink or xGMI), not a PCIe path."""
    return len(route) == 1 and topology.links[route[0]].family in GPU_FABRICS


def ring_packing(topology: Topology, ranks: tuple[str, ...]) -> list[tuple[tuple[str, ...], float]] | None:
    """The best set of concurrent rings over ``ranks``: each ring's rank order and rate (B/s).

    Parameters
    ----------
    topology : Topology
        The box, with link bandwidths as NCCL reaches them (efficiencies applied).
    ranks : tuple of str
        Two to eight GPUs.

    Returns
    -------
    list of (rank order, rate) or None
        Rings with a positive rate, largest first; None above 8 ranks or when
        the solver cannot say (the caller then replays one ring).
    """
    n = len(ranks)
    if n < 2 or n > MAX_RING_RANKS:
        return None
    from scipy.optimize import linprog

    routes = _routes(topology, ranks)
    cycles = [(0, *order) for order in itertools.permutations(range(1, n))]
    direct = [c for c in cycles if all(_direct(topology, routes[h]) for h in _hops(c))]
    cycles = direct or cycles
    used: dict[int, list[int]] = {}
    for c, cycle in enumerate(cycles):
        for hop in _hops(cycle):
            for link in routes[hop]:
                used.setdefault(link, []).append(c)
    links = sorted(used)
    rows = [[0.0] * len(cycles) for _ in links]
    for row, link in zip(rows, links):
        for c in used[link]:
            row[c] += 1.0
    capacity = [topology.links[link].bandwidth_Bps / _GBPS for link in links]  # GB/s: well scaled
    result = linprog(c=[-1.0] * len(cycles), A_ub=rows, b_ub=capacity, bounds=(0, None), method="highs")
    if not result.success or not math.isfinite(float(result.fun)):
        return None
    rates = [float(x) * _GBPS for x in result.x]
    floor = 1e-9 * max(rates, default=0.0)
    rings = [(tuple(ranks[i] for i in cycle), rate) for cycle, rate in zip(cycles, rates) if rate > floor]
    return sorted(rings, key=lambda ring: -ring[1]) or None


def ring_packing_busbw(topology: Topology, ranks: tuple[str, ...]) -> float | None:
    """Bus bandwidth (B/s) of the best set of concurrent rings over ``ranks``; None above 8 ranks.

    A ring all-reduce whose ranks each send at ``r`` has bus bandwidth ``r``,
    so the rings' total rate is their bus bandwidth together.
    """
    rings = ring_packing(topology, ranks)
    return sum(rate for _, rate in rings) if rings else None
