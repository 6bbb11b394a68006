"""Importing ``nvidia-smi topo -m`` matrices (SEED_FACTS.md section 2).

The real matrices come from the development nccl-tests logs; the hand-written
ones in tests/data/nvsmi/ follow the machines of SEED_FACTS section 2 (the
DGX-1 V100 NV1/NV2 table, an NV12 DGX A100, an NV18 HGX H100) and a PCIe box
with every relation. Every import must reproduce its matrix (classify_pair
round trip) and simulate.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from commsim.api import simulate
from commsim.calibrate import load_nccl_tests
from commsim.errors import ParseError, TopologyError, UnknownNameError
from commsim.topology import LINK_KINDS, Topology, get_topology
from commsim.topology.nvsmi import (
    HOST_BRIDGE_MODEL,
    classify_pair,
    find_p2p_status,
    import_topo_matrix,
    load_topo_matrix,
    parse_topo_matrix,
    topo_matrix_from_log,
)

DATA = Path(__file__).parent / "data"
LOGS = DATA / "nccl-tests"
MATRICES = DATA / "nvsmi"

LOGS_WITH_MATRIX = [
    "RTX2080Ti-PCIe-PIX-noP2P_all_gather_2gpu_1.txt",
    "RTX2080Ti-PCIe-PIX-noP2P_all_reduce_2gpu_1.txt",
    "RTX2080Ti-PCIe-PIX-noP2P_broadcast_2gpu_1.txt",
    "RTX4090-PCIe-noP2P-8NUMA_all_reduce_8gpu_1.txt",
    "V100-SXM2-hybridcubemesh_all_reduce_8gpu_1.txt",
    "synthetic_rank-prefix_RTX2080Ti_broadcast_2gpu.txt",
]
FILE_MODELS = {
    "dgx1_v100.txt": "Tesla V100-SXM2-32GB",
    "dgx_a100.txt": "NVIDIA A100-SXM4-80GB",
    "hgx_h100.txt": "NVIDIA H100 80GB HBM3",
    "pcie_mixed.txt": "NVIDIA A40",
}


_TABLE = "0-1:1 0-2:1 0-3:2 0-4:2 1-2:2 1-3:1 1-5:2 2-3:2 2-6:1 3-7:1 4-5:1 4-6:1 4-7:2 5-6:2 5-7:1 6-7:2"
DGX1_NVLINKS = {
    frozenset(int(k) for k in pair.split("-")): f"NV{count}"
    for pair, count in (item.split(":") for item in _TABLE.split())
}
"""SEED_FACTS section 2's DGX-1 V100 NVLink table."""


def matrix_text(
    labels: list[str], cell: Callable[[str, str], str], extras: dict[str, list[str]] | None = None
) -> str:
    """A topo -m matrix with ``cell(a, b)`` off the diagonal and optional affinity columns."""
    extras = extras or {}
    lines = ["\t" + "\t".join(labels + list(extras))]
    for k, a in enumerate(labels):
        values = [column[k] for column in extras.values() if k < len(column)]
        lines.append("\t".join([a] + [" X " if a == b else cell(a, b) for b in labels] + values))
    return "\n".join(lines) + "\n"


def everywhere(value: str) -> Callable[[str, str], str]:
    """Cells that are ``value`` between every pair."""
    return lambda a, b: value


def nvlink_bonds(topology: Topology) -> set[tuple[frozenset[str], int]]:
    """(GPU pair, link count) of every NVLink bond."""
    return {
        (frozenset((link.a, link.b)), link.count)
        for link in topology.physical_links
        if LINK_KINDS[link.kind].family == "nvlink"
    }


def neighbours(topology: Topology, name: str) -> set[str]:
    """Devices directly linked to ``name``."""
    return set(topology.graph.successors(name))


def assert_round_trip(topology: Topology, text: str) -> None:
    """classify_pair of every pair of columns equals the input cell."""
    matrix = parse_topo_matrix(text)
    names = matrix.device_names
    wrong = {
        (matrix.labels[i], matrix.labels[j]): (cell, classify_pair(topology, names[i], names[j]))
        for (i, j), cell in matrix.cells.items()
        if classify_pair(topology, names[i], names[j]) != cell
    }
    assert wrong == {}


# -- the development logs -------------------------------------------------------------------


def test_which_logs_hold_a_matrix() -> None:
    """Exactly these development logs contain a topo -m matrix (the DGX-1-style V100 box prints its
    NV1/NV2 cube mesh; the A100/H100 ones and the other V100 logs do not)."""
    found = []
    for path in sorted(LOGS.iterdir()):
        try:
            log = load_nccl_tests(path)
        except ParseError:
            continue
        if log.topo_matrix is not None:
            found.append(path.name)
    assert found == LOGS_WITH_MATRIX


@pytest.mark.parametrize("name", [n for n in LOGS_WITH_MATRIX if "2080" in n])
def test_rtx2080ti_logs(name: str) -> None:
    """Two RTX 2080 Ti on one PCIe switch (PIX) of NUMA node 1, PCIe gen3, no NVLink, no P2P."""
    log = load_nccl_tests(LOGS / name)
    topology = topo_matrix_from_log(log, p2p=False)
    assert topology is not None
    assert [(d.name, d.kind) for d in topology.devices] == [
        ("cpu1", "cpu"),
        ("pcie_switch0", "pcie_switch"),
        ("gpu0", "gpu"),
        ("gpu1", "gpu"),
    ]
    assert {d.model for d in topology.devices if d.kind == "gpu"} == {"NVIDIA GeForce RTX 2080 Ti"}
    assert nvlink_bonds(topology) == set()
    assert neighbours(topology, "pcie_switch0") == {"gpu0", "gpu1", "cpu1"}
    assert {link.kind for link in topology.physical_links} == {"pcie3_x16"}
    assert classify_pair(topology, "gpu0", "gpu1") == "PIX"
    assert "p2p=False" in topology.description
    assert "host memory" in topology.description
    assert topology.peer_to_peer is False


def test_rtx4090_log() -> None:
    """Eight RTX 4090, each on its own NUMA node (all SYS); two dual-port NICs next to GPU6."""
    log = load_nccl_tests(LOGS / "RTX4090-PCIe-noP2P-8NUMA_all_reduce_8gpu_1.txt")
    topology = topo_matrix_from_log(log, p2p=False)
    assert topology is not None
    kinds = [d.kind for d in topology.devices]
    assert (kinds.count("gpu"), kinds.count("nic"), kinds.count("cpu"), kinds.count("pcie_switch")) == (
        8,
        4,
        8,
        2,
    )
    numa = {0: 3, 1: 2, 2: 1, 3: 0, 4: 7, 5: 6, 6: 5, 7: 4}  # the NUMA Affinity column
    for gpu, node in numa.items():
        assert neighbours(topology, f"gpu{gpu}") == {f"cpu{node}"}
    assert neighbours(topology, "pcie_switch0") == {"nic0", "nic1", "cpu5"}
    assert neighbours(topology, "pcie_switch1") == {"nic2", "nic3", "cpu5"}
    sockets = [link for link in topology.physical_links if link.kind == "upi"]
    assert len(sockets) == 8 * 7 // 2  # every pair of NUMA nodes
    assert nvlink_bonds(topology) == set()
    assert {link.kind for link in topology.physical_links} == {"pcie4_x16", "upi"}
    assert classify_pair(topology, "gpu6", "nic0") == "PHB"
    assert classify_pair(topology, "nic0", "nic2") == "PHB"
    assert classify_pair(topology, "gpu0", "gpu1") == "SYS"
    assert simulate(topology, "ring", size="1 GB").time_s > 0


def test_log_without_matrix() -> None:
    """A log without a matrix imports as None."""
    log = load_nccl_tests(LOGS / "A100-SXM4-80GB-HGX-NVSwitch_all_reduce_8gpu_1.txt")
    assert topo_matrix_from_log(log) is None


def test_whole_log_file_reads_p2p_status() -> None:
    """load_topo_matrix on a whole log finds topo -m, and p2p=False from its topo -p2p matrix."""
    path = LOGS / "RTX2080Ti-PCIe-PIX-noP2P_all_reduce_2gpu_1.txt"
    text = path.read_text()
    assert find_p2p_status(text) is False
    topology = load_topo_matrix(path, gpu_model="NVIDIA GeForce RTX 2080 Ti")
    assert topology.name == path.stem
    assert "p2p=False" in topology.description
    assert topology.peer_to_peer is False
    assert load_topo_matrix(path, p2p=True).description.count("p2p=True") == 1


def test_rank_prefixed_file() -> None:
    """A launcher's ``rank0:`` prefix before every line is accepted in a raw file."""
    topology = load_topo_matrix(LOGS / "synthetic_rank-prefix_RTX2080Ti_broadcast_2gpu.txt")
    assert topology.gpus == ["gpu0", "gpu1"]
    assert classify_pair(topology, "gpu0", "gpu1") == "PIX"


# -- hand-written machines ------------------------------------------------------------------------


def test_dgx1_v100_reproduces_the_shipped_machine(dgx1_v100: Topology) -> None:
    """SEED_FACTS section 2's NV1/NV2 table gives the shipped dgx1_v100 bonds and PCIe tree.

    The old-format matrix (mlx5_N columns, CPU Affinity only) has no NUMA
    column: the sockets come from the SYS cells, and the PCIe relation of
    NVLink pairs from the NICs. Only the inter-socket bond differs (the
    shipped file has two QPI links, the importer's default is one).
    """
    matrix = parse_topo_matrix((MATRICES / "dgx1_v100.txt").read_text())
    nv_cells = {
        frozenset((int(matrix.labels[i][3:]), int(matrix.labels[j][3:]))): cell
        for (i, j), cell in matrix.cells.items()
        if cell.startswith("NV")
    }
    assert nv_cells == DGX1_NVLINKS
    topology = load_topo_matrix(MATRICES / "dgx1_v100.txt", gpu_model="Tesla V100-SXM2-32GB")
    assert nvlink_bonds(topology) == nvlink_bonds(dgx1_v100)
    assert sorted(d.name for d in topology.devices) == sorted(d.name for d in dgx1_v100.devices)

    def links(t: Topology) -> set[tuple[frozenset[str], str, int]]:
        return {(frozenset((l.a, l.b)), l.kind, l.count) for l in t.physical_links}

    assert links(dgx1_v100) - links(topology) == {(frozenset(("cpu0", "cpu1")), "qpi", 2)}
    assert links(topology) - links(dgx1_v100) == {(frozenset(("cpu0", "cpu1")), "qpi", 1)}
    names = [d.name for d in dgx1_v100.devices if d.kind in ("gpu", "nic")]
    for a in names:
        for b in names:
            assert classify_pair(topology, a, b) == classify_pair(dgx1_v100, a, b)
    links_per_gpu = {g: sum(c for pair, c in nvlink_bonds(topology) if g in pair) for g in topology.gpus}
    assert set(links_per_gpu.values()) == {6}
    assert "PIX x4, PHB x8, SYS x4" in topology.description


def test_dgx_a100_is_an_nvswitch_star() -> None:
    """NV12 between all 8 A100s: one NVSwitch, 12 nvlink3 per GPU = 300 GB/s per direction."""
    topology = load_topo_matrix(
        MATRICES / "dgx_a100.txt", gpu_model="NVIDIA A100-SXM4-80GB", cpu_model="AMD EPYC 7742"
    )
    assert topology.devices_of_kind("nvswitch") == ["nvswitch0"]
    for gpu in topology.gpus:
        for link in (topology.link(gpu, "nvswitch0"), topology.link("nvswitch0", gpu)):
            assert (link.kind, link.count) == ("nvlink3", 12)
            assert link.bandwidth_Bps == pytest.approx(300e9)
    assert len(nvlink_bonds(topology)) == 8  # no direct GPU-GPU bundles
    assert classify_pair(topology, "gpu0", "gpu7") == "NV12"
    assert [d.model for d in topology.devices if d.kind == "nic"] == [f"mlx5_{k}" for k in range(10)]
    assert topology.devices_of_kind("cpu") == ["cpu0", "cpu1", "cpu3", "cpu5", "cpu7"]
    assert {l.kind for l in topology.physical_links if l.a.startswith("cpu") and l.b.startswith("cpu")} == {
        "xgmi"
    }
    # PXB: GPU0, GPU1, NIC0, NIC1 each behind a leaf switch under one parent on NUMA node 3
    (leaf,) = neighbours(topology, "gpu0") - {"nvswitch0"}
    (parent,) = neighbours(topology, leaf) - {"gpu0"}
    assert neighbours(topology, parent) - {"cpu3"} == {
        next(iter(neighbours(topology, d) - {"nvswitch0"})) for d in ("gpu0", "gpu1", "nic0", "nic1")
    }
    # the storage NICs (SYS to everything) share a switch on a NUMA node of their own
    assert neighbours(topology, next(iter(neighbours(topology, "nic8")))) == {"nic8", "nic9", "cpu0"}
    assert "nic_kind=ib_hdr" in topology.description


def test_hgx_h100() -> None:
    """NV18 between all 8 H100s: 450 GB/s per direction per GPU; NODE needs host bridges."""
    topology = load_topo_matrix(MATRICES / "hgx_h100.txt", gpu_model="NVIDIA H100 80GB HBM3")
    assert topology.link("gpu3", "nvswitch0").bandwidth_Bps == pytest.approx(450e9)
    bridges = [d.name for d in topology.devices if d.model == HOST_BRIDGE_MODEL]
    assert len(bridges) == 8
    assert len(topology.devices_of_kind("pcie_switch")) == 16
    for k in range(8):
        (switch,) = neighbours(topology, f"nic{k}")
        assert neighbours(topology, switch) == {f"gpu{k}", f"nic{k}"} | set(bridges) & neighbours(
            topology, switch
        )
    assert classify_pair(topology, "gpu0", "nic1") == "NODE"
    assert {l.kind for l in topology.physical_links} == {"pcie5_x16", "nvlink4", "upi"}
    assert "nic_kind=ib_ndr" in topology.description


def test_pcie_box_with_every_relation() -> None:
    """PIX, PXB, PHB, NODE and SYS: leaf and parent switches, two host bridges, two sockets."""
    topology = load_topo_matrix(MATRICES / "pcie_mixed.txt", gpu_model="NVIDIA A40")
    assert [d.name for d in topology.devices if d.kind == "cpu"] == ["cpu0", "cpu1"]
    assert len([d for d in topology.devices if d.model == HOST_BRIDGE_MODEL]) == 2
    assert len([d for d in topology.devices if d.kind == "pcie_switch" and d.model is None]) == 3
    assert neighbours(topology, "gpu3") == {"cpu1"}
    route = topology.route("gpu0", "nic1")
    assert [topology.links[i].dst for i in route] == [
        "pcie_switch0",
        "pcie_switch2",
        "host_bridge0",
        "cpu0",
        "host_bridge1",
        "nic1",
    ]
    expected = {("gpu0", "gpu1"): "PIX", ("gpu0", "gpu2"): "PXB", ("gpu0", "nic0"): "PHB"}
    expected |= {("gpu2", "nic1"): "NODE", ("gpu1", "gpu3"): "SYS", ("nic0", "nic1"): "NODE"}
    assert {pair: classify_pair(topology, *pair) for pair in expected} == expected


# -- every matrix: round trip and simulation --------------------------------------------------------

GENERATED = {
    "nvswitch_without_nics": (
        matrix_text([f"GPU{k}" for k in range(4)], everywhere("NV12")),
        "NVIDIA A100-SXM4-40GB",
    ),
    "dgx2_nv6": (matrix_text([f"GPU{k}" for k in range(4)], everywhere("NV6")), "Tesla V100-SXM3-32GB"),
    "bridged_pair": (matrix_text(["GPU0", "GPU1"], everywhere("NV4")), "NVIDIA GeForce RTX 3090"),
    "old_soc": (
        matrix_text(["GPU0", "GPU1", "GPU2"], lambda a, b: "PHB" if {a, b} == {"GPU0", "GPU1"} else "SOC"),
        "Tesla K80",
    ),
    "dgx1_without_nics": (
        matrix_text(
            [f"GPU{k}" for k in range(8)],
            lambda a, b: DGX1_NVLINKS.get(frozenset((int(a[3:]), int(b[3:]))), "SYS"),
            {"CPU Affinity": ["0-19,40-59"] * 4 + ["20-39,60-79"] * 4},
        ),
        "Tesla V100-SXM2-16GB",
    ),
}


def all_matrices() -> list[tuple[str, str, str | None]]:
    """(id, text, GPU model) of every matrix the tests know."""
    cases: list[tuple[str, str, str | None]] = []
    for name in LOGS_WITH_MATRIX:
        log = load_nccl_tests(LOGS / name)
        assert log.topo_matrix is not None
        cases.append((name, log.topo_matrix, log.gpu_model))
    cases += [(name, (MATRICES / name).read_text(), model) for name, model in FILE_MODELS.items()]
    cases += [(name, text, model) for name, (text, model) in GENERATED.items()]
    return cases


@pytest.mark.parametrize(
    ("text", "gpu_model"), [c[1:] for c in all_matrices()], ids=[c[0] for c in all_matrices()]
)
def test_round_trip(text: str, gpu_model: str | None) -> None:
    """classify_pair of the built machine gives back every cell of the matrix."""
    assert_round_trip(import_topo_matrix(text, gpu_model=gpu_model), text)


@pytest.mark.parametrize(
    ("text", "gpu_model"), [c[1:] for c in all_matrices()], ids=[c[0] for c in all_matrices()]
)
def test_imported_machines_simulate(text: str, gpu_model: str | None) -> None:
    """A 1 GB ring all-reduce on every imported machine lies between two hand-derived bounds.

    The ring does 2(n-1) steps; in each, hop i (rank i to i+1) sends g/n bytes along its route.
    A hop's sends follow one another (one connection), so

    - lower bound: the slowest hop alone, 2(n-1) x (latency + (g/n) / bottleneck bandwidth);
    - upper bound: at most h(l) sends cross link l at once (h = hops routed over it), so a send
      gets at least min over its links of capacity / h (max-min fairness) and takes at most
      latency + (g/n) x max_l h(l) / capacity(l); the chain of 2(n-1) sends that makes the
      ring's critical path takes at most 2(n-1) x the slowest such hop.
    """
    topology = import_topo_matrix(text, gpu_model=gpu_model)
    result = simulate(topology, "ring", size="1 GB")
    gpus, g = topology.gpus, 1e9
    n = len(gpus)
    hops = [topology.routes(a, b) for a, b in zip(gpus, gpus[1:] + gpus[:1])]
    assert all(len(options) == 1 for options in hops), "imported machines have one route per hop"
    routes = [options[0] for options in hops]
    sharing = {link: sum(link in route for route in routes) for route in routes for link in route}
    links = topology.links
    latency = [sum(links[i].latency_s for i in route) for route in routes]
    alone = [lat + (g / n) / min(links[i].bandwidth_Bps for i in r) for lat, r in zip(latency, routes)]
    shared = [
        lat + (g / n) * max(sharing[i] / links[i].bandwidth_Bps for i in r) for lat, r in zip(latency, routes)
    ]
    steps = 2 * (n - 1)
    assert steps * max(alone) * (1 - 1e-12) <= result.time_s <= steps * max(shared) * (1 + 1e-12)


def test_nvswitch_rule_variants() -> None:
    """Link budget: NV6 between 4 V100s needs a switch; a bridged pair stays a direct bundle."""
    dgx2 = import_topo_matrix(GENERATED["dgx2_nv6"][0], gpu_model="Tesla V100-SXM3-32GB")
    assert dgx2.link("gpu0", "nvswitch0").count == 6
    pair = import_topo_matrix(
        matrix_text(["GPU0", "GPU1"], everywhere("NV12")), gpu_model="NVIDIA A100-PCIE-40GB"
    )
    assert nvlink_bonds(pair) == {(frozenset(("gpu0", "gpu1")), 12)}
    bridged = import_topo_matrix(GENERATED["bridged_pair"][0], gpu_model="NVIDIA GeForce RTX 3090")
    assert nvlink_bonds(bridged) == {(frozenset(("gpu0", "gpu1")), 4)}
    assert bridged.link("gpu0", "gpu1").kind == "nvlink3"
    assert "bridge" in bridged.description


def test_unconstrained_pairs_share_a_host_bridge() -> None:
    """Without NICs, NVLink pairs go by affinity: one CPU if none is printed, else one per socket."""
    star = import_topo_matrix(GENERATED["nvswitch_without_nics"][0])
    assert star.devices_of_kind("cpu") == ["cpu0"]
    assert [star.links[i].dst for i in star.route("gpu0", "gpu1", kinds=["pcie"])] == ["cpu0", "gpu1"]
    dgx1 = import_topo_matrix(GENERATED["dgx1_without_nics"][0])
    assert [sorted(neighbours(dgx1, cpu) - {"cpu0", "cpu1"}) for cpu in ("cpu0", "cpu1")] == [
        ["gpu0", "gpu1", "gpu2", "gpu3"],
        ["gpu4", "gpu5", "gpu6", "gpu7"],
    ]


# -- link kinds, overrides, description --------------------------------------------------------------

PAIR = matrix_text(["GPU0", "GPU1"], everywhere("NV2"))


@pytest.mark.parametrize(
    ("gpu_model", "nvlink", "pcie", "nic", "socket"),
    [
        ("Tesla P100-SXM2-16GB", "nvlink1", "pcie3_x16", "eth_100g", "qpi"),
        ("Tesla V100-SXM2-32GB", "nvlink2", "pcie3_x16", "eth_100g", "qpi"),
        ("NVIDIA GeForce RTX 2080 Ti", "nvlink2", "pcie3_x16", "eth_100g", "upi"),
        ("NVIDIA A100-SXM4-80GB", "nvlink3", "pcie4_x16", "ib_hdr", "upi"),
        ("NVIDIA A800-SXM4-80GB", "nvlink3", "pcie4_x16", "ib_hdr", "upi"),
        ("NVIDIA RTX A6000", "nvlink3", "pcie4_x16", "eth_100g", "upi"),
        ("NVIDIA GeForce RTX 4090", "nvlink2", "pcie4_x16", "eth_100g", "upi"),
        ("NVIDIA H100 80GB HBM3", "nvlink4", "pcie5_x16", "ib_ndr", "upi"),
        ("NVIDIA GH200 480GB", "nvlink4", "pcie5_x16", "ib_ndr", "upi"),
        ("NVIDIA B200", "nvlink5" if "nvlink5" in LINK_KINDS else "nvlink4", "pcie5_x16", "ib_ndr", "upi"),
        (None, "nvlink2", "pcie3_x16", "eth_100g", "upi"),
    ],
)
def test_link_kinds_from_gpu_model(
    gpu_model: str | None, nvlink: str, pcie: str, nic: str, socket: str
) -> None:
    """NVLink and PCIe generation, NIC and socket kinds follow the GPU model (defaults otherwise)."""
    cell = {frozenset(("GPU0", "GPU1")): "NV2", frozenset(("GPU2", "GPU3")): "NV2"}
    text = matrix_text([f"GPU{k}" for k in range(4)], lambda a, b: cell.get(frozenset((a, b)), "SYS"))
    topology = import_topo_matrix(text, gpu_model=gpu_model)
    assert {l.kind for l in topology.physical_links} == {nvlink, pcie, socket}
    assert f"nic_kind={nic}" in topology.description
    assert {d.model for d in topology.devices if d.kind == "gpu"} == {gpu_model}
    if gpu_model is None:
        assert "nvlink2 (default: no GPU model given)" in topology.description
    if gpu_model == "NVIDIA B200" and "nvlink5" not in LINK_KINDS:
        assert "approximated by nvlink4" in topology.description


def test_given_kinds_and_overrides_win() -> None:
    """Explicit kinds replace inferred ones; overrides set the figures of a kind or family."""
    topology = import_topo_matrix(
        PAIR,
        gpu_model="Tesla V100-SXM2-32GB",
        nvlink_kind="nvlink3",
        pcie_kind="pcie4_x8",
        nic_kind="ib_edr",
        overrides={"nvlink": {"bandwidth": "18 GB/s"}, "pcie4_x8": (8e9, 0.0)},
        name="box",
    )
    assert topology.name == "box"
    assert topology.link("gpu0", "gpu1").kind == "nvlink3"
    assert topology.link("gpu0", "gpu1").bandwidth_Bps == pytest.approx(36e9)
    assert topology.link("gpu0", "cpu0").bandwidth_Bps == pytest.approx(8e9)
    assert "nic_kind=ib_edr (given)" in topology.description
    socket = import_topo_matrix(GENERATED["old_soc"][0], cpu_model="AMD EPYC 7742")
    assert topology.link("gpu0", "cpu0").kind == "pcie4_x8"
    assert {l.kind for l in socket.physical_links if l.a.startswith("cpu")} == {"xgmi"}
    given = import_topo_matrix(GENERATED["old_soc"][0], cpu_model="AMD EPYC 7742", socket_kind="upi2")
    assert {l.kind for l in given.physical_links if l.a.startswith("cpu")} == {"upi2"}


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"nvlink_kind": "pcie3_x16"}, TopologyError, "nvlink_kind must be a link kind of family nvlink"),
        # the kinds of the family only (all 80 kinds were listed before)
        (
            {"pcie_kind": "nvlink9"},
            TopologyError,
            "pcie_kind must be a link kind of family pcie, got 'nvlink9'",
        ),
        (
            {"nvlink_kind": "nvlink9"},
            TopologyError,
            "valid: nvlink1, nvlink2, nvlink3, nvlink4, nvlink5; did you",
        ),
        ({"nic_kind": "upi"}, TopologyError, "nic_kind must be a link kind of family ethernet or infiniband"),
        ({"overrides": {"nvlink": {"speed": "1 GB/s"}}}, TopologyError, "unknown field(s) ['speed']"),
        ({"overrides": {"nvlink": "18 GB/s"}}, TopologyError, "override of 'nvlink' must be {bandwidth"),
        (
            {"overrides": {"warp": {"bandwidth": "1 GB/s"}}},
            UnknownNameError,
            "unknown link kind or family 'warp'",
        ),
    ],
)
def test_bad_kinds(kwargs: dict[str, object], error: type[Exception], message: str) -> None:
    """Invalid kinds and overrides name what was wrong."""
    with pytest.raises(error, match=re.escape(message)):
        import_topo_matrix(PAIR, **kwargs)  # type: ignore[arg-type]


def test_p2p_flag_only_changes_the_description() -> None:
    """p2p=False keeps the machine and says so (NCCL would copy through host memory)."""
    on = import_topo_matrix(PAIR)
    off = import_topo_matrix(PAIR, p2p=False)
    assert off.devices == on.devices
    assert off.physical_links == on.physical_links
    assert "p2p=True" in on.description
    assert "p2p=False" in off.description
    assert (on.peer_to_peer, off.peer_to_peer) == (True, False)


def test_find_p2p_status() -> None:
    """OK everywhere, NS somewhere, or no p2p matrix at all."""
    ok = "        GPU0    GPU1\n GPU0   X       OK\n GPU1   OK      X\n"
    assert find_p2p_status(ok) is True
    assert find_p2p_status(ok.replace("OK      X", "NS      X")) is False
    assert find_p2p_status((MATRICES / "dgx1_v100.txt").read_text()) is None


# -- parsing and garbled input ------------------------------------------------------------------------


def test_parse_details() -> None:
    """NIC legend, affinity columns, colour codes and prompt lines."""
    text = "\x1b[4m" + (MATRICES / "pcie_mixed.txt").read_text().replace("\nGPU0", "\x1b[0m\nGPU0", 1)
    matrix = parse_topo_matrix(text)
    assert matrix.labels == ("GPU0", "GPU1", "GPU2", "GPU3", "NIC0", "NIC1")
    assert matrix.numa == (0, 0, 0, 1, None, None)
    assert matrix.cpu_affinity[3] == "16-31,48-63"
    assert matrix.nic_names == {"NIC0": "mlx5_0", "NIC1": "mlx5_1"}
    assert matrix.lines == (3, 4, 5, 6, 7, 8)
    assert matrix.device_names == ["gpu0", "gpu1", "gpu2", "gpu3", "nic0", "nic1"]


HEADER = "        GPU0    GPU1    NIC0    CPU Affinity    NUMA Affinity\n"
ROW0 = "GPU0     X      NV2     PIX     0-7             0\n"
ROW1 = "GPU1    NV2      X      PIX     0-7             0\n"
ROW2 = "NIC0    PIX     PIX      X\n"


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("nothing here\n", None, "no nvidia-smi topo -m matrix found"),
        (
            HEADER + ROW0.replace("PIX", "PXY") + ROW1 + ROW2,
            2,
            "cell GPU0/NIC0 is 'PXY'; expected X, NV#, PIX",
        ),
        (
            HEADER + ROW0 + "GPU1    NV2      X\n" + ROW2,
            3,
            "row GPU1 has 2 cells but the header has 3 columns",
        ),
        (HEADER + ROW0 + ROW1.replace("PIX ", "0-7 "), 3, "cell GPU1/NIC0 is '0-7'"),
        (HEADER + ROW0 + ROW1 + "\nLegend:\n", 4, "3 columns but 2 rows (no row for NIC0); it is truncated"),
        (HEADER + ROW0 + ROW1, 4, "no row for NIC0"),
        (
            HEADER + ROW0.replace("PIX ", "PIX PIX ") + ROW1 + ROW2,
            2,
            "more cells than the header has columns (3)",
        ),
        (
            HEADER + ROW0 + ROW1 + ROW2 + "NIC1    PIX     PIX     PIX      X\n",
            5,
            "row NIC1 has no column in the header",
        ),
        (HEADER + ROW0 + ROW0 + ROW2, 3, "row GPU0 appears twice (first at line 2)"),
        (
            HEADER + ROW0 + ROW1.replace("PIX", "PXB") + ROW2,
            4,
            "cell NIC0/GPU1 is PIX but GPU1/NIC0 (line 3) is PXB; the matrix must be symmetric",
        ),
        (HEADER + ROW0 + ROW1 + ROW2.replace(" X", "PIX"), 4, "cell NIC0/NIC0 must be X"),
        (
            HEADER + ROW0.replace("NV2 ", " X  ") + ROW1 + ROW2,
            2,
            "cell GPU0/GPU1 is X, which only the diagonal",
        ),
        (
            HEADER + ROW0 + ROW1.replace("PIX", "NV1") + ROW2.replace("PIX      X", "NV1      X"),
            3,
            "NVLink joins GPUs only",
        ),
        (
            HEADER + ROW0.replace("NV2", "SYS") + ROW1.replace("NV2", "SYS") + ROW2,
            2,
            "cell GPU0/GPU1 is SYS but the other cells make it PIX; the matrix does not describe a PCIe tree",
        ),
    ],
    ids=[
        "no-matrix",
        "unknown-cell",
        "truncated-row",
        "affinity-as-cell",
        "missing-row",
        "missing-row-at-end",
        "too-many-cells",
        "extra-row",
        "repeated-row",
        "asymmetric",
        "diagonal",
        "off-diagonal-X",
        "nvlink-to-nic",
        "not-a-tree",
    ],
)
def test_garbled_input(text: str, line: int | None, message: str) -> None:
    """Garbled matrices raise ParseError naming the line and the cell."""
    with pytest.raises(ParseError, match=re.escape(message)) as info:
        import_topo_matrix(text)
    assert info.value.line == line
    if line is not None:
        assert str(info.value).startswith(f"line {line}: ")


def test_file_errors_name_the_file(tmp_path: Path) -> None:
    """load_topo_matrix prefixes file and line; a missing file is a ParseError too."""
    path = tmp_path / "topo.txt"
    path.write_text(HEADER + ROW0.replace("PIX", "PXN") + ROW1 + ROW2)
    with pytest.raises(ParseError, match=re.escape(f"{path}:2: cell GPU0/NIC0 is 'PXN'")):
        load_topo_matrix(path)
    with pytest.raises(ParseError, match="cannot read nvidia-smi topo output"):
        load_topo_matrix(tmp_path / "missing.txt")


def test_classify_shipped_machines() -> None:
    """classify_pair on hand-written machines: NVSwitch pairs are NV#, PCIe by route."""
    a100 = get_topology("dgx_a100")
    assert classify_pair(a100, "gpu0", "gpu5") == "NV12"
    assert classify_pair(a100, "gpu0", "nic0") == "PIX"
    assert classify_pair(a100, "gpu0", "nic2") == "PHB"
    assert classify_pair(a100, "gpu0", "nic7") == "SYS"
    assert classify_pair(a100, "gpu0", "gpu0") == "X"


@pytest.mark.parametrize(
    ("name", "kind"),
    [("hgx_h100.txt", "nvlink4"), ("dgx_a100.txt", "nvlink3"), ("dgx1_v100.txt", "nvlink2")],
)
def test_nvlink_generation_from_the_matrix_when_the_gpu_is_not_named(name: str, kind: str) -> None:
    """Without a GPU model the NV# cells name the generation: NV18 on every pair of an NVSwitch board is
    18 links per GPU (H100: NVLink 4), NV12 is 12 (A100: NVLink 3), NV1/NV2 adding up to 6 is a V100."""
    topology = load_topo_matrix(Path(__file__).parent / "data" / "nvsmi" / name)
    assert {link.kind for link in topology.links if link.family == "nvlink"} == {kind}
