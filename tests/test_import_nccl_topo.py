"""NCCL's topology and graph dumps imported as a machine and its channels."""

from __future__ import annotations

from pathlib import Path

import pytest

from commsim.api import simulate
from commsim.interop import FormatError
from commsim.interop.nccl_graph import read_nccl_graph
from commsim.interop.nccl_topo import read_nccl_topo
from commsim.topology.linkkinds import LINK_KINDS

DATA = Path(__file__).parent / "data"
H100 = DATA / "h100-1gpu"
HGX = DATA / "nccl_topo"


def test_real_h100_dump_is_one_gpu_on_pcie_gen5_and_no_nic() -> None:
    """The shared H100 machine: one H100 SXM (PCI ID 0x2330) on a 32 GT/s link, eth0 only.

    The VM reports link width 0, so x16 is assumed (and said); eth0 sits
    under the CPU with no PCI device, so it is a socket interface, not a NIC.
    """
    imported = read_nccl_topo(H100 / "nccl_topo.xml")
    topo = imported.topology
    assert [(d.name, d.kind) for d in topo.devices] == [("gpu0", "gpu"), ("cpu0", "cpu")]
    assert topo.link("gpu0", "cpu0").kind == "pcie5_x16"
    assert topo.devices_of_kind("nic") == []
    assert imported.host_interfaces == ["eth0"]
    assert imported.gpu_model == "H100 SXM5 80GB"
    assert imported.notes == ["line 3: 0000:00:06.0 gives link width 0; x16 assumed"]


def test_real_h100_graph_dump_has_32_one_gpu_channels() -> None:
    channels = read_nccl_graph(H100 / "nccl_graph.xml")
    assert sorted(channels.graphs) == ["collnet_chain", "collnet_direct", "nvls", "ring", "tree"]
    ring = channels.graphs["ring"]
    assert (ring.nchannels, ring.pattern, ring.type_intra, ring.speed_intra_GBps) == (32, "ring", "LOC", 60.0)
    assert ring.gpu_orders() == [["gpu0"]] * 32
    assert channels.graphs["nvls"].channels == []


def test_hgx_sample_builds_switches_nics_and_one_nvswitch() -> None:
    """4 H100s behind 4 PCIe switches (one ConnectX-7 each), NVLinks to 4 NVSwitches summed to 18."""
    imported = read_nccl_topo(HGX / "hgx_h100_4gpu_topo.xml")
    topo = imported.topology
    assert topo.gpus == ["gpu0", "gpu1", "gpu2", "gpu3"]
    assert len(topo.devices_of_kind("pcie_switch")) == 4
    assert [topo.device(n).serves for n in topo.devices_of_kind("nic")] == [
        ("gpu0",),
        ("gpu1",),
        ("gpu2",),
        ("gpu3",),
    ]
    for gpu in topo.gpus:
        link = topo.link(gpu, "nvswitch0")
        assert (link.kind, link.count) == ("nvlink4", 18)
    assert topo.link("cpu0", "cpu1").kind == "upi"
    assert topo.link("nic2", "pcisw_0000:38:00.0").kind == "pcie5_x16"
    assert imported.nic_speeds_bps == {f"nic{i}": 400e9 for i in range(4)}
    assert imported.host_interfaces == ["eno1"]
    assert imported.notes == []


def test_nccl_rings_replay_at_the_nvswitch_closed_form() -> None:
    """NCCL's two rings (0123, 0321) through the NVSwitch, all-reduce of S = 1 GB on n = 4.

    Each GPU port carries 18 x 25 GB/s per direction, shared by whatever
    crosses it: 2(n-1) steps of S/n each over one port, each step paying
    two NVLink hops of latency: T = 6 (S/4) / 450 GB/s + 6 x 2 x latency.
    """
    topo = read_nccl_topo(HGX / "hgx_h100_4gpu_topo.xml").topology
    rings = read_nccl_graph(HGX / "hgx_h100_4gpu_graph.xml").ring_orders(topo)
    assert rings == [[0, 1, 2, 3], [0, 3, 2, 1]]
    expected = 6 * 0.25e9 / 450e9 + 12 * LINK_KINDS["nvlink4"].latency_s
    assert simulate(topo, "multi_ring", "all_reduce", 1e9, params={"rings": rings}).time_s == pytest.approx(
        expected, rel=1e-12
    )


def test_grace_c2c_replaces_the_pcie_link_to_its_cpu(tmp_path: Path) -> None:
    """A GPU with ``<c2c bw="44712" count="5"/>``: 5 x 44,712 MB/s = 223.56 GB/s to its CPU, no PCIe there."""
    text = (
        (H100 / "nccl_topo.xml")
        .read_text()
        .replace(
            '<gpu dev="0" sm="90" rank="0" gdr="1"/>',
            '<gpu dev="0" sm="90" rank="0" gdr="1"><c2c bw="44712" count="5"/></gpu>',
        )
    )
    path = tmp_path / "gh200.xml"
    path.write_text(text)
    imported = read_nccl_topo(path)
    link = imported.topology.link("gpu0", "cpu0")
    assert (link.kind, link.bandwidth_Bps) == ("nvlink_c2c", 5 * 44712e6)
    assert "line 4: gpu0's PCIe link to cpu0 is replaced by its nvlink_c2c" in imported.notes


def test_gpu_behind_a_switch_keeps_pcie_and_gains_its_cpu_nvlink(tmp_path: Path) -> None:
    """POWER9-style NVLink to the CPU (target class 0x060000) from a GPU under a PCIe switch: both links."""
    text = (
        (HGX / "hgx_h100_4gpu_topo.xml")
        .read_text()
        .replace(
            '<nvlink target="0000:05:00.0" count="5" tclass="0x068000"/>',
            '<nvlink target="0000:00:00.0" count="3" tclass="0x060000"/>',
            1,
        )
    )
    path = tmp_path / "p9.xml"
    path.write_text(text)
    topo = read_nccl_topo(path).topology
    assert (topo.link("gpu0", "cpu0").kind, topo.link("gpu0", "cpu0").count) == ("nvlink2", 3)
    assert topo.link("gpu0", "pcisw_0000:16:00.0").kind == "pcie5_x16"
    assert topo.link("gpu0", "nvswitch0").count == 13


def _broken(tmp_path: Path, old: str, new: str, source: Path = HGX / "hgx_h100_4gpu_topo.xml") -> Path:
    text = source.read_text()
    assert old in text
    path = tmp_path / source.name
    path.write_text(text.replace(old, new, 1))
    return path


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            'link_speed="32.0 GT/s PCIe" link_width="16">',
            'link_speed="12 GT/s PCIe" link_width="16">',
            ":7: <pci>: link_speed 12 GT/s is no PCIe rate; valid: 2.5",
        ),
        ('link_width="16"', 'link_width="wide"', ":7: <pci>: link_width='wide' is not a number of lanes"),
        ('<pci busid="0000:16:00.0"', "<pci", ":7: <pci>: missing attribute 'busid'"),
        ('count="5"', 'count="0"', ":10: <nvlink>: nvlink count=0 must be at least 1"),
        ('<gpu dev="0"', '<gpu dev="zero"', ":9: <gpu>: attribute dev='zero' is not an integer"),
        ("</pci>", "</pcie>", ":15: not well-formed XML: mismatched tag"),
        ("<system", "<systen", ":5: <systen>: an NCCL topology dump starts with <system"),
    ],
)
def test_bad_topology_dumps_name_file_line_and_what_is_valid(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    path = _broken(tmp_path, old, new)
    if new == "<systen":
        path.write_text(path.read_text().replace("</system>", "</systen>"))
    with pytest.raises(FormatError) as info:
        read_nccl_topo(path)
    assert f"{path}{message}" in str(info.value)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('nchannels="2"', 'nchannels="3"', ":4: <graph>: nchannels=3 but 2 <channel> elements follow"),
        ('typeintra="NVL"', 'typeintra="NVLINK"', "typeintra='NVLINK' is not a path type; valid: LOC, NVL"),
        ('pattern="4"', 'pattern="9"', "pattern 9 is not one of 1 (balanced_tree)"),
    ],
)
def test_bad_graph_dumps_name_file_line_and_what_is_valid(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    path = _broken(tmp_path, old, new, HGX / "hgx_h100_4gpu_graph.xml")
    with pytest.raises(FormatError) as info:
        read_nccl_graph(path)
    assert f"{path}" in str(info.value) and message in str(info.value)


def test_rings_naming_missing_gpus_are_refused() -> None:
    one_gpu = read_nccl_topo(H100 / "nccl_topo.xml").topology
    with pytest.raises(FormatError, match="ring channel names gpu1, gpu2, gpu3, not a GPU of 'nccl_topo'"):
        read_nccl_graph(HGX / "hgx_h100_4gpu_graph.xml").ring_orders(one_gpu)
