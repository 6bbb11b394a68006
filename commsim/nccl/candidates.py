"""NCCL's candidates for one call: every (algorithm, protocol) with its latency and algorithm bandwidth.

Latencies follow NCCL's ``tuning.cc`` of the release in use
(:mod:`commsim.nccl.tuning`): ``baseLat`` plus ``hwLat`` per step and hop
kind, with the network route's own latency and transport overhead added to
every network step. Bandwidths are physical: the box's ring bus bandwidth
measured by replay (:mod:`commsim.nccl.intra`) and the NICs of the used GPUs
at their network efficiency, scaled by NCCL's per-protocol factors and
ceilings. Each function returns ``(algorithm, protocol, latency_s,
algbw_Bps)`` tuples.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from commsim.collectives import Collective
from commsim.nccl.machine import NcclMachine
from commsim.nccl.tuning import PROTOCOLS, TuningTable
from commsim.nccl.tuning_table import since

__all__ = [
    "P2P_COLLECTIVES",
    "Bandwidths",
    "Raw",
    "collnet",
    "nvls",
    "p2p",
    "pat",
    "plateau",
    "plateau_applies",
    "ring",
    "tree",
]

Raw = tuple[str, str, float, float]

P2P_COLLECTIVES = frozenset(
    {Collective.ALL_TO_ALL, Collective.GATHER, Collective.SCATTER, Collective.SEND_RECV}
)
"""Collectives NCCL runs as grouped point-to-point sends (``ncclSend``/``ncclRecv``), not rings or trees."""


@dataclass(frozen=True)
class Bandwidths:
    """What one call's candidates are priced from.

    Attributes
    ----------
    intra_Bps : float
        Ring bus bandwidth inside one box (infinite with one GPU per box).
    net_Bps : float
        Network bandwidth of one box per direction, its used NICs at their efficiency (infinite on one box).
    net_latency_s : float
        Extra latency of one network step: the route's links and the transport's overhead.
    nvlink_port_Bps : float
        NVLS algorithm bandwidth of one GPU (its NVLink ports at the NVLS efficiency).
    version : tuple of int or None
        The NCCL release (major, minor); None for the newest.
    send_Bps : float or None
        send/recv across nodes: the rate of one rank's send to the next node on its route alone
        (:func:`commsim.nccl.network.crossing_send_Bps`); None for other calls and on one box.
    """

    intra_Bps: float
    net_Bps: float
    net_latency_s: float
    nvlink_port_Bps: float
    version: tuple[int, int] | None
    send_Bps: float | None = None

    @property
    def busbw_Bps(self) -> float:
        """The ring's bus bandwidth: the box's or the network's, whichever is lower."""
        return min(self.intra_Bps, self.net_Bps)


def ring_steps(collective: Collective, n: int) -> int:
    """Ring steps of one call (at least 1: a one-rank call still takes a step)."""
    if n < 2:
        return 1
    if collective is Collective.ALL_REDUCE:
        return 2 * (n - 1)
    if collective in (Collective.ALL_GATHER, Collective.REDUCE_SCATTER):
        return n - 1
    return n


def plateau_applies(collective: Collective, m: NcclMachine, n: int, proto: str, nbytes: float) -> bool:
    """NCCL's "plateau effect of ring": multi-node ring Simple all-reduce from n/16 x 64 KiB."""
    return (
        proto == "Simple" and collective is Collective.ALL_REDUCE and m.nodes > 1 and nbytes >= n / 16 * 65536
    )


def plateau(table: TuningTable, m: NcclMachine) -> float:
    """The plateau's latency factor for this GPU generation (before Ampere, Ampere and newer)."""
    return table.plateau[0 if m.arch in ("kepler", "pascal", "volta", "turing") else 1]


def _inter_steps(table: TuningTable, collective: Collective, nodes: int) -> int:
    if nodes < 2:
        return 0
    if collective is Collective.ALL_REDUCE:
        return 2 * nodes if table.inter_steps_per_node else 2 * (nodes - 1)
    return nodes - 1 if collective in (Collective.ALL_GATHER, Collective.REDUCE_SCATTER) else nodes


def _protocols(table: TuningTable, m: NcclMachine, version: tuple[int, int] | None) -> tuple[str, ...]:
    """LL and Simple always; LL128 on NVLink boxes of the generations the release enables it for (2.5+)."""
    ll128 = m.transport in ("nvlink", "nvswitch") and m.arch in table.ll128_archs and since(version, (2, 5))
    return PROTOCOLS if ll128 else ("LL", "Simple")


def _inter_latency(table: TuningTable, m: NcclMachine, bw: Bandwidths, algorithm: str, proto: str) -> float:
    """One network step: NCCL's ``hwLat[NET]`` plus the route (twice for Simple, the flush, from 2.12)."""
    row = "tree" if (m.per_node == 1 and table.one_gpu_per_node_tree_latency) else algorithm
    route = bw.net_latency_s * (2 if proto == "Simple" and table.net_overhead_s > 0 else 1)
    return table.hop_latency_s["net"][row][proto] + route


def ring(
    problem_collective: Collective,
    n: int,
    m: NcclMachine,
    bw: Bandwidths,
    table: TuningTable,
    nbytes: float | None = None,
) -> list[Raw]:
    """Ring candidates.

    Latency ``baseLat + (steps - inter) x intra hop + inter x network hop``;
    bandwidth the ring's bus bandwidth times the protocol's factor (capped by
    ``llMaxBw`` for LL) times ``n / steps``.
    """
    coll = problem_collective
    steps, inter = ring_steps(coll, n), _inter_steps(table, coll, m.nodes)
    inter = min(inter, steps)
    out = []
    for proto in _protocols(table, m, bw.version):
        intra_hop = table.hop_latency_s[m.intra_hop]["ring"][proto]
        if m.nodes > 1:
            intra_hop *= table.ll_multi_node_intra if proto == "LL" else 1.0
            intra_hop = max(intra_hop, table.net_overhead_s * (3 if proto == "Simple" else 1))
        latency = table.base_latency_s["ring"][proto] + (steps - inter) * intra_hop
        latency += inter * _inter_latency(table, m, bw, "ring", proto) if m.nodes > 1 else 0.0
        if nbytes is not None and plateau_applies(coll, m, n, proto, nbytes):
            latency *= plateau(table, m)
        busbw = bw.busbw_Bps
        if proto == "LL":
            busbw = min(ring_ll_spread_Bps(coll, m, bw, table), table.ll_cap(m.nodes, m.arch))
        elif proto == "LL128":
            busbw *= 0.7 if (m.per_node < 2 and table.ring_ll_factor is None) else 0.92
        out.append(("ring", proto, latency, busbw * n / steps))
    return out


def ring_ll_spread_Bps(collective: Collective, m: NcclMachine, bw: Bandwidths, table: TuningTable) -> float:
    """Ring LL bus bandwidth over all of NCCL's channels before ``llMaxBw``, NCCL's ceiling on the
    whole: the ring's bus bandwidth times the LL factor (each channel carries its share of it)."""
    all_reduce_like = collective in (Collective.ALL_REDUCE, Collective.REDUCE)
    return bw.busbw_Bps * table.ring_ll(all_reduce_like, m.nodes > 1)


def tree(
    n: int, m: NcclMachine, bw: Bandwidths, table: TuningTable, nbytes: float | None = None
) -> list[Raw]:
    """Double binary tree all-reduce candidates.

    Latency: ``baseLat + 2 ((ranks per node - 1) x intra hop + log2(nodes) x
    network hop)``. Bandwidth: half the tree's bus bandwidth (NCCL's
    ``ratio .5``) at NCCL's tree factor, times NCCL's correction for the size.
    Across two nodes each NIC direction carries the whole buffer once (the
    two trees are rooted in different nodes), so the network limits the
    algorithm bandwidth to the box's NIC bandwidth, not half of it; beyond
    two nodes interior nodes send and receive twice and the network counts
    like the box's ring.
    """
    out = []
    for proto in _protocols(table, m, bw.version):
        intra_hop = table.hop_latency_s[m.intra_hop]["tree"][proto]
        if m.nodes > 1 and proto == "LL":
            intra_hop *= table.ll_multi_node_intra
        inter = math.log2(m.nodes) * _inter_latency(table, m, bw, "tree", proto) if m.nodes > 1 else 0.0
        latency = table.base_latency_s["tree"][proto] + 2 * ((m.per_node - 1) * intra_hop + inter)
        box = bw.intra_Bps if m.nodes <= 2 else bw.busbw_Bps
        busbw = box * table.tree_factor
        if table.tree_cap_Bps:
            a100_ll128 = "_ll128_a100" if (proto == "LL128" and m.arch == "ampere") else ""
            busbw = min(busbw, table.tree_cap_Bps[("near" if m.nodes <= 2 else "far") + a100_ll128])
        factor = _tree_protocol_factor(table, proto, m.nodes)
        busbw *= factor
        if proto == "LL":
            busbw = min(busbw, table.ll_cap(m.nodes, m.arch))
        algbw = busbw * 0.5
        if m.nodes == 2:  # the NICs carry the protocol's bytes too: LL and LL128 pay their factor on them
            algbw = min(algbw, bw.net_Bps * factor)
        correction = table.correction(proto, nbytes) if nbytes is not None else 1.0
        out.append(("tree", proto, latency, algbw * correction))
    return out


def _tree_protocol_factor(table: TuningTable, proto: str, nodes: int) -> float:
    """NCCL's tree bandwidth factor of ``proto`` (across nodes its busBw includes the network): LL
    1/3.8 (capped by ``llMaxBw`` separately), LL128 7/9 in one node and ``tree_ll128_multi_node``
    across nodes, Simple 1."""
    if proto == "LL":
        return 1 / 3.8
    if proto == "LL128":
        return 7 / 9 if nodes == 1 else table.tree_ll128_multi_node
    return 1.0


def nvls(m: NcclMachine, bw: Bandwidths, table: TuningTable) -> list[Raw]:
    """NVLink SHARP in one box, or NVLS-tree across boxes (Simple only).

    NVLS: latency ``hwLat[NVLINK][NVLS]``, bandwidth the GPU's NVLink ports
    at the NVLS efficiency. NVLS-tree: plus ``2 log2(nodes)`` network steps,
    and beyond two nodes half the network bandwidth (interior nodes of the
    tree send and receive twice; NCCL's ``bwInter/2``).
    """
    if m.nodes == 1:
        if not table.available("nvls", bw.version):
            return []  # before NCCL 2.17 (older tables have no NVLS row at all)
        return [("nvls", "Simple", table.hop_latency_s["nvlink"]["nvls"]["Simple"], bw.nvlink_port_Bps)]
    if not table.available("nvls_tree", bw.version):
        return []
    latency = table.hop_latency_s["nvlink"]["nvls_tree"]["Simple"]
    latency += 2 * math.log2(m.nodes) * _inter_latency(table, m, bw, "nvls_tree", "Simple")
    inter = bw.net_Bps if m.nodes <= 2 else bw.net_Bps / 2
    return [("nvls_tree", "Simple", latency, min(bw.nvlink_port_Bps, inter))]


COLLNET_ARITY_s = {(2, 4): 0.5e-6, (2, 19): 0.4e-6}
"""CollNet Direct's "arity serialization latency" per rank of a node beyond the first, by the first
release using it: 0.5 us in ``tuning.cc`` up to 2.18, 0.4 us from 2.19 (NVIDIA/nccl ``b6475625``)."""

COLLNET_REVISED = (2, 18)
"""The release whose ``tuning.cc`` drops CollNet Chain's x 0.75, adds a network hop to its latency and
takes Hopper and newer's CollNet Direct x 0.85 (2.17 has the first and neither of the others; 2.18's
``tuning.cc``, as XLA's mock of it restates it, and 2.19's have the two others and not the first)."""


def collnet(m: NcclMachine, bw: Bandwidths, table: TuningTable) -> list[Raw]:
    """CollNet all-reduce across nodes (the network switch reduces: InfiniBand SHARP), Simple only.

    Only when the run enables CollNet (``NCCL_COLLNET_ENABLE=1`` with a SHARP plugin); NCCL does
    not by default. From NCCL's ``tuning.cc`` (2.12 to 2.28): the bus bandwidth is the channels'
    (here the box's and the network's, whichever is lower), halved to an algorithm bandwidth
    (``ratio .5``, as the tree's); CollNet Chain (2.14+) takes x 0.75 before 2.18; CollNet Direct
    (2.6+, boxes with an NVSwitch only) divides by the GPU-per-NIC ratio softened (``f = ppn /
    NICs``, ``f - (f - 1) / 2``) and, from 2.18 on Hopper and newer, x 0.85. Latency: Direct
    ``baseLat + 2 (min(1, ppn - 1) x intra hop + (ppn - 1) x arity) + network hop`` (arity:
    :data:`COLLNET_ARITY_s`), Chain ``baseLat + 2 (ppn - 1) x intra hop`` (+ a network hop from
    2.18). With NVLink SHARP (Hopper NVSwitch, 2.18+) CollNet also enables NVLS across nodes: the
    GPU's NVLS rate, capped by the node's NICs, which carry the buffer once each way (the switch
    reduces), at NVLS's latency plus a network hop. Releases before 2.12 (the 2.4 era's table) are
    priced the same way, which they were not: 2.8's CollNet took x 0.9 with no GPU-per-NIC ratio,
    no arity latency and no NVSwitch requirement.
    """
    if m.nodes < 2:
        return []
    version, ppn, out = bw.version, m.per_node, []
    revised = since(version, COLLNET_REVISED)
    busbw = bw.busbw_Bps
    if table.available("collnet_direct", version) and m.transport == "nvswitch":
        f = ppn / max(m.nics, 1)
        f -= (f - 1) / 2
        direct = busbw / f * (0.85 if revised and m.arch in _HOPPER_ON else 1.0)
        arity = max((first, v) for first, v in COLLNET_ARITY_s.items() if since(version, first))[1]
        hop = table.hop_latency_s[m.intra_hop]["collnet_direct"]["Simple"]
        latency = table.base_latency_s["collnet_direct"]["Simple"] + _inter_latency(
            table, m, bw, "collnet_direct", "Simple"
        )
        latency += 2 * (min(1, ppn - 1) * hop + (ppn - 1) * arity)
        out.append(("collnet_direct", "Simple", latency, direct * 0.5))
    if table.available("collnet_chain", version):
        hop = table.hop_latency_s[m.intra_hop]["collnet_chain"]["Simple"]
        latency = table.base_latency_s["collnet_chain"]["Simple"] + 2 * (ppn - 1) * hop
        latency += _inter_latency(table, m, bw, "collnet_chain", "Simple") if revised else 0.0
        out.append(("collnet_chain", "Simple", latency, busbw * (1.0 if revised else 0.75) * 0.5))
    if m.nvls and table.available("nvls_tree", version):
        latency = table.hop_latency_s["nvlink"]["nvls"]["Simple"]
        latency += _inter_latency(table, m, bw, "nvls", "Simple")
        out.append(("nvls", "Simple", latency, min(bw.nvlink_port_Bps, bw.net_Bps)))
    return out


_HOPPER_ON = frozenset({"hopper", "blackwell"})
"""Architectures of NCCL's ``minCompCap >= 90``."""


def pat(n: int, m: NcclMachine, bw: Bandwidths, table: TuningTable) -> list[Raw]:
    """PAT all-gather / reduce-scatter (NCCL 2.23+, one GPU per node): busbw x 0.75.

    Latency ``8 us + log2(nodes) x network hop / 3.5 + 2.8 us per rank`` (tuning.cc).
    """
    if not table.available("pat", bw.version) or m.per_node != 1 or m.nodes < 2:
        return []
    latency = 8e-6 + math.log2(m.nodes) * _inter_latency(table, m, bw, "ring", "Simple") / 3.5 + n * 2.8e-6
    return [("pat", "Simple", latency, bw.busbw_Bps * 0.75)]


def own_nics(m: NcclMachine) -> int:
    """The NICs one rank of a node sends through: the node's NICs over its ranks, at least one, as
    NCCL sends a peer's data through the NIC nearest the GPU.

    One NIC for four ranks: 1; eight for eight: 1; four for eight (p4d): 1; sixteen for eight: 2.
    """
    return min(max(1, m.nics // max(m.per_node, 1)), max(m.nics, 1))


def p2p(collective: Collective, n: int, m: NcclMachine, bw: Bandwidths, table: TuningTable) -> list[Raw]:
    """Grouped sends: every rank's traffic to its peers at once, limited by its box and its node's NICs.

    nccl-tests' sizes: all-to-all sends ``size / n`` to each of the ``n``
    ranks; gather and scatter move ``size / n`` between the root and each
    rank; send/recv sends the whole ``size`` to the next rank. Inside a box
    the rate is measured by replaying the same sends among the box's ranks
    (``bw.intra_Bps`` is that replay's algorithm bandwidth; for send/recv,
    the box's ring bus bandwidth, one hop per rank as a ring step); a box's
    pieces of an ``n``-rank call are ``per_node / n`` of that replay's.
    Across boxes a node's ranks share its NICs (``bw.net_Bps``); send/recv's one rank per node that
    sends to the next node has only its own NICs (:func:`own_nics`), each at the rate its send reaches
    alone on the fabric (``bw.send_Bps``, replayed). The returned "algorithm bandwidth" is
    ``size / transfer time``.
    """
    per_node, nodes = m.per_node, m.nodes
    net_Bps = bw.net_Bps
    if collective is Collective.SEND_RECV:
        intra_share, node_bytes = (1.0 if per_node > 1 else 0.0), (1.0 if nodes > 1 else 0.0)
        if bw.send_Bps is not None:  # one rank of each node sends across, through its own NICs
            net_Bps = bw.send_Bps * own_nics(m)
    elif collective is Collective.ALL_TO_ALL:
        intra_share, node_bytes = (per_node / n if per_node > 1 else 0.0), per_node * (n - per_node) / n
    else:  # gather / scatter: the root's link carries (n-1)/n of the buffer
        intra_share, node_bytes = (per_node / n if per_node > 1 else 0.0), (n - per_node) / n
    seconds_per_byte = max(
        intra_share / bw.intra_Bps if intra_share and math.isfinite(bw.intra_Bps) else 0.0,
        node_bytes / net_Bps if node_bytes and math.isfinite(net_Bps) and net_Bps > 0 else 0.0,
    )
    if nodes > 1:
        hop = table.hop_latency_s["net"]["ring"]["Simple"] + bw.net_latency_s
    else:
        hop = table.hop_latency_s[m.intra_hop]["ring"]["Simple"]
    latency = table.base_latency_s["ring"]["Simple"] + hop
    return [("p2p", "Simple", latency, 1.0 / seconds_per_byte if seconds_per_byte else math.inf)]
