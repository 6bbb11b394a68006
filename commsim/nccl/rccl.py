"""RCCL's candidates on AMD GPUs: NCCL's ring and tree priced with RCCL's own tables.

:mod:`commsim.nccl.rccl_tables` holds the figures; this module applies them
the way ``ncclTopoTuneModel`` and ``ncclTopoGetAlgoTime`` of ROCm/rccl
``src/graph/tuning.cc`` do under ``__HIP_PLATFORM_AMD__``:

- latency: ``baseLat + (steps - inter) x hwLat[intra] + inter x network
  step`` for the ring (the intra-node step at least the network post
  overhead, x3 for Simple, across nodes), ``baseLat + 2 ((ranks per node - 1)
  x hwLat[intra] + log2i(nodes) x network step)`` for the tree;
- bandwidth: the bus bandwidth times ``bwRatio`` of the tuning model (up to
  two nodes, or beyond), times ``n / steps`` for the ring and 1/2 for the
  tree; 1.65 on a single gfx942/gfx950 node's ring LL broadcast and reduce;
  nothing else (no ``llMaxBw``, no LL128 or tree factor, no plateau);
- at each size the tuning model's correction: the tree's always, the ring's
  across nodes only.

The bandwidth RCCL scales is its graph's; here, as for NVIDIA, it is the
machine's replayed ring bandwidth (:class:`~commsim.nccl.candidates.Bandwidths`).
Candidates with a ratio of 0 are absent (RCCL sets their bandwidth to 0).
Tree/Simple is absent on a single gfx942 or gfx950 node; LL128 is present
only across nodes on the generations that support it (the MI300X multi-node
Rome model sets ``ll128Enabled=1``, the single-node one does not); LL is absent
on gfx12 (``rdna4``). PAT is off: RCCL's ``NCCL_PAT_ENABLE`` defaults to 0.
"""

from __future__ import annotations

from commsim.collectives import Collective
from commsim.hardware.schema import AMD_ARCHS
from commsim.nccl.candidates import Bandwidths, Raw, ring_steps
from commsim.nccl.machine import NcclMachine
from commsim.nccl.rccl_tables import RcclModel, RcclTable
from commsim.nccl.tuning import PROTOCOLS

__all__ = ["NET_OVERHEAD_s", "is_amd", "ring", "rules", "sized", "tree"]

NET_OVERHEAD_s = 1e-6
"""``getNetOverhead``: 1 us per network post on Intel hosts (2 us on AMD hosts; the model does not
know the host CPU and, as for NVIDIA, uses the Intel figure)."""

BROADCAST_LL_BOOST = 1.65
"""RCCL's factor on a single gfx942/gfx950 node's ring LL broadcast and reduce bandwidth."""


def is_amd(arch: str) -> bool:
    """Whether ``arch`` is an AMD GPU generation (priced with RCCL's tables)."""
    return arch in AMD_ARCHS


def _protocols(table: RcclTable, m: NcclMachine) -> tuple[str, ...]:
    ll128 = m.nodes > 1 and m.arch in table.ll128_archs and m.intra_hop == "nvlink"
    protocols = PROTOCOLS if ll128 else ("LL", "Simple")
    return tuple(p for p in protocols if not (p == "LL" and m.arch == "rdna4"))


def _log2i(value: int) -> int:
    return max(value, 1).bit_length() - 1


def _net_step(
    table: RcclTable, model: RcclModel, bw: Bandwidths, m: NcclMachine, algo: str, proto: str
) -> float:
    """One network step: ``hwLat[NET]`` (the tree's row with one GPU per node from 2.24) plus the route,
    the route again for Simple (the flush); in 2.18 the route replaces ``hwLat[NET]`` when it is known."""
    row = "tree" if (m.per_node == 1 and table.one_gpu_per_node_tree_latency) else algo
    route = bw.net_latency_s
    if table.route_replaces_net_latency and route > 0:
        step = route
    else:
        step = model.hop_latency_s["net"][row][proto] + route
    return step + (route if proto == "Simple" else 0.0)


def _inter_steps(table: RcclTable, collective: Collective, nodes: int) -> int:
    if nodes < 2:
        return 0
    if collective is Collective.ALL_REDUCE:
        return 2 * nodes if table.inter_steps_per_node else 2 * (nodes - 1)
    return nodes - 1


def ring(collective: Collective, n: int, m: NcclMachine, bw: Bandwidths, table: RcclTable) -> list[Raw]:
    """RCCL's ring candidates for ``collective`` on ``n`` ranks."""
    model = table.model_for(m.arch)
    steps = ring_steps(collective, n)
    inter = min(_inter_steps(table, collective, m.nodes), steps)
    ratios = model.bw_ratio["near" if m.nodes <= 2 else "far"]["ring"]
    out = []
    for proto in _protocols(table, m):
        if ratios[proto] == 0:
            continue
        intra = model.hop_latency_s[m.intra_hop]["ring"][proto]
        if m.nodes > 1:
            intra = max(intra, NET_OVERHEAD_s * (3 if proto == "Simple" else 1))
        latency = table.base_latency_s["ring"][proto] + (steps - inter) * intra
        if inter:
            latency += inter * _net_step(table, model, bw, m, "ring", proto)
        busbw = bw.busbw_Bps * ratios[proto]
        boosted = collective in (Collective.BROADCAST, Collective.REDUCE) and m.nodes == 1
        if proto == "LL" and boosted and m.arch in table.broadcast_ll_boost:
            busbw *= BROADCAST_LL_BOOST
        out.append(("ring", proto, latency, busbw * n / steps))
    return out


def tree(m: NcclMachine, bw: Bandwidths, table: RcclTable) -> list[Raw]:
    """RCCL's tree all-reduce candidates.

    Bus bandwidth: the box's (``bwIntra``) up to two nodes, the ring's beyond
    (``bwInter``), times ``bwRatio``; algorithm bandwidth half of it. Across
    two nodes, as for NVIDIA, each NIC direction carries the whole buffer once,
    so the NICs (at the same ratio) cap the algorithm bandwidth.
    """
    model = table.model_for(m.arch)
    ratios = model.bw_ratio["near" if m.nodes <= 2 else "far"]["tree"]
    out = []
    for proto in _protocols(table, m):
        if ratios[proto] == 0:
            continue
        if proto == "Simple" and m.nodes == 1 and m.arch in table.tree_simple_single_node_off:
            continue
        intra = model.hop_latency_s[m.intra_hop]["tree"][proto]
        inter = _log2i(m.nodes) * _net_step(table, model, bw, m, "tree", proto) if m.nodes > 1 else 0.0
        latency = table.base_latency_s["tree"][proto] + 2 * ((m.per_node - 1) * intra + inter)
        box = bw.intra_Bps if m.nodes <= 2 else bw.busbw_Bps
        algbw = box * ratios[proto] * 0.5
        if m.nodes == 2:
            algbw = min(algbw, bw.net_Bps * ratios[proto])
        out.append(("tree", proto, latency, algbw))
    return out


def sized(raw: list[Raw], m: NcclMachine, nbytes: float, table: RcclTable) -> list[Raw]:
    """RCCL's size corrections: the tree's always, the ring's across nodes; a factor of 0 drops the pair."""
    model = table.model_for(m.arch)
    out = []
    for algorithm, proto, latency, rate in raw:
        if algorithm == "tree" or (algorithm == "ring" and m.nodes > 1):
            rate *= model.correction(algorithm, proto, nbytes)
        if rate > 0:
            out.append((algorithm, proto, latency, rate))
    return out or raw


def rules(raw: list[Raw], m: NcclMachine, table: RcclTable) -> list[Raw]:
    """RCCL's availability rules, applied to candidates priced with NVIDIA's tables.

    RCCL disables, whatever the figures: LL on gfx12 (``rdna4``), tree/Simple
    on a single gfx942 (2.24+: or gfx950) node, and PAT (``NCCL_PAT_ENABLE``
    defaults to 0). NVLS needs NVSwitch and LL128 NVIDIA's generations, so
    neither reaches an AMD machine anyway. RCCL also has no ring "plateau"
    factor; NVIDIA's is kept (the model's caller applies it) because dropping
    it worsens the 4-node MI250X log (median 15.5 % -> 22.2 %) and helps no other.
    """
    single_node_no_tree_simple = m.nodes == 1 and m.arch in table.tree_simple_single_node_off
    return [
        (a, p, lat, rate)
        for a, p, lat, rate in raw
        if a != "pat"
        and not (p == "LL" and m.arch == "rdna4")
        and not (a == "tree" and p == "Simple" and single_node_no_tree_simple)
    ]
