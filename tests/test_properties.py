"""Hypothesis properties of planning + replay: results move the right way when inputs move.

- monotone in size, and in every link's bandwidth (a fixed plan replayed on a faster link);
- more traffic never makes a collective faster;
- renaming devices, or an automorphic rank order, changes nothing (bit-identical times);
- every link carries exactly the bytes the schedule sends over it.
"""

from __future__ import annotations

import dataclasses
import random

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from networkx.algorithms import isomorphism

from commsim.algorithms import Problem, make_algorithm
from commsim.algorithms.base import NotApplicableError
from commsim.algorithms.compose import merge_schedules
from commsim.collectives import Collective
from commsim.engine import replay
from commsim.schedule import Schedule
from commsim.topology import fully_connected, get_topology, ring
from commsim.topology.model import Device, PhysicalLink, Topology

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Algorithms whose sends between two devices use one channel per logical stream; see the
# "Connections (channels)" section of docs/architecture.md for the one known exception
# (double binary trees, two channels over the same GPU pairs).
SINGLE_STREAM = [
    "ring",
    "naive_ring",
    "direct",
    "sharded_parameter_server",
    "hierarchical",
    "halving_doubling",
]


def _star(gpus: int) -> Topology:
    devices = [Device("cpu0", "cpu"), Device("sw0", "pcie_switch")] + [
        Device(f"gpu{i}", "gpu") for i in range(gpus)
    ]
    links = [PhysicalLink("sw0", "cpu0", "pcie4_x16")] + [
        PhysicalLink(f"gpu{i}", "sw0", "pcie4_x16", latency_s=1e-6 * (i + 1)) for i in range(gpus)
    ]
    return Topology(f"star_{gpus}", devices, links)


def _cluster(fabric: str, multipath: str) -> Topology:
    return get_topology(
        "cluster", box="pcie_4gpu_switch", nodes=4, nic="ib_hdr", fabric=fabric
    ).with_multipath(multipath)


MACHINES = st.one_of(
    st.integers(2, 5).map(fully_connected),
    st.integers(2, 5).map(ring),
    st.integers(2, 5).map(_star),
    st.sampled_from(["dgx1_v100", "pcie_4gpu_switch", "dgx_a100"]).map(get_topology),
    st.tuples(st.sampled_from(["switch", "fat_tree"]), st.sampled_from(["spray", "hash"])).map(
        lambda a: _cluster(*a)
    ),
)


def _plan(
    topology: Topology, name: str, nbytes: float, ranks: tuple[str, ...] | None = None
) -> Schedule | None:
    problem = Problem(topology, ranks or tuple(topology.gpus), Collective.ALL_REDUCE, nbytes)
    try:
        return make_algorithm(name).plan(problem)
    except NotApplicableError:
        return None


def _time(schedule: Schedule, topology: Topology) -> float:
    return replay(schedule, topology).makespan_s


def _with_bandwidth(topology: Topology, index: int, factor: float) -> Topology:
    links = list(topology.physical_links)
    bandwidth_Bps, _ = topology._figures(links[index])
    links[index] = dataclasses.replace(links[index], bandwidth_Bps=bandwidth_Bps * factor)
    return Topology(
        topology.name, topology.devices, links, topology.kind_overrides, multipath=topology.multipath
    )


@SETTINGS
@given(machine=MACHINES, name=st.sampled_from(SINGLE_STREAM), small=st.floats(1, 1e8), ratio=st.floats(1, 10))
def test_monotone_in_size(machine: Topology, name: str, small: float, ratio: float) -> None:
    a, b = _plan(machine, name, small), _plan(machine, name, small * ratio)
    if a is None or b is None:
        return
    assert _time(a, machine) <= _time(b, machine) * (1 + 1e-12)


@SETTINGS
@given(
    machine=MACHINES,
    name=st.sampled_from(SINGLE_STREAM),
    nbytes=st.floats(1e3, 1e8),
    data=st.data(),
    factor=st.floats(1.01, 8),
)
def test_monotone_in_every_links_bandwidth(
    machine: Topology, name: str, nbytes: float, data: st.DataObject, factor: float
) -> None:
    """The same plan replayed with one physical link faster never takes longer."""
    schedule = _plan(machine, name, nbytes)
    if schedule is None:
        return
    index = data.draw(st.integers(0, len(machine.physical_links) - 1), label="link")
    assert _time(schedule, _with_bandwidth(machine, index, factor)) <= _time(schedule, machine) * (1 + 1e-12)


def _channel_alone(schedule: Schedule, channel: int) -> Schedule:
    """The sends of one channel as a schedule of their own (they must not wait for other channels)."""
    keep = np.flatnonzero(schedule.channels == channel)
    new_index = np.full(schedule.n_ops, -1, np.int64)
    new_index[keep] = np.arange(keep.size)
    lengths = np.diff(schedule.dep_indptr)[keep]
    deps = np.concatenate([schedule.deps(int(op)) for op in keep]) if keep.size else np.empty(0, np.int64)
    assert (new_index[deps] >= 0).all(), "a send waits for another channel"
    indptr = np.zeros(keep.size + 1, np.int64)
    np.cumsum(lengths, out=indptr[1:])
    return dataclasses.replace(
        schedule,
        op_src=schedule.op_src[keep],
        op_dst=schedule.op_dst[keep],
        op_chunk=schedule.op_chunk[keep],
        op_reduce=schedule.op_reduce[keep],
        op_path=schedule.op_path[keep],
        op_step=schedule.op_step[keep],
        dep_indptr=indptr,
        dep_indices=new_index[deps],
        op_channel=schedule.channels[keep],
    )


@SETTINGS
@given(
    machine=MACHINES,
    name=st.sampled_from(["tree", "multi_ring"]),
    nbytes=st.floats(1e3, 1e8),
    data=st.data(),
    factor=st.floats(1.01, 8),
)
def test_each_channel_alone_is_monotone_in_every_links_bandwidth(
    machine: Topology, name: str, nbytes: float, data: st.DataObject, factor: float
) -> None:
    """Algorithms with several channels between the same GPUs: each channel, replayed alone, is monotone.

    What a faster link can break for them is only the max-min sharing
    *between* channels (see the next test); each channel's own stream of
    sends never gets slower.
    """
    schedule = _plan(machine, name, nbytes)
    if schedule is None:
        return
    index = data.draw(st.integers(0, len(machine.physical_links) - 1), label="link")
    faster = _with_bandwidth(machine, index, factor)
    for channel in np.unique(schedule.channels).tolist():
        alone = _channel_alone(schedule, channel)
        assert _time(alone, faster) <= _time(alone, machine) * (1 + 1e-12)


def test_a_faster_link_slows_double_binary_trees_only_through_sharing_between_channels() -> None:
    """The known non-monotone case: double binary ``tree``, 1 MB, ``pcie_4gpu_switch``, gpu1 4x faster.

    The two trees are two channels (as in NCCL). With gpu1's link faster,
    the tree on channel 1 runs ahead, and its broadcast sends gpu1 -> gpu2
    cross the switch's link to gpu2 earlier, while the reduce sends
    gpu1 -> gpu2 of channel 0's critical path are in flight there; max-min
    sharing gives them half the link, so channel 0, and the collective,
    end later. Each channel alone is faster or unchanged: the slowdown comes
    only from sharing between channels, a property of fair sharing without
    priorities (greedy work-conserving schedules are not monotone), not of
    one stream's order.
    """
    machine = get_topology("pcie_4gpu_switch")
    schedule = _plan(machine, "tree", 1e6)
    assert schedule is not None
    index = next(i for i, p in enumerate(machine.physical_links) if "gpu1" in (p.a, p.b))
    faster = _with_bandwidth(machine, index, 4.0)
    assert _time(schedule, faster) > _time(schedule, machine)
    assert sorted(np.unique(schedule.channels).tolist()) == [0, 1]
    for channel in (0, 1):
        alone = _channel_alone(schedule, channel)
        assert _time(alone, faster) <= _time(alone, machine)
    # the channel-1 sends gpu1 -> gpu2 start earlier on the faster machine, into channel 0's
    gpu1, gpu2 = schedule.devices.index("gpu1"), schedule.devices.index("gpu2")
    ch1_up = (schedule.channels == 1) & (schedule.op_src == gpu1) & (schedule.op_dst == gpu2)
    base, fast = replay(schedule, machine), replay(schedule, faster)
    assert (fast.op_data_start_s[ch1_up] <= base.op_data_start_s[ch1_up]).all()
    assert (fast.op_data_start_s[ch1_up] < base.op_data_start_s[ch1_up]).any()


@SETTINGS
@given(
    machine=MACHINES, name=st.sampled_from(SINGLE_STREAM), nbytes=st.floats(1e3, 1e8), share=st.floats(0.1, 2)
)
def test_more_traffic_never_makes_a_collective_faster(
    machine: Topology, name: str, nbytes: float, share: float
) -> None:
    """A competing ring all-reduce over the same GPUs: the first collective's sends end no earlier."""
    main, other = _plan(machine, name, nbytes), _plan(machine, "ring", nbytes * share)
    if main is None or other is None:
        return
    alone = replay(main, machine)
    both = replay(merge_schedules([main, dataclasses.replace(other, root=main.root)], nbytes), machine)
    assert both.op_end_s[: main.n_ops].max() >= alone.makespan_s * (1 - 1e-12)


def _renamed(topology: Topology, seed: int) -> tuple[Topology, dict[str, str]]:
    """The same machine with every device renamed to a random fresh name (declaration order kept)."""
    rng = random.Random(seed)
    names = [f"d{rng.randrange(10**9)}x{i}" for i in range(len(topology.devices))]
    rng.shuffle(names)
    new = {d.name: names[i] for i, d in enumerate(topology.devices)}
    devices = [
        dataclasses.replace(d, name=new[d.name], serves=tuple(new[s] for s in d.serves))
        for d in topology.devices
    ]
    links = [dataclasses.replace(p, a=new[p.a], b=new[p.b]) for p in topology.physical_links]
    renamed = Topology(
        "renamed",
        devices,
        links,
        topology.kind_overrides,
        topology.description,
        topology.peer_to_peer,
        topology.nccl,
        topology.multipath,
    )
    return renamed, new


@SETTINGS
@given(
    machine=MACHINES,
    name=st.sampled_from([*SINGLE_STREAM, "tree", "multi_ring", "tree_packing"]),
    nbytes=st.floats(1, 1e8),
    seed=st.integers(0, 2**32),
)
def test_renaming_devices_changes_nothing(machine: Topology, name: str, nbytes: float, seed: int) -> None:
    """Routes, multipath choices and plans depend on structure and rank indices only."""
    schedule = _plan(machine, name, nbytes)
    if schedule is None:
        return
    renamed, new = _renamed(machine, seed)
    again = _plan(renamed, name, nbytes, tuple(new[g] for g in machine.gpus))
    assert again is not None
    first, second = replay(schedule, machine), replay(again, renamed)
    assert second.makespan_s == first.makespan_s
    assert np.array_equal(second.op_end_s, first.op_end_s)
    assert np.array_equal(second.link_bytes, first.link_bytes)


def _automorphisms(topology: Topology, limit: int) -> list[dict[str, str]]:
    graph = nx.Graph()
    for device in topology.devices:
        graph.add_node(device.name, kind=device.kind)
    for link in topology.links:
        graph.add_edge(link.src, link.dst, figures=(link.kind, link.bandwidth_Bps, link.latency_s))
    matcher = isomorphism.GraphMatcher(
        graph, graph, node_match=lambda a, b: a == b, edge_match=lambda a, b: a == b
    )
    found = []
    for mapping in matcher.isomorphisms_iter():
        found.append(mapping)
        if len(found) == limit:
            break
    return found


AUTOMORPHIC = {
    "dgx1_v100": lambda: get_topology("dgx1_v100"),
    "dgx1_p100": lambda: get_topology("dgx1_p100"),
    "fully_connected_4": lambda: fully_connected(4),
    "fat_tree": lambda: _cluster("fat_tree", "spray"),
}


@pytest.mark.parametrize("machine", sorted(AUTOMORPHIC))
@pytest.mark.parametrize("name", [*SINGLE_STREAM, "tree", "multi_ring", "tree_packing"])
def test_automorphic_rank_orders_give_identical_times(machine: str, name: str) -> None:
    """Mapping the ranks through a symmetry of the machine gives bit-identical times.

    The symmetries are found by networkx (device kinds and link figures preserved); up to 12
    of them per machine (dgx1_v100 has 4, dgx1_p100 16).
    """
    topology = AUTOMORPHIC[machine]()
    base = _plan(topology, name, 1e8)
    if base is None:
        pytest.skip(f"{name} does not apply to {machine}")
    expected = _time(base, topology)
    mappings = _automorphisms(topology, 12)
    assert len(mappings) > 1
    for mapping in mappings:
        schedule = _plan(topology, name, 1e8, tuple(mapping[g] for g in topology.gpus))
        assert schedule is not None
        assert _time(schedule, topology) == expected, mapping


@SETTINGS
@given(machine=MACHINES, name=st.sampled_from([*SINGLE_STREAM, "tree"]), nbytes=st.floats(1, 1e8))
def test_link_bytes_equal_what_the_schedule_sends(machine: Topology, name: str, nbytes: float) -> None:
    """Sum over sends of its bytes on each link of each route (a sprayed send splits evenly)."""
    schedule = _plan(machine, name, nbytes)
    if schedule is None:
        return
    record = replay(schedule, machine)
    expected = np.zeros(len(machine.links))
    for op in range(schedule.n_ops):
        spec = schedule.paths[schedule.op_path[op]]
        if spec.via is not None:
            routes = [machine.links_between(spec.via)]
        elif machine.multipath == "spray":
            routes = list(machine.routes(spec.src, spec.dst, spec.kinds))
        else:
            ranks = schedule.ranks
            key = (ranks.index(spec.src), ranks.index(spec.dst))
            routes = [machine.route(spec.src, spec.dst, spec.kinds, flow_key=key)]
        for route in routes:
            expected[list(route)] += schedule.chunk_nbytes[schedule.op_chunk[op]] / len(routes)
    assert record.link_bytes == pytest.approx(expected, rel=1e-9, abs=1e-9 * nbytes)


def test_non_blocking_fat_tree_equals_one_big_switch_for_hierarchical() -> None:
    """8 DGX A100 boxes, 1 GB hierarchical all-reduce, latencies set to 0.

    A non-blocking fat tree (as many spine links as leaf downlinks) sprayed over all spines
    carries every cross-box flow at the NIC rate, as one big switch does: the same time. With
    per-flow hashing, flows of a ring step that share a leaf pick spines by hash and collide on
    some spine links, so the same collective takes longer.
    """
    build = lambda fabric: get_topology(  # noqa: E731
        "cluster", box="dgx_a100", nodes=8, nic="ib_hdr", fabric=fabric
    ).scaled({}, latency_s=0.0)
    switch, fat_tree = build("switch"), build("fat_tree")
    plan = lambda t: _plan(t, "hierarchical", 1e9)  # noqa: E731
    big_switch_s = _time(plan(switch), switch)  # type: ignore[arg-type]
    sprayed_s = _time(plan(fat_tree), fat_tree)  # type: ignore[arg-type]
    assert sprayed_s == pytest.approx(big_switch_s, rel=1e-12)
    hashed = fat_tree.with_multipath("hash")
    assert _time(plan(hashed), hashed) > 1.5 * big_switch_s  # type: ignore[arg-type]


def test_multipath_is_read_from_and_written_to_topology_files(tmp_path: object) -> None:
    """`multipath: hash` in a topology file survives a save and load; the default is spray."""
    from pathlib import Path

    from commsim.topology.io import load_topology_file, save_topology, topology_to_dict

    machine = _cluster("fat_tree", "hash")
    assert topology_to_dict(machine)["multipath"] == "hash"
    assert "multipath" not in topology_to_dict(machine.with_multipath("spray"))  # the default
    path = Path(str(tmp_path)) / "fat_tree.yaml"
    save_topology(machine, path)
    assert load_topology_file(path).multipath == "hash"
