"""The shape of NCCL's cost table (:class:`TuningTable`) and the names it is keyed by.

The tables themselves, one per era of releases, are in :mod:`commsim.nccl.tuning`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = [
    "ALGORITHMS",
    "NEWEST_MODELLED",
    "OLDEST_MODELLED",
    "PROTOCOLS",
    "TuningTable",
    "modelled_range",
    "parse_version",
    "release_problem",
    "since",
    "version_note",
]


OLDEST_MODELLED = (2, 4)
"""The oldest NCCL release whose tables the model restates (NCCL's first with trees)."""

NEWEST_MODELLED = (2, 28)
"""The newest NCCL release whose tables and algorithm rules the model restates."""

_VERSION = re.compile(r"^\s*v?(\d+)\.(\d+)")


def parse_version(version: str | None) -> tuple[int, int] | None:
    """``"2.22.3+cuda12.6"`` -> ``(2, 22)``; None when absent or not a version."""
    match = _VERSION.match(version or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def modelled_range() -> tuple[str, str]:
    """The oldest and newest releases modelled, as NCCL numbers them: ``("2.4", "2.28")``."""
    return ".".join(map(str, OLDEST_MODELLED)), ".".join(map(str, NEWEST_MODELLED))


def release_problem(version: str) -> str | None:
    """Why ``version`` is not an NCCL release commsim can model (None if it is one): a release is
    written MAJOR.MINOR or MAJOR.MINOR.PATCH, maybe with the build NCCL prints after it
    (``2.21.5+cuda12.4``), and nccl-tests runs on NCCL 2."""
    match = re.fullmatch(r"(\d+)\.(\d+)(\.\d+)?(\+[\w.]+)?", version.strip())
    if match is None or int(match.group(1)) != 2:
        oldest, newest = modelled_range()
        return (
            f"{version!r} should be an NCCL 2 release like 2.21 or 2.26.2 (MAJOR.MINOR or "
            f"MAJOR.MINOR.PATCH; commsim models {oldest} to {newest})"
        )
    return None


def version_note(version: str | None) -> str | None:
    """What the model does with a release outside those it restates (:data:`OLDEST_MODELLED` to
    :data:`NEWEST_MODELLED`), or None inside them. Releases before 2.4 (no tree) are priced with
    2.4's table; later ones than the newest with the newest's tables and algorithms, which NCCL may
    have changed since."""
    parsed = parse_version(version)
    if parsed is None:
        return None
    oldest, newest = modelled_range()
    if parsed < OLDEST_MODELLED:
        return (
            f"older than the first release modelled ({oldest}, NCCL's first with trees): priced with "
            f"{oldest}'s table"
        )
    if parsed > NEWEST_MODELLED:
        return (
            f"newer than the newest release modelled ({newest}): priced with {newest}'s tables and "
            "algorithms, which later releases may have changed"
        )
    return None


def since(version: tuple[int, int] | None, first: tuple[int, int]) -> bool:
    """Whether NCCL ``version`` (major, minor; None: the newest modelled) is ``first`` or later."""
    return version is None or version >= first


ALGORITHMS = ("ring", "tree", "nvls", "nvls_tree", "pat", "p2p", "local_copy")
"""Algorithms the model may choose (``p2p``: grouped sends; ``local_copy``: one rank)."""
PROTOCOLS = ("LL", "LL128", "Simple")
"""NCCL's protocols: LL (8-byte flag+data stores: lowest latency), LL128 (128-byte lines,
~92 % of the bandwidth, NVLink only), Simple (bulk copies: full bandwidth, highest latency)."""


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
        return first is not None and since(version, first)

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
