"""ASTRA-sim analytical network YAML: import, export and the round trip."""

from __future__ import annotations

from pathlib import Path

import pytest

from commsim.api import simulate
from commsim.interop import ExportError, FormatError
from commsim.interop.astra import (
    AstraNetwork,
    astra_to_topology,
    astra_yaml,
    read_astra,
    topology_to_astra,
)
from commsim.topology import get_topology
from commsim.topology.builders import fully_connected, ring

DATA = Path(__file__).parent / "data" / "astra"


def test_sample_imports_to_rings_joined_by_switches() -> None:
    """Ring(8) x Switch(4): 32 NPUs, 4 rings of 8 links, 8 switches of 4 links each.

    Bandwidths are ASTRA-sim's GB (2^30 bytes): 150 GB/s is 161.06 decimal GB/s.
    """
    topo = astra_to_topology(read_astra(DATA / "ring8_switch4.yml"))
    assert len(topo.gpus) == 32
    assert len(topo.devices_of_kind("switch")) == 8
    assert len(topo.physical_links) == 4 * 8 + 8 * 4
    ring_link, switch_link = topo.link("npu0", "npu1"), topo.link("npu0", "sw1_0")
    assert ring_link.bandwidth_Bps == 150 * 2**30 and ring_link.latency_s == pytest.approx(700e-9, rel=1e-15)
    assert switch_link.bandwidth_Bps == 25 * 2**30 and switch_link.latency_s == pytest.approx(
        1.7e-6, rel=1e-15
    )
    assert sorted(topo.graph.successors("sw1_0")) == ["npu0", "npu16", "npu24", "npu8"]
    assert topo.graph.has_edge("npu7", "npu0") and not topo.graph.has_edge("npu7", "npu8")


def test_yaml_round_trip_is_exact(tmp_path: Path) -> None:
    """File -> machine -> file gives the same dimensions and figures, and the same text."""
    network = read_astra(DATA / "ring8_switch4.yml")
    again = topology_to_astra(astra_to_topology(network))
    assert again == network
    path = tmp_path / "net.yml"
    path.write_text(astra_yaml(again))
    assert read_astra(path) == network
    assert astra_yaml(read_astra(path)) == astra_yaml(network)


@pytest.mark.parametrize(
    ("blocks", "counts"),
    [
        (["Switch"], [4]),
        (["FullyConnected", "Ring"], [3, 4]),
        (["Ring", "FullyConnected", "Switch"], [4, 3, 2]),
        (["Ring"], [2]),
    ],
)
def test_every_block_round_trips(blocks: list[str], counts: list[int]) -> None:
    network = AstraNetwork.model_validate(
        {
            "topology": blocks,
            "npus_count": counts,
            "bandwidth": [1.5, 2.5, 3.5][: len(blocks)],
            "latency": [10.0, 20.0, 30.0][: len(blocks)],
        }
    )
    assert topology_to_astra(astra_to_topology(network)) == network


def test_ring_all_reduce_on_an_imported_ring_matches_the_closed_form() -> None:
    """Ring all-reduce of S = 4 MB on Ring(4) of 50 GB/s (2^30 B), 500 ns per link.

    2(n-1) = 6 steps each move S/n = 1 MB over every link and pay one link latency:
    T = 6 x 1e6 / (50 x 2^30) + 6 x 500 ns.
    """
    network = AstraNetwork(topology=["Ring"], npus_count=[4], bandwidth=[50.0], latency=[500.0])
    result = simulate(astra_to_topology(network), "ring", "all_reduce", 4e6)
    assert result.time_s == pytest.approx(6 * 1e6 / (50 * 2**30) + 6 * 500e-9, rel=1e-12)


def test_commsim_builders_export() -> None:
    """commsim's ``ring`` and ``fully_connected`` builders are single ASTRA-sim dimensions."""
    exported = topology_to_astra(ring(6, bandwidth="10 GB/s", latency="1 us"))
    assert (exported.topology, exported.npus_count, exported.latency) == (["Ring"], [6], [1000.0])
    assert exported.bandwidth == [pytest.approx(10e9 / 2**30, rel=1e-11)]  # written to 12 digits
    exported = topology_to_astra(fully_connected(4, bandwidth="16 GB/s"), gigabyte=1e9)
    assert (exported.topology, exported.npus_count, exported.bandwidth) == (["FullyConnected"], [4], [16.0])


def test_machines_with_pcie_trees_do_not_export() -> None:
    with pytest.raises(ExportError, match="has cpu0, cpu1, pcie_switch0, pcie_switch1"):
        topology_to_astra(get_topology("dgx1_v100"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "topology: [ Ring, Torus ]\nnpus_count: [4, 2]\nbandwidth: [1, 1]\nlatency: [1, 1]\n",
            ":1:19: topology.1: expected 'Ring', 'FullyConnected' or 'Switch', got 'Torus'",
        ),
        (
            "topology: [ Ring ]\nnpus_count: [1]\nbandwidth: [1]\nlatency: [1]\n",
            ":2:14: npus_count.0: must be at least 2, got 1",
        ),
        (
            "topology: [ Ring ]\nnpus_count: [4]\nbandwidth: [0]\nlatency: [1]\n",
            ":3:13: bandwidth.0: must be more than 0, got 0",
        ),
        (
            "topology: [ Ring, Switch ]\nnpus_count: [4, 2]\nbandwidth: [1]\nlatency: [1, 1]\n",
            "bandwidth has 1 entries but topology has 2 dimensions",
        ),
        (
            "topology: [ Ring ]\nnpus_count: [4]\nlatency: [1]\n",
            "bandwidth: missing required field 'bandwidth'",
        ),
        ("topology: [ Ring\n", ":2:1: not valid YAML"),
    ],
)
def test_bad_files_name_line_and_what_is_valid(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.yml"
    path.write_text(text)
    with pytest.raises(FormatError) as info:
        read_astra(path)
    assert str(path) in str(info.value)
    assert message in str(info.value)
