"""NCCL's own cost tables, one per era of releases, each restated from the release it comes from.

NCCL chooses an algorithm and protocol for every call from a table it builds
at start-up (``ncclTopoTuneModel`` in ``src/graph/tuning.cc``): a latency per
(algorithm, protocol) from ``baseLat`` plus ``hwLat`` per step by hop kind,
and a bus bandwidth from its channel search, scaled by per-protocol factors
and capped by per-architecture ceilings. The figures changed between
releases; three eras cover the releases in real use:

``2.4`` (2.4 to 2.11)
    ``tuning.cc`` at NVIDIA/nccl commit ``01afd20a`` (the 2.8 line; 2.4-2.11
    share its structure): tree, ring and CollNet; ring LL at 1/4 (all-reduce,
    reduce, multi-node) or 1/3 of the bus bandwidth; tree capped at
    80 GB/s beyond two nodes, 110 GB/s up to two (105 / 130 with LL128 on
    A100); tree Simple ``hwLat`` 28 us (NVLink, PCIe) and 50 us (network);
    ring Simple latency x 1.9 on multi-node all-reduce ("plateau effect").
    LL128 from 2.5 on Volta and Ampere with NVLink only.
``2.12`` (2.12 to 2.20)
    ``tuning.cc`` at commit ``b6475625`` (the 2.19 line): NVLS (2.17) and
    NVLS-tree (2.18) with ``hwLat`` 23 us; tree at 0.92; ring LL capped by
    ``llMaxBws`` (Hopper one node 87.7 GB/s); two inter-node steps per node
    (``nInterSteps = 2 * nNodes``); the plateau factor 1.4 on Ampere and newer;
    a network post overhead (1 us Intel, 2 us AMD host, x3 for Simple) as a
    floor on every ring step of a multi-node run. LL128 also on Hopper.
``2.21`` (2.21 and newer)
    ``tuning.cc`` of the 2.23 line: ring LL at 1/2 of the bus bandwidth
    (from 2.21) with ``llMaxBws`` Hopper 141 GB/s, Blackwell 282 GB/s; tree
    Simple ``baseLat`` 8.4 us and ``hwLat`` 4 us (NVLink, PCIe), 14 us
    (network); NVLS ``hwLat`` 25 us; PAT for all-gather and reduce-scatter
    with one GPU per node (2.23, busbw x 0.75, latency 8 us + log2(nodes) x
    net/3.5 + 2.8 us per rank); with one GPU per node the ring's network steps
    cost the tree's network latency; LL128 on Hopper and Blackwell.

RCCL keeps NCCL's table structure with its own figures per machine
(``rcclTuningModel``): :mod:`commsim.nccl.rccl_tables`. An AMD run is priced
with the table here of the NCCL release its RCCL follows unless the model is
asked for RCCL's (``NcclModel(..., amd_tables="rccl")``): RCCL's tables choose
its algorithm and protocol but price measured AMD runs worse than these. RCCL's
availability rules (no LL on gfx12, no tree/Simple on one gfx942/gfx950 node,
no PAT) apply either way (:func:`commsim.nccl.rccl.rules`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["ALGORITHMS", "ERAS", "PROTOCOLS", "TuningTable", "parse_version", "table_for"]

ALGORITHMS = ("ring", "tree", "nvls", "nvls_tree", "pat", "p2p", "local_copy")
"""Algorithms the model may choose (``p2p``: grouped sends; ``local_copy``: one rank)."""
PROTOCOLS = ("LL", "LL128", "Simple")
"""NCCL's protocols: LL (8-byte flag+data stores: lowest latency), LL128 (128-byte lines,
~92 % of the bandwidth, NVLink only), Simple (bulk copies: full bandwidth, highest latency)."""


def _row(ll: float, ll128: float, simple: float) -> dict[str, float]:
    return {"LL": ll * 1e-6, "LL128": ll128 * 1e-6, "Simple": simple * 1e-6}


_NONE = _row(0, 0, 0)


@dataclass(frozen=True)
class TuningTable:
    """NCCL's cost table of one era of releases (latencies in seconds, bandwidths in B/s).

    Attributes
    ----------
    name : str
        The first release of the era (``"2.21"``).
    first : tuple of int
        That release as (major, minor).
    base_latency_s : dict
        ``baseLat[algorithm][protocol]``: a fixed cost per call.
    hop_latency_s : dict
        ``hwLat[hop][algorithm][protocol]`` with hop ``"nvlink"``, ``"pcie"``, ``"net"``.
    ring_ll_factor : float or None
        Ring LL bandwidth factor; ``None`` for the older rule (1/4 for
        all-reduce, reduce and multi-node runs, else 1/3).
    ll_max_Bps : dict
        ``llMaxBws``: ceiling on LL bus bandwidth, by GPU generation for one
        node (``"volta"``, ``"ampere"``, ``"hopper"``, ``"blackwell"``) and
        by host CPU for 2 and more nodes (``"intel_2"``, ``"intel_4"``,
        ``"amd_2"``, ``"amd_4"``); empty when the era has none.
    tree_factor : float
        Tree Simple bus bandwidth factor (0.9, later 0.92).
    tree_cap_Bps : dict
        Absolute tree ceilings of the oldest era: ``"near"`` (up to two
        nodes) and ``"far"`` (beyond), and their LL128-on-A100 variants.
    tree_ll128_multi_node : float
        Tree LL128 factor beyond one node (0.915, later 120/128).
    tree_correction : dict
        ``treeCorrectionFactor[protocol]``: NCCL's correction of tree
        bandwidth for 64 B x 2^i sizes (powers of two from 64 B).
    plateau : tuple of float
        Multi-node ring Simple all-reduce latency factor (before Ampere, Ampere and newer).
    inter_steps_per_node : bool
        ``nInterSteps`` of a multi-node all-reduce is ``2 * nNodes`` (else ``2 * (nNodes - 1)``).
    net_overhead_s : float
        Network post overhead, a floor on every ring step of a multi-node run
        (x3 for Simple; 0 when the era has none). Intel hosts; AMD hosts 2x.
    ll_multi_node_intra : float
        Factor on LL intra-node step latency in multi-node runs (1.8 in the oldest era).
    one_gpu_per_node_tree_latency : bool
        With one GPU per node, ring network steps cost the tree's network latency.
    ll128_archs : frozenset of str
        GPU generations with LL128 on by default.
    algorithms : dict
        First release (major, minor) of each algorithm NCCL may choose.
    """

    name: str
    first: tuple[int, int]
    base_latency_s: dict[str, dict[str, float]]
    hop_latency_s: dict[str, dict[str, dict[str, float]]]
    ring_ll_factor: float | None
    ll_max_Bps: dict[str, float]
    tree_factor: float
    tree_ll128_multi_node: float
    tree_correction: dict[str, tuple[float, ...]]
    plateau: tuple[float, float]
    inter_steps_per_node: bool
    net_overhead_s: float
    ll_multi_node_intra: float
    one_gpu_per_node_tree_latency: bool
    ll128_archs: frozenset[str]
    algorithms: dict[str, tuple[int, int]]
    tree_cap_Bps: dict[str, float] = field(default_factory=dict)

    def available(self, algorithm: str, version: tuple[int, int] | None) -> bool:
        """Whether ``algorithm`` exists in ``version`` (the era's newest when None)."""
        first = self.algorithms.get(algorithm)
        return first is not None and (version is None or version >= first)

    def ring_ll(self, all_reduce_like: bool, multi_node: bool) -> float:
        """Ring LL bandwidth factor for a collective."""
        if self.ring_ll_factor is not None:
            return self.ring_ll_factor
        return 1 / 4 if (multi_node or all_reduce_like) else 1 / 3

    def ll_cap(self, nodes: int, arch: str, amd_host: bool = False) -> float:
        """``llMaxBw`` for this run (infinite when the era has none or the generation is not listed)."""
        if not self.ll_max_Bps:
            return float("inf")
        if nodes == 1:
            older = arch in ("kepler", "pascal", "turing")  # NCCL's compCap index 0, as Volta
            key = arch if arch in self.ll_max_Bps else ("volta" if older else arch)
        else:
            key = f"{'amd' if amd_host else 'intel'}_{2 if nodes == 2 else 4}"
        return self.ll_max_Bps.get(key, float("inf"))

    def correction(self, protocol: str, nbytes: float) -> float:
        """NCCL's tree correction for a call of ``nbytes`` (1.0 beyond the table)."""
        factors = self.tree_correction[protocol]
        units = int(nbytes) >> 6
        if units < 1:
            return factors[0]
        index = units.bit_length() - 1  # log2i(nBytes >> 6)
        return factors[index] if index < len(factors) else 1.0


_CORRECTION_22: dict[str, tuple[float, ...]] = {
    "LL": (
        1.0,
        1.0,
        1.0,
        1.0,
        0.9,
        0.8,
        0.7,
        0.7,
        0.7,
        0.7,
        0.6,
        0.5,
        0.4,
        0.4,
        0.5,
        0.6,
        0.7,
        0.8,
        0.9,
        1.0,
        1.0,
        1.0,
    ),
    "LL128": (
        1.0,
        1.0,
        1.0,
        1.0,
        1.0,
        0.9,
        0.8,
        0.8,
        0.8,
        0.7,
        0.6,
        0.6,
        0.6,
        0.5,
        0.6,
        0.6,
        0.7,
        0.7,
        0.8,
        0.9,
        0.9,
        1.0,
    ),
    "Simple": (
        0.9,
        0.9,
        0.9,
        0.9,
        0.9,
        0.9,
        0.9,
        0.8,
        0.7,
        0.6,
        0.6,
        0.5,
        0.5,
        0.5,
        0.5,
        0.5,
        0.5,
        0.6,
        0.6,
        0.7,
        0.8,
        0.9,
    ),
}
_CORRECTION_23: dict[str, tuple[float, ...]] = {
    "LL": (
        1.0,
        1.0,
        1.0,
        1.0,
        0.9,
        0.8,
        0.7,
        0.7,
        0.7,
        0.7,
        0.6,
        0.5,
        0.4,
        0.4,
        0.5,
        0.6,
        0.7,
        0.8,
        0.9,
        1.0,
        1.0,
        1.0,
        1.0,
    ),
    "LL128": (
        1.0,
        1.0,
        1.0,
        1.0,
        1.0,
        0.9,
        0.8,
        0.8,
        0.8,
        0.7,
        0.6,
        0.6,
        0.6,
        0.6,
        0.6,
        0.6,
        0.8,
        0.9,
        0.9,
        0.9,
        0.9,
        1.0,
        1.0,
    ),
    "Simple": (
        0.9,
        0.9,
        0.9,
        0.9,
        0.9,
        0.9,
        0.9,
        0.8,
        0.7,
        0.6,
        0.6,
        0.5,
        0.5,
        0.5,
        0.5,
        0.6,
        0.7,
        0.8,
        0.7,
        0.7,
        0.8,
        0.9,
        0.9,
    ),
}

_ERA_2_4 = TuningTable(
    name="2.4",
    first=(2, 4),
    base_latency_s={
        "tree": _row(4.4, 4.4, 0),
        "ring": _row(3.6, 10.0, 8.4),
        "collnet_direct": _row(4.4, 4.4, 0),
    },
    hop_latency_s={
        "nvlink": {
            "tree": _row(0.52, 1.2, 28),
            "ring": _row(0.47, 1.9, 3.4),
            "collnet_direct": _row(0.5, 1.2, 4),
        },
        "pcie": {
            "tree": _row(1.0, 1.9, 28),
            "ring": _row(1.0, 2.5, 5.7),
            "collnet_direct": _row(1, 1.9, 5.5),
        },
        "net": {"tree": _row(5.0, 8.5, 50), "ring": _row(2.7, 4.0, 9.6), "collnet_direct": _row(5, 5, 10.7)},
    },
    ring_ll_factor=None,
    ll_max_Bps={},
    tree_factor=0.9,
    tree_ll128_multi_node=0.915,
    tree_correction=_CORRECTION_22,
    plateau=(1.9, 1.9),
    inter_steps_per_node=False,
    net_overhead_s=0.0,
    ll_multi_node_intra=1.8,
    one_gpu_per_node_tree_latency=False,
    ll128_archs=frozenset({"volta", "ampere"}),
    algorithms={"ring": (2, 0), "tree": (2, 4), "collnet_direct": (2, 6)},
    tree_cap_Bps={"near": 110e9, "far": 80e9, "near_ll128_a100": 130e9, "far_ll128_a100": 105e9},
)

_ERA_2_12 = TuningTable(
    name="2.12",
    first=(2, 12),
    base_latency_s={
        "tree": _row(6.8, 14.0, 0),
        "ring": _row(6.6, 14.0, 8.4),
        "collnet_direct": _NONE,
        "collnet_chain": _NONE,
        "nvls": _NONE,
        "nvls_tree": _NONE,
    },
    hop_latency_s={
        "nvlink": {
            "tree": _row(0.6, 1.25, 28),
            "ring": _row(0.6, 1.9, 3.4),
            "collnet_direct": _row(0, 0, 3.7),
            "collnet_chain": _row(0, 0, 2.8),
            "nvls": _row(0, 0, 23),
            "nvls_tree": _row(0, 0, 23),
        },
        "pcie": {
            "tree": _row(1.0, 1.9, 28),
            "ring": _row(1.0, 2.5, 5.7),
            "collnet_direct": _row(0, 0, 3.7),
            "collnet_chain": _row(0, 0, 2.8),
            "nvls": _NONE,
            "nvls_tree": _NONE,
        },
        "net": {
            "tree": _row(5.0, 8.5, 28),
            "ring": _row(2.7, 4.0, 14.0),
            "collnet_direct": _row(0, 0, 31),
            "collnet_chain": _row(0, 0, 30),
            "nvls": _row(0, 0, 18),
            "nvls_tree": _row(0, 0, 14),
        },
    },
    ring_ll_factor=None,
    ll_max_Bps={
        "volta": 39.0e9,
        "ampere": 87.7e9,
        "hopper": 87.7e9,
        "intel_2": 39.0e9,
        "intel_4": 20.4e9,
        "amd_2": 22.5e9,
        "amd_4": 19.0e9,
    },
    tree_factor=0.92,
    tree_ll128_multi_node=120 / 128,
    tree_correction=_CORRECTION_23,
    plateau=(1.9, 1.4),
    inter_steps_per_node=True,
    net_overhead_s=1e-6,
    ll_multi_node_intra=1.0,
    one_gpu_per_node_tree_latency=False,
    ll128_archs=frozenset({"volta", "ampere", "hopper"}),
    algorithms={
        "ring": (2, 0),
        "tree": (2, 4),
        "collnet_direct": (2, 6),
        "collnet_chain": (2, 14),
        "nvls": (2, 17),
        "nvls_tree": (2, 18),
    },
)

_ERA_2_21 = TuningTable(
    name="2.21",
    first=(2, 21),
    base_latency_s={**_ERA_2_12.base_latency_s, "tree": _row(6.8, 14.0, 8.4), "pat": _NONE},
    hop_latency_s={
        "nvlink": {
            **_ERA_2_12.hop_latency_s["nvlink"],
            "tree": _row(0.6, 1.25, 4.0),
            "nvls": _row(0, 0, 25),
            "nvls_tree": _row(0, 0, 25),
        },
        "pcie": {**_ERA_2_12.hop_latency_s["pcie"], "tree": _row(1.0, 1.9, 4.0)},
        "net": {**_ERA_2_12.hop_latency_s["net"], "tree": _row(5.0, 8.5, 14)},
    },
    ring_ll_factor=0.5,
    ll_max_Bps={
        "volta": 39.0e9,
        "ampere": 87.7e9,
        "hopper": 141.0e9,
        "blackwell": 282.0e9,
        "intel_2": 39.0e9,
        "intel_4": 20.4e9,
        "amd_2": 45.0e9,
        "amd_4": 35.0e9,
    },
    tree_factor=0.92,
    tree_ll128_multi_node=120 / 128,
    tree_correction=_CORRECTION_23,
    plateau=(1.9, 1.4),
    inter_steps_per_node=False,
    net_overhead_s=1e-6,
    ll_multi_node_intra=1.0,
    one_gpu_per_node_tree_latency=True,
    ll128_archs=frozenset({"volta", "ampere", "hopper", "blackwell"}),
    algorithms={**_ERA_2_12.algorithms, "pat": (2, 23)},
)

ERAS: tuple[TuningTable, ...] = (_ERA_2_4, _ERA_2_12, _ERA_2_21)
"""The tables, oldest first."""

_VERSION = re.compile(r"^\s*v?(\d+)\.(\d+)")


def parse_version(version: str | None) -> tuple[int, int] | None:
    """``"2.22.3+cuda12.6"`` -> ``(2, 22)``; None when absent or not a version."""
    match = _VERSION.match(version or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def table_for(version: str | None) -> TuningTable:
    """The table NCCL ``version`` uses (the newest era when the version is unknown).

    Releases before 2.4 (no tree) are modelled with the 2.4 table.
    """
    parsed = parse_version(version)
    if parsed is None:
        return ERAS[-1]
    chosen = ERAS[0]
    for era in ERAS:
        if parsed >= era.first:
            chosen = era
    return chosen
