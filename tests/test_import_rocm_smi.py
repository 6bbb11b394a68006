"""``rocm-smi --showtopo``: parsing, the machine it implies, and the round trip."""

from __future__ import annotations

from pathlib import Path

import pytest

from commsim.api import simulate
from commsim.interop import FormatError
from commsim.interop.rocm_smi import parse_rocm_smi, read_rocm_smi, rocm_smi_to_topology, topology_to_rocm_smi
from commsim.topology.linkkinds import LINK_KINDS

DATA = Path(__file__).parent / "data" / "rocm_smi"
SAMPLES = ["pcie_4gpu_showtopo.txt", "mi300x_8gpu_showtopo.txt", "two_hives_8gpu_showtopo.txt"]


def test_issue_108_output_is_four_gpus_on_four_sockets() -> None:
    """Weight 52, hops 3, PCIE between every pair: each GPU on its own NUMA node, no xGMI."""
    parsed = read_rocm_smi(DATA / "pcie_4gpu_showtopo.txt")
    assert parsed.weight[0] == [0, 52, 52, 52] and parsed.hops[3] == [3, 3, 3, 0]
    assert parsed.numa_node == [0, 1, 2, 3]
    topo = rocm_smi_to_topology(parsed)
    assert topo.name == "pcie_4gpu_showtopo"
    assert topo.devices_of_kind("cpu") == ["cpu0", "cpu1", "cpu2", "cpu3"]
    assert topo.link("gpu2", "cpu2").kind == "pcie5_x16"
    assert topo.link("cpu0", "cpu3").kind == "xgmi"
    assert not any(link.family == "xgmi" for link in topo.links)


def test_mi300x_is_a_full_xgmi_mesh_over_two_sockets() -> None:
    """28 xGMI pairs; ring all-reduce of S = 8 MB with 8 ranks on a mesh of 64 GB/s links.

    The ring uses one link per direction per step: 2(n-1) = 14 steps of S/n = 1 MB,
    each one xGMI hop: T = 14 x 1e6 / 64e9 + 14 x latency(xgmi_gpu).
    """
    topo = rocm_smi_to_topology(read_rocm_smi(DATA / "mi300x_8gpu_showtopo.txt"), model="MI300X")
    xgmi = [link for link in topo.physical_links if link.kind == "xgmi_gpu"]
    assert len(xgmi) == 28
    assert [topo.link(g, "cpu0" if int(g[3:]) < 4 else "cpu1").kind for g in topo.gpus] == ["pcie5_x16"] * 8
    kind = LINK_KINDS["xgmi_gpu"]
    expected = 14 * 1e6 / kind.bandwidth_Bps + 14 * kind.latency_s
    assert simulate(topo, "ring", "all_reduce", 8e6).time_s == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("sample", SAMPLES)
def test_round_trip_gives_the_same_matrices(sample: str) -> None:
    """File -> machine -> rocm-smi text -> parse: the same weights, hops, link types and NUMA nodes."""
    parsed = read_rocm_smi(DATA / sample)
    again = parse_rocm_smi(topology_to_rocm_smi(rocm_smi_to_topology(parsed)))
    assert (again.weight, again.hops, again.link_type, again.numa_node) == (
        parsed.weight,
        parsed.hops,
        parsed.link_type,
        parsed.numa_node,
    )


def test_indirect_xgmi_pairs_are_noted_not_linked() -> None:
    """An MI250-style pair of weight 30 (two xGMI hops) gets no direct link, and says so."""
    text = (DATA / "mi300x_8gpu_showtopo.txt").read_text()
    lines = text.splitlines()
    row = next(i for i, line in enumerate(lines) if line.startswith("GPU0   0"))
    lines[row] = lines[row].replace("0            15", "0            30", 1)
    parsed = parse_rocm_smi("\n".join(lines))
    topo = rocm_smi_to_topology(parsed)
    assert not topo.graph.has_edge("gpu0", "gpu1") and topo.graph.has_edge("gpu1", "gpu0") is False
    assert parsed.notes == [
        "GPU0-GPU1: xGMI weight 30 is more than one hop (15): no direct link, they talk over PCIe here"
    ]


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "GPU1   XGMI         0 ",
            "GPU1   NVLINK       0 ",
            ":30: link type 'NVLINK' between GPU1 and GPU0; valid: XGMI, PCIE",
        ),
        (
            "GPU2   15           15           0  ",
            "GPU2   15           15 ",
            ":9: block 'Weight between two GPUs': expected row GPU2 with 8 values",
        ),
        (
            "GPU[3]\t\t: (Topology) Numa Node: 0",
            "GPU[3]\t\t: Numa Node: zero",
            ":45: expected 'GPU[i] : (Topology) Numa Node: k'",
        ),
        ("Link Type between two GPUs", "Link Kinds", "no 'Link Type between two GPUs' block"),
    ],
)
def test_bad_output_names_file_line_and_what_is_valid(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    text = (DATA / "mi300x_8gpu_showtopo.txt").read_text()
    assert old in text
    path = tmp_path / "topo.txt"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(FormatError) as info:
        read_rocm_smi(path)
    assert str(path) in str(info.value) and message in str(info.value)
