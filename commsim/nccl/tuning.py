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

from commsim.nccl.tuning_table import ALGORITHMS, OLDEST_MODELLED, PROTOCOLS, TuningTable, parse_version

__all__ = [
    "ALGORITHMS",
    "ERAS",
    "PROTOCOLS",
    "TuningTable",
    "parse_version",
    "table_for",
]


def _row(ll: float, ll128: float, simple: float) -> dict[str, float]:
    return {"LL": ll * 1e-6, "LL128": ll128 * 1e-6, "Simple": simple * 1e-6}


_NONE = _row(0, 0, 0)


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
    first=OLDEST_MODELLED,
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
