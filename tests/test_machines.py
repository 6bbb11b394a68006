"""NVSwitch machines (DGX A100, HGX H100) and clusters of boxes on a network."""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any

import pytest

from commsim.api import simulate
from commsim.errors import CommsimError, TopologyError, UnknownNameError
from commsim.topology import (
    Topology,
    available_topologies,
    get_link_kind,
    get_topology,
    load_topology_file,
    save_topology,
)
from commsim.topology.cluster import cluster

NVSWITCH_BOXES = [
    # name, NVLink kind, links per GPU, per-GPU bandwidth per direction (SEED_FACTS.md section 2)
    ("dgx_a100", "nvlink3", 12, 300e9),
    ("hgx_h100", "nvlink4", 18, 450e9),
]


def _neighbours(topology: Topology, name: str) -> set[str]:
    return set(topology.graph.successors(name))


def _route_devices(topology: Topology, src: str, dst: str) -> list[str]:
    route = topology.route(src, dst)
    return [topology.links[route[0]].src] + [topology.links[i].dst for i in route]


def _kinds(topology: Topology, names: list[str]) -> list[str]:
    return [topology.device(n).kind for n in names]


# -- single boxes -----------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "kind", "links", "per_gpu_Bps"), NVSWITCH_BOXES)
def test_nvswitch_bandwidth_per_gpu(name: str, kind: str, links: int, per_gpu_Bps: float) -> None:
    """SEED_FACTS.md section 2: A100 12 x 25 GB/s = 300 GB/s, H100 18 x 25 GB/s = 450 GB/s per direction."""
    topology = get_topology(name)
    assert topology.devices_of_kind("nvswitch") == ["nvswitch0"]
    for gpu in topology.gpus:
        for link in (topology.link(gpu, "nvswitch0"), topology.link("nvswitch0", gpu)):
            assert (link.kind, link.count) == (kind, links)
            assert link.bandwidth_Bps == pytest.approx(per_gpu_Bps, rel=1e-12)
        nvlinks = [topology.link(gpu, n) for n in _neighbours(topology, gpu)]
        assert [link.dst for link in nvlinks if link.family == "nvlink"] == ["nvswitch0"]


def test_dgx_a100_route_goes_through_the_nvswitch() -> None:
    """gpu0 -> gpu5 crosses the NVSwitch, not the PCIe tree."""
    topology = get_topology("dgx_a100")
    assert [topology.links[i].name for i in topology.route("gpu0", "gpu5")] == [
        "gpu0->nvswitch0",
        "nvswitch0->gpu5",
    ]


@pytest.mark.parametrize("name", ["dgx_a100", "hgx_h100"])
def test_every_gpu_pair_uses_the_nvswitch(name: str) -> None:
    """Even GPUs sharing a PCIe switch prefer the wider NVSwitch path of equal length."""
    topology = get_topology(name)
    for src, dst in itertools.permutations(topology.gpus, 2):
        assert _route_devices(topology, src, dst) == [src, "nvswitch0", dst]


def test_dgx_a100_pcie_tree() -> None:
    """4 PCIe gen4 switches with 2 GPUs and 2 HDR NICs each, 2 EPYC sockets joined by xGMI."""
    topology = get_topology("dgx_a100")
    switches = topology.devices_of_kind("pcie_switch")
    assert len(switches) == 4
    for s, switch in enumerate(switches):
        below = _neighbours(topology, switch)
        assert below == {f"gpu{2 * s}", f"gpu{2 * s + 1}", f"nic{2 * s}", f"nic{2 * s + 1}", f"cpu{s // 2}"}
        assert {topology.link(switch, n).kind for n in below} == {"pcie4_x16"}
    sockets = topology.link("cpu0", "cpu1")
    assert (sockets.kind, sockets.count, sockets.family) == ("xgmi", 4, "inter_socket")
    assert {topology.device(g).model for g in topology.gpus} == {"A100-SXM4-80GB"}
    assert {topology.device(c).model for c in topology.devices_of_kind("cpu")} == {"AMD EPYC 7742"}


def test_hgx_h100_pcie_tree() -> None:
    """8 PCIe gen5 switches (inside the ConnectX-7s), one GPU and one NDR NIC each; UPI 2.0 sockets."""
    topology = get_topology("hgx_h100")
    switches = topology.devices_of_kind("pcie_switch")
    assert len(switches) == 8
    for s, switch in enumerate(switches):
        assert _neighbours(topology, switch) == {f"gpu{s}", f"nic{s}", f"cpu{s // 4}"}
        assert {topology.link(switch, n).kind for n in _neighbours(topology, switch)} == {"pcie5_x16"}
    sockets = topology.link("cpu0", "cpu1")
    assert (sockets.kind, sockets.count, sockets.bandwidth_Bps) == ("upi2", 4, 4 * 32e9)
    assert {topology.device(g).model for g in topology.gpus} == {"H100-SXM5-80GB"}


@pytest.mark.parametrize("name", ["dgx_a100", "hgx_h100"])
def test_nics_only_reach_their_pcie_switch(name: str) -> None:
    """In one box, each of the 8 compute NICs hangs off a PCIe switch and nothing else."""
    topology = get_topology(name)
    nics = topology.devices_of_kind("nic")
    assert len(nics) == 8
    for nic in nics:
        (switch,) = _neighbours(topology, nic)
        assert topology.device(switch).kind == "pcie_switch"


def test_new_link_kinds_have_their_figures() -> None:
    """xGMI-2 x16 at 18 GT/s: 36 GB/s; UPI 2.0 at 16 GT/s: 32 GB/s (per direction per link)."""
    assert get_link_kind("xgmi").bandwidth_Bps == 36e9
    assert get_link_kind("upi2").bandwidth_Bps == 32e9
    assert get_link_kind("xgmi").family == get_link_kind("upi2").family == "inter_socket"


# -- clusters: shape ---------------------------------------------------------------------------


def test_cluster_counts_and_boxes() -> None:
    """4 x DGX A100: 32 GPUs numbered box-major, every device in its box, one network switch."""
    topology = cluster("dgx_a100", nodes=4, nic="ib_hdr")
    box = get_topology("dgx_a100")
    assert topology.name == "cluster_4xdgx_a100"
    assert topology.gpus == [f"gpu{i}" for i in range(32)]
    assert len(topology.devices) == 4 * len(box.devices) + 1
    assert topology.boxes == {k: [f"gpu{8 * k + i}" for i in range(8)] for k in range(4)}
    assert topology.device("n3_nvswitch0").box == 3
    assert topology.device("gpu13").box == 1
    assert topology.device("gpu13").model == "A100-SXM4-80GB"
    assert topology.devices_of_kind("switch") == ["switch0"]
    assert len(_neighbours(topology, "switch0")) == 32


def test_cluster_through_get_topology() -> None:
    """The builder is registered; None parameters are dropped like the CLI's defaults."""
    topology = get_topology("cluster", box="dgx_a100", nodes=4, nic="ib_hdr", leaf_size=None)
    assert len(topology.gpus) == 32
    assert "cluster (builder)" in available_topologies()


def test_inter_box_route_shape() -> None:
    """gpu -> pcie switch -> nic -> switch -> nic -> pcie switch -> gpu, over the NIC kind."""
    topology = cluster("dgx_a100", nodes=2, nic="ib_hdr")
    for src, dst in [("gpu0", "gpu8"), ("gpu7", "gpu8"), ("gpu15", "gpu0"), ("gpu3", "gpu12")]:
        devices = _route_devices(topology, src, dst)
        assert _kinds(topology, devices) == [
            "gpu", "pcie_switch", "nic", "switch", "nic", "pcie_switch", "gpu",
        ]  # fmt: skip
        assert [topology.device(d).box for d in devices[:3]] == [topology.device(src).box] * 3
        assert [topology.device(d).box for d in devices[4:]] == [topology.device(dst).box] * 3
        kinds = [topology.links[i].kind for i in topology.route(src, dst)]
        assert kinds == ["pcie4_x16", "pcie4_x16", "ib_hdr", "ib_hdr", "pcie4_x16", "pcie4_x16"]
    assert _route_devices(topology, "gpu8", "gpu13") == ["gpu8", "n1_nvswitch0", "gpu13"]


def test_nic_per_box_uses_only_the_first_nic() -> None:
    """nic_per='box': one NIC of each box joins the network; the others stay inside the box."""
    topology = cluster("dgx_a100", nodes=3, nic="eth_100g", nic_per="box")
    assert _neighbours(topology, "switch0") == {"n0_nic0", "n1_nic0", "n2_nic0"}
    assert topology.link("n1_nic0", "switch0").kind == "eth_100g"
    devices = _route_devices(topology, "gpu7", "gpu8")  # up gpu7's PCIe tree, across the sockets
    assert devices == [
        "gpu7", "n0_pcie_switch3", "n0_cpu1", "n0_cpu0", "n0_pcie_switch0", "n0_nic0",
        "switch0", "n1_nic0", "n1_pcie_switch0", "gpu8",
    ]  # fmt: skip


def test_nic_per_gpu_uses_all_nics_of_a_box_with_fewer() -> None:
    """DGX-1 has 4 NICs for 8 GPUs: all 4 join the network."""
    topology = cluster("dgx1_v100", nodes=2, nic="ib_edr")
    assert len(_neighbours(topology, "switch0")) == 8


def test_nics_are_added_to_boxes_without() -> None:
    """pcie_4gpu_switch gets one NIC per GPU on its PCIe switch, with the box's idealised PCIe figures."""
    topology = cluster("pcie_4gpu_switch", nodes=2, nic="eth_100g")
    nics = topology.devices_of_kind("nic")
    assert nics == [f"n{k}_nic{i}" for k in range(2) for i in range(4)]
    for nic in nics:
        assert _neighbours(topology, nic) == {f"{nic[:3]}pcie_switch0", "switch0"}
        to_switch = topology.link(nic, f"{nic[:3]}pcie_switch0")
        assert (to_switch.bandwidth_Bps, to_switch.latency_s) == (16e9, 0.0)
    assert topology.link("gpu0", "n0_pcie_switch0").bandwidth_Bps == 16e9  # box figures travel along
    per_box = cluster("pcie_4gpu_switch", nodes=2, nic="eth_100g", nic_per="box")
    assert per_box.devices_of_kind("nic") == ["n0_nic0", "n1_nic0"]
    on_gpus = cluster("fully_connected_4", nodes=2, nic="eth_100g")
    assert _route_devices(on_gpus, "gpu0", "gpu4") == ["gpu0", "n0_nic0", "switch0", "n1_nic0", "gpu4"]


def test_nic_figures_can_be_set() -> None:
    """nic_bandwidth and nic_latency set every network link's figures."""
    topology = cluster("hgx_h100", nodes=2, nic="ib_ndr", nic_bandwidth="40 GB/s", nic_latency="2 us")
    link = topology.link("n1_nic3", "switch0")
    assert (link.kind, link.bandwidth_Bps, link.latency_s) == ("ib_ndr", 40e9, 2e-6)


# -- clusters: fat tree ------------------------------------------------------------------------


def _uplink_Bps(topology: Topology, leaf: str) -> float:
    return sum(
        topology.link(leaf, s).bandwidth_Bps for s in topology.devices_of_kind("switch") if "spine" in s
    )


def _downlink_Bps(topology: Topology, leaf: str) -> float:
    return sum(topology.link(leaf, n).bandwidth_Bps for n in _neighbours(topology, leaf) if "nic" in n)


@pytest.mark.parametrize(("oversubscription", "spines"), [(1.0, 8), (2.0, 4), (3.0, 3), (8.0, 1)])
def test_fat_tree_oversubscription_sets_spine_capacity(oversubscription: float, spines: int) -> None:
    """Each leaf's uplinks carry its downlink capacity / oversubscription (2.0 = half)."""
    topology = cluster(
        "dgx_a100", nodes=4, nic="ib_hdr", fabric="fat_tree", oversubscription=oversubscription
    )
    assert len([s for s in topology.devices_of_kind("switch") if s.startswith("spine")]) == spines
    for leaf in (f"leaf{i}" for i in range(4)):
        assert _downlink_Bps(topology, leaf) == pytest.approx(8 * 25e9, rel=1e-12)
        assert _uplink_Bps(topology, leaf) == pytest.approx(8 * 25e9 / oversubscription, rel=1e-12)
    assert f"oversubscription {oversubscription:g}:1" in topology.description


def test_fat_tree_route_shape() -> None:
    """Between leaves: nic -> leaf -> spine -> leaf -> nic; inside one leaf, no spine."""
    topology = cluster("dgx_a100", nodes=4, nic="ib_hdr", fabric="fat_tree", oversubscription=2.0)
    devices = _route_devices(topology, "gpu0", "gpu9")
    assert [d.rstrip("0123456789") for d in devices[3:6]] == ["leaf", "spine", "leaf"]
    assert _kinds(topology, devices) == [
        "gpu", "pcie_switch", "nic", "switch", "switch", "switch", "nic", "pcie_switch", "gpu",
    ]  # fmt: skip
    two_leaves = cluster("dgx_a100", nodes=2, fabric="fat_tree", leaf_size=16)
    assert _kinds(two_leaves, _route_devices(two_leaves, "gpu0", "gpu9"))[3] == "switch"
    assert len(_route_devices(two_leaves, "gpu0", "gpu9")) == 7


def test_fat_tree_partial_last_leaf() -> None:
    """16 NICs in leaves of 5: 5, 5, 5, 1; the small leaf's uplinks shrink with it."""
    topology = cluster("dgx_a100", nodes=2, fabric="fat_tree", leaf_size=5, oversubscription=2.0)
    assert [len([n for n in _neighbours(topology, f"leaf{i}") if "nic" in n]) for i in range(4)] == [
        5,
        5,
        5,
        1,
    ]
    assert _uplink_Bps(topology, "leaf3") == pytest.approx(25e9 / 2, rel=1e-12)


# -- clusters: errors ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "error", "message"),
    [
        ({"nodes": 0}, TopologyError, "cluster needs nodes >= 1, got 0"),
        ({"nodes": 2.5}, TopologyError, "builder 'cluster': nodes must be a whole number, e.g. 4, got 2.5"),
        ({"box": "dgx_z100"}, UnknownNameError, "unknown cluster box 'dgx_z100'; valid: bridged_pairs_box, "),
        # network kinds only, not nvlink or pcie ones
        ({"nic": "ib_gdr"}, UnknownNameError, "unknown cluster nic 'ib_gdr'; valid: efa_v1, efa_v2, "),
        ({"nic": "pcie4_x16"}, TopologyError, "cluster nic 'pcie4_x16' is a pcie link, not a network link"),
        ({"nic": "nvlink3"}, TopologyError, "cluster nic 'nvlink3' is a nvlink link, not a network link"),
        ({"nic_per": "rack"}, UnknownNameError, "unknown cluster nic_per 'rack'; valid: box, gpu"),
        (
            {"fabric": "torus"},
            UnknownNameError,
            "unknown cluster fabric 'torus'; valid: fat_tree, rails, switch",
        ),
        (
            {"fabric": "fat_tree", "oversubscription": 0.5},
            TopologyError,
            "cluster oversubscription must be at least 1 (1 = non-blocking), got 0.5",
        ),
        (
            {"fabric": "fat_tree", "leaf_size": 0},
            TopologyError,
            "cluster leaf_size must be a whole number >= 1, got 0",
        ),
        ({"oversubscription": 2.0}, TopologyError, "cluster oversubscription and leaf_size apply to fabric="),
        (
            {"box": "fully_connected_4", "nic_per": "box"},
            TopologyError,
            "cluster box 'fully_connected_4' has no NIC, PCIe switch or CPU to put a per-box NIC on",
        ),
        ({"nic_bandwidth": "fast"}, CommsimError, "cannot read bandwidth 'fast'"),
        ({"gpus": 8}, TopologyError, "builder 'cluster' has no field 'gpus'; valid: "),
    ],
)
def test_cluster_errors(params: dict[str, Any], error: type[Exception], message: str) -> None:
    """Bad parameters raise a typed error that says what was wrong and what is valid."""
    with pytest.raises(error) as info:
        get_topology("cluster", **params)
    assert str(info.value).startswith(message)
    assert isinstance(info.value, CommsimError)


def test_nic_kind_error_lists_network_kinds() -> None:
    valid = r"valid: .*eth_100g, .*ib_hdr, ib_ndr, ib_ndr200, ib_xdr, .*roce_400g"
    with pytest.raises(TopologyError, match=valid):
        cluster(nic="qpi")


def test_a_cluster_is_not_a_box() -> None:
    with pytest.raises(TopologyError, match=r"already spans boxes \[0, 1\]; give a single box"):
        cluster(cluster("dgx_a100", nodes=2), nodes=2)


# -- clusters: files, scale, simulation ------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda: cluster("dgx_a100", nodes=2),
        lambda: cluster("pcie_4gpu_switch", nodes=3, fabric="fat_tree", leaf_size=5, oversubscription=3.0),
        lambda: cluster("hgx_h100", nodes=2, nic="ib_ndr", nic_bandwidth=4.1234567e10, nic_latency="1.3 us"),
    ],
    ids=["switch", "fat_tree_odd_uplinks", "nic_figures"],
)
def test_cluster_yaml_round_trip(make: Any, tmp_path: Path) -> None:
    """save_topology -> load_topology_file gives the same cluster, bit for bit."""
    original = make()
    save_topology(original, tmp_path / "cluster.yaml")
    again = load_topology_file(tmp_path / "cluster.yaml")
    assert (again.name, again.description) == (original.name, original.description)
    assert again.devices == original.devices
    assert again.physical_links == original.physical_links
    assert again.links == original.links
    assert again.boxes == original.boxes


def test_a_1024_gpu_cluster_builds() -> None:
    """128 DGX A100s: 1024 GPUs in 128 boxes, and a route from the first box to the last."""
    topology = cluster("dgx_a100", nodes=128)
    assert len(topology.gpus) == 1024
    assert len(topology.boxes) == 128
    assert len(_route_devices(topology, "gpu0", "gpu1023")) == 7


@pytest.mark.parametrize(("box", "nic"), [("dgx_a100", "ib_hdr"), ("hgx_h100", "ib_ndr")])
def test_ring_across_two_boxes_is_nic_bound(box: str, nic: str) -> None:
    """The ring crosses boxes twice; the NIC link, slowest on its path, is the bottleneck.

    Each of the ring's 2(n-1) steps pushes a chunk g/n through the NIC link of
    the box boundary, so its time is at least 2(n-1)/n g / BW_nic; the fast
    NVSwitch hops keep that link almost always busy, so it is hardly more.
    """
    topology = cluster(box, nodes=2, nic=nic)
    result = simulate(topology, "ring", size="1 GB")
    n, nic_Bps = 16, get_link_kind(nic).bandwidth_Bps
    assert result.time_s > 0
    nic_bound_s = 2 * (n - 1) / n * 1e9 / nic_Bps
    assert nic_bound_s * (1 - 1e-9) <= result.time_s <= nic_bound_s * 1.01
    assert {load.kind for load in result.bottleneck} == {nic}
    assert math.isclose(max(load.utilisation for load in result.links), result.bottleneck[0].utilisation)


def test_a_gpu_leaves_its_box_through_its_own_nic() -> None:
    """Two NICs share each PCIe switch of a DGX A100; NCCL gives every GPU its own."""
    topo = get_topology("cluster", box="dgx_a100", nodes=2, nic="ib_hdr")
    for i in range(8):
        route = [topo.links[k] for k in topo.route(f"gpu{i}", f"gpu{8 + i}")]
        nics = [link.dst for link in route if link.dst.startswith(("n0_nic", "n1_nic"))]
        assert nics == [f"n0_nic{i}", f"n1_nic{i}"]


def test_routes_in_a_1024_gpu_cluster_are_quick_to_find() -> None:
    """The search from both ends visits two boxes, not the whole cluster (timing lives in benchmarks)."""
    topo = get_topology("cluster", box="dgx_a100", nodes=128, nic="ib_hdr")
    route = topo.route("gpu0", "gpu1023")
    names = [topo.links[k].src for k in route] + [topo.links[route[-1]].dst]
    assert names == [
        "gpu0",
        "n0_pcie_switch0",
        "n0_nic0",
        "switch0",
        "n127_nic7",
        "n127_pcie_switch3",
        "gpu1023",
    ]
