"""The NCCL model as NCCL's releases run it: tables per era, multi-node bandwidth, its own channels.

Each test restates the NCCL fact it checks; the figures come from NCCL's
``src/graph/tuning.cc`` of the era (see :mod:`commsim.nccl.tuning`) and
from datasheets, derived by hand in the docstrings.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from commsim.algorithms.base import Problem
from commsim.api import simulate
from commsim.collectives import Collective
from commsim.nccl.model import NcclModel
from commsim.nccl.params import NcclParams
from commsim.nccl.tuning import ERAS, parse_version, table_for
from commsim.topology import get_topology
from commsim.topology.machines import nvlink_mesh_box, nvswitch_box, pcie_box

GiB = 2**30
DATA = Path(__file__).parent / "data" / "nccl-tests"
SHIPPED = ["dgx1_p100", "dgx1_v100", "dgx_a100", "fully_connected_4", "hgx_h100", "pcie_4gpu_switch"]
PLANNED = ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all", "gather"]


def _candidates(model: NcclModel, collective: Collective, nbytes: float) -> dict[tuple[str, str], float]:
    topo = model.topology
    gpus = tuple(topo.devices_of_kind("gpu"))
    prediction = model.predict(Problem(topo, gpus, collective, nbytes))
    return {(c.algorithm, c.protocol): c.algbw_Bps for c in prediction.candidates}


@pytest.mark.parametrize(
    ("version", "era"),
    [
        ("2.4.8", "2.4"),
        ("2.7.8", "2.4"),
        ("2.11.4", "2.4"),
        ("2.12.12", "2.12"),
        ("2.19.3", "2.12"),
        ("2.20.5", "2.12"),
        ("2.21.5", "2.21"),
        ("2.28.9+cuda13.0", "2.21"),
        (None, "2.21"),
        ("2.3.7", "2.4"),
    ],
)
def test_each_release_uses_its_eras_table(version: str | None, era: str) -> None:
    """NCCL's tables changed at 2.12 (NVLS era structure) and 2.21 (LL at half the bus bandwidth);
    releases before 2.4 are modelled with 2.4's; an unknown release gets the newest."""
    assert table_for(version).name == era


@pytest.mark.parametrize(
    ("algorithm", "first"),
    [("tree", (2, 4)), ("nvls", (2, 17)), ("nvls_tree", (2, 18)), ("pat", (2, 23))],
)
def test_algorithms_appear_in_the_release_that_added_them(algorithm: str, first: tuple[int, int]) -> None:
    """Tree came with 2.4, NVLS (NVLink SHARP) with 2.17, NVLS-tree with 2.18, PAT with 2.23."""
    table = table_for(f"{first[0]}.{first[1]}")
    assert table.available(algorithm, first)
    assert not table.available(algorithm, (first[0], first[1] - 1))


def test_nvls_is_offered_from_2_17_on_an_h100_nvswitch_box() -> None:
    """NVLS needs NCCL 2.17+ on Hopper with NVSwitch: 2.16 offers only ring and tree, 2.17 adds it."""
    topo = nvswitch_box(gpu_model="H100 SXM5")
    old = _candidates(NcclModel.of(topo, version="2.16.5"), Collective.ALL_REDUCE, GiB)
    new = _candidates(NcclModel.of(topo, version="2.17.1"), Collective.ALL_REDUCE, GiB)
    assert ("nvls", "Simple") not in old and ("nvls", "Simple") in new


def test_ll128_is_enabled_per_generation_and_release() -> None:
    """LL128 is on by default with NVLink on Volta/Ampere from 2.5, on Hopper from 2.12's era; never in
    2.4 (it did not exist) nor over PCIe."""
    h100 = nvswitch_box(gpu_model="H100 SXM5")
    assert ("ring", "LL128") not in _candidates(
        NcclModel.of(h100, version="2.8.4"), Collective.ALL_GATHER, GiB
    )
    assert ("ring", "LL128") in _candidates(NcclModel.of(h100, version="2.19.3"), Collective.ALL_GATHER, GiB)
    v100 = get_topology("dgx1_v100")
    assert ("ring", "LL128") not in _candidates(
        NcclModel.of(v100, version="2.4.8"), Collective.ALL_GATHER, GiB
    )
    assert ("ring", "LL128") in _candidates(NcclModel.of(v100, version="2.5.6"), Collective.ALL_GATHER, GiB)
    pcie = pcie_box(gpus=4)
    assert ("ring", "LL128") not in _candidates(NcclModel.of(pcie), Collective.ALL_GATHER, GiB)


def test_ring_ll_is_half_the_bus_bandwidth_from_2_21_and_capped_by_llmaxbw() -> None:
    """Ring LL bus bandwidth: 2.12-2.20 take 1/4 for all-reduce (1/3 for all-gather on one node),
    2.21+ take 1/2, each capped by llMaxBw (Hopper, one node: 87.7 GB/s before 2.21, 141 GB/s after).

    On an 8-GPU H100 NVSwitch box the ring bus bandwidth is the GPU's 18 NVLink 4 ports,
    18 x 25 GB/s = 450 GB/s at NCCL's 20.6/25 efficiency = 370.8 GB/s. All-gather LL:
    2.19: min(370.8 / 3, 87.7) = 87.7 GB/s; 2.28: min(370.8 / 2, 141) = 141 GB/s;
    algorithm bandwidth x n / steps = 8/7.
    """
    topo = nvswitch_box(gpu_model="H100 SXM5")
    old = _candidates(NcclModel.of(topo, version="2.19.3"), Collective.ALL_GATHER, 1e6)[("ring", "LL")]
    new = _candidates(NcclModel.of(topo, version="2.28.9"), Collective.ALL_GATHER, 1e6)[("ring", "LL")]
    assert old == pytest.approx(87.7e9 * 8 / 7, rel=1e-9)
    assert new == pytest.approx(141e9 * 8 / 7, rel=1e-9)


def test_tree_correction_follows_nccls_table() -> None:
    """treeCorrectionFactor is indexed by log2(bytes / 64). Simple's rows: 2.4 (22 entries)
    .9 x7, .8, .7, .6, .6, .5 x6, .6, .6, .7, .8, .9; 2.12+ (23 entries) .9 x7, .8, .7, .6, .6, .5 x4,
    .6, .7, .8, .7, .7, .8, .9, .9. 64 MiB is 2^20 units: entry 20 is .8 in both; 16 MiB (entry 18)
    is .6 in 2.4 and .7 in 2.12+; beyond the table 1.0."""
    new, old = table_for("2.28"), table_for("2.7")
    assert new.correction("Simple", 64 * 2**20) == 0.8
    assert old.correction("Simple", 64 * 2**20) == 0.8
    assert new.correction("Simple", 16 * 2**20) == 0.7
    assert old.correction("Simple", 16 * 2**20) == 0.6
    assert new.correction("Simple", 8 * GiB) == 1.0
    assert new.correction("LL", 32) == 1.0  # below 64 B: the first entry


def test_two_node_tree_carries_the_whole_buffer_once_per_nic_direction() -> None:
    """On two nodes NCCL's two trees are rooted in different nodes, so each NIC direction carries the
    whole buffer once: the tree's algorithm bandwidth is capped by the node's NICs, not half of them
    (nccl-tests #196: "on two nodes, NCCL uses the tree ... which can go beyond the network bottleneck").

    2 x DGX A100, 8 EDR NICs each: 8 x 12.5 GB/s x 0.90 (InfiniBand efficiency) = 90 GB/s per node.
    The box: 12 NVLink 3 ports x 25 GB/s = 300 GB/s at 235/300 = 235 GB/s; the tree's own bound
    0.92 x 235 / 2 = 108.1 GB/s exceeds the NICs, so tree/Simple at 8 GiB (correction 1.0) runs at
    exactly 90 GB/s -- nearly twice the ring's 90 x 16 / 30 = 48 GB/s.
    """
    topo = get_topology("cluster", box="dgx_a100", nodes=2, nic="ib_edr")
    cands = _candidates(NcclModel.of(topo, NcclParams()), Collective.ALL_REDUCE, 8 * GiB)
    assert cands[("tree", "Simple")] == pytest.approx(90e9, rel=1e-9)
    assert cands[("ring", "Simple")] == pytest.approx(90e9 * 16 / 30, rel=1e-9)


def test_two_node_tree_pays_its_protocol_on_the_nics() -> None:
    """The two-node bound is the NICs' bytes, and LL and LL128 put more bytes on them than they carry:
    NCCL's tree factors beyond one node apply to the network too (its busBw includes bwInter).

    Two hosts of one H100 each on one 10 Gb/s TCP NIC: 1.25 GB/s x 0.70 (Ethernet) = 875 MB/s per
    node, and no box to bound the tree (one GPU per node). Tree/Simple: exactly 875 MB/s; tree/LL:
    875 / 3.8 = 230.3 MB/s (not 875: an 8-byte flag travels with every 8 bytes); tree/LL128:
    875 x 120/128 = 820.3 MB/s (at 8 GiB, where NCCL's tree size correction is 1). NCCL's choice is
    then Simple, not LL.
    """
    topo = get_topology("cluster", box="hgx_h100", nodes=2, nic="tcp_10g", nics_per_node=1)
    gpus = (topo.gpus[0], topo.gpus[8])  # gpu0 of each host
    problem = Problem(topo, gpus, Collective.ALL_REDUCE, float(8 * GiB))
    prediction = NcclModel.of(topo, NcclParams()).predict(problem)
    rates = {(c.algorithm, c.protocol): c.algbw_Bps for c in prediction.candidates}
    assert rates[("tree", "Simple")] == pytest.approx(875e6, rel=1e-9)
    assert rates[("tree", "LL")] == pytest.approx(875e6 / 3.8, rel=1e-9)
    if ("tree", "LL128") in rates:
        assert rates[("tree", "LL128")] == pytest.approx(875e6 * 120 / 128, rel=1e-9)
    assert prediction.chosen.protocol == "Simple"


def test_beyond_two_nodes_the_tree_counts_the_network_like_the_ring() -> None:
    """Beyond two nodes interior tree nodes send and receive twice: NCCL prices the tree at
    0.92 x min(box, network) / 2. 4 x DGX A100 on EDR: 0.92 x 90 / 2 = 41.4 GB/s."""
    topo = get_topology("cluster", box="dgx_a100", nodes=4, nic="ib_edr")
    cands = _candidates(NcclModel.of(topo, NcclParams()), Collective.ALL_REDUCE, 8 * GiB)
    assert cands[("tree", "Simple")] == pytest.approx(0.92 * 90e9 / 2, rel=1e-9)


def test_nvls_tree_gets_half_the_network_beyond_two_nodes() -> None:
    """NVLS-tree: min(NVLS bandwidth, network) on two nodes, min(NVLS, network / 2) beyond (tuning.cc
    bwInter/2). 8-GPU H100 boxes, 8 NDR NICs: 8 x 50 GB/s x 0.9 = 360 GB/s; NVLS: 450 GB/s x 0.57 =
    256.5 GB/s. Two nodes: 256.5 GB/s; four nodes: min(256.5, 180) = 180 GB/s."""
    box = nvswitch_box(gpu_model="H100 SXM5")
    two = get_topology("cluster", box=box, nodes=2, nic="ib_ndr")
    four = get_topology("cluster", box=box, nodes=4, nic="ib_ndr")
    assert _candidates(NcclModel.of(two, NcclParams()), Collective.ALL_REDUCE, GiB)[
        ("nvls_tree", "Simple")
    ] == pytest.approx(256.5e9, rel=1e-9)
    assert _candidates(NcclModel.of(four, NcclParams()), Collective.ALL_REDUCE, GiB)[
        ("nvls_tree", "Simple")
    ] == pytest.approx(180e9, rel=1e-9)


def test_pat_is_offered_for_one_gpu_per_node_from_2_23() -> None:
    """PAT runs all-gather and reduce-scatter with one GPU per node from 2.23, at 0.75 of the bus
    bandwidth (no n/(n-1) conversion, unlike the ring's algbw = busbw x n / (n - 1)). Machine: the
    development log's ten H100 hosts with one GPU each."""
    from commsim.calibrate.validate import validate_file

    log = DATA / "H100-SXM-HGX_all_reduce_10gpu_10node-NICunstated_1.txt"
    inference = validate_file(log).inference
    topo, ranks = inference.topology, inference.ranks
    n = len(ranks)
    for version, offered in (("2.22.3", False), ("2.23.4", True)):
        prediction = NcclModel.of(topo, NcclParams(), version).predict(
            Problem(topo, ranks, Collective.ALL_GATHER, GiB)
        )
        cands = {(c.algorithm, c.protocol): c.algbw_Bps for c in prediction.candidates}
        assert (("pat", "Simple") in cands) is offered
        if offered:
            busbw = cands[("ring", "Simple")] * (n - 1) / n
            assert cands[("pat", "Simple")] == pytest.approx(0.75 * busbw, rel=1e-12)


def test_network_efficiency_is_per_transport() -> None:
    """RoCE runs NCCL's IB verbs transport and loses what InfiniBand loses (0.90), not what TCP sockets
    lose (Ethernet 0.70): 2 x DGX A100 with 8 x 100 Gbit/s RoCE NICs: 8 x 12.5 x 0.9 = 90 GB/s per node,
    the 2-node tree's bound."""
    topo = get_topology("cluster", box="dgx_a100", nodes=2, nic="roce_100g")
    cands = _candidates(NcclModel.of(topo, NcclParams()), Collective.ALL_REDUCE, 8 * GiB)
    assert cands[("tree", "Simple")] == pytest.approx(90e9, rel=1e-9)


def test_one_model_replays_a_box_once_for_every_size() -> None:
    """The model keeps the box bandwidths it replayed: thirty sizes, one replay per (ranks, transport,
    efficiencies); a new parameter set that changes the box's links adds one more."""
    model = NcclModel.of(get_topology("pcie_4gpu_switch"))
    gpus = tuple(model.topology.devices_of_kind("gpu"))
    for size in (2.0**k for k in range(3, 33)):
        model.predict(Problem(model.topology, gpus, Collective.ALL_REDUCE, size))
    assert len(model.replays._memo) == 1
    other = model.with_params(NcclParams(efficiency={"pcie": 0.5}))
    other.predict(Problem(model.topology, gpus, Collective.ALL_REDUCE, 1e9))
    assert len(model.replays._memo) == 2  # shared: a new parameter set adds its own replay


def test_packed_rings_scale_with_their_links_efficiency() -> None:
    """A linear programme's optimum scales with its capacities: on a box whose rings use one link kind,
    the rings' bus bandwidth at efficiency e is e times the nominal optimum. DGX-1 V100: the packed
    rings at nominal NVLink 2 speed, times 0.8 (NCCL's 20/25) and times 0.5."""
    from commsim.nccl.channels import ring_packing_busbw

    topo = get_topology("dgx1_v100")
    gpus = tuple(topo.devices_of_kind("gpu"))
    nominal = ring_packing_busbw(topo, gpus)
    assert nominal is not None
    for efficiency in (0.8, 0.5):
        model = NcclModel.of(topo, NcclParams(efficiency={"nvlink2": efficiency}))
        _, bw = model.bandwidths(gpus, Collective.ALL_REDUCE)
        assert bw.intra_Bps == pytest.approx(efficiency * nominal, rel=1e-9)
        solved = ring_packing_busbw(topo.scaled({"nvlink2": efficiency}, latency_s=0.0), gpus)
        assert bw.intra_Bps == pytest.approx(solved, rel=1e-6)


def _max_utilisation(topology: object, collective: str, size: str) -> float:
    result = simulate(topology, "nccl", collective, size)  # type: ignore[arg-type]
    return max((link.busy_s for link in result.links), default=0.0) / result.time_s


@pytest.mark.parametrize("machine", SHIPPED)
@pytest.mark.parametrize("collective", PLANNED)
def test_every_collective_on_every_shipped_machine_fits_its_own_channels(
    machine: str, collective: str
) -> None:
    """NCCL's plan is the channels the model prices: no link of the plan carries more bytes than its
    capacity allows in the model's time (the bottleneck column never above 100 %)."""
    assert _max_utilisation(machine, collective, "64 MB") <= 1 + 1e-9


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(["nvswitch", "mesh", "pcie"]),
    gpus=st.integers(min_value=2, max_value=8),
    collective=st.sampled_from(PLANNED),
    megabytes=st.integers(min_value=1, max_value=512),
)
def test_model_never_faster_than_its_channels_on_random_machines(
    kind: str, gpus: int, collective: str, megabytes: int
) -> None:
    """The same on random NVSwitch boxes, NVLink meshes and PCIe boxes of 2 to 8 GPUs."""
    if kind == "nvswitch":
        topo = nvswitch_box(gpus=gpus, gpu_model="H100 SXM5")
    elif kind == "mesh":
        topo = nvlink_mesh_box(gpus=min(gpus, 4), links=6 * 3, gpu_model="H100 SXM5")
    else:
        topo = pcie_box(gpus=gpus)
    assert _max_utilisation(topo, collective, f"{megabytes} MB") <= 1 + 1e-9


def test_versions_parse_as_nccl_prints_them() -> None:
    """``2.22.3+cuda12.6`` is release (2, 22); text that is not a version is None."""
    assert parse_version("2.22.3+cuda12.6") == (2, 22)
    assert parse_version("v2.8.4") == (2, 8)
    assert parse_version("unknown") is None
    assert [era.first for era in ERAS] == sorted(era.first for era in ERAS)
    assert math.isinf(table_for("2.8").ll_cap(1, "hopper"))  # no llMaxBw before 2.12


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes=st.integers(min_value=2, max_value=4),
    nic=st.sampled_from(["ib_edr", "ib_hdr", "ib_ndr", "roce_100g", "efa_v2"]),
    oversubscription=st.sampled_from([1.0, 2.0, 4.0]),
    collective=st.sampled_from(["all_reduce", "all_gather", "reduce_scatter", "all_to_all"]),
    megabytes=st.integers(min_value=1, max_value=512),
)
def test_model_never_faster_than_its_channels_across_nodes(
    nodes: int, nic: str, oversubscription: float, collective: str, megabytes: int
) -> None:
    """Across nodes too, on one switch or a fat tree oversubscribed up to 4:1: the model's network
    bandwidth is its own channels' step replayed on the fabric, so its plan never overfills a link."""
    fabric = "switch" if oversubscription == 1.0 else "fat_tree"
    extra = {"oversubscription": oversubscription, "leaf_size": 2} if fabric == "fat_tree" else {}
    topo = get_topology("cluster", box="dgx_a100", nodes=nodes, nic=nic, fabric=fabric, **extra)
    assert _max_utilisation(topo, collective, f"{megabytes} MB") <= 1 + 1e-9


def test_an_oversubscribed_fabric_slows_the_model() -> None:
    """A 4:1 oversubscribed fat tree gives each node a quarter of its NICs' rate across the spine:
    the model's all-gather on 2 DGX A100 boxes over HDR is slower there than on one big switch."""
    flat = get_topology("cluster", box="dgx_a100", nodes=2, nic="ib_hdr")
    thin = get_topology(
        "cluster", box="dgx_a100", nodes=2, nic="ib_hdr", fabric="fat_tree", oversubscription=4.0, leaf_size=2
    )
    fast = simulate(flat, "nccl", "all_gather", "1 GB").time_s
    slow = simulate(thin, "nccl", "all_gather", "1 GB").time_s
    assert slow > 2 * fast


def test_choice_follows_what_the_log_says_nccl_was_told() -> None:
    """The p3dn log's INFO line says NCCL_TREE_THRESHOLD=0 (NCCL 2.4: no tree at any size), so every
    size is predicted with the ring."""
    from commsim.calibrate.validate import validate_file

    validation = validate_file(DATA / "V100-SXM2-p3dn_all_reduce_16gpu_2node-EFA100_1.txt")
    assert {row.algorithm for row in validation.rows} == {"ring"}


def test_two_node_h100_log_beyond_nic_line_rate_is_predicted_with_the_tree() -> None:
    """2 nodes x 4 H100 with 4 x 200 Gbit/s InfiniBand per node (README): from 512 MiB the log's busbw
    (150-156 GB/s) exceeds what a ring could carry through 4 x 25 GB/s = 100 GB/s of NICs, so NCCL ran
    its tree there; the model, given the NICs, chooses the tree at those sizes and lands within 10 %."""
    from commsim.calibrate.inference import RunOptions
    from commsim.calibrate.validate import validate_file

    name = "H100-SXM5-4GPU-NVLink_all_reduce_8gpu_2node-IB-NDR200x4_1.txt"
    validation = validate_file(DATA / name, options=RunOptions(nic="ib_ndr200", nics_per_node=4))
    large = [row for row in validation.rows if row.nbytes >= 512 * 2**20]
    assert large and all(row.measured_busbw_Bps > 100e9 for row in large)
    assert {row.algorithm for row in large} == {"tree"}
    assert all(abs(row.error) < 0.10 for row in large)


@pytest.mark.parametrize("machine", ["dgx1_v100", "pcie_4gpu_switch"])
@pytest.mark.parametrize("collective", ["all_reduce", "all_gather", "broadcast", "all_to_all"])
def test_times_for_many_sizes_equal_predict_size_by_size(machine: str, collective: str) -> None:
    """``times`` (what a calibration calls) is the chosen time of ``predict`` for every size."""
    topo = get_topology(machine)
    gpus = tuple(topo.devices_of_kind("gpu"))
    coll = Collective(collective)
    model = NcclModel.of(topo, NcclParams())
    sizes = [2.0**k for k in range(3, 34)]
    one_by_one = [model.predict(Problem(topo, gpus, coll, size)).time_s for size in sizes]
    assert model.times(Problem(topo, gpus, coll, 1.0), sizes) == one_by_one


def test_times_across_nodes_keep_the_plateau_and_tree_corrections() -> None:
    """The same on two DGX A100 boxes, where NCCL's ring plateau and tree size corrections apply."""
    topo = get_topology("cluster", box="dgx_a100", nodes=2, nic="ib_hdr")
    gpus = tuple(topo.devices_of_kind("gpu"))
    model = NcclModel.of(topo, NcclParams())
    sizes = [2.0**k for k in range(3, 34)]
    one_by_one = [model.predict(Problem(topo, gpus, Collective.ALL_REDUCE, s)).time_s for s in sizes]
    assert model.times(Problem(topo, gpus, Collective.ALL_REDUCE, 1.0), sizes) == one_by_one


@pytest.mark.parametrize("version", ["2.4.8", "2.11.4", "2.12.12", "2.17.1", "2.23.4"])
@pytest.mark.parametrize("machine", SHIPPED)
def test_every_release_predicts_all_reduce_on_every_shipped_machine(machine: str, version: str) -> None:
    """NVLS is offered from NCCL 2.17 on, and the tables of older releases have no NVLS row at all:
    an H100 NVSwitch box with ``--nccl-version 2.11.4`` (or 2.6.4, as the pre-2.7 send/recv rule
    sends more logs to give) raised KeyError 'nvls'. Every release's table predicts every shipped
    machine, offering NVLS only from 2.17."""
    topology = get_topology(machine)
    problem = Problem(topology, tuple(topology.gpus), Collective.ALL_REDUCE, 2.0**20)
    prediction = NcclModel.of(topology, version=version).predict(problem)
    names = {c.algorithm for c in prediction.candidates}
    assert prediction.chosen.time_s > 0
    assert ("nvls" in names) == (machine == "hgx_h100" and version in ("2.17.1", "2.23.4"))
