"""Topology: link kinds, bonded links, the shipped machines, routing, files and errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from commsim.errors import CommsimError, TopologyError, UnknownNameError
from commsim.topology import (
    FAMILIES,
    LINK_KINDS,
    Device,
    PhysicalLink,
    Topology,
    available_topologies,
    build,
    fully_connected,
    get_link_kind,
    get_topology,
    load_topology_file,
    parse_topology,
    ring,
    save_topology,
    shipped_topologies,
    topology_json_schema,
    topology_to_dict,
)
from commsim.topology.linkkinds import kinds_matching
from commsim.units import parse_time

# -- link kinds catalogue -------------------------------------------------------


@pytest.mark.parametrize("name", sorted(LINK_KINDS))
def test_every_link_kind_is_sound(name: str) -> None:
    """Positive bandwidth, non-negative latency, a named source and a known family."""
    kind = LINK_KINDS[name]
    assert kind.name == name
    assert kind.bandwidth_Bps > 0
    assert kind.latency_s >= 0
    assert kind.source.strip()
    assert kind.family in FAMILIES


def test_families() -> None:
    """The families that routing rules and overrides use."""
    assert {"pcie", "nvlink", "ethernet", "infiniband", "inter_socket", "host_memory"} <= FAMILIES
    for family in FAMILIES:
        assert any(kind.family == family for kind in LINK_KINDS.values())


def test_catalogue_figures() -> None:
    """Spot checks of datasheet figures, per link per direction."""
    assert get_link_kind("pcie3_x16").bandwidth_Bps == pytest.approx(16 * 8e9 * 128 / 130 / 8, rel=1e-12)
    assert get_link_kind("pcie4_x16").bandwidth_Bps == pytest.approx(
        2 * get_link_kind("pcie3_x16").bandwidth_Bps, rel=1e-12
    )
    assert get_link_kind("nvlink2").bandwidth_Bps == pytest.approx(25e9, rel=1e-12)
    assert get_link_kind("eth_100g").bandwidth_Bps == pytest.approx(12.5e9, rel=1e-12)
    assert get_link_kind("ib_hdr").bandwidth_Bps == pytest.approx(25e9, rel=1e-12)


def test_pcie_lanes_scale_bandwidth() -> None:
    """Within a generation, bandwidth is proportional to the lane count."""
    for gen in (3, 4, 5):
        x1 = get_link_kind(f"pcie{gen}_x1").bandwidth_Bps
        for lanes in (2, 4, 8, 16):
            assert get_link_kind(f"pcie{gen}_x{lanes}").bandwidth_Bps == pytest.approx(lanes * x1, rel=1e-12)


def test_unknown_link_kind_lists_valid_ones() -> None:
    """An unknown kind raises UnknownNameError naming it and the valid kinds."""
    with pytest.raises(UnknownNameError, match=r"unknown link kind 'nvlink9'; valid: .*nvlink2.*pcie3_x16"):
        get_link_kind("nvlink9")


def test_kinds_matching_expands_families() -> None:
    """A family stands for all its kinds; kinds stand for themselves."""
    assert kinds_matching(["nvlink"]) == {"nvlink1", "nvlink2", "nvlink3", "nvlink4", "nvlink5"}
    assert kinds_matching(["qpi", "nvlink1"]) == {"qpi", "nvlink1"}
    with pytest.raises(UnknownNameError, match="unknown link kind or family 'warp'"):
        kinds_matching(["warp"])


# -- the textbook's PCIe box -----------------------------------------------------------


def test_pcie_box_shape(pcie_box: Topology) -> None:
    """SEED_FACTS section 1: 1 CPU, 1 switch, 4 GPUs, 5 links of 16 GB/s, zero latency."""
    assert pcie_box.gpus == ["gpu0", "gpu1", "gpu2", "gpu3"]
    assert pcie_box.devices_of_kind("cpu") == ["cpu0"]
    assert pcie_box.devices_of_kind("pcie_switch") == ["pcie_switch0"]
    assert len(pcie_box.physical_links) == 5
    assert len(pcie_box.links) == 10
    for link in pcie_box.links:
        assert link.bandwidth_Bps == 16e9
        assert link.latency_s == 0.0
        assert link.kind == "pcie3_x16"
        assert "pcie_switch0" in (link.src, link.dst)


# -- bonded links and directions ----------------------------------------------------------


def test_bonded_links_add(dgx1_v100: Topology) -> None:
    """SEED_FACTS section 2: NV2 is two bonded NVLink 2.0 links: 50 GB/s per direction."""
    bonded = dgx1_v100.link("gpu0", "gpu3")
    assert bonded.count == 2
    assert bonded.kind == "nvlink2"
    assert bonded.bandwidth_Bps == pytest.approx(50e9, rel=1e-12)
    single = dgx1_v100.link("gpu0", "gpu1")
    assert single.count == 1
    assert single.bandwidth_Bps == pytest.approx(25e9, rel=1e-12)
    assert "2x nvlink2" in bonded.describe()


def test_links_declared_twice_bond() -> None:
    """Declaring the same link twice bonds it, as ``count: 2`` does."""
    devices = [Device("gpu0", "gpu"), Device("gpu1", "gpu")]
    twice = Topology("t", devices, [PhysicalLink("gpu0", "gpu1", "nvlink2")] * 2)
    once = Topology("t", devices, [PhysicalLink("gpu0", "gpu1", "nvlink2", count=2)])
    assert twice.links == once.links
    assert twice.link("gpu1", "gpu0").bandwidth_Bps == pytest.approx(50e9, rel=1e-12)


def test_both_directions_are_separate_links(dgx1_v100: Topology) -> None:
    """Every physical link is two directed links with their own index and capacity."""
    assert len(dgx1_v100.links) == 2 * len(dgx1_v100.physical_links)
    for physical in dgx1_v100.physical_links:
        forward = dgx1_v100.link(physical.a, physical.b)
        backward = dgx1_v100.link(physical.b, physical.a)
        assert forward.index != backward.index
        assert (forward.src, forward.dst) == (physical.a, physical.b)
        assert (backward.src, backward.dst) == (physical.b, physical.a)
        assert forward.bandwidth_Bps == backward.bandwidth_Bps
        assert forward.count == backward.count == physical.count
    assert [link.index for link in dgx1_v100.links] == list(range(len(dgx1_v100.links)))


def _nvlink_count(topology: Topology, gpu: str) -> int:
    return sum(link.count for link in topology.links if link.src == gpu and link.family == "nvlink")


@pytest.mark.parametrize(("name", "links_per_gpu"), [("dgx1_v100", 6), ("dgx1_p100", 4)])
def test_nvlinks_per_gpu(name: str, links_per_gpu: int) -> None:
    """SEED_FACTS section 2: every V100 has 6 NVLinks (counting bonds), every P100 4."""
    topology = get_topology(name)
    assert len(topology.gpus) == 8
    for gpu in topology.gpus:
        assert _nvlink_count(topology, gpu) == links_per_gpu


# SEED_FACTS section 2: `nvidia-smi topo -m` of a V100 DGX-1 (NV1 / NV2 per pair).
V100_TABLE = {
    0: {1: 1, 2: 1, 3: 2, 4: 2},
    1: {0: 1, 2: 2, 3: 1, 5: 2},
    2: {0: 1, 1: 2, 3: 2, 6: 1},
    3: {0: 2, 1: 1, 2: 2, 7: 1},
    4: {0: 2, 5: 1, 6: 1, 7: 2},
    5: {1: 2, 4: 1, 6: 2, 7: 1},
    6: {2: 1, 4: 1, 5: 2, 7: 2},
    7: {3: 1, 4: 2, 5: 1, 6: 2},
}


def _nvlink_pairs(topology: Topology) -> dict[tuple[int, int], int]:
    """{(src gpu index, dst gpu index): bonded link count} of the NVLink links."""
    return {
        (int(link.src.removeprefix("gpu")), int(link.dst.removeprefix("gpu"))): link.count
        for link in topology.links
        if link.family == "nvlink"
    }


def test_v100_table_is_symmetric() -> None:
    """Sanity of the transcribed table: NV counts agree in both directions, 6 per GPU."""
    for a, row in V100_TABLE.items():
        assert sum(row.values()) == 6
        for b, count in row.items():
            assert V100_TABLE[b][a] == count


def test_dgx1_v100_matches_the_table_exactly(dgx1_v100: Topology) -> None:
    """SEED_FACTS section 2: every NVLink pair and its NV1/NV2 bond, and no other pair."""
    expected = {(a, b): count for a, row in V100_TABLE.items() for b, count in row.items()}
    assert _nvlink_pairs(dgx1_v100) == expected
    for link in dgx1_v100.links:
        if link.family == "nvlink":
            assert link.kind == "nvlink2"
            assert link.bandwidth_Bps == pytest.approx(25e9 * link.count, rel=1e-12)


def test_dgx1_v100_is_the_p100_cube_plus_a_ring(dgx1_v100: Topology, dgx1_p100: Topology) -> None:
    """SEED_FACTS section 2: the V100 box is the P100 hyper-cube plus one more 8-GPU NVLink ring.

    The ring's numbering differs between machines (the text's G0-G3-G2-G6-G7-G4-G5-G1 vs the
    table's); here: the same pairs as the P100, and the doubled (NV2) pairs form one
    Hamiltonian cycle through all 8 GPUs.
    """
    v100, p100 = _nvlink_pairs(dgx1_v100), _nvlink_pairs(dgx1_p100)
    assert set(v100) == set(p100)
    doubled = {(a, b) for (a, b), count in v100.items() if count == 2}
    successors: dict[int, list[int]] = {}
    for a, b in doubled:
        successors.setdefault(a, []).append(b)
    assert all(len(nbrs) == 2 for nbrs in successors.values())
    assert sorted(successors) == list(range(8))
    visited, previous, current = [0], None, 0
    while True:
        current, previous = next(n for n in successors[current] if n != previous), current
        if current == 0:
            break
        visited.append(current)
    assert sorted(visited) == list(range(8))


def test_dgx1_p100_is_the_hyper_cube(dgx1_p100: Topology) -> None:
    """SEED_FACTS section 2: two fully connected quads plus Gi-G(i+4), single NVLink 1.0 each."""
    expected = {}
    for quad in (range(0, 4), range(4, 8)):
        for a in quad:
            for b in quad:
                if a != b:
                    expected[(a, b)] = 1
    for a in range(4):
        expected[(a, a + 4)] = expected[(a + 4, a)] = 1
    assert _nvlink_pairs(dgx1_p100) == expected
    assert {link.kind for link in dgx1_p100.links if link.family == "nvlink"} == {"nvlink1"}


@pytest.mark.parametrize("name", ["dgx1_v100", "dgx1_p100"])
def test_dgx1_pcie_tree(name: str) -> None:
    """Two GPUs per PCIe switch, two switches per CPU, the sockets joined by QPI."""
    topology = get_topology(name)
    for i, gpu in enumerate(topology.gpus):
        assert topology.link(gpu, f"pcie_switch{i // 2}").kind == "pcie3_x16"
    for s in range(4):
        assert topology.link(f"pcie_switch{s}", f"cpu{s // 2}").family == "pcie"
    qpi = topology.link("cpu0", "cpu1")
    assert qpi.kind == "qpi"
    assert qpi.count == 2


# -- routing --------------------------------------------------------------------------


def _names(topology: Topology, route: tuple[int, ...]) -> list[str]:
    return [topology.links[i].name for i in route]


def test_route_fewest_hops(pcie_box: Topology, dgx1_v100: Topology) -> None:
    """A route takes the fewest hops: through the switch, or a direct NVLink."""
    assert _names(pcie_box, pcie_box.route("gpu0", "gpu1")) == ["gpu0->pcie_switch0", "pcie_switch0->gpu1"]
    assert _names(pcie_box, pcie_box.route("gpu2", "cpu0")) == ["gpu2->pcie_switch0", "pcie_switch0->cpu0"]
    assert _names(dgx1_v100, dgx1_v100.route("gpu0", "gpu1")) == ["gpu0->gpu1"]


def test_route_path_is_contiguous(dgx1_v100: Topology) -> None:
    """Each link of a route starts where the previous one ended."""
    for src in dgx1_v100.gpus:
        for dst in dgx1_v100.gpus:
            if src == dst:
                continue
            links = [dgx1_v100.links[i] for i in dgx1_v100.route(src, dst)]
            assert links[0].src == src
            assert links[-1].dst == dst
            for a, b in zip(links, links[1:]):
                assert a.dst == b.src


def test_gpus_never_forward(dgx1_v100: Topology) -> None:
    """gpu0->gpu1->gpu5 is 2 NVLink hops, but GPUs do not forward: the route is the PCIe tree.

    The PCIe path between gpu0 and gpu5 crosses the QPI link between the sockets.
    """
    route = dgx1_v100.route("gpu0", "gpu5")
    assert _names(dgx1_v100, route) == [
        "gpu0->pcie_switch0",
        "pcie_switch0->cpu0",
        "cpu0->cpu1",
        "cpu1->pcie_switch2",
        "pcie_switch2->gpu5",
    ]
    assert dgx1_v100.links[route[2]].kind == "qpi"
    back = dgx1_v100.route("gpu5", "gpu0")
    assert "cpu1->cpu0" in _names(dgx1_v100, back)


def test_gpus_never_forward_on_a_ring() -> None:
    """On a ring of 4 GPUs, gpu0 and gpu2 have no route: gpu1 and gpu3 do not forward."""
    topology = ring(4)
    with pytest.raises(TopologyError, match="has no route from gpu0 to gpu2 over any link"):
        topology.route("gpu0", "gpu2")


def test_route_restricted_kinds(dgx1_v100: Topology) -> None:
    """No NVLink-only route joins gpu0 and gpu5; the error names the allowed kinds."""
    with pytest.raises(TopologyError) as info:
        dgx1_v100.route("gpu0", "gpu5", ["nvlink"])
    assert str(info.value) == (
        "topology 'dgx1_v100' has no route from gpu0 to gpu5 over link kinds "
        "nvlink1, nvlink2, nvlink3, nvlink4, nvlink5"
    )


def test_route_restricted_to_pcie_avoids_nvlink(dgx1_v100: Topology) -> None:
    """Restricted to PCIe, gpu0->gpu1 goes through their shared switch, not the NVLink."""
    route = dgx1_v100.route("gpu0", "gpu1", ["pcie"])
    assert _names(dgx1_v100, route) == ["gpu0->pcie_switch0", "pcie_switch0->gpu1"]
    assert dgx1_v100.route("gpu0", "gpu1", ["nvlink2"]) == (dgx1_v100.link("gpu0", "gpu1").index,)


def test_route_errors(dgx1_v100: Topology) -> None:
    """Unknown kinds and devices, and routes to oneself, are typed errors."""
    with pytest.raises(UnknownNameError, match="unknown link kind or family 'warp'"):
        dgx1_v100.route("gpu0", "gpu1", ["warp"])
    with pytest.raises(
        UnknownNameError, match=r"unknown device of topology 'dgx1_v100' 'gpu9'; valid: .*gpu7"
    ):
        dgx1_v100.route("gpu0", "gpu9")
    with pytest.raises(TopologyError, match="no route from 'gpu0' to itself"):
        dgx1_v100.route("gpu0", "gpu0")


def test_route_prefers_the_widest_of_equal_paths() -> None:
    """Among routes of equal hop count, the widest bottleneck wins."""
    devices = [
        Device("gpu0", "gpu"),
        Device("gpu1", "gpu"),
        Device("slow", "switch"),
        Device("fast", "switch"),
    ]
    links = [
        PhysicalLink("gpu0", "slow", "eth_100g", bandwidth_Bps=1e9),
        PhysicalLink("slow", "gpu1", "eth_100g", bandwidth_Bps=1e9),
        PhysicalLink("gpu0", "fast", "eth_100g", bandwidth_Bps=2e9),
        PhysicalLink("fast", "gpu1", "eth_100g", bandwidth_Bps=2e9),
    ]
    topology = Topology("two_paths", devices, links)
    assert _names(topology, topology.route("gpu0", "gpu1")) == ["gpu0->fast", "fast->gpu1"]
    assert _names(topology, topology.route("gpu1", "gpu0")) == ["gpu1->fast", "fast->gpu0"]


def test_routes_are_deterministic(dgx1_v100: Topology) -> None:
    """The same query gives the same route, also on a freshly loaded machine."""
    fresh = get_topology("dgx1_v100")
    for src in ("gpu0", "gpu3", "gpu6"):
        for dst in ("gpu5", "gpu7", "nic2"):
            assert dgx1_v100.route(src, dst) == fresh.route(src, dst)


# -- shipped machines, builders and resolution --------------------------------------------


def test_shipped_topologies_are_listed() -> None:
    """The built-in machines of DESIGN.md are shipped as files."""
    assert {"pcie_4gpu_switch", "dgx1_p100", "dgx1_v100", "fully_connected_4"} <= set(shipped_topologies())


@pytest.mark.parametrize("name", sorted(shipped_topologies()))
def test_shipped_topology_loads(name: str) -> None:
    """Every shipped file loads, has GPUs, and is named after its file."""
    topology = get_topology(name)
    assert topology.name == name
    assert len(topology.gpus) >= 2
    assert topology.description


def test_builders() -> None:
    """ring(n) has n links (1 for n=2), fully_connected(n) has n(n-1)/2."""
    assert len(ring(5).physical_links) == 5
    assert len(ring(2).physical_links) == 1
    assert len(fully_connected(5).physical_links) == 10
    custom = ring(3, kind="pcie4_x16", bandwidth="7 GB/s", latency="2 us")
    assert {(link.kind, link.bandwidth_Bps, link.latency_s) for link in custom.links} == {
        ("pcie4_x16", 7e9, parse_time("2 us"))
    }
    assert get_topology("ring", gpus=3).gpus == ["gpu0", "gpu1", "gpu2"]
    assert len(build("fully_connected", gpus=3).links) == 6


def test_builder_errors() -> None:
    """Bad builder names and parameters are typed errors."""
    with pytest.raises(TopologyError, match=r"builder 'ring' needs gpus >= 2, got 1"):
        ring(1)
    with pytest.raises(TopologyError, match=r"builder 'ring': gpus must be a whole number, e.g. 4, got True"):
        ring(True)  # type: ignore[arg-type]
    with pytest.raises(TopologyError, match=r"builder 'ring' has no field 'colour'; valid: gpus"):
        build("ring", colour="red")
    with pytest.raises(
        UnknownNameError,
        match=r"unknown topology builder 'torus'; valid: (.*, )?fully_connected, (.*, )?ring",
    ):
        build("torus")


def test_unknown_topology_lists_valid_names() -> None:
    """get_topology of an unknown name lists shipped files and builders."""
    with pytest.raises(UnknownNameError) as info:
        get_topology("dgx9")
    message = str(info.value)
    assert message.startswith("unknown topology 'dgx9'; valid: ")
    for name in ("pcie_4gpu_switch", "dgx1_v100", "ring (builder)"):
        assert name in message
    assert "ring (builder)" in available_topologies()


def test_with_overrides(dgx1_v100: Topology) -> None:
    """Overriding NVLink to 18 GB/s keeps bonds (36 GB/s) and leaves PCIe alone."""
    slower = dgx1_v100.with_overrides({"nvlink": (18e9, None), "qpi": (None, 2e-6)})
    assert slower.link("gpu0", "gpu3").bandwidth_Bps == pytest.approx(36e9, rel=1e-12)
    assert slower.link("gpu0", "gpu1").bandwidth_Bps == pytest.approx(18e9, rel=1e-12)
    assert (
        slower.link("gpu0", "pcie_switch0").bandwidth_Bps
        == dgx1_v100.link("gpu0", "pcie_switch0").bandwidth_Bps
    )
    assert slower.link("cpu0", "cpu1").latency_s == 2e-6
    kind_wins = dgx1_v100.with_overrides({"nvlink": (1e9, None), "nvlink2": (3e9, None)})
    assert kind_wins.link("gpu0", "gpu1").bandwidth_Bps == pytest.approx(3e9, rel=1e-12)


# -- files: round trips and schema --------------------------------------------------------

ROUND_TRIP_CASES = {
    **{name: (lambda name=name: get_topology(name)) for name in shipped_topologies()},
    "ring_2": lambda: ring(2),
    "ring_5": lambda: ring(5),
    "ring_custom": lambda: ring(3, bandwidth="7.3 GB/s", latency="1.7 us"),
    "fully_connected_3": lambda: fully_connected(3),
    "fully_connected_odd": lambda: fully_connected(
        4, kind="eth_25g", bandwidth=1.234567891234e10, latency=3.3e-7
    ),
}


def _assert_same_machine(a: Topology, b: Topology) -> None:
    assert a.name == b.name
    assert a.description == b.description
    assert a.devices == b.devices
    assert a.links == b.links
    assert a.physical_links == b.physical_links


@pytest.mark.parametrize("case", sorted(ROUND_TRIP_CASES))
def test_save_load_round_trip(case: str, tmp_path: Path) -> None:
    """load -> save -> load gives the same devices and links (bit for bit)."""
    original = ROUND_TRIP_CASES[case]()
    path = tmp_path / f"{case}.yaml"
    save_topology(original, path)
    again = load_topology_file(path)
    _assert_same_machine(original, again)
    save_topology(again, tmp_path / "again.yaml")
    assert (tmp_path / "again.yaml").read_text() == path.read_text()


@given(
    gpus=st.integers(2, 6),
    bandwidth_Bps=st.floats(1.0, 1e13, allow_nan=False),
    latency_s=st.floats(0.0, 1e-2, allow_nan=False),
)
def test_round_trip_any_figures(gpus: int, bandwidth_Bps: float, latency_s: float) -> None:
    """Whatever float figures a link has, the file reproduces them exactly."""
    original = ring(gpus, bandwidth=bandwidth_Bps, latency=latency_s)
    again = parse_topology(json.dumps(topology_to_dict(original)), "<memory>")
    _assert_same_machine(original, again)


def test_saved_file_uses_readable_units(pcie_box: Topology) -> None:
    """The textbook box is written with '16 GB/s' and '0 s', as a person would."""
    data = topology_to_dict(pcie_box)
    assert data["link_kinds"] == {"pcie3_x16": {"bandwidth": "16 GB/s", "latency": "0 s"}}
    assert data["links"][0] == {"between": ["pcie_switch0", "cpu0"], "kind": "pcie3_x16"}


def test_json_schema() -> None:
    """The exported JSON Schema is valid JSON describing devices and links."""
    schema = json.loads(topology_json_schema())
    assert schema["type"] == "object"
    assert {"devices", "links"} <= set(schema["properties"])
    assert {"name", "devices"} <= set(schema["required"])


# -- errors (Python API) ------------------------------------------------------------------

GPU0, GPU1 = Device("gpu0", "gpu"), Device("gpu1", "gpu")


@pytest.mark.parametrize(
    ("devices", "links", "error", "message"),
    [
        pytest.param(
            [GPU0, GPU1, Device("gpu2", "gpu")],
            [PhysicalLink("gpu0", "gpu1", "nvlink2")],
            TopologyError,
            "topology 't' is disconnected: gpu2 cannot be reached from gpu0",
            id="disconnected",
        ),
        pytest.param(
            [GPU0, GPU1],
            [PhysicalLink("gpu0", "gpu1", "nvlink2", bandwidth_Bps=0.0)],
            TopologyError,
            "topology 't', link gpu0-gpu1 (nvlink2): bandwidth must be positive, got 0.0 B/s",
            id="zero-bandwidth",
        ),
        pytest.param(
            [GPU0, GPU1],
            [PhysicalLink("gpu0", "gpu1", "nvlink2", bandwidth_Bps=-5.0)],
            TopologyError,
            "topology 't', link gpu0-gpu1 (nvlink2): bandwidth must be positive, got -5.0 B/s",
            id="negative-bandwidth",
        ),
        pytest.param(
            [GPU0, GPU1],
            [PhysicalLink("gpu0", "gpu1", "nvlink2", bandwidth_Bps=1e300)],
            TopologyError,
            "topology 't', link gpu0-gpu1 (nvlink2): bandwidth 1e+300 B/s is over 1e+30 B/s, the most",
            id="absurd-bandwidth",
        ),
        pytest.param(
            [GPU0, GPU1],
            [PhysicalLink("gpu0", "gpu1", "nvlink2", bandwidth_Bps=float("inf"))],
            TopologyError,
            "topology 't', link gpu0-gpu1 (nvlink2): bandwidth inf B/s is over 1e+30 B/s, the most",
            id="infinite-bandwidth",
        ),
        pytest.param(
            [GPU0, GPU1],
            [PhysicalLink("gpu0", "gpu1", "nvlink2", latency_s=-1e-6)],
            TopologyError,
            "topology 't', link gpu0-gpu1 (nvlink2): latency must be zero or positive, got -1e-06 s",
            id="negative-latency",
        ),
        pytest.param(
            [GPU0, GPU1],
            [PhysicalLink("gpu0", "gpu9", "nvlink2")],
            TopologyError,
            "topology 't': link gpu0-gpu9 names unknown device 'gpu9'; devices: gpu0, gpu1",
            id="unknown-device",
        ),
        pytest.param(
            [GPU0, GPU1],
            [PhysicalLink("gpu0", "gpu1", "nvlink9")],
            UnknownNameError,
            "unknown link kind 'nvlink9'; valid: ",
            id="unknown-link-kind",
        ),
        pytest.param(
            [GPU0, Device("x", "tpu")],
            [PhysicalLink("gpu0", "x", "nvlink2")],
            TopologyError,
            "topology 't': device 'x' has unknown kind 'tpu'; valid: gpu, cpu, pcie_switch, nvswitch, nic, "
            "switch, memory",
            id="unknown-device-kind",
        ),
        pytest.param(
            [GPU0, GPU1, GPU0],
            [PhysicalLink("gpu0", "gpu1", "nvlink2")],
            TopologyError,
            "topology 't': device 'gpu0' is declared twice",
            id="duplicate-device",
        ),
        pytest.param(
            [GPU0, GPU1],
            [PhysicalLink("gpu0", "gpu0", "nvlink2")],
            TopologyError,
            "topology 't': link from 'gpu0' to itself",
            id="self-link",
        ),
        pytest.param(
            [GPU0, GPU1],
            [PhysicalLink("gpu0", "gpu1", "nvlink2", count=0)],
            TopologyError,
            "topology 't', link gpu0-gpu1 (nvlink2): count must be at least 1, got 0",
            id="zero-count",
        ),
        pytest.param(
            [GPU0, GPU1],
            [PhysicalLink("gpu0", "gpu1", "nvlink2"), PhysicalLink("gpu1", "gpu0", "nvlink1")],
            TopologyError,
            "links gpu1-gpu0 are declared twice with different kinds or figures",
            id="mismatched-bond",
        ),
        pytest.param(
            [Device("cpu0", "cpu")],
            [],
            TopologyError,
            "topology 't' has no GPU",
            id="no-gpu",
        ),
    ],
)
def test_topology_errors(
    devices: list[Device], links: list[PhysicalLink], error: type[Exception], message: str
) -> None:
    """Each invalid machine raises its typed error with a message saying what is wrong."""
    with pytest.raises(error) as info:
        Topology("t", devices, links)
    assert str(info.value).startswith(message)
    assert isinstance(info.value, CommsimError)


@pytest.mark.parametrize("reduce_bandwidth_Bps", [0.0, -1e9])
def test_non_positive_reduce_bandwidth_is_rejected(reduce_bandwidth_Bps: float) -> None:
    """A reduction bandwidth must be positive (None means free), like a link's."""
    devices = [Device("gpu0", "gpu", reduce_bandwidth_Bps=reduce_bandwidth_Bps), GPU1]
    with pytest.raises(TopologyError, match="reduce"):
        Topology("t", devices, [PhysicalLink("gpu0", "gpu1", "nvlink2")])


def test_missing_link_lookup(pcie_box: Topology) -> None:
    """Asking for a link that does not exist says so; unknown devices are named."""
    with pytest.raises(TopologyError, match="topology 'pcie_4gpu_switch' has no link gpu0->gpu1"):
        pcie_box.link("gpu0", "gpu1")
    with pytest.raises(UnknownNameError, match="'gpu7'"):
        pcie_box.link("gpu0", "gpu7")


# -- errors in YAML files, with file:line: ---------------------------------------------

_HEADER = "name: t\ndevices:\n  - {name: gpu0, kind: gpu}\n  - {name: gpu1, kind: gpu}\n"


def _load_error(tmp_path: Path, text: str) -> str:
    path = tmp_path / "machine.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(TopologyError) as info:
        load_topology_file(path)
    return str(info.value).replace(str(path), "FILE")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "name: t\ndevices:\n  - {name: gpu0, kind: gpu}\n  - {name: gpu1, kind: tpu}\n",
            "FILE:4:24: devices.1.kind: unknown device kind 'tpu'; "
            "valid: gpu, cpu, pcie_switch, nvswitch, nic, switch, memory",
            id="unknown-device-kind",
        ),
        pytest.param(
            _HEADER + "links:\n  - {between: [gpu0, gpu1], kind: nvlink2}\n"
            "  - {between: [gpu0, gpu1], kind: warp9}\n",
            "FILE:7:35: links.1.kind: unknown link kind 'warp9'; valid: efa_v1, ",
            id="unknown-link-kind",
        ),
        pytest.param(
            "name: t\ndevices:\n  - {name: gpu0, kind: gpu}\n  - name: gpu1 kind: gpu\n",
            r"FILE:4:\d+: not valid YAML: mapping values are not allowed",
            id="yaml-syntax",
        ),
        pytest.param(
            _HEADER + "links:\n  - {between: [gpu0, gpu1], kind: nvlink2, bandwidth: 12 parsecs}\n",
            "FILE:6:55: links.0.bandwidth: cannot read bandwidth '12 parsecs'; expected a rate",
            id="bad-unit",
        ),
        pytest.param(
            _HEADER + "links:\n  - {between: [gpu0, gpu1], kind: nvlink2, colour: red}\n",
            "FILE:6:52: links.0.colour: unknown field 'colour'; "
            "valid: between, kind, count, bandwidth, latency",
            id="extra-field",
        ),
        pytest.param(
            _HEADER + "  - {name: gpu2, kind: gpu}\nlinks:\n  - {between: [gpu0, gpu1], kind: nvlink2}\n",
            "FILE: topology 't' is disconnected: gpu2 cannot be reached from gpu0",
            id="disconnected",
        ),
        pytest.param(
            "- gpu0\n- gpu1\n",
            "FILE: expected a mapping of fields at the top level, got a list",
            id="not-a-mapping",
        ),
        pytest.param(
            "name: t\ndevices: []\n",
            "FILE:2:10: devices: needs at least 1 item, got 0",
            id="no-devices",
        ),
    ],
)
def test_yaml_errors_point_at_the_line(tmp_path: Path, text: str, expected: str) -> None:
    """Errors in a file say file:line:col and what was wrong (``expected`` is a regex prefix)."""
    message = _load_error(tmp_path, text)
    assert re.match(expected, message), message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            _HEADER + "links:\n  - {between: [gpu0, gpu1], kind: nvlink2, bandwidth: 0 GB/s}\n",
            "FILE:6:55: links.0.bandwidth: bandwidth must be positive, got '0 GB/s'",
            id="zero-bandwidth",
        ),
        pytest.param(
            _HEADER + "links:\n  - {between: [gpu0, gpu1], kind: nvlink2, latency: -1 us}\n",
            "FILE:6:53: links.0.latency: time '-1 us' must be a finite, non-negative quantity",
            id="negative-latency",
        ),
        pytest.param(
            _HEADER + "links:\n  - {between: [gpu0, gpu2], kind: nvlink2}\n",
            "FILE:6:15: links.0.between: link gpu0-gpu2 names unknown device 'gpu2'; devices: gpu0, gpu1",
            id="unknown-device",
        ),
        pytest.param(
            _HEADER + "  - {name: gpu0, kind: gpu}\nlinks:\n  - {between: [gpu0, gpu1], kind: nvlink2}\n",
            "FILE:5:12: devices.2.name: device 'gpu0' is declared twice",
            id="duplicate-device",
        ),
        pytest.param(
            _HEADER + "links:\n  - {between: [gpu1, gpu1], kind: nvlink2}\n",
            "FILE:6:15: links.0.between: link from 'gpu1' to itself",
            id="self-link",
        ),
        pytest.param(
            "name: t\nlink_kinds:\n  warp: {bandwidth: 1 GB/s}\n" + _HEADER.removeprefix("name: t\n"),
            "FILE:3:3: link_kinds: unknown link kind or family 'warp'; valid: ",
            id="unknown-link-kind-override",
        ),
    ],
)
def test_semantic_yaml_errors_point_at_the_line(tmp_path: Path, text: str, expected: str) -> None:
    """A zero bandwidth, an unknown endpoint or a duplicate device sits on one line: it is named."""
    assert _load_error(tmp_path, text).startswith(expected)


def test_valid_kind_or_family_names_are_listed_once() -> None:
    """The 'valid:' list of an unknown kind-or-family error has no duplicates ('host_memory' is both)."""
    with pytest.raises(UnknownNameError) as info:
        kinds_matching(["warp"])
    assert len(info.value.valid) == len(set(info.value.valid))
    assert "host_memory" in info.value.valid


def test_missing_file(tmp_path: Path) -> None:
    """A file that does not exist is a TopologyError naming it."""
    with pytest.raises(TopologyError, match=r"cannot read .*nothing\.yaml"):
        load_topology_file(tmp_path / "nothing.yaml")


@pytest.mark.parametrize(
    ("field", "value", "example"),
    [("bandwidth", "16", "16 GB/s"), ("latency", "5", "5 us"), ("latency", "0", "5 us")],
)
def test_figures_in_a_file_need_units(field: str, value: str, example: str) -> None:
    """``bandwidth: 16`` is not 16 B/s nor ``latency: 5`` five seconds: refused at the value's line."""
    text = (
        "name: t\n"
        "devices:\n"
        "  - {name: g0, kind: gpu}\n"
        "  - {name: g1, kind: gpu}\n"
        "links:\n"
        f"  - {{between: [g0, g1], kind: nvlink2, {field}: {value}}}\n"
    )
    with pytest.raises(TopologyError) as info:
        parse_topology(text, "t.yaml")
    assert str(info.value).startswith("t.yaml:6:")
    assert f"has no unit; write it with one, e.g. '{example}'" in str(info.value)


def test_save_writes_whole_files_only(tmp_path: Path) -> None:
    """The file appears complete (through a temporary file renamed into place), nothing else is left."""
    from commsim.topology import get_topology, save_topology

    save_topology(get_topology("pcie_4gpu_switch"), tmp_path / "m.yaml")
    assert [p.name for p in tmp_path.iterdir()] == ["m.yaml"]
    assert parse_topology((tmp_path / "m.yaml").read_text(encoding="utf-8"), "m.yaml").gpus == [
        "gpu0",
        "gpu1",
        "gpu2",
        "gpu3",
    ]
