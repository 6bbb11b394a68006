"""Bus bandwidth of NCCL's channels inside one box, measured by replaying them on the machine.

What NCCL hard-codes per GPU generation (the speed its channel search finds)
is measured here on the topology itself: the engine replays NCCL's channels
(the NVLink rings, the ring through the NVSwitch, over PCIe, or through host
memory) on a copy of the machine whose links run at their NCCL efficiency.
On NVLink meshes the rings are packed by a linear program over every
Hamiltonian cycle (:mod:`commsim.nccl.channels`), as NCCL's search fills
every link with several channels.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from commsim.algorithms.base import Problem
from commsim.algorithms.multi_ring import MultiRing
from commsim.algorithms.ringsteps import add_ring, ring_chunk_owners
from commsim.collectives import Collective
from commsim.engine import replay
from commsim.nccl.channels import ring_packing, ring_packing_busbw
from commsim.nccl.params import NcclParams
from commsim.schedule import Schedule, ScheduleBuilder
from commsim.topology.linkkinds import LINK_KINDS
from commsim.topology.model import Topology

__all__ = [
    "REFERENCE_BYTES_PER_RANK",
    "chain_schedule",
    "direct_algbw",
    "host_path",
    "intra_busbw",
    "packed_rings",
    "ring_schedule",
]

REFERENCE_BYTES_PER_RANK = 64e6
"""Bytes per rank of the replay that measures a box's ring bandwidth (large enough to be bandwidth-bound)."""


def host_path(topology: Topology, src: str, dst: str) -> list[str]:
    """Devices from ``src`` through its nearest CPU (host memory) to ``dst``."""
    best: list[str] | None = None
    for cpu in topology.devices_of_kind("cpu"):
        up = topology.route(src, cpu)
        if best is None or len(up) < len(best):
            best = [topology.links[i].src for i in up] + [cpu]
    if best is None:
        return [src, dst]
    down = topology.route(best[-1], dst)
    return best + [topology.links[i].dst for i in down]


def _hop_path(topology: Topology, a: str, b: str, transport: str) -> list[str] | None:
    if transport == "shm":
        return host_path(topology, a, b)
    if transport == "nvlink" and topology.graph.has_edge(a, b):
        return [a, b]
    return None


def _kinds(transport: str) -> list[str]:
    return ["nvlink"] if transport in ("nvlink", "nvswitch") else ["pcie", "inter_socket", "host_memory"]


def chain_schedule(
    topology: Topology,
    ranks: tuple[str, ...],
    transport: str,
    nbytes: float,
    collective: Collective = Collective.BROADCAST,
    root: int = 0,
    pieces: int = 16,
) -> Schedule:
    """A broadcast (or reduce) pipelined along NCCL's rings, opened at the root.

    NCCL runs broadcast and reduce on its ring channels as chains: the root
    sends (or, for reduce, receives) and every rank forwards, piece by piece.
    On a box whose rings are packed (:func:`ring_packing`) each ring carries
    its share of the buffer (its rate over the total) on its own channel; on
    other boxes one chain follows the ranks in order, each hop on its route
    (through host memory without peer-to-peer).
    """
    rings = ring_packing(topology, ranks) if transport == "nvlink" else None
    orders = rings or [(ranks, 1.0)]
    total = sum(rate for _, rate in orders)
    builder = ScheduleBuilder(collective, nbytes, ranks, root=root)
    reduce = collective is Collective.REDUCE
    for channel, (order, rate) in enumerate(orders):
        start = order.index(ranks[root])
        chain = order[start:] + order[:start]
        if reduce:
            chain = chain[::-1]
        _add_chain(builder, topology, chain, transport, nbytes * rate / total, pieces, channel, reduce)
    return builder.build()


def _add_chain(
    builder: ScheduleBuilder,
    topology: Topology,
    chain: tuple[str, ...],
    transport: str,
    nbytes: float,
    pieces: int,
    channel: int,
    reduce: bool,
) -> None:
    previous_piece: list[int | None] = [None] * len(chain)
    for chunk in builder.split(nbytes, pieces):
        before: int | None = None
        for hop, (a, b) in enumerate(zip(chain, chain[1:])):
            deps = [d for d in (before, previous_piece[hop]) if d is not None]
            path = _hop_path(topology, a, b, transport)
            before = builder.send(a, b, chunk, deps=deps, via=path, reduce=reduce, channel=channel)
            previous_piece[hop] = before


def ring_schedule(
    topology: Topology, ranks: tuple[str, ...], transport: str, nbytes: float, chain: bool
) -> Schedule:
    """NCCL's intra-box ring channels as a schedule of ``nbytes``.

    Ring collectives use the whole ring (an all-reduce); broadcast and
    reduce only pipeline along it from the root, so they are replayed as a
    chain (no traffic on the closing hop, nothing in the other direction).
    """
    n = len(ranks)
    if chain:
        return chain_schedule(topology, ranks, transport, nbytes)
    if transport == "nvlink":
        rings = ring_packing(topology, ranks)
        if rings is None:
            problem = Problem(topology, ranks, Collective.ALL_REDUCE, nbytes)
            return MultiRing({"kinds": ["nvlink"], "bidirectional": True}).plan(problem)
        return packed_rings(ranks, rings, nbytes)
    builder = ScheduleBuilder(Collective.ALL_REDUCE, nbytes, ranks)
    chunks = builder.split(nbytes, n, [(c - 1) % n for c in range(n)])
    if transport == "shm":
        paths = [host_path(topology, ranks[i], ranks[(i + 1) % n]) for i in range(n)]
        add_ring(builder, ranks, chunks, Collective.ALL_REDUCE, paths=paths)
    else:
        add_ring(builder, ranks, chunks, Collective.ALL_REDUCE, kinds=_kinds(transport))
    return builder.build()


def packed_rings(
    ranks: tuple[str, ...],
    rings: list[tuple[tuple[str, ...], float]],
    nbytes: float,
    collective: Collective = Collective.ALL_REDUCE,
) -> Schedule:
    """NCCL's channels as found by :func:`ring_packing`: each ring runs ``collective`` on its share of
    the buffer (its rate over the total), on its own channel, all rings at once."""
    builder = ScheduleBuilder(collective, nbytes, ranks)
    total = sum(rate for _, rate in rings)
    for channel, (order, rate) in enumerate(rings):
        positions = np.array([builder.device_index(d) for d in order], dtype=np.int64)
        chunks = builder.split(nbytes * rate / total, len(order), ring_chunk_owners(positions))
        add_ring(builder, order, chunks, collective, channel=channel)
    return builder.build()


def direct_algbw(topology: Topology, ranks: tuple[str, ...], collective: Collective) -> float:
    """Algorithm bandwidth (B/s) of grouped sends straight to each peer (all-to-all, gather,
    scatter) among ``ranks``, replayed on ``topology`` (efficiencies already applied)."""
    from commsim.algorithms.direct import Direct

    nbytes = REFERENCE_BYTES_PER_RANK * len(ranks)
    schedule = Direct().plan(Problem(topology, ranks, collective, nbytes))
    return nbytes / replay(schedule, topology).makespan_s


def efficiency_factors(
    kinds: Iterable[tuple[str, str]], transport: str, params: NcclParams
) -> dict[str, float]:
    """``{link kind: efficiency}`` at which NCCL's channels run, for the (kind, family) pairs of a machine.

    Network kinds take their transport's efficiency
    (:meth:`NcclParams.network_efficiency`); without peer-to-peer
    (``transport == "shm"``) every PCIe link runs at ``shm_efficiency``.
    """
    kinds = list(kinds)
    factors = params.link_factors(kinds)
    for kind, family in kinds:
        if family in ("infiniband", "ethernet"):
            entry = LINK_KINDS.get(kind)
            factors[kind] = params.network_efficiency(kind, entry.transport if entry else None, family)
        elif transport == "shm" and family == "pcie":  # host-memory staging
            factors[kind] = params.shm_efficiency
    return factors


def intra_busbw(effective: Topology, ranks: tuple[str, ...], transport: str, chain: bool) -> float:
    """Replay NCCL's ring over ``ranks`` on ``effective`` (links at NCCL's efficiencies); its bus
    bandwidth (B/s)."""
    if transport == "nvlink":  # a broadcast's chains run on the same rings: algbw = the rings' rate
        packed = ring_packing_busbw(effective, ranks)
        if packed is not None:
            return packed
    nbytes = REFERENCE_BYTES_PER_RANK * len(ranks)
    if chain:
        return nbytes / _chain_steady_s(effective, ranks, transport, nbytes)
    time_s = replay(ring_schedule(effective, ranks, transport, nbytes, chain), effective).makespan_s
    n = len(ranks)
    return nbytes / time_s * 2 * (n - 1) / n


def _chain_steady_s(effective: Topology, ranks: tuple[str, ...], transport: str, nbytes: float) -> float:
    """A chain's time for ``nbytes`` without its pipeline fill.

    A chain of ``h`` hops cut in ``P`` pieces takes ``A / P + B``: the first
    piece crosses every hop (the fill, shrinking as pieces shrink) while the
    slowest hop streams the rest (``B``, the buffer at the bottleneck's rate).
    NCCL cuts a large buffer into thousands of chunks, so its fill is
    negligible; a replay of 16 pieces would charge it ``(h - 1) / 16`` of the
    time (7 / 16 more on an 8-GPU box). Two replays, of ``P`` and ``2P``
    pieces, give ``B = 2 T(2P) - T(P)``.
    """
    few, many = (
        replay(chain_schedule(effective, ranks, transport, nbytes, pieces=p), effective).makespan_s
        for p in (_PIECES, 2 * _PIECES)
    )
    steady = 2 * many - few
    return steady if 0 < steady <= many else many


_PIECES = 16
"""Pieces of a replayed chain (the steady state is extrapolated from this and twice as many)."""
