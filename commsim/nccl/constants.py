"""Figures of NCCL's own cost model, restated as facts with their source.

All from NCCL's public ``src/graph/tuning.cc`` (2.1x-2.2x releases):
``baseLat`` (a fixed cost per algorithm and protocol), ``hwLat`` (a cost per
ring or tree step, by the kind of hop: NVLink, PCIe or network), and the
bandwidth factors NCCL applies to each protocol. Times are in seconds here.
"""

from __future__ import annotations

__all__ = [
    "ALGORITHMS",
    "LL128_FACTOR",
    "LL_FACTOR_ALLREDUCE",
    "LL_FACTOR_OTHER",
    "PROTOCOLS",
    "TREE_FACTOR",
    "TREE_LL128_FACTOR",
    "TREE_LL_FACTOR",
    "BASE_LATENCY_s",
    "HOP_LATENCY_s",
]

PROTOCOLS = ("LL", "LL128", "Simple")
"""NCCL's protocols: LL (8-byte flag+data stores: lowest latency, a quarter of
the bandwidth), LL128 (128-byte lines, ~92 % of the bandwidth, NVLink only),
Simple (bulk copies: full bandwidth, highest latency)."""

ALGORITHMS = ("ring", "tree", "nvls", "nvls_tree")
"""NCCL algorithms modelled here."""

_US = 1e-6

BASE_LATENCY_s: dict[str, dict[str, float]] = {
    "tree": {"LL": 6.8 * _US, "LL128": 14.0 * _US, "Simple": 8.4 * _US},
    "ring": {"LL": 6.6 * _US, "LL128": 14.0 * _US, "Simple": 8.4 * _US},
    "nvls": {"LL": 0.0, "LL128": 0.0, "Simple": 23.0 * _US},
    "nvls_tree": {"LL": 0.0, "LL128": 0.0, "Simple": 23.0 * _US},
}
"""``baseLat``: fixed cost of one collective call, per algorithm and protocol."""

HOP_LATENCY_s: dict[str, dict[str, dict[str, float]]] = {
    "nvlink": {
        "tree": {"LL": 0.6 * _US, "LL128": 1.25 * _US, "Simple": 4.0 * _US},
        "ring": {"LL": 0.6 * _US, "LL128": 1.9 * _US, "Simple": 3.4 * _US},
        "nvls": {"LL": 0.0, "LL128": 0.0, "Simple": 25.0 * _US},
        "nvls_tree": {"LL": 0.0, "LL128": 0.0, "Simple": 25.0 * _US},
    },
    "pcie": {
        "tree": {"LL": 1.0 * _US, "LL128": 1.9 * _US, "Simple": 4.0 * _US},
        "ring": {"LL": 1.0 * _US, "LL128": 2.5 * _US, "Simple": 5.7 * _US},
        "nvls": {"LL": 0.0, "LL128": 0.0, "Simple": 0.0},
        "nvls_tree": {"LL": 0.0, "LL128": 0.0, "Simple": 0.0},
    },
    "net": {
        "tree": {"LL": 5.0 * _US, "LL128": 8.5 * _US, "Simple": 14.0 * _US},
        "ring": {"LL": 2.7 * _US, "LL128": 4.0 * _US, "Simple": 14.0 * _US},
        "nvls": {"LL": 0.0, "LL128": 0.0, "Simple": 0.0},
        "nvls_tree": {"LL": 0.0, "LL128": 0.0, "Simple": 25.0 * _US},
    },
}
"""``hwLat``: cost of one step, by hop kind, algorithm and protocol."""

LL_FACTOR_ALLREDUCE = 1 / 4
"""Ring LL bandwidth factor for all-reduce, reduce and multi-node runs."""
LL_FACTOR_OTHER = 1 / 3
"""Ring LL bandwidth factor for the other single-node collectives."""
LL128_FACTOR = 0.92
"""Ring LL128 bandwidth factor (120 of 128 bytes carry data)."""
TREE_FACTOR = 0.9
"""Tree Simple bandwidth factor."""
TREE_LL_FACTOR = 1 / 3.8
"""Tree LL bandwidth factor (on top of TREE_FACTOR)."""
TREE_LL128_FACTOR = 7 / 9
"""Tree LL128 bandwidth factor (on top of TREE_FACTOR)."""
