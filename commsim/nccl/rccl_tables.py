"""RCCL's own cost tables (AMD GPUs), restated from the release they come from.

RCCL, AMD's port of NCCL, keeps NCCL's cost model (a latency per algorithm
and protocol from ``baseLat`` plus ``hwLat`` per step, a bus bandwidth scaled
per protocol, a correction for the size) but replaces NVIDIA's figures with
its own, in ``src/graph/tuning.cc`` of ROCm/rccl:

- ``baseLat``: 12 us for LL and LL128 and 17 us for Simple, for ring and tree
  alike (NVIDIA's ring LL is 6.6 us);
- ``rcclTuningModel[]``: one ``tuningModel`` per machine family, each with its
  own ``hwLat[hop][algorithm][protocol]``, a ``bwRatio`` per protocol in place
  of NVIDIA's protocol factors and ``llMaxBw`` ceilings (one set for up to two
  nodes, one beyond), and its own 27-entry ``treeCorrectionFactor`` and
  ``ringCorrectionFactor`` (64 B x 2^i; the ring's only across nodes); no
  "plateau" factor. The model is picked per machine by the Rome model that
  matches the topology (``src/graph/rome_models.cc``: the option string's
  ``tuning=N``): the 8 x MI300X box (``rome_model_79``, single node) and its
  8-NIC variant (``rome_model_81``) say ``tuning=5``; a gfx950 machine is
  forced to 6 (``system->tuning = 6`` when a Rome model matches a gfx950
  GPU); a machine no Rome model matches keeps model 0 (the topology system is
  zero-initialised and no other assignment exists in the source read).

Two snapshots of the file cover the releases in use:

``2.18`` (RCCL 2.18 to 2.23, ROCm 6.0 to 6.4)
    The stored ROCm/rccl ``src/graph/tuning.cc`` with six tuning models
    (``tuning_model_0`` .. ``_5``; no gfx950, no PAT; the index exposes no
    commit for it). Model 5 has no LL128 (its LL128 entries are 0);
    ``nInterSteps = 2 * nNodes`` for a multi-node all-reduce; a network step
    costs the graph's inter-node latency instead of ``hwLat[NET]`` when the
    graph has one; tree/Simple is skipped on a single ``gfx94x`` node; LL128
    only on gfx90a.
``2.24`` (RCCL 2.24 and newer, ROCm 6.5 / 7.x)
    ROCm/rccl commit ``9e22c79d8dccb80075967c2a03f1a921c253c867``: seven
    tuning models (``tuning_model_6`` for gfx950, the CHANGELOG's "Added new
    GPU target gfx950" of 2.24.3 / 2.25.1), LL128 figures for models 5 and 6,
    ``nInterSteps = 2 * (nNodes - 1)``, ``hwLat[NET]`` plus the graph's
    inter-node latency (the tree's row with one GPU per node), tree/Simple
    skipped on a single gfx942 or gfx950 node, LL128 possible on gfx90a,
    gfx942 and gfx950 when the Rome model sets ``ll128Enabled``.

The boundary between the two snapshots is placed at 2.24, the first release
whose CHANGELOG lists gfx950 and the per-model LL ranges; a release between
2.22.3 and 2.24 may already carry parts of the newer file.
"""

from __future__ import annotations

from dataclasses import dataclass

from commsim.nccl.tuning import parse_version

__all__ = ["RCCL_ERAS", "RcclModel", "RcclTable", "rccl_table_for"]


def _us(ll: float, ll128: float, simple: float) -> dict[str, float]:
    return {"LL": ll * 1e-6, "LL128": ll128 * 1e-6, "Simple": simple * 1e-6}


def _ratio(ll: float, ll128: float, simple: float) -> dict[str, float]:
    return {"LL": ll, "LL128": ll128, "Simple": simple}


def _factors(text: str) -> tuple[float, ...]:
    """27 factors written as in the source, with ``vxk`` for k repeats of v (``"0.1x6 1.0"``)."""
    out: list[float] = []
    for word in text.split():
        value, _, count = word.partition("x")
        out.extend([float(value)] * int(count or 1))
    if len(out) != 27:
        raise ValueError(f"a correction row has 27 entries (64 B x 2^0 .. 2^26), got {len(out)}: {text!r}")
    return tuple(out)


@dataclass(frozen=True)
class RcclModel:
    """One ``tuningModel`` of RCCL's ``rcclTuningModel[]`` (latencies in seconds).

    Attributes
    ----------
    index : int
        Its index in ``rcclTuningModel[]`` (the Rome model's ``tuning=N``).
    hop_latency_s : dict
        ``hwLat[hop][algorithm][protocol]``, hop ``"nvlink"`` (xGMI counts as
        NVLink in RCCL's topology), ``"pcie"``, ``"net"``; algorithm ``"tree"``, ``"ring"``.
    bw_ratio : dict
        ``bwRatio``: ``"near"`` (up to two nodes) and ``"far"`` (beyond), then
        algorithm, then protocol; a factor on the bus bandwidth; 0 disables the pair.
    tree_correction, ring_correction : dict
        ``treeCorrectionFactor`` / ``ringCorrectionFactor`` per protocol, 27
        factors on the bandwidth for 64 B x 2^i (``log2i(nBytes >> 6)``, the
        last entry beyond). The ring's applies only across nodes.
    """

    index: int
    hop_latency_s: dict[str, dict[str, dict[str, float]]]
    bw_ratio: dict[str, dict[str, dict[str, float]]]
    tree_correction: dict[str, tuple[float, ...]]
    ring_correction: dict[str, tuple[float, ...]]

    def correction(self, algorithm: str, protocol: str, nbytes: float) -> float:
        """RCCL's size correction of ``algorithm``'s bandwidth for a call of ``nbytes``."""
        factors = (self.tree_correction if algorithm == "tree" else self.ring_correction)[protocol]
        units = int(nbytes) >> 6
        index = units.bit_length() - 1 if units >= 1 else 0  # log2i(nBytes >> 6)
        return factors[min(index, len(factors) - 1)]


@dataclass(frozen=True)
class RcclTable:
    """RCCL's tables of one snapshot of ``tuning.cc`` (see the module docstring).

    Attributes
    ----------
    name : str
        The first release the snapshot stands for (``"2.24"``).
    first : tuple of int
        That release as (major, minor).
    base_latency_s : dict
        ``baseLat[algorithm][protocol]`` for ``"tree"`` and ``"ring"``.
    models : dict
        The tuning models by index (those this project's machines select: 0, 5, 6).
    tree_simple_single_node_off : frozenset of str
        GPU generations whose tree/Simple RCCL skips on a single node.
    broadcast_ll_boost : frozenset of str
        GPU generations whose single-node ring LL broadcast and reduce bandwidth RCCL multiplies by 1.65.
    ll128_archs : frozenset of str
        GPU generations with LL128 when the Rome model sets ``ll128Enabled``.
    inter_steps_per_node : bool
        ``nInterSteps`` of a multi-node all-reduce is ``2 * nNodes`` (else ``2 * (nNodes - 1)``).
    route_replaces_net_latency : bool
        A network step costs the graph's inter-node latency instead of
        ``hwLat[NET]`` when there is one (else ``hwLat[NET]`` plus it).
    one_gpu_per_node_tree_latency : bool
        With one GPU per node a ring network step costs the tree's ``hwLat[NET]``.
    """

    name: str
    first: tuple[int, int]
    base_latency_s: dict[str, dict[str, float]]
    models: dict[int, RcclModel]
    tree_simple_single_node_off: frozenset[str]
    broadcast_ll_boost: frozenset[str]
    ll128_archs: frozenset[str]
    inter_steps_per_node: bool
    route_replaces_net_latency: bool
    one_gpu_per_node_tree_latency: bool

    def model_for(self, arch: str) -> RcclModel:
        """The tuning model RCCL picks for a machine of GPU generation ``arch``.

        gfx942 (``cdna3``: MI300X, MI325X): 5, the MI300X Rome models'
        ``tuning=5``; gfx950 (``cdna4``: MI350X, MI355X): 6 from 2.24 (before
        gfx950 was supported: 5); any other: 0, RCCL's default when no Rome
        model sets one.
        """
        if arch == "cdna4" and 6 in self.models:
            return self.models[6]
        if arch in ("cdna3", "cdna4"):
            return self.models[5]
        return self.models[0]


BASE_LATENCY_s = {"tree": _us(12.0, 12.0, 17.0), "ring": _us(12.0, 12.0, 17.0)}
"""``baseLat`` (us) of both snapshots: ``{ 12.0, 12.0, 17.0 }`` for tree and ring."""

_PCIE = {"tree": _us(2.2, 2.2, 5.7), "ring": _us(2.2, 2.2, 5.7)}

MODEL_0 = RcclModel(
    index=0,
    hop_latency_s={
        "nvlink": {"tree": _us(0.8, 1.4, 2.5), "ring": _us(0.8, 2.2, 3.6)},
        "pcie": _PCIE,
        "net": {"tree": _us(11.8, 18.2, 20.8), "ring": _us(9.5, 19.8, 15.1)},
    },
    bw_ratio={
        "near": {"tree": _ratio(0.04, 0.22, 0.91), "ring": _ratio(0.04, 0.34, 1.00)},
        "far": {"tree": _ratio(0.04, 0.22, 0.95), "ring": _ratio(0.04, 0.34, 1.00)},
    },
    tree_correction={
        "LL": _factors("0.1 0.2 0.1 0.1 0.9 0.3 0.4 0.1 0.2 0.4 0.2 0.1 0.3 0.3 0.2 0.2 0.2 0.1x10"),
        "LL128": _factors(
            "0.1 0.3 1.0 0.1 0.5 1.0 0.9 1.0 1.0 1.0 0.3 0.1 0.4 0.5 0.5 0.4 0.4 0.3 0.3 0.2x8"
        ),
        "Simple": _factors("0.2 1.0 0.1 0.1 0.7 0.2 0.4 0.1 0.1 0.3 0.4 0.3 0.6 0.8 1.0x4 0.9 0.8x5 0.9x3"),
    },
    ring_correction={
        "LL": _factors("0.1x5 0.2 0.4 0.2 0.3 0.5 0.3 0.1 0.5 0.5 0.3 0.2 0.2 0.1x10"),
        "LL128": _factors("0.1x9 0.3 1.0x6 0.8 0.7 0.5 0.4 0.4 0.3x6"),
        "Simple": _factors("1.0 0.8 0.2 1.0 1.0 0.3 1.0 0.1 0.1 0.2 0.2 0.1 0.5 1.0 0.8 0.8 1.0 0.9 1.0x9"),
    },
)
"""``tuning_model_0`` (identical in both snapshots): machines no Rome model tunes."""

_MODEL_5_LL_TREE = "0.1x6 1.0x5 0.6 1.0 0.9 1.0 1.0 0.1x11"
_MODEL_5_LL_RING = "0.1x11 1.0 0.2 1.0 0.4 0.4 0.1 0.2 0.2 0.1x8"

MODEL_5_2_18 = RcclModel(
    index=5,
    hop_latency_s={
        "nvlink": {"tree": _us(0.9, 0.0, 2.3), "ring": _us(0.8, 0.0, 2.1)},
        "pcie": _PCIE,
        "net": {"tree": _us(10.5, 0.0, 25.0), "ring": _us(9.5, 0.0, 320.0)},
    },
    bw_ratio={
        "near": {"tree": _ratio(0.06, 0.0, 0.11), "ring": _ratio(0.08, 0.0, 1.00)},
        "far": {"tree": _ratio(0.06, 0.0, 0.59), "ring": _ratio(0.08, 0.0, 1.00)},
    },
    tree_correction={
        "LL": _factors(_MODEL_5_LL_TREE),
        "LL128": _factors("0.0x27"),
        "Simple": _factors("0.1x15 0.7 1.0x10 0.8"),
    },
    ring_correction={
        "LL": _factors(_MODEL_5_LL_RING),
        "LL128": _factors("0.0x27"),
        "Simple": _factors("0.1x23 0.8 1.0x3"),
    },
)
"""``tuning_model_5`` of the 2.18 snapshot (MI300X, gfx942): no LL128."""

MODEL_5 = RcclModel(
    index=5,
    hop_latency_s={
        "nvlink": {"tree": _us(0.9, 0.9, 2.3), "ring": _us(0.8, 0.8, 2.1)},
        "pcie": _PCIE,
        "net": {"tree": _us(10.5, 10.5, 25.0), "ring": _us(9.5, 9.5, 320.0)},
    },
    bw_ratio={
        "near": {"tree": _ratio(0.06, 0.06, 0.11), "ring": _ratio(0.08, 0.08, 1.00)},
        "far": {"tree": _ratio(0.06, 0.06, 0.59), "ring": _ratio(0.08, 0.08, 1.00)},
    },
    tree_correction={
        "LL": _factors(_MODEL_5_LL_TREE),
        "LL128": _factors(_MODEL_5_LL_TREE),
        "Simple": _factors("0.1x15 0.7 1.0x5 0.7 0.7 0.5 0.6 0.6 0.6"),
    },
    ring_correction={
        "LL": _factors(_MODEL_5_LL_RING),
        "LL128": _factors(_MODEL_5_LL_RING),
        "Simple": _factors("0.1x22 1.0 0.8 1.0x3"),
    },
)
"""``tuning_model_5`` at commit 9e22c79d (MI300X, gfx942): LL128 as LL."""

MODEL_6 = RcclModel(
    index=6,
    hop_latency_s=MODEL_5.hop_latency_s,
    bw_ratio=MODEL_5.bw_ratio,
    tree_correction={
        "LL": _factors(_MODEL_5_LL_TREE),
        "LL128": _factors("0.1x6 1.0x5 0.6 1.0 0.9 1.0x5 2.0 0.1x7"),
        "Simple": _factors("0.1x15 0.7 1.0 0.1 0.1 0.1 0.9 0.9 0.7 0.8 0.6 0.6 0.6"),
    },
    ring_correction={
        "LL": _factors(_MODEL_5_LL_RING),
        "LL128": _factors("0.1x11 1.0 0.2 1.0 0.4 0.4 0.1 0.2 0.1x9"),
        "Simple": _factors("0.1x22 1.0 0.8 0.8 1.0 1.0"),
    },
)
"""``tuning_model_6`` at commit 9e22c79d (MI350X / MI355X, gfx950): model 5's latencies and ratios,
its own corrections."""

RCCL_2_18 = RcclTable(
    name="2.18",
    first=(2, 18),
    base_latency_s=BASE_LATENCY_s,
    models={0: MODEL_0, 5: MODEL_5_2_18},
    tree_simple_single_node_off=frozenset({"cdna3"}),
    broadcast_ll_boost=frozenset({"cdna3"}),
    ll128_archs=frozenset({"cdna2"}),
    inter_steps_per_node=True,
    route_replaces_net_latency=True,
    one_gpu_per_node_tree_latency=False,
)

RCCL_2_24 = RcclTable(
    name="2.24",
    first=(2, 24),
    base_latency_s=BASE_LATENCY_s,
    models={0: MODEL_0, 5: MODEL_5, 6: MODEL_6},
    tree_simple_single_node_off=frozenset({"cdna3", "cdna4"}),
    broadcast_ll_boost=frozenset({"cdna3", "cdna4"}),
    ll128_archs=frozenset({"cdna2", "cdna3", "cdna4"}),
    inter_steps_per_node=False,
    route_replaces_net_latency=False,
    one_gpu_per_node_tree_latency=True,
)

RCCL_ERAS: tuple[RcclTable, ...] = (RCCL_2_18, RCCL_2_24)
"""RCCL's tables, oldest first."""


def rccl_table_for(version: str | None) -> RcclTable:
    """The table RCCL ``version`` uses (the newest when the version is unknown).

    Releases before 2.18 are modelled with the 2.18 snapshot (their tuning
    models predate MI300X).
    """
    parsed = parse_version(version)
    if parsed is None:
        return RCCL_ERAS[-1]
    return RCCL_2_24 if parsed >= RCCL_2_24.first else RCCL_2_18
