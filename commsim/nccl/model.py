"""NCCL's choice of algorithm and protocol, and the time it takes.

For every candidate (algorithm, protocol) the time is

    launch + latency_scale x (baseLat + steps x hwLat) + size / algbw

as in NCCL's ``tuning.cc``; NCCL runs the candidate with the smallest
predicted time, and so does this model. What NCCL hard-codes per GPU
generation, the bus bandwidth, is measured here on the topology itself: the
engine replays NCCL's channels (the NVLink rings, the ring through the
NVSwitch, over PCIe, or through host memory) on a copy of the machine whose
links run at their NCCL efficiency, and the network part is the box's NIC
bandwidth at the network family's efficiency.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass

from commsim.algorithms.base import Problem
from commsim.algorithms.multi_ring import MultiRing
from commsim.algorithms.ringsteps import add_ring
from commsim.collectives import Collective
from commsim.engine import replay
from commsim.errors import AlgorithmError
from commsim.nccl.channels import ring_packing_busbw
from commsim.nccl.constants import (
    LL128_FACTOR,
    LL_FACTOR_ALLREDUCE,
    LL_FACTOR_OTHER,
    TREE_FACTOR,
    TREE_LL128_FACTOR,
    TREE_LL_FACTOR,
    BASE_LATENCY_s,
    HOP_LATENCY_s,
)
from commsim.nccl.machine import NcclMachine, analyse
from commsim.nccl.params import NcclParams
from commsim.schedule import Schedule, ScheduleBuilder
from commsim.topology.linkkinds import LINK_KINDS
from commsim.topology.model import Topology

__all__ = ["Candidate", "NcclPrediction", "host_path", "predict"]

_REFERENCE_BYTES_PER_RANK = 64e6


@dataclass(frozen=True)
class Candidate:
    """One (algorithm, protocol) NCCL could use, with its predicted cost."""

    algorithm: str
    protocol: str
    latency_s: float
    algbw_Bps: float
    time_s: float


@dataclass(frozen=True)
class NcclPrediction:
    """The model's answer for one size: the choice and every candidate considered."""

    machine: NcclMachine
    chosen: Candidate
    candidates: list[Candidate]
    ring_busbw_Bps: float


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


def _chain_schedule(
    topology: Topology,
    ranks: tuple[str, ...],
    transport: str,
    nbytes: float,
    kinds: list[str],
    pieces: int = 16,
) -> Schedule:
    """A broadcast pipelined along the ranks in order, as NCCL's ring broadcast runs."""
    builder = ScheduleBuilder(Collective.BROADCAST, nbytes, ranks, root=0)
    previous_piece: list[int | None] = [None] * len(ranks)
    for chunk in builder.split(nbytes, pieces):
        before: int | None = None
        for hop, (a, b) in enumerate(zip(ranks, ranks[1:])):
            deps = [d for d in (before, previous_piece[hop]) if d is not None]
            path = _hop_path(topology, a, b, transport)
            before = builder.send(a, b, chunk, deps=deps, via=path, kinds=None if path else kinds)
            previous_piece[hop] = before
    return builder.build()


def _ring_schedule(
    topology: Topology, ranks: tuple[str, ...], transport: str, nbytes: float, chain: bool
) -> Schedule:
    """NCCL's intra-box ring channels as a schedule of ``nbytes``.

    Ring collectives use the whole ring (an all-reduce); broadcast and
    reduce only pipeline along it from the root, so they are replayed as a
    chain (no traffic on the closing hop, nothing in the other direction).
    """
    n = len(ranks)
    kinds = ["nvlink"] if transport in ("nvlink", "nvswitch") else ["pcie", "inter_socket", "host_memory"]
    if chain:
        return _chain_schedule(topology, ranks, transport, nbytes, kinds)
    if transport == "nvlink":
        problem = Problem(topology, ranks, Collective.ALL_REDUCE, nbytes)
        return MultiRing({"kinds": ["nvlink"], "bidirectional": True}).plan(problem)
    builder = ScheduleBuilder(Collective.ALL_REDUCE, nbytes, ranks)
    chunks = builder.split(nbytes, n, [(c - 1) % n for c in range(n)])
    if transport == "shm":
        paths = [host_path(topology, ranks[i], ranks[(i + 1) % n]) for i in range(n)]
        add_ring(builder, ranks, chunks, Collective.ALL_REDUCE, paths=paths)
    else:
        add_ring(builder, ranks, chunks, Collective.ALL_REDUCE, kinds=kinds)
    return builder.build()


_BUSBW_CACHE: weakref.WeakKeyDictionary[Topology, dict[tuple[object, ...], float]] = (
    weakref.WeakKeyDictionary()
)


def _intra_busbw(
    topology: Topology, ranks: tuple[str, ...], transport: str, params: NcclParams, chain: bool
) -> float:
    """Bus bandwidth of NCCL's ring inside one box (cached per topology and the parameters it depends on)."""
    relevant = tuple(
        sorted(params.link_factors({(link.kind, link.family) for link in topology.links}).items())
    )
    key = (ranks, transport, chain, relevant, params.shm_efficiency if transport == "shm" else None)
    cache = _BUSBW_CACHE.setdefault(topology, {})
    if key not in cache:
        cache[key] = _replayed_busbw(topology, ranks, transport, params, chain)
    return cache[key]


def _replayed_busbw(
    topology: Topology, ranks: tuple[str, ...], transport: str, params: NcclParams, chain: bool
) -> float:
    """Replay NCCL's ring at NCCL efficiencies and return its bus bandwidth."""
    kinds = {(link.kind, link.family) for link in topology.links}
    factors = params.link_factors(kinds)
    if transport == "shm":  # host-memory staging: shm_efficiency replaces every PCIe link's figure
        factors.update({kind: params.shm_efficiency for kind, family in kinds if family == "pcie"})
    effective = topology.scaled(factors, latency_s=0.0)
    if transport == "nvlink":
        packed = ring_packing_busbw(effective, ranks)
        if packed is not None:
            return packed
    nbytes = _REFERENCE_BYTES_PER_RANK * len(ranks)
    time_s = replay(_ring_schedule(effective, ranks, transport, nbytes, chain), effective).makespan_s
    n = len(ranks)
    return nbytes / time_s if chain else nbytes / time_s * 2 * (n - 1) / n


def _nvlink_port_Bps(topology: Topology, gpu: str) -> float:
    return sum(l.bandwidth_Bps for l in topology.links if l.src == gpu and l.family == "nvlink")


def _net_route_latency(
    topology: Topology, machine: NcclMachine, ranks: tuple[str, ...], params: NcclParams
) -> float:
    """Latency of one network hop between the first two boxes: its links, plus its transport's overhead.

    The transport's overhead (``NcclParams.transport_latency_s``: the socket
    transport's and the EFA provider's cost per message beyond the wire) comes
    from the kind of the route's network links.
    """
    if machine.nodes < 2:
        return 0.0
    first = ranks[0]
    other = next(r for r in ranks if topology.device(r).box != topology.device(first).box)
    route = [topology.links[i] for i in topology.route(first, other)]
    network = [link for link in route if link.family in ("infiniband", "ethernet")]
    transports = {LINK_KINDS[link.kind].transport for link in network} - {None}
    overhead = max((params.transport_latency(t) for t in transports if t is not None), default=0.0)
    return sum(link.latency_s for link in network) + overhead


def _steps(collective: Collective, n: int) -> int:
    """Ring steps of one call (at least 1: a one-rank call still takes a step)."""
    if n < 2:
        return 1
    if collective is Collective.ALL_REDUCE:
        return 2 * (n - 1)
    if collective in (Collective.ALL_GATHER, Collective.REDUCE_SCATTER):
        return n - 1
    return n


def _ring_candidates(
    problem: Problem, m: NcclMachine, busbw: float, net_lat: float, params: NcclParams
) -> list[tuple[str, str, float, float]]:
    n, coll = problem.n, problem.collective
    steps, inter = _steps(coll, n), (_steps(coll, m.nodes) if m.nodes > 1 else 0)
    ll = (
        LL_FACTOR_ALLREDUCE
        if (m.nodes > 1 or coll in (Collective.ALL_REDUCE, Collective.REDUCE))
        else LL_FACTOR_OTHER
    )
    factors = {"LL": ll, "LL128": LL128_FACTOR, "Simple": 1.0}
    out = []
    for proto, factor in factors.items():
        if proto == "LL128" and m.transport not in ("nvlink", "nvswitch"):
            continue  # NCCL enables LL128 by default on NVLink machines only
        hop = HOP_LATENCY_s[m.intra_hop]["ring"][proto]
        net_hop = HOP_LATENCY_s["net"]["ring"][proto] + net_lat
        latency = BASE_LATENCY_s["ring"][proto] + (steps - inter) * hop + inter * net_hop
        out.append(("ring", proto, latency, busbw * factor * n / steps))
    return out


def _tree_candidates(
    problem: Problem, m: NcclMachine, busbw: float, net_lat: float, params: NcclParams
) -> list[tuple[str, str, float, float]]:
    factors = {"LL": TREE_LL_FACTOR, "LL128": TREE_LL128_FACTOR, "Simple": 1.0}
    out = []
    for proto, factor in factors.items():
        if proto == "LL128" and m.transport not in ("nvlink", "nvswitch"):
            continue
        intra = (m.per_node - 1) * HOP_LATENCY_s[m.intra_hop]["tree"][proto]
        inter = math.log2(m.nodes) * (HOP_LATENCY_s["net"]["tree"][proto] + net_lat) if m.nodes > 1 else 0
        latency = BASE_LATENCY_s["tree"][proto] + 2 * (intra + inter)
        out.append(("tree", proto, latency, busbw * TREE_FACTOR * factor * 0.5))
    return out


def _nvls_candidates(
    problem: Problem, m: NcclMachine, net_Bps: float, net_lat: float, params: NcclParams
) -> list[tuple[str, str, float, float]]:
    port = _nvlink_port_Bps(problem.topology, problem.ranks[0]) * params.nvls_efficiency
    if m.nodes == 1:
        latency = BASE_LATENCY_s["nvls"]["Simple"] + HOP_LATENCY_s["nvlink"]["nvls"]["Simple"]
        return [("nvls", "Simple", latency, port)]
    latency = (
        BASE_LATENCY_s["nvls_tree"]["Simple"]
        + HOP_LATENCY_s["nvlink"]["nvls_tree"]["Simple"]
        + 2 * math.log2(m.nodes) * (HOP_LATENCY_s["net"]["nvls_tree"]["Simple"] + net_lat)
    )
    # NVLS-tree beyond two nodes: interior nodes of the tree send and receive twice, so NCCL's tuning
    # gives it half the network bandwidth (tuning.cc, 2.19-2.21: "bwInter/2" when nNodes > 2).
    inter = net_Bps if m.nodes <= 2 else net_Bps / 2
    return [("nvls_tree", "Simple", latency, min(port, inter))]


P2P_COLLECTIVES = frozenset(
    {Collective.ALL_TO_ALL, Collective.GATHER, Collective.SCATTER, Collective.SEND_RECV}
)
"""Collectives NCCL runs as grouped point-to-point sends (``ncclSend``/``ncclRecv``), not rings or trees."""


def _one_rank_candidates(problem: Problem, params: NcclParams) -> list[tuple[str, str, float, float]]:
    """One rank: NCCL copies the send buffer into the receive buffer on the GPU (out of place).

    The time is a fixed cost (``params.one_rank_s``) plus the bytes over the
    GPU's device-to-device copy rate (``params.local_copy_Bps``).
    """
    memory_Bps = _memory_Bps(problem.topology.device(problem.ranks[0]).model)
    return [("local_copy", "Simple", params.one_rank_s, params.local_copy_efficiency * memory_Bps)]


def _memory_Bps(model: str | None) -> float:
    """The GPU's memory bandwidth from the catalogue (the H100 SXM's 3.35 TB/s when unknown: validate
    reports that as an assumption)."""
    from commsim.hardware import find_gpu

    spec = find_gpu(model).spec if model else None
    value = spec.memory_Bps if spec is not None else None
    return float(value) if value else 3.35e12


def _p2p_candidates(
    problem: Problem, m: NcclMachine, busbw: float, net_Bps: float, net_lat: float, params: NcclParams
) -> list[tuple[str, str, float, float]]:
    """Grouped sends: every rank's traffic to its peers at once, limited by its fabric and its node's NICs.

    nccl-tests' sizes: all-to-all sends ``size / n`` to each of the ``n``
    ranks; gather and scatter move ``size / n`` between the root and each
    rank; send/recv sends the whole ``size`` to the next rank. Inside a box
    a rank injects at the ring bus bandwidth (its share of the fabric, as a
    ring measures it); across boxes a node's ranks share its NICs. The
    returned "algorithm bandwidth" is ``size / transfer time``.
    """
    n, per_node, nodes = problem.n, m.per_node, m.nodes
    coll = problem.collective
    if coll is Collective.SEND_RECV:
        intra_bytes, node_bytes = (1.0 if per_node > 1 else 0.0), (1.0 if nodes > 1 else 0.0)
        node_bytes /= max(per_node, 1)  # one rank of each node sends across; its share of the NICs
    elif coll is Collective.ALL_TO_ALL:
        intra_bytes, node_bytes = (per_node - 1) / n, per_node * (n - per_node) / n
    else:  # gather / scatter: the root's link carries (n-1)/n of the buffer
        intra_bytes, node_bytes = (per_node - 1) / n, (n - per_node) / n
    seconds_per_byte = max(
        intra_bytes / busbw if intra_bytes and math.isfinite(busbw) else 0.0,
        node_bytes / net_Bps if node_bytes and math.isfinite(net_Bps) and net_Bps > 0 else 0.0,
    )
    hop = HOP_LATENCY_s["net" if nodes > 1 else m.intra_hop]["ring"]["Simple"] + net_lat
    latency = BASE_LATENCY_s["ring"]["Simple"] + hop
    return [("p2p", "Simple", latency, 1.0 / seconds_per_byte if seconds_per_byte else math.inf)]


def bus_bandwidths(problem: Problem, params: NcclParams) -> tuple[NcclMachine, float, float]:
    """(machine, ring bus bandwidth, network bandwidth per box) at NCCL efficiencies."""
    m = analyse(problem.topology, problem.ranks)
    net_Bps = m.nic_Bps * params.family_efficiency(m.net_family) if m.net_family else math.inf
    intra = math.inf
    if m.per_node > 1:
        first_box = tuple(
            r
            for r in problem.ranks
            if problem.topology.device(r).box == problem.topology.device(problem.ranks[0]).box
        )
        chain = problem.collective in (Collective.BROADCAST, Collective.REDUCE)
        intra = _intra_busbw(problem.topology, first_box, m.transport, params, chain)
    return m, min(intra, net_Bps), net_Bps


def predict(
    problem: Problem,
    params: NcclParams | None = None,
    gpus_per_thread: int = 1,
    algorithms: tuple[str, ...] | None = None,
    protocols: tuple[str, ...] | None = None,
) -> NcclPrediction:
    """NCCL's choice and time for ``problem``.

    Parameters
    ----------
    problem : Problem
    params : NcclParams, optional
        Model parameters (defaults documented in :mod:`commsim.nccl.params`).
    gpus_per_thread : int
        GPUs one host thread drives (nccl-tests ``-g``); each adds ``launch_s``.
    algorithms, protocols : tuple of str, optional
        Restrict the choice, as ``NCCL_ALGO`` / ``NCCL_PROTO`` do.
    """
    params = params or NcclParams()
    m, busbw, net_Bps = bus_bandwidths(problem, params)
    net_lat = _net_route_latency(problem.topology, m, problem.ranks, params)
    if problem.n == 1:
        raw = _one_rank_candidates(problem, params)
    elif problem.collective in P2P_COLLECTIVES:
        raw = _p2p_candidates(problem, m, busbw, net_Bps, net_lat, params)
    else:
        raw = _ring_candidates(problem, m, busbw, net_lat, params)
    if problem.collective is Collective.ALL_REDUCE and problem.n > 1:
        raw += _tree_candidates(problem, m, busbw, net_lat, params)
        if m.nvls:
            raw += _nvls_candidates(problem, m, net_Bps, net_lat, params)
    launch = params.launch_s * gpus_per_thread if problem.n > 1 else 0.0  # one_rank_s is the whole cost
    candidates = [
        Candidate(a, p, lat, bw, launch + params.latency_scale * lat + problem.nbytes / bw)
        for a, p, lat, bw in raw
        if (algorithms is None or a in algorithms) and (protocols is None or p in protocols)
    ]
    if not candidates:
        available = sorted({f"{a}/{p}" for a, p, _, _ in raw})
        raise AlgorithmError(
            f"no NCCL algorithm among {list(algorithms or [])} with protocols {list(protocols or [])} "
            f"applies to {problem.collective} on {m.describe()}; available here: {', '.join(available)} "
            "(NVLS needs an NVSwitch box with Hopper or newer GPUs; LL128 needs NVLink)"
        )
    chosen = min(candidates, key=lambda c: (c.time_s, c.algorithm, c.protocol))
    return NcclPrediction(m, chosen, candidates, busbw)
