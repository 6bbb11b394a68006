"""Hierarchical all-reduce planned by orbits of the boxes: same sends, same replay as the per-send plan.

``plan_compact`` describes the plan as classes of sends that rotating the
boxes maps onto each other (:class:`~commsim.schedule.BoxOrbits`); the
engine replays one flow group per class (:mod:`commsim.engine.orbits`)
when the machine and its routes are symmetric under that rotation, and
the sends otherwise. The reference is the per-send plan
(``plan_per_send``) replayed send by send.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from commsim.algorithms import Problem, make_algorithm
from commsim.algorithms.hierarchical import box_grid, plan_compact, plan_per_send
from commsim.collectives import Collective
from commsim.engine import ReplayRecord, replay
from commsim.engine.orbits import OrbitRecord
from commsim.engine.recorder import Recorder
from commsim.schedule import Schedule, connection_next
from commsim.topology import Topology, get_topology

REL = 1e-12  # the orbit replay's contract: the per-send replay's figures up to rounding

OP_FIELDS = ("op_src", "op_dst", "op_chunk", "op_reduce", "op_path", "op_step", "dep_indptr", "dep_indices")


def _cluster(boxes: int, **kwargs: object) -> Topology:
    return get_topology("cluster", box="dgx_a100", nodes=boxes, nic="ib_hdr", **kwargs)


def _plans(
    topology: Topology, nbytes: float = 1e9, ranks: list[str] | None = None
) -> tuple[Schedule, Schedule]:
    problem = Problem(topology, tuple(ranks or topology.gpus), Collective.ALL_REDUCE, nbytes)
    grid = box_grid(problem)
    return plan_per_send(problem, grid), plan_compact(problem, grid)


def _assert_same_replay(reference: ReplayRecord, record: ReplayRecord) -> None:
    assert record.makespan_s == pytest.approx(reference.makespan_s, rel=REL, abs=0)
    for name in ("link_bytes", "link_busy_s", "op_ready_s", "op_data_start_s", "op_end_s"):
        np.testing.assert_allclose(
            getattr(record, name), getattr(reference, name), rtol=REL, atol=0, err_msg=name
        )
    for name in ("op_links_ptr", "op_links", "interval_link"):
        np.testing.assert_array_equal(getattr(record, name), getattr(reference, name), err_msg=name)
    for name in ("interval_start_s", "interval_end_s"):
        np.testing.assert_allclose(
            getattr(record, name), getattr(reference, name), rtol=REL, atol=0, err_msg=name
        )


@pytest.mark.parametrize("boxes", [2, 3, 5])
def test_compact_plan_reads_as_the_per_send_plan(boxes: int) -> None:
    """Every per-send column, chunk and path spec of the compact plan is the per-send plan's."""
    per_send, compact = _plans(_cluster(boxes))
    assert compact.n_ops == per_send.n_ops == 128 * boxes**2 - 16 * boxes  # m = 8: 128 K^2 - 16 K
    assert compact.paths == per_send.paths
    np.testing.assert_array_equal(compact.chunk_nbytes, per_send.chunk_nbytes)
    for name in (*OP_FIELDS, "channels"):
        np.testing.assert_array_equal(getattr(compact, name), getattr(per_send, name), err_msg=name)


@pytest.mark.parametrize(("boxes", "per_box"), [(2, 8), (3, 8), (5, 8), (4, 2), (3, 3)])
def test_classes_wait_for_exactly_what_their_sends_wait_for(boxes: int, per_box: int) -> None:
    """A class's dependencies are the classes of each of its sends' dependencies and connection predecessor.

    Also: every send of a class has the class's size and reduce flag, and the
    representative box holds ``weight`` sends of the class on its path.
    """
    topology = _cluster(boxes)
    ranks = [g for box in topology.boxes.values() for g in box[:per_box]]
    per_send, compact = _plans(topology, ranks=ranks)
    pattern = compact.__dict__["pattern"]
    orbits, op_class = pattern.orbits(), pattern.op_classes()
    assert op_class.size == per_send.n_ops
    assert np.bincount(op_class).min() == boxes  # every class has members in every box
    np.testing.assert_array_equal(orbits.reduce[op_class], per_send.op_reduce)
    np.testing.assert_array_equal(orbits.nbytes[op_class], per_send.op_nbytes)
    predecessor = np.full(per_send.n_ops, -1)
    following = connection_next(per_send)
    predecessor[following[following >= 0]] = np.flatnonzero(following >= 0)
    expected: dict[int, set[int]] = {}
    for op in range(per_send.n_ops):
        waits = set(op_class[per_send.deps(op)].tolist())
        if predecessor[op] >= 0:
            waits.add(int(op_class[predecessor[op]]))
        expected.setdefault(int(op_class[op]), set()).update(waits)
        cls = int(op_class[op])
        assert waits == set(orbits.deps[orbits.dep_ptr[cls] : orbits.dep_ptr[cls + 1]].tolist()), op
    first_box = per_send.op_src < per_box  # ranks of the first box are devices 0..per_box-1
    on_rep = first_box & (per_send.op_path == orbits.path[op_class])
    np.testing.assert_array_equal(np.bincount(op_class[on_rep], minlength=orbits.path.size), orbits.weight)


CASES = {
    "2 boxes": lambda: _cluster(2),
    "3 boxes": lambda: _cluster(3),
    "8 boxes": lambda: _cluster(8),
    "NICs 20x faster": lambda: _cluster(3).scaled({"infiniband": 20.0}),
    "NVLink 20x slower": lambda: _cluster(4).scaled({"nvlink": 0.05}),
    "NICs 4x faster, no latency": lambda: _cluster(5).scaled({"infiniband": 4.0}, latency_s=0.0),
    "hashed routes": lambda: _cluster(3).with_multipath("hash"),
    "one NIC per box": lambda: _cluster(3, nic_per="box"),
    "rails": lambda: _cluster(4, fabric="rails"),
    "hgx_h100 boxes": lambda: get_topology("cluster", box="hgx_h100", nodes=3),
    "dgx1_v100 boxes": lambda: get_topology("cluster", box="dgx1_v100", nodes=3),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_orbit_replay_is_the_per_send_replay(case: str) -> None:
    """Makespan, link bytes and busy times, per-send times and busy intervals agree to 1e-12."""
    topology = CASES[case]()
    per_send, compact = _plans(topology)
    record = replay(compact, topology)
    assert isinstance(record, OrbitRecord)
    _assert_same_replay(replay(per_send, topology), record)


@pytest.mark.parametrize("nbytes", [0.0, 1000.0, 160e6])
def test_orbit_replay_at_other_sizes(nbytes: float) -> None:
    """Latency-bound, empty and mid-size buffers agree too (empty sends complete after the latency)."""
    topology = _cluster(3)
    per_send, compact = _plans(topology, nbytes)
    _assert_same_replay(replay(per_send, topology), replay(compact, topology))


def test_half_of_every_box_replays_by_orbit() -> None:
    """Four ranks of each box: the rotation still maps the plan and the machine onto themselves."""
    topology = _cluster(3)
    ranks = [g for box in topology.boxes.values() for g in box[:4]]
    per_send, compact = _plans(topology, ranks=ranks)
    record = replay(compact, topology)
    assert isinstance(record, OrbitRecord)
    _assert_same_replay(replay(per_send, topology), record)


def _slow_nic_of_box(topology: Topology, box: int) -> Topology:
    """The same cluster with box ``box``'s first network link at half its bandwidth."""
    links = list(topology.physical_links)
    j = next(
        j
        for j, p in enumerate(links)
        if p.a.startswith(f"n{box}_") and topology.link(p.a, p.b).family == "infiniband"
    )
    halved = topology.link(links[j].a, links[j].b).bandwidth_Bps / links[j].count / 2
    links[j] = replace(links[j], bandwidth_Bps=halved)
    return Topology(topology.name, topology.devices, links, description=topology.description)


@pytest.mark.parametrize(
    "make",
    [
        lambda: _slow_nic_of_box(_cluster(3), 1),
        lambda: _cluster(4, fabric="fat_tree", oversubscription=2.0),
    ],
    ids=["one slow NIC", "fat tree"],
)
def test_asymmetric_machine_replays_the_sends(make: object) -> None:
    """A machine the rotation does not map onto itself is replayed send by send, with the per-send result."""
    topology = make()  # type: ignore[operator]
    per_send, compact = _plans(topology)
    record = replay(compact, topology)
    assert not isinstance(record, OrbitRecord)
    reference = replay(per_send, topology)
    assert record.makespan_s == reference.makespan_s
    np.testing.assert_array_equal(record.op_end_s, reference.op_end_s)


def test_one_slow_nic_slows_the_collective() -> None:
    """The fallback matters: one box's slower NIC makes the all-reduce slower than on the even machine."""
    topology = _cluster(3)
    even = replay(_plans(topology)[1], topology).makespan_s
    uneven_topology = _slow_nic_of_box(topology, 1)
    assert replay(_plans(uneven_topology)[1], uneven_topology).makespan_s > even * 1.05


def test_recorder_sees_every_send() -> None:
    """With a recorder the compact plan is replayed send by send: every send starts and ends once."""

    class Count(Recorder):
        def __init__(self) -> None:
            self.started: list[int] = []
            self.ended: list[int] = []

        def flows_started(self, time_s: float, ops: np.ndarray) -> None:
            self.started += ops.tolist()

        def flows_ended(self, time_s: float, ops: np.ndarray) -> None:
            self.ended += ops.tolist()

    topology = _cluster(2)
    per_send, compact = _plans(topology)
    counter = Count()
    record = replay(compact, topology, recorder=counter)
    assert sorted(counter.started) == sorted(counter.ended) == list(range(compact.n_ops))
    assert record.makespan_s == pytest.approx(replay(per_send, topology).makespan_s, rel=REL)


def test_algorithm_plans_the_compact_plan_and_it_verifies() -> None:
    """``hierarchical`` on a cluster gives the compact plan; the symbolic verifier proves its sends."""
    topology = _cluster(2)
    schedule = make_algorithm("hierarchical").plan(
        Problem(topology, tuple(topology.gpus), Collective.ALL_REDUCE, 1e6)
    )
    assert "pattern" in schedule.__dict__
    schedule.verify()


@pytest.mark.parametrize("boxes", [(0, 2), (1, 2, 3)])
def test_some_boxes_of_a_cluster_replay_by_orbit(boxes: tuple[int, ...]) -> None:
    """Ranks in some boxes only: the rotation moves those boxes and leaves the idle ones in place."""
    topology = _cluster(4)
    ranks = [g for k in boxes for g in topology.boxes[k]]
    per_send, compact = _plans(topology, ranks=ranks)
    record = replay(compact, topology)
    assert isinstance(record, OrbitRecord)
    _assert_same_replay(replay(per_send, topology), record)
