"""RCCL's own cost tables (commsim.nccl.rccl_tables) and the AMD candidates priced with them."""

from __future__ import annotations

import pytest

from commsim.algorithms import Problem
from commsim.collectives import Collective
from commsim.errors import UnknownNameError
from commsim.nccl.model import NcclModel
from commsim.nccl.rccl_tables import (
    MODEL_0,
    MODEL_5,
    MODEL_5_2_18,
    MODEL_6,
    RCCL_2_18,
    RCCL_2_24,
    RcclTable,
    _factors,
    rccl_table_for,
)
from commsim.topology import get_topology
from commsim.topology.machines.amd import xgmi_box
from commsim.topology.machines.pcie import pcie_box
from commsim.topology.model import Topology

US = 1e-6


@pytest.mark.parametrize(
    ("version", "era"),
    [
        (None, "2.24"),
        ("2.27.7", "2.24"),
        ("2.32.3-develop", "2.24"),
        ("2.24.3", "2.24"),
        ("2.22.3", "2.18"),
        ("2.20.5", "2.18"),
        ("2.17.1", "2.18"),
    ],
)
def test_table_chosen_by_rccl_version(version: str | None, era: str) -> None:
    """RCCL 2.24 (gfx950, per-model LL ranges) and newer take commit 9e22c79d's tables; older the
    six-model snapshot; an unknown version the newest, as for NCCL."""
    assert rccl_table_for(version).name == era


@pytest.mark.parametrize(
    ("table", "arch", "index"),
    [
        (RCCL_2_24, "cdna3", 5),  # MI300X / MI325X: rome_model_79 and _81 say tuning=5
        (RCCL_2_24, "cdna4", 6),  # gfx950: system->tuning = 6
        (RCCL_2_24, "cdna2", 0),  # MI250X without a Rome model: the zero default
        (RCCL_2_24, "rdna4", 0),
        (RCCL_2_18, "cdna4", 5),  # no model 6 before gfx950 was supported
        (RCCL_2_18, "cdna3", 5),
    ],
)
def test_tuning_model_chosen_by_gpu_generation(table: RcclTable, arch: str, index: int) -> None:
    assert table.model_for(arch).index == index


def test_figures_as_in_rccl_tuning_cc() -> None:
    """ROCm/rccl src/graph/tuning.cc (commit 9e22c79d and the six-model snapshot):
    baseLat { 12.0, 12.0, 17.0 } us for tree and ring; tuning_model_5 hwLat NVLINK ring {0.8, 0.8, 2.1},
    tree {0.9, 0.9, 2.3}, NET ring Simple 320.0; bwRatio (2 nodes) ring {0.08, 0.08, 1.00}, tree
    {0.06, 0.06, 0.11}, (more) tree Simple 0.59; the six-model snapshot's model 5 has LL128 0;
    tuning_model_0 NET tree {11.8, 18.2, 20.8}, bwRatio ring LL 0.04."""
    assert RCCL_2_24.base_latency_s["ring"] == {"LL": 12 * US, "LL128": 12 * US, "Simple": 17 * US}
    assert RCCL_2_18.base_latency_s["tree"]["Simple"] == 17 * US
    assert MODEL_5.hop_latency_s["nvlink"]["ring"] == {"LL": 0.8 * US, "LL128": 0.8 * US, "Simple": 2.1 * US}
    assert MODEL_5.hop_latency_s["nvlink"]["tree"]["Simple"] == 2.3 * US
    assert MODEL_5.hop_latency_s["net"]["ring"]["Simple"] == 320 * US
    assert MODEL_5.bw_ratio["near"]["ring"] == {"LL": 0.08, "LL128": 0.08, "Simple": 1.0}
    assert MODEL_5.bw_ratio["near"]["tree"]["Simple"] == 0.11
    assert MODEL_5.bw_ratio["far"]["tree"]["Simple"] == 0.59
    assert MODEL_5_2_18.bw_ratio["near"]["ring"]["LL128"] == 0.0
    assert MODEL_0.hop_latency_s["net"]["tree"] == {"LL": 11.8 * US, "LL128": 18.2 * US, "Simple": 20.8 * US}
    assert MODEL_0.bw_ratio["far"]["ring"]["LL"] == 0.04
    assert MODEL_6.hop_latency_s == MODEL_5.hop_latency_s


def test_size_correction_indexed_by_log2_of_64_byte_units() -> None:
    """log2i(nBytes >> 6), the last of the 27 entries beyond: model 5's tree Simple row is 0.1 x 15,
    0.7, 1.0 x 5, 0.7, 0.7, 0.5, 0.6 x 3, so 64 B x 2^15 (2 MiB) -> 0.7, 2^16 -> 1.0, 2^30 -> 0.6;
    under 64 B the first entry."""
    assert MODEL_5.correction("tree", "Simple", 64 * 2**15) == 0.7
    assert MODEL_5.correction("tree", "Simple", 64 * 2**16 + 5) == 1.0
    assert MODEL_5.correction("tree", "Simple", 64 * 2**30) == 0.6
    assert MODEL_5.correction("tree", "Simple", 8) == 0.1
    assert MODEL_6.correction("tree", "LL128", 64 * 2**19) == 2.0  # model 6's outlier, as in the source


def test_a_correction_row_must_have_27_entries() -> None:
    with pytest.raises(ValueError, match="27 entries"):
        _factors("0.1x26")


def _all_reduce(topology: Topology, nbytes: float) -> Problem:
    return Problem(topology, tuple(topology.gpus), Collective.ALL_REDUCE, nbytes)


def test_mi300x_small_all_reduce_with_rccls_tables() -> None:
    """8 x MI300X, 1 KiB all-reduce, RCCL 2.27: ring LL latency 12 + 14 x 0.8 = 23.2 us; bandwidth the
    box's 7 x 48 = 336 GB/s x bwRatio 0.08 x 8/14 = 15.36 GB/s; tree/Simple absent on one gfx942 node;
    tree LL 12 + 2 x 7 x 0.9 = 24.6 us. NVIDIA's 2.21 table (ring LL 6.6 + 14 x 0.6 = 15.0 us) differs."""
    box = get_topology("xgmi_box")
    rccl = NcclModel.of(box, version="2.27.7", amd_tables="rccl").predict(_all_reduce(box, 1024))
    nccl = NcclModel.of(box, version="2.27.7").predict(_all_reduce(box, 1024))
    by_pair = {(c.algorithm, c.protocol): c for c in rccl.candidates}
    assert set(by_pair) == {("ring", "LL"), ("ring", "Simple"), ("tree", "LL")}
    assert (rccl.chosen.algorithm, rccl.chosen.protocol) == ("ring", "LL")
    assert rccl.chosen.latency_s == pytest.approx(23.2 * US, rel=1e-12)
    assert rccl.chosen.algbw_Bps == pytest.approx(336e9 * 0.08 * 8 / 14, rel=1e-12)
    assert by_pair["tree", "LL"].latency_s == pytest.approx(24.6 * US, rel=1e-12)
    assert nccl.chosen.latency_s == pytest.approx(15.0 * US, rel=1e-12)


def test_two_mi300x_nodes_with_rccls_tables() -> None:
    """2 x 8 MI300X over RoCE, RCCL 2.27 (model 5, ll128Enabled as rome_model_81): ring LL latency
    12 + 28 x max(0.8, 1.0 net overhead) + 2 x (9.5 + route) us, 2 x (nodes - 1) network steps; the
    2.20 tables take 2 x nodes network steps priced at the route's latency alone (it replaces hwLat[NET])."""
    two = get_topology("cluster", box=xgmi_box(), nodes=2)
    new = NcclModel.of(two, version="2.27.7", amd_tables="rccl")
    old = NcclModel.of(two, version="2.20.5", amd_tables="rccl")
    route = new.bandwidths(tuple(two.gpus), Collective.ALL_REDUCE)[1].net_latency_s
    assert route > 0
    pairs = {(c.algorithm, c.protocol): c for c in new.predict(_all_reduce(two, 1024)).candidates}
    assert ("ring", "LL128") in pairs and ("tree", "Simple") in pairs
    assert pairs["ring", "LL"].latency_s == pytest.approx(12 * US + 28 * US + 2 * (9.5 * US + route))
    old_pairs = {(c.algorithm, c.protocol): c for c in old.predict(_all_reduce(two, 1024)).candidates}
    assert ("ring", "LL128") not in old_pairs  # model 5 of the six-model snapshot: LL128 ratio 0
    assert old_pairs["ring", "LL"].latency_s == pytest.approx(12 * US + 26 * US + 4 * route)


def test_nvidia_predictions_do_not_depend_on_the_amd_tables() -> None:
    """An H100 box is priced with NVIDIA's tables whichever tables AMD GPUs get."""
    box = get_topology("hgx_h100")
    for size in (8.0, 65536.0, 2.0**30):
        nccl = NcclModel.of(box, amd_tables="nccl").predict(_all_reduce(box, size))
        rccl = NcclModel.of(box, amd_tables="rccl").predict(_all_reduce(box, size))
        assert nccl.candidates == rccl.candidates


def test_amd_default_stays_on_nvidias_tables() -> None:
    """Without amd_tables="rccl" an 8 x MI300X box keeps NVIDIA's 2.21 figures: ring LL latency
    6.6 + 14 x 0.6 = 15.0 us and bandwidth 336 GB/s x 1/2 x 8/14 (no llMaxBw for an AMD generation)."""
    box = get_topology("xgmi_box")
    chosen = NcclModel.of(box).predict(_all_reduce(box, 1024)).chosen
    assert (chosen.algorithm, chosen.protocol) == ("ring", "LL")
    assert chosen.latency_s == pytest.approx(15.0 * US, rel=1e-12)
    assert chosen.algbw_Bps == pytest.approx(336e9 * 0.5 * 8 / 14, rel=1e-12)


def test_unknown_amd_tables_name_is_refused() -> None:
    with pytest.raises(UnknownNameError, match="nccl, rccl"):
        NcclModel.of(get_topology("xgmi_box"), amd_tables="hip")


def _one_gpu_per_node(gpu_model: str, nodes: int, collective: Collective) -> Problem:
    """A 1 MiB call over the first GPU of each of ``nodes`` two-GPU PCIe boxes of ``gpu_model``."""
    topology = get_topology("cluster", box=pcie_box(gpus=2, gpu_model=gpu_model), nodes=nodes)
    firsts: dict[int, str] = {}
    for gpu in topology.gpus:
        firsts.setdefault(topology.device(gpu).box, gpu)
    return Problem(topology, tuple(firsts.values()), collective, 2.0**20)


def _pairs(model: NcclModel, problem: Problem) -> set[tuple[str, str]]:
    return {(c.algorithm, c.protocol) for c in model.predict(problem).candidates}


def test_rccl_rules_apply_to_amd_gpus_on_nvidias_tables() -> None:
    """RCCL's availability rules hold whatever the tables: no LL on gfx12 (Radeon AI PRO R9700,
    "Disable LL protocol on gfx12xx"), no tree/Simple on a single gfx942 node; NVIDIA keeps both."""
    radeon = _one_gpu_per_node("AMD Radeon AI PRO R9700", nodes=2, collective=Collective.ALL_REDUCE)
    assert _pairs(NcclModel.of(radeon.topology), radeon) == {
        ("ring", "Simple"),
        ("tree", "Simple"),
    }
    mi300x = get_topology("xgmi_box")
    assert ("tree", "Simple") not in _pairs(NcclModel.of(mi300x), _all_reduce(mi300x, 2**20))
    assert ("ring", "LL") in _pairs(NcclModel.of(mi300x), _all_reduce(mi300x, 2**20))
    h100 = get_topology("hgx_h100")
    assert ("tree", "Simple") in _pairs(NcclModel.of(h100), _all_reduce(h100, 2**20))


def test_no_pat_on_amd_gpus() -> None:
    """RCCL's NCCL_PAT_ENABLE defaults to 0: an all-gather over one AMD GPU per node has no PAT
    candidate, where NVIDIA's 2.23+ table offers one."""
    amd = _one_gpu_per_node("AMD Instinct MI300X", nodes=4, collective=Collective.ALL_GATHER)
    nvidia = _one_gpu_per_node("NVIDIA H100 PCIe", nodes=4, collective=Collective.ALL_GATHER)
    assert ("pat", "Simple") not in _pairs(NcclModel.of(amd.topology, version="2.27.7"), amd)
    assert ("pat", "Simple") in _pairs(NcclModel.of(nvidia.topology, version="2.27.7"), nvidia)
