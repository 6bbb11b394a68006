"""Schedule IR and its symbolic verifier: built-ins pass, broken schedules fail precisely."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from commsim.algorithms import Problem, algorithm_names, get_algorithm, make_algorithm
from commsim.algorithms.base import NotApplicableError
from commsim.collectives import Collective
from commsim.errors import AlgorithmError, ScheduleError
from commsim.schedule import PathSpec, Schedule, ScheduleBuilder
from commsim.topology import Topology, fully_connected, get_topology, ring
from commsim.verify import topological_order, verify_schedule

# -- built-in algorithms pass -------------------------------------------------------------

TOPOLOGIES = {
    "pcie_4gpu_switch": lambda: get_topology("pcie_4gpu_switch"),
    "dgx1_v100": lambda: get_topology("dgx1_v100"),
    "dgx1_p100": lambda: get_topology("dgx1_p100"),
    "fully_connected_4": lambda: get_topology("fully_connected_4"),
    "ring_5": lambda: ring(5),
    "ring_2": lambda: ring(2),
}

BUILT_INS = [
    ("parameter_server", {"server": 0}),
    ("parameter_server", {"server": 1}),
    ("sharded_parameter_server", {}),
    ("sharded_parameter_server", {"shards": 1}),
    ("sharded_parameter_server", {"shards": 2}),
    ("ring", {}),
    ("ring", {"order": [1, 0]}),
    ("naive_ring", {}),
    ("naive_ring", {"chunks": 3}),
]


def _problem(
    topology: Topology, nbytes: float = 1e6 + 3, collective: Collective = Collective.ALL_REDUCE
) -> Problem:
    return Problem(topology, tuple(topology.gpus), collective, nbytes)


@pytest.mark.parametrize("topology_name", sorted(TOPOLOGIES))
@pytest.mark.parametrize(("name", "params"), BUILT_INS, ids=lambda v: str(v))
def test_verifier_accepts_built_in_all_reduce(
    topology_name: str, name: str, params: dict[str, object]
) -> None:
    """Every built-in algorithm's all-reduce schedule passes the symbolic check (races included)."""
    topology = TOPOLOGIES[topology_name]()
    if "order" in params:
        params = {"order": [1, 0, *range(2, len(topology.gpus))]}
    try:
        schedule = make_algorithm(name, params).plan(_problem(topology))
    except NotApplicableError as exc:
        # on a 5-GPU ring only neighbours are linked: servers (and a reordered ring) need others
        assert topology_name == "ring_5" and "has no route from" in str(exc), str(exc)
        return
    assert schedule.n_ops > 0
    verify_schedule(schedule, check_races=True)


@pytest.mark.parametrize("topology_name", ["pcie_4gpu_switch", "dgx1_v100"])
def test_parameter_server_on_the_cpu_verifies(topology_name: str) -> None:
    """A server that is not a rank (the CPU) still leaves every rank with the full sum."""
    schedule = make_algorithm("parameter_server", {"server": "cpu"}).plan(
        _problem(TOPOLOGIES[topology_name]())
    )
    assert "cpu0" in schedule.devices
    schedule.verify()


@pytest.mark.parametrize("collective", [Collective.REDUCE_SCATTER, Collective.ALL_GATHER])
@pytest.mark.parametrize("gpus", [2, 3, 8])
def test_ring_other_collectives_verify(collective: Collective, gpus: int) -> None:
    """The ring's reduce-scatter and all-gather halves are collectives of their own."""
    topology = ring(gpus)
    schedule = make_algorithm("ring").plan(_problem(topology, collective=collective))
    assert schedule.n_ops == gpus * (gpus - 1)
    schedule.verify(check_races=True)


@pytest.mark.parametrize("name", algorithm_names())
def test_every_registered_algorithm_verifies_where_it_runs(name: str) -> None:
    """Every registered all-reduce algorithm verifies on each of three machines it accepts."""
    algorithm = get_algorithm(name)()
    if Collective.ALL_REDUCE not in algorithm.collectives:
        pytest.skip(f"{name} has no all-reduce")
    planned = 0
    for topology_name in ("pcie_4gpu_switch", "fully_connected_4", "dgx1_v100"):
        try:
            schedule = algorithm.plan(_problem(TOPOLOGIES[topology_name]()))
        except AlgorithmError:
            continue
        schedule.verify()
        planned += 1
    if not planned:
        pytest.skip(f"{name} runs on none of the test machines with default parameters")


# -- broken schedules fail with a precise message ----------------------------------------------


def _builder(
    ranks: int = 2, collective: Collective = Collective.ALL_REDUCE, root: int | None = None
) -> ScheduleBuilder:
    return ScheduleBuilder(collective, 100, [f"gpu{i}" for i in range(ranks)], root=root)


def test_missing_send() -> None:
    """gpu0 pushes to gpu1, but the sum never comes back: gpu0 lacks gpu1's part."""
    builder = _builder()
    chunk = builder.chunk(100)
    builder.send("gpu0", "gpu1", chunk, reduce=True)
    with pytest.raises(ScheduleError) as info:
        builder.build().verify()
    assert str(info.value) == (
        "all_reduce not achieved: gpu0 ends with chunk 0 holding {gpu0}, expected {gpu0, gpu1}"
    )


def test_chunk_summed_twice() -> None:
    """gpu0's data added twice into gpu1 is caught and counted."""
    builder = _builder()
    chunk = builder.chunk(100)
    a = builder.send("gpu0", "gpu1", chunk, reduce=True)
    b = builder.send("gpu0", "gpu1", chunk, reduce=True)
    builder.send("gpu1", "gpu0", chunk, deps=[a, b])
    with pytest.raises(ScheduleError) as info:
        builder.build().verify()
    assert str(info.value) == (
        "all_reduce not achieved: gpu0 ends with chunk 0 holding {gpu0x2, gpu1}, expected {gpu0, gpu1}"
    )


def test_send_of_data_not_held_yet() -> None:
    """In a broadcast from gpu0, gpu1 forwards to gpu2 before it received anything."""
    builder = _builder(3, Collective.BROADCAST, root=0)
    chunk = builder.chunk(100)
    early = builder.send("gpu1", "gpu2", chunk)
    builder.send("gpu0", "gpu1", chunk, deps=[early])
    with pytest.raises(ScheduleError) as info:
        builder.build().verify()
    assert str(info.value) == (
        "op 0: gpu1 sends chunk 0 (100 B) to gpu2 but holds no data of it yet "
        "(a missing send or dependency before it)"
    )


def test_race_between_two_writes() -> None:
    """Two unordered copies into the same buffer: the result depends on timing."""
    builder = _builder(3, Collective.BROADCAST, root=0)
    chunk = builder.chunk(100)
    builder.send("gpu0", "gpu1", chunk)
    builder.send("gpu0", "gpu2", chunk)
    builder.send("gpu1", "gpu2", chunk)  # may land before or after op 1
    with pytest.raises(ScheduleError) as info:
        builder.build().verify()
    message = str(info.value)
    assert message.startswith("race on chunk 0 at gpu")
    assert message.endswith("are not ordered by dependencies")
    assert "(write)" in message


def test_race_between_a_read_and_an_add() -> None:
    """Reading a buffer while another op adds into it is a race too."""
    builder = _builder()
    chunk = builder.chunk(100)
    builder.send("gpu0", "gpu1", chunk, reduce=True)
    builder.send("gpu1", "gpu0", chunk)  # forgot deps=[0]
    with pytest.raises(ScheduleError) as info:
        builder.build().verify()
    assert str(info.value) == (
        "race on chunk 0 at gpu0: op 0 (read) and op 1 (write) are not ordered by dependencies"
    )


def test_race_check_can_be_disabled() -> None:
    """With races unchecked, the same schedule is judged by its (topological-order) result."""
    builder = _builder()
    chunk = builder.chunk(100)
    builder.send("gpu0", "gpu1", chunk, reduce=True)
    builder.send("gpu1", "gpu0", chunk)
    verify_schedule(builder.build(), check_races=False)


def test_unordered_adds_are_not_a_race() -> None:
    """Several ranks adding into one buffer at once is fine (a parameter server's push)."""
    builder = _builder(3)
    chunk = builder.chunk(100)
    pushes = [builder.send(f"gpu{i}", "gpu0", chunk, reduce=True) for i in (1, 2)]
    for i in (1, 2):
        builder.send("gpu0", f"gpu{i}", chunk, deps=pushes)
    builder.build().verify(check_races=True)


def test_cycles_cannot_be_built() -> None:
    """The builder only accepts dependencies on ops added before: no cycle can be built."""
    builder = _builder()
    chunk = builder.chunk(100)
    builder.send("gpu0", "gpu1", chunk)
    with pytest.raises(ScheduleError, match=r"^op 1 depends on op 5, not added before it$"):
        builder.send("gpu1", "gpu0", chunk, deps=[5])
    with pytest.raises(ScheduleError, match=r"^op 1 depends on op 1, not added before it$"):
        builder.send("gpu1", "gpu0", chunk, deps=[1])
    with pytest.raises(ScheduleError, match=r"^op 1 depends on op -1, not added before it$"):
        builder.send("gpu1", "gpu0", chunk, deps=[-1])
    assert builder.n_ops == 1


def test_verifier_rejects_a_cycle_made_by_hand() -> None:
    """A Schedule edited to contain a cycle is rejected by the topological sort."""
    builder = _builder()
    chunk = builder.chunk(100)
    a = builder.send("gpu0", "gpu1", chunk, reduce=True)
    builder.send("gpu1", "gpu0", chunk, deps=[a])
    schedule = dataclasses.replace(
        builder.build(), dep_indptr=np.array([0, 1, 2]), dep_indices=np.array([1, 0])
    )
    with pytest.raises(
        ScheduleError,
        match=r"^the dependencies of 2 op\(s\) form a cycle "
        r"\(counting that sends on one connection are served in op order\)$",
    ):
        topological_order(schedule)
    with pytest.raises(ScheduleError, match="form a cycle"):
        schedule.verify()


def test_rooted_collective_needs_a_root() -> None:
    """A broadcast without a (valid) root is rejected before anything else."""
    builder = _builder(2, Collective.BROADCAST, root=None)
    builder.send("gpu0", "gpu1", builder.chunk(100))
    with pytest.raises(ScheduleError, match=r"^broadcast needs a root rank, got None$"):
        builder.build().verify()
    builder = _builder(2, Collective.BROADCAST, root=7)
    builder.send("gpu0", "gpu1", builder.chunk(100))
    with pytest.raises(ScheduleError, match=r"^broadcast needs a root rank, got 7$"):
        builder.build().verify()


def test_all_gather_needs_owners() -> None:
    """All-gather starts from owned chunks; a chunk without an owner is an error."""
    builder = _builder(2, Collective.ALL_GATHER)
    builder.send("gpu0", "gpu1", builder.chunk(100))
    with pytest.raises(ScheduleError, match="all_gather needs every chunk to have an owner rank"):
        builder.build().verify()


@pytest.mark.parametrize(
    ("collective", "root", "message"),
    [
        (
            Collective.REDUCE,
            1,
            "reduce not achieved: gpu1 ends with chunk 0 holding {gpu1}, expected {gpu0, gpu1, gpu2}",
        ),
        (
            Collective.BROADCAST,
            0,
            "broadcast not achieved: gpu1 ends with chunk 0 holding nothing, expected {gpu0}",
        ),
    ],
)
def test_empty_schedule_fails_postcondition(collective: Collective, root: int, message: str) -> None:
    """Doing nothing achieves nothing: the first unmet postcondition is named."""
    builder = _builder(3, collective, root=root)
    builder.chunk(100)
    with pytest.raises(ScheduleError) as info:
        builder.build().verify()
    assert str(info.value) == message


def test_hand_built_reduce_and_broadcast_verify() -> None:
    """Hand-built chains of the rooted collectives pass."""
    reduce = _builder(3, Collective.REDUCE, root=2)
    chunk = reduce.chunk(100)
    first = reduce.send("gpu0", "gpu1", chunk, reduce=True)
    reduce.send("gpu1", "gpu2", chunk, reduce=True, deps=[first])
    reduce.build().verify()
    broadcast = _builder(3, Collective.BROADCAST, root=1)
    chunk = broadcast.chunk(100)
    broadcast.sends(["gpu1", "gpu1"], ["gpu0", "gpu2"], chunk)
    broadcast.build().verify()


# -- ScheduleBuilder ----------------------------------------------------------------------


def test_builder_errors() -> None:
    """Sends to oneself, unknown chunks and mismatched lengths are ScheduleErrors."""
    builder = _builder()
    with pytest.raises(ScheduleError, match=r"^sends name a chunk outside 0\.\.-1$"):
        builder.send("gpu0", "gpu1", 0)
    chunk = builder.chunk(100)
    with pytest.raises(ScheduleError, match=r"^send from 'gpu0' to itself$"):
        builder.send("gpu0", "gpu0", chunk)
    with pytest.raises(ScheduleError, match=r"^sends name a chunk outside 0\.\.0$"):
        builder.send("gpu0", "gpu1", chunk + 1)
    with pytest.raises(ScheduleError, match=r"^sends name a chunk outside 0\.\.0$"):
        builder.send("gpu0", "gpu1", -1)
    with pytest.raises(ScheduleError, match=r"^sends: 2 sources but 1 destinations$"):
        builder.sends(["gpu0", "gpu1"], ["gpu1"], chunk)
    with pytest.raises(ScheduleError, match=r"^sends: 2 sends but 1 dependency lists$"):
        builder.sends(["gpu0", "gpu1"], ["gpu1", "gpu0"], chunk, deps=[[]])
    with pytest.raises(ScheduleError, match=r"^device index outside 0\.\.1$"):
        builder.sends(np.array([0]), np.array([2]), chunk)
    assert builder.n_ops == 0


def test_builder_records_everything() -> None:
    """Chunks, devices, paths, steps and CSR dependencies end up in the Schedule."""
    builder = ScheduleBuilder(Collective.ALL_REDUCE, 90, ["gpu0", "gpu1"])
    chunks = builder.split(90, 3, owners=[0, 1, 0])
    assert chunks == [0, 1, 2]
    a = builder.send("gpu0", "cpu0", chunks[1], reduce=True, kinds=["pcie"], step=4)
    ops = builder.sends(
        np.array([1, 2]),
        np.array([0, 1]),
        [chunks[0], chunks[2]],
        deps=np.array([[a, -1], [-1, -1]]),
        step=[5, 6],
    )
    assert ops.tolist() == [1, 2]
    schedule = builder.build()
    assert isinstance(schedule, Schedule)
    assert schedule.devices == ("gpu0", "gpu1", "cpu0")
    assert schedule.ranks == ("gpu0", "gpu1")
    assert schedule.chunk_nbytes.tolist() == [30.0, 30.0, 30.0]
    assert schedule.chunk_owner.tolist() == [0, 1, 0]
    assert schedule.n_ops == 3
    assert schedule.op_src.tolist() == [0, 1, 2]
    assert schedule.op_dst.tolist() == [2, 0, 1]
    assert schedule.op_reduce.tolist() == [True, False, False]
    assert schedule.op_step.tolist() == [4, 5, 6]
    assert schedule.op_nbytes.tolist() == [30.0, 30.0, 30.0]
    assert schedule.deps(1).tolist() == [0]
    assert schedule.deps(2).tolist() == []
    assert schedule.paths[schedule.op_path[0]] == PathSpec("gpu0", "cpu0", ("pcie",), None)
    assert schedule.paths[schedule.op_path[1]] == PathSpec("gpu1", "gpu0", None, None)


def test_topological_order_respects_dependencies() -> None:
    """Every op comes after its dependencies; ties go by op id."""
    topology = fully_connected(4)
    schedule = make_algorithm("sharded_parameter_server").plan(_problem(topology))
    order = topological_order(schedule).tolist()
    assert sorted(order) == list(range(schedule.n_ops))
    position = {op: i for i, op in enumerate(order)}
    for op in range(schedule.n_ops):
        for dep in schedule.deps(op).tolist():
            assert position[dep] < position[op]
    assert order[:3] == [0, 1, 2]


def test_one_at_a_time_and_vectorised_sends_give_the_same_paths() -> None:
    """Pairs added by small calls (a dict) and by large calls (a sorted table) share one numbering.

    Sends in the order (3,1), (0,2), (3,1), then one call with every ordered pair of 6 devices:
    the first two pairs get paths 0 and 1, the 28 others 2..29 in ascending (src, dst) order.
    """
    builder = ScheduleBuilder(Collective.ALL_REDUCE, 100, [f"gpu{i}" for i in range(6)])
    chunk = builder.chunk(100)
    singles = [builder.send(f"gpu{a}", f"gpu{b}", chunk) for a, b in ((3, 1), (0, 2), (3, 1))]
    src, dst = np.array([(a, b) for a in range(6) for b in range(6) if a != b]).T
    block = builder.sends(src, dst, chunk)
    schedule = builder.build()
    assert schedule.op_path[singles].tolist() == [0, 1, 0]
    expected, fresh = [], 2
    for a, b in zip(src.tolist(), dst.tolist()):
        if (a, b) == (3, 1):
            expected.append(0)
        elif (a, b) == (0, 2):
            expected.append(1)
        else:
            expected.append(fresh)
            fresh += 1
    assert schedule.op_path[block].tolist() == expected
    assert [(p.src, p.dst) for p in schedule.paths[:3]] == [
        ("gpu3", "gpu1"),
        ("gpu0", "gpu2"),
        ("gpu0", "gpu1"),
    ]
