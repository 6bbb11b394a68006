"""Machine-class builders, the link kinds they need, and clusters of their boxes.

Figures are checked against the vendors' documents named in each test (and in
the builders' and link kinds' docstrings); every class must pass the schedule
verifier for ring and tree all-reduce.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from commsim.api import simulate
from commsim.errors import CommsimError, TopologyError, UnitError, UnknownNameError
from commsim.topology import (
    BUILDERS,
    Topology,
    available_topologies,
    get_link_kind,
    get_topology,
    load_topology_file,
    save_topology,
)
from commsim.topology.cluster import cluster, nics_reaching
from commsim.topology.linkkinds import LINK_KINDS, TRANSPORTS
from commsim.topology.machines import (
    MACHINES,
    bridged_pairs_box,
    nvl72_rack,
    nvlink_mesh_box,
    nvswitch_box,
    pcie_box,
    xgmi_box,
)
from commsim.topology.machines.parts import spread


def _route_devices(topology: Topology, src: str, dst: str) -> list[str]:
    route = topology.route(src, dst)
    return [topology.links[route[0]].src] + [topology.links[i].dst for i in route]


def _fabric_Bps(topology: Topology, gpu: str, families: tuple[str, ...]) -> float:
    """Bandwidth leaving ``gpu`` over links of ``families``, per direction."""
    return sum(
        topology.link(gpu, peer).bandwidth_Bps
        for peer in topology.graph.successors(gpu)
        if topology.link(gpu, peer).family in families
    )


def _structure(topology: Topology) -> tuple[set[Any], dict[str, Any]]:
    links = {(tuple(sorted((p.a, p.b))), p.kind, p.count, p.bandwidth_Bps) for p in topology.physical_links}
    devices = {d.name: (d.kind, d.box, d.serves) for d in topology.devices}
    return links, devices


# -- link kinds ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "family", "bandwidth_Bps", "transport"),
    [
        # NVIDIA Blackwell: 18 NVLink 5 links, 1.8 TB/s bidirectional per GPU: 50 GB/s per direction each
        ("nvlink5", "nvlink", 50e9, None),
        # PCI-SIG 6.0: 64 GT/s x16, 242 of 256 flit bytes carry packets
        ("pcie6_x16", "pcie", 64e9 * 16 * 242 / 256 / 8, None),
        # AMD MI300X: 128 GB/s bidirectional per Infinity Fabric link
        ("xgmi_gpu", "xgmi", 64e9, None),
        # NVIDIA Grace Hopper: NVLink-C2C 900 GB/s bidirectional
        ("nvlink_c2c", "chip_to_chip", 450e9, None),
        ("ib_xdr", "infiniband", 100e9, "ib"),
        ("ib_ndr", "infiniband", 50e9, "ib"),
        ("roce_25g", "ethernet", 25e9 / 8, "roce"),
        ("roce_400g", "ethernet", 50e9, "roce"),
        ("roce_800g", "ethernet", 100e9, "roce"),
        # AWS: p3dn 1 x 100 Gb/s (v1); p4d 4 x 100, p5 32 x 100 (v2); p5en 16 x 200 (v3); p6-b200 8 x 400 (v4)
        ("efa_v1", "ethernet", 100e9 / 8, "efa"),
        ("efa_v2", "ethernet", 100e9 / 8, "efa"),
        ("efa_v3", "ethernet", 200e9 / 8, "efa"),
        ("efa_v4", "ethernet", 400e9 / 8, "efa"),
        ("tcp_1g", "ethernet", 1e9 / 8, "socket"),
        ("tcp_400g", "ethernet", 400e9 / 8, "socket"),
        # GCP: a3-megagpu-8g 8 x 200 Gb/s (TCPXO), a3-highgpu-8g 4 x 200 Gb/s (TCPX)
        ("tcpxo_200g", "ethernet", 200e9 / 8, "tcpxo"),
        ("tcpx_200g", "ethernet", 200e9 / 8, "tcpx"),
        ("slingshot_200g", "ethernet", 200e9 / 8, "slingshot"),
        ("eth_100g", "ethernet", 100e9 / 8, "socket"),
    ],
)
def test_new_link_kinds(name: str, family: str, bandwidth_Bps: float, transport: str | None) -> None:
    """Each kind's family, per-direction bandwidth and NCCL transport, as its cited source gives them."""
    kind = get_link_kind(name)
    assert (kind.family, kind.transport) == (family, transport)
    assert kind.bandwidth_Bps == pytest.approx(bandwidth_Bps, rel=1e-12)
    assert kind.source


def test_existing_kinds_keep_their_figures() -> None:
    """The EPYC xGMI socket link and the older kinds are unchanged by the additions."""
    xgmi = get_link_kind("xgmi")
    assert (xgmi.family, xgmi.bandwidth_Bps, xgmi.latency_s, xgmi.transport) == (
        "inter_socket",
        36e9,
        1e-6,
        None,
    )
    assert get_link_kind("pcie5_x16").bandwidth_Bps == 32e9 * 128 / 130 / 8 * 16
    assert get_link_kind("nvlink4").bandwidth_Bps == 25e9


def test_transport_is_set_exactly_for_network_kinds() -> None:
    """Network kinds (ethernet, infiniband) name a transport; links inside a box do not."""
    for kind in LINK_KINDS.values():
        if kind.family in ("ethernet", "infiniband"):
            assert kind.transport in TRANSPORTS, kind.name
        else:
            assert kind.transport is None, kind.name


# -- registry -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(MACHINES))
def test_every_class_is_a_registered_builder(name: str) -> None:
    """get_topology finds each class by name and builds its defaults as one box."""
    assert BUILDERS[name] is MACHINES[name]
    assert f"{name} (builder)" in available_topologies()
    topology = get_topology(name)
    assert list(topology.boxes) == [0]
    assert {d.box for d in topology.devices} == {0}


# -- the classes: counts and figures from the vendors' documents --------------------------------


def test_nvswitch_box_defaults_are_the_shipped_hgx_h100() -> None:
    """NVIDIA DGX H100 User Guide: the defaults rebuild topologies/hgx_h100.yaml link for link."""
    assert _structure(nvswitch_box()) == _structure(get_topology("hgx_h100"))


def test_nvswitch_box_rebuilds_the_shipped_dgx_a100() -> None:
    """NVIDIA DGX A100 User Guide: 12 NVLink 3 links per GPU; 4 PCIe switches, 2 GPUs and 2 HDR NICs each."""
    box = nvswitch_box(
        fabric="nvlink3", links=12, pcie="pcie4_x16", nic="ib_hdr", inter_socket="xgmi", gpus_per_switch=2
    )
    assert _structure(box) == _structure(get_topology("dgx_a100"))
    assert {box.device(g).model for g in box.gpus} == {"A100-SXM4-80GB"}


@pytest.mark.parametrize(
    ("params", "port_Bps", "model"),
    [
        ({}, 450e9, "H100-SXM5-80GB"),  # H100/H200: 18 x NVLink 4, 900 GB/s bidirectional
        ({"gpu_model": "H200-SXM5-141GB"}, 450e9, "H200-SXM5-141GB"),
        (
            {"fabric": "nvlink5", "gpu_model": "B200"},
            900e9,
            "B200",
        ),  # B200: 18 x NVLink 5, 1.8 TB/s bidirectional
        ({"fabric": "nvlink3", "links": 12}, 300e9, "A100-SXM4-80GB"),  # A100: 12 x NVLink 3, 600 GB/s
    ],
)
def test_nvswitch_port_bandwidth(params: dict[str, Any], port_Bps: float, model: str) -> None:
    """Each GPU's NVSwitch port carries the datasheet's per-GPU NVLink bandwidth per direction."""
    box = nvswitch_box(**params)
    assert len(box.gpus) == 8 and len(box.devices_of_kind("nic")) == 8
    for gpu in box.gpus:
        assert box.link(gpu, "nvswitch0").bandwidth_Bps == pytest.approx(port_Bps, rel=1e-12)
        assert box.link("nvswitch0", gpu).bandwidth_Bps == pytest.approx(port_Bps, rel=1e-12)
        assert box.device(gpu).model == model


def test_nvswitch_box_nic_counts() -> None:
    """No NICs, 4 for 8 GPUs (each serves two), and AWS p5's 32 EFA (4 per GPU)."""
    assert nvswitch_box(nics=0).devices_of_kind("nic") == []
    four = nvswitch_box(nics=4)
    assert [four.device(n).serves for n in four.devices_of_kind("nic")] == [
        ("gpu0", "gpu1"), ("gpu2", "gpu3"), ("gpu4", "gpu5"), ("gpu6", "gpu7"),
    ]  # fmt: skip
    assert set(four.graph.successors("nic1")) == {"pcie_switch2"}
    p5 = nvswitch_box(nics=32, nic="efa_v2")
    assert len(p5.devices_of_kind("nic")) == 32
    assert nics_reaching(p5, ["gpu0"]) == ["nic0", "nic1", "nic2", "nic3"]
    assert {p5.device(n).model for n in p5.devices_of_kind("nic")} == {"efa_v2"}


@pytest.mark.parametrize(
    ("fabric", "links", "per_pair", "pair_Bps"),
    [
        ("nvlink4", 18, 6, 150e9),  # HGX H100 4-GPU: 6 NVLink 4 links per pair
        ("nvlink3", 12, 4, 100e9),  # HGX A100 4-GPU: 4 NVLink 3 links per pair
    ],
)
def test_nvlink_mesh_pairs(fabric: str, links: int, per_pair: int, pair_Bps: float) -> None:
    """NVIDIA HGX 4-GPU boards: every pair joined directly, the GPU's links split over its 3 peers."""
    box = nvlink_mesh_box(fabric=fabric, links=links)
    assert box.devices_of_kind("nvswitch") == []
    for a in box.gpus:
        for b in box.gpus:
            if a != b:
                link = box.link(a, b)
                assert (link.kind, link.count) == (fabric, per_pair)
                assert link.bandwidth_Bps == pytest.approx(pair_Bps, rel=1e-12)
        assert _fabric_Bps(box, a, ("nvlink",)) == pytest.approx(3 * pair_Bps, rel=1e-12)
    assert len(box.devices_of_kind("nic")) == 4


def test_xgmi_mesh_bandwidth() -> None:
    """AMD MI300X: 7 Infinity Fabric links, one per peer, 7 x 64 = 448 GB/s per direction; a NIC per GPU."""
    box = xgmi_box()
    assert len(box.gpus) == 8
    for gpu in box.gpus:
        peers = [p for p in box.graph.successors(gpu) if box.device(p).kind == "gpu"]
        assert len(peers) == 7
        assert _fabric_Bps(box, gpu, ("xgmi",)) == pytest.approx(7 * 64e9, rel=1e-12)
    assert [box.device(n).serves for n in box.devices_of_kind("nic")] == [(g,) for g in box.gpus]
    assert {box.device(n).model for n in box.devices_of_kind("nic")} == {"roce_400g"}
    mi355x = xgmi_box(link_bandwidth="76.8 GB/s", gpu_model="MI355X")  # 153.6 GB/s bidirectional per link
    assert _fabric_Bps(mi355x, "gpu0", ("xgmi",)) == pytest.approx(7 * 76.8e9, rel=1e-12)
    assert xgmi_box(gpus=4, links_per_peer=2).link("gpu0", "gpu1").bandwidth_Bps == 128e9


def test_nvl72_rack() -> None:
    """NVIDIA GB200 NVL72: 72 GPUs, 36 Grace CPUs, 18 NVLink 5 links per GPU, one NVLink domain = one box."""
    rack = nvl72_rack()
    assert rack.name == "nvl72_rack"
    assert len(rack.gpus) == 72 and len(rack.devices_of_kind("cpu")) == 36
    assert len(rack.devices_of_kind("nic")) == 72
    assert rack.boxes == {0: rack.gpus}
    for gpu in rack.gpus:
        port = rack.link(gpu, "nvswitch0")
        assert (port.kind, port.count, port.bandwidth_Bps) == ("nvlink5", 18, 900e9)
    # a GB200 superchip: one Grace, two B200, 900 GB/s bidirectional NVLink-C2C shared by the two
    assert {p for p in rack.graph.successors("cpu0") if rack.device(p).kind == "gpu"} == {"gpu0", "gpu1"}
    assert rack.link("gpu1", "cpu0").bandwidth_Bps == 225e9
    assert rack.link("gpu1", "cpu0").family == "chip_to_chip"
    assert _route_devices(rack, "gpu0", "gpu71") == ["gpu0", "nvswitch0", "gpu71"]
    assert _fabric_Bps(rack, "gpu0", ("nvlink",)) == 900e9  # C2C is not NVLink bandwidth between GPUs
    nvl36 = nvl72_rack(gpus=36, nics_per_tray=2, nic="ib_ndr")
    assert (len(nvl36.gpus), len(nvl36.devices_of_kind("nic"))) == (36, 18)


def test_bridged_pairs() -> None:
    """NVIDIA A100 PCIe: pairs bridged (a bridge is 4 links; 3 bridges, 600 GB/s bidirectional), rest PCIe."""
    box = bridged_pairs_box()
    assert box.link("gpu0", "gpu1").bandwidth_Bps == 100e9
    assert not box.graph.has_edge("gpu1", "gpu2")
    assert [box.links[i].family for i in box.route("gpu1", "gpu2")] == ["pcie", "pcie"]
    three = bridged_pairs_box(gpus=8, links=12, sockets=2, gpus_per_switch=2, p2p=False)
    assert three.link("gpu6", "gpu7").bandwidth_Bps == 300e9
    assert three.peer_to_peer is False
    assert len(three.devices_of_kind("pcie_switch")) == 4
    assert _route_devices(three, "gpu1", "gpu2") == ["gpu1", "pcie_switch0", "cpu0", "pcie_switch1", "gpu2"]


def test_pcie_box_shapes() -> None:
    """Root ports (PHB/SYS) or switches (PIX), one or two sockets, with or without peer-to-peer."""
    flat = pcie_box()
    assert flat.peer_to_peer and flat.devices_of_kind("cpu") == ["cpu0"]
    assert _route_devices(flat, "gpu0", "gpu3") == ["gpu0", "cpu0", "gpu3"]
    two = pcie_box(gpus=8, sockets=2, p2p=False, nics=2, inter_socket="upi")
    assert not two.peer_to_peer
    assert _route_devices(two, "gpu0", "gpu7") == ["gpu0", "cpu0", "cpu1", "gpu7"]
    assert two.link("cpu0", "cpu1").count == 3
    assert [two.device(n).serves for n in two.devices_of_kind("nic")] == [
        ("gpu0", "gpu1", "gpu2", "gpu3"), ("gpu4", "gpu5", "gpu6", "gpu7"),
    ]  # fmt: skip
    switched = pcie_box(gpus=8, sockets=2, gpus_per_switch=4)
    assert _route_devices(switched, "gpu0", "gpu3") == ["gpu0", "pcie_switch0", "gpu3"]
    assert set(switched.graph.successors("pcie_switch1")) == {"cpu1", "gpu4", "gpu5", "gpu6", "gpu7"}


@pytest.mark.parametrize(("gpus", "nics"), [(8, 1), (8, 3), (8, 8), (8, 32), (4, 2), (3, 7)])
def test_spread_serves_every_gpu(gpus: int, nics: int) -> None:
    """Every GPU is served by at least one NIC, and a NIC sits by a GPU it serves."""
    placed = spread(gpus, nics)
    assert len(placed) == nics
    assert {g for _, served in placed for g in served} == set(range(gpus))
    assert all(home in served for home, served in placed)


# -- every class runs ring and tree, verified --------------------------------------------------

CLASSES = [
    ("nvswitch_box", {}),
    ("nvswitch_box", {"fabric": "nvlink5", "nics": 32, "nic": "efa_v4", "gpu_model": "B200"}),
    ("nvlink_mesh_box", {}),
    ("nvlink_mesh_box", {"fabric": "nvlink3", "links": 12, "pcie": "pcie4_x16", "sockets": 1}),
    ("bridged_pairs_box", {}),
    ("bridged_pairs_box", {"gpus": 8, "links": 12, "sockets": 2, "gpus_per_switch": 2, "p2p": False}),
    ("pcie_box", {}),
    ("pcie_box", {"gpus": 8, "sockets": 2, "gpus_per_switch": 4, "p2p": False, "nics": 2}),
    ("xgmi_box", {}),
    ("nvl72_rack", {}),
]


@pytest.mark.parametrize(("name", "params"), CLASSES)
@pytest.mark.parametrize("algorithm", ["ring", "tree"])
def test_every_class_passes_the_verifier(name: str, params: dict[str, Any], algorithm: str) -> None:
    """Ring and tree all-reduce schedules on every class are proved correct, then replayed."""
    result = simulate(get_topology(name, **params), algorithm, "all_reduce", "64 MB", verify=True)
    assert result.time_s > 0


def test_ring_on_an_h100_nvlink_mesh_is_exact() -> None:
    """Ring all-reduce on HGX H100 4-GPU with zero latency: t = 2(n-1)/n x size / B_pair.

    Derivation: the ring 0-1-2-3-0 uses four direct 6-link bundles, one per
    hop, each used in one direction only, so no two sends share a link. The
    chunked ring (Patarasuk & Yuan 2009) runs 2(n-1) steps; in each, every
    rank sends one chunk of size/n over its own bundle at B_pair = 6 x 25 =
    150 GB/s. So t = 2(n-1) x (size/n) / B_pair = 1.5 x 64 MB / 150 GB/s = 0.64 ms.
    """
    box = nvlink_mesh_box().scaled({}, latency_s=0.0)
    n, size, pair_Bps = 4, 64e6, 150e9
    result = simulate(box, "ring", "all_reduce", size, verify=True)
    expected_s = 2 * (n - 1) / n * size / pair_Bps
    assert result.replay_time_s == pytest.approx(expected_s, rel=1e-12)
    assert result.analytic_time_s == pytest.approx(expected_s, rel=1e-12)


@pytest.mark.parametrize(
    "make",
    [
        *[lambda name=name, params=params: get_topology(name, **params) for name, params in CLASSES],
        lambda: cluster(
            "nvswitch_box", nodes=3, fabric="rails", leaf_size=2, oversubscription=2.0, nics_per_node=4
        ),
    ],
)
def test_yaml_round_trip(make: Any, tmp_path: Path) -> None:
    """save_topology -> load_topology_file gives the same machine, new kinds and NIC models included."""
    original = make()
    save_topology(original, tmp_path / "machine.yaml")
    again = load_topology_file(tmp_path / "machine.yaml")
    assert again.devices == original.devices
    assert again.links == original.links
    assert again.peer_to_peer == original.peer_to_peer


# -- bad arguments -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "params", "error", "message"),
    [
        (
            "nvswitch_box",
            {"gpus": 1},
            TopologyError,
            "builder 'nvswitch_box' needs gpus >= 2 (a whole number), got 1",
        ),
        ("nvswitch_box", {"links": 0}, TopologyError, "needs links >= 1"),
        (
            "nvswitch_box",
            {"fabric": "pcie4_x16"},
            TopologyError,
            "fabric 'pcie4_x16' is a pcie link, not nvlink",
        ),
        ("nvswitch_box", {"fabric": "nvlink9"}, UnknownNameError, "unknown link kind 'nvlink9'"),
        ("nvswitch_box", {"nic": "upi"}, TopologyError, "nic 'upi' is a inter_socket link, not ethernet or"),
        ("nvswitch_box", {"pcie": "nvlink4"}, TopologyError, "pcie 'nvlink4' is a nvlink link, not pcie"),
        (
            "nvswitch_box",
            {"inter_socket": "pcie5_x16"},
            TopologyError,
            "inter_socket 'pcie5_x16' is a pcie link",
        ),
        ("nvswitch_box", {"sockets": 9}, TopologyError, "9 sockets for 8 GPUs; give sockets <= gpus"),
        ("nvswitch_box", {"nics": -1}, TopologyError, "needs nics >= 0"),
        ("nvswitch_box", {"link_bandwidth": "0 GB/s"}, TopologyError, "needs a positive link_bandwidth"),
        ("nvswitch_box", {"link_bandwidth": "fast"}, UnitError, ""),
        ("nvswitch_box", {"gpu": 8}, TopologyError, "builder 'nvswitch_box' has no field 'gpu'; valid: gpus"),
        (
            "nvlink_mesh_box",
            {"links": 16},
            TopologyError,
            "16 links per GPU do not split evenly over 3 peers",
        ),
        ("bridged_pairs_box", {"gpus": 3}, TopologyError, "bridges GPUs in pairs; give an even gpus, got 3"),
        ("pcie_box", {"gpus_per_switch": 0}, TopologyError, "needs gpus_per_switch >= 1"),
        ("pcie_box", {"gpus": 2.5}, TopologyError, "gpus must be a whole number, e.g. 4, got 2.5 (a float)"),
        (
            "xgmi_box",
            {"links_per_peer": 2},
            TopologyError,
            "is 14 xGMI links per GPU; an MI300-class GPU has 7",
        ),
        ("nvl72_rack", {"gpus": 70}, TopologyError, "gpus (70) must be a multiple of gpus_per_tray (4)"),
        ("nvl72_rack", {"cpus_per_tray": 3}, TopologyError, "gpus_per_tray a multiple of cpus_per_tray (3)"),
        ("nvl72_rack", {"c2c": "nvlink5"}, TopologyError, "c2c 'nvlink5' is a nvlink link, not chip_to_chip"),
    ],
)
def test_bad_arguments(name: str, params: dict[str, Any], error: type[CommsimError], message: str) -> None:
    """Each bad argument raises a typed error that says what was wrong."""
    with pytest.raises(error) as info:
        get_topology(name, **params)
    assert message in str(info.value)


# -- clusters of these boxes ------------------------------------------------------------------


def test_cluster_of_builder_boxes_takes_their_nic_kind() -> None:
    """A box's NICs name their network kind; the cluster uses it unless told otherwise."""
    p5 = cluster(nvswitch_box(nics=32, nic="efa_v2"), nodes=2, nics_per_node=32)
    assert {p5.link(n, "switch0").kind for n in p5.graph.predecessors("switch0")} == {"efa_v2"}
    assert len(list(p5.graph.predecessors("switch0"))) == 64
    one_per_gpu = cluster(nvswitch_box(nics=32, nic="efa_v2"), nodes=2)  # nic_per="gpu": 8, picked evenly
    assert sorted(one_per_gpu.graph.predecessors("switch0"))[:3] == ["n0_nic0", "n0_nic12", "n0_nic16"]
    assert nics_reaching(one_per_gpu, ["gpu3"]) == ["n0_nic12"]
    assert cluster("dgx_a100", nodes=2).link("n0_nic0", "switch0").kind == "ib_hdr"  # shipped: the default
    assert cluster(xgmi_box(), nodes=2, nic="roce_200g").link("n1_nic7", "switch0").kind == "roce_200g"
    by_name = get_topology("cluster", box="xgmi_box", nodes=2)
    assert by_name.name == "cluster_2xxgmi_box_8xMI300X"
    assert by_name.link("n0_nic0", "switch0").kind == "roce_400g"


def test_cluster_of_nvl72_racks() -> None:
    """Two NVL72 racks: each rack one box, its 72 NICs on the network."""
    racks = cluster(nvl72_rack(), nodes=2, fabric="rails")
    assert len(racks.gpus) == 144 and list(racks.boxes) == [0, 1]
    assert racks.device("n1_cpu35").box == 1
    assert _route_devices(racks, "gpu0", "gpu71")[1] == "n0_nvswitch0"
    assert racks.link("n0_nic0", "rail0_leaf0").kind == "ib_xdr"


def test_nics_per_node_picks_evenly_and_reassigns_serves() -> None:
    """4 of an HGX H100's 8 NICs join: nic0, 2, 4, 6; GPU 1 then uses nic0, its nearest."""
    topology = cluster("hgx_h100", nodes=2, nic="ib_ndr", nics_per_node=4)
    assert sorted(topology.graph.predecessors("switch0")) == [
        f"n{k}_nic{i}" for k in (0, 1) for i in (0, 2, 4, 6)
    ]
    assert topology.device("n0_nic0").serves == ("gpu0", "gpu1")
    assert topology.device("n0_nic1").serves == ("gpu1",)  # still in the box, off the network
    assert nics_reaching(topology, ["gpu1", "gpu9"]) == ["n0_nic0", "n1_nic0"]
    assert "n0_nic0" in _route_devices(topology, "gpu1", "gpu9")
    assert "4 ib_ndr NIC(s) per box (one per 2 GPUs)" in topology.description


def test_nics_per_node_on_a_box_without_nics() -> None:
    """A NIC-less box gets nics_per_node NICs, spread over its GPUs' switches."""
    topology = cluster("pcie_4gpu_switch", nodes=2, nic="eth_100g", nics_per_node=2)
    assert [topology.device(n).serves for n in topology.devices_of_kind("nic")] == [
        ("gpu0", "gpu1"), ("gpu2", "gpu3"), ("gpu4", "gpu5"), ("gpu6", "gpu7"),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"nics_per_node": 0}, "cluster nics_per_node must be a whole number >= 1, got 0"),
        ({"nics_per_node": 9}, "cluster nics_per_node=9 but box 'hgx_h100' has 8 NIC(s); give at most 8"),
    ],
)
def test_nics_per_node_errors(params: dict[str, Any], message: str) -> None:
    with pytest.raises(TopologyError, match=message.replace("(", r"\(").replace(")", r"\)")):
        cluster("hgx_h100", nodes=2, **params)


def test_rails_put_nic_i_of_every_node_on_leaf_i() -> None:
    """Rail-optimised (NVIDIA DGX SuperPOD): same-index GPUs of two nodes meet one leaf hop apart."""
    topology = cluster("hgx_h100", nodes=4, nic="ib_ndr", fabric="rails")
    leaves = [d for d in topology.devices_of_kind("switch") if "leaf" in d]
    assert leaves == [f"rail{r}_leaf0" for r in range(8)]
    assert set(topology.graph.predecessors("rail3_leaf0")) == {f"n{k}_nic3" for k in range(4)} | {
        f"spine{j}" for j in range(4)
    }
    assert _route_devices(topology, "gpu3", "gpu11") == [
        "gpu3", "n0_pcie_switch3", "n0_nic3", "rail3_leaf0", "n1_nic3", "n1_pcie_switch3", "gpu11",
    ]  # fmt: skip
    across = _route_devices(topology, "gpu0", "gpu9")
    assert across[2:7] == ["n0_nic0", "rail0_leaf0", across[4], "rail1_leaf0", "n1_nic1"]
    assert across[4].startswith("spine")


def test_rails_in_groups_and_oversubscribed() -> None:
    """leaf_size groups nodes per rail leaf; oversubscription thins the spines as in the fat tree."""
    topology = cluster("hgx_h100", nodes=4, nic="ib_ndr", fabric="rails", leaf_size=2, oversubscription=2.0)
    switches = topology.devices_of_kind("switch")
    assert len([s for s in switches if "leaf" in s]) == 16 and [s for s in switches if "spine" in s] == [
        "spine0"
    ]
    assert topology.link("rail0_leaf1", "spine0").bandwidth_Bps == 50e9  # 2 x 50 GB/s / 2 over one spine


def test_nics_reaching_counts_one_nic_per_gpu() -> None:
    """One GPU per node uses one NIC per node, not eight; a box's only NIC serves GPUs far from it."""
    topology = cluster("hgx_h100", nodes=4, nic="ib_ndr")
    assert nics_reaching(topology, ["gpu0", "gpu8", "gpu16", "gpu24"]) == [f"n{k}_nic0" for k in range(4)]
    assert len(nics_reaching(topology, topology.gpus)) == 32
    per_box = cluster("dgx_a100", nodes=2, nic="ib_hdr", nic_per="box")
    assert nics_reaching(per_box, ["gpu7", "gpu15"]) == ["n0_nic0", "n1_nic0"]
    assert nics_reaching(pcie_box(), ["gpu0"]) == []
    with pytest.raises(TopologyError, match="nics_reaching takes GPUs; 'switch0' is a switch"):
        nics_reaching(topology, ["switch0"])
    with pytest.raises(UnknownNameError):
        nics_reaching(topology, ["gpu99"])


def test_cluster_keeps_the_box_peer_to_peer_setting() -> None:
    """A cluster of boxes without peer-to-peer has none either (NCCL stages through host memory)."""
    assert cluster(pcie_box(p2p=False), nodes=2, nic="tcp_100g").peer_to_peer is False
    assert cluster("hgx_h100", nodes=2).peer_to_peer is True


def test_a_nic_hung_off_a_gpu_serves_only_that_gpu() -> None:
    """A ring of 4 GPUs has no PCIe switch or CPU, so each NIC the cluster adds hangs off one GPU, and
    routes never pass through another GPU: 2 NICs for 4 GPUs would leave two GPUs without a reachable
    NIC. The builder says so (one NIC per GPU works) instead of failing later with a missing route."""
    from commsim.topology import get_topology

    ring = get_topology("ring", gpus=4)
    with pytest.raises(TopologyError, match=r"asks one NIC to serve 2: give nics_per_node=4"):
        cluster(ring, nodes=2, nic="ib_ndr", nics_per_node=2)
    machine = cluster(ring, nodes=2, nic="ib_ndr", nics_per_node=4)
    assert all(len(nics_reaching(machine, [gpu])) == 1 for gpu in machine.gpus)
