"""Engine: max-min fair sharing, latency, dependencies, reductions, accounting, determinism."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from commsim.algorithms import Problem, make_algorithm
from commsim.collectives import Collective
from commsim.engine import ReplayRecord, max_min_rates, replay
from commsim.errors import TopologyError
from commsim.schedule import ScheduleBuilder
from commsim.topology import Device, PhysicalLink, Topology, ring

REL = 1e-9

# -- max_min_rates directly -------------------------------------------------------------


def _rates(paths: list[list[int]], capacity: list[float]) -> list[float]:
    flow = np.array([f for f, links in enumerate(paths) for _ in links], dtype=np.int64)
    link = np.array([l for links in paths for l in links], dtype=np.int64)
    return max_min_rates(flow, link, len(paths), np.array(capacity, dtype=float)).tolist()


def test_two_flows_on_one_link_get_half_each() -> None:
    """Equal sharing of a single bottleneck."""
    assert _rates([[0], [0]], [10.0]) == pytest.approx([5.0, 5.0], rel=REL)


def test_unused_share_goes_to_the_others() -> None:
    """Capacities 10 and 2: the flow held to 2 elsewhere leaves 8 to the other, not 5/5."""
    assert _rates([[0], [0, 1]], [10.0, 2.0]) == pytest.approx([8.0, 2.0], rel=REL)


def test_classic_progressive_filling() -> None:
    """Bertsekas & Gallager's chain: links of 1 and 2; the long flow and flow A split link 0."""
    assert _rates([[0, 1], [0], [1]], [1.0, 2.0]) == pytest.approx([0.5, 0.5, 1.5], rel=REL)


def test_three_levels() -> None:
    """Flows freeze at three different levels as three links fill in turn."""
    rates = _rates([[0], [0, 1], [1, 2], [2], [2]], [9.0, 4.0, 12.0])
    assert rates == pytest.approx([7.0, 2.0, 2.0, 5.0, 5.0], rel=REL)


def test_unused_links_and_no_flows() -> None:
    """Links without flows do not matter; zero flows give an empty result."""
    assert _rates([[2]], [1.0, 1.0, 3.0]) == pytest.approx([3.0], rel=REL)
    assert _rates([], [1.0]) == []


@st.composite
def _flow_problems(draw: st.DrawFn) -> tuple[list[list[int]], list[float]]:
    n_links = draw(st.integers(1, 6))
    capacity = draw(st.lists(st.floats(0.5, 1e3), min_size=n_links, max_size=n_links))
    paths = draw(
        st.lists(st.sets(st.integers(0, n_links - 1), min_size=1).map(sorted), min_size=1, max_size=8)
    )
    return paths, capacity


@given(_flow_problems())
def test_max_min_property(problem: tuple[list[list[int]], list[float]]) -> None:
    """Feasible, and every flow has a saturated link on which no flow is faster (max-min)."""
    paths, capacity = problem
    rates = _rates(paths, capacity)
    load = [0.0] * len(capacity)
    for path, rate in zip(paths, rates):
        assert rate > 0
        for link in path:
            load[link] += rate
    for link, cap in enumerate(capacity):
        assert load[link] <= cap * (1 + 1e-9)
    for f, path in enumerate(paths):
        assert any(
            load[l] >= capacity[l] * (1 - 1e-9)
            and all(rates[g] <= rates[f] * (1 + 1e-9) for g, other in enumerate(paths) if l in other)
            for l in path
        ), f"flow {f} has no bottleneck link"


# -- replay of hand-built schedules ----------------------------------------------------------


def _machine(
    bandwidth_Bps: dict[str, float],
    latency_s: dict[str, float] | None = None,
    reduce_Bps: dict[str, float] | None = None,
) -> Topology:
    """GPUs on one switch; each GPU's link has its own bandwidth and latency."""
    latency_s = latency_s or {}
    reduce_Bps = reduce_Bps or {}
    devices = [Device("sw", "pcie_switch")] + [
        Device(g, "gpu", reduce_bandwidth_Bps=reduce_Bps.get(g)) for g in bandwidth_Bps
    ]
    links = [
        PhysicalLink(g, "sw", "pcie3_x16", 1, bw, latency_s.get(g, 0.0)) for g, bw in bandwidth_Bps.items()
    ]
    return Topology("hand", devices, links)


def _link(topology: Topology, src: str, dst: str) -> int:
    return topology.link(src, dst).index


def test_two_sends_share_a_link() -> None:
    """Two 100 B sends gpu0->gpu1 on two channels over 10 B/s links end together at 20 s, not 10 s."""
    topology = _machine({"gpu0": 10.0, "gpu1": 10.0})
    builder = ScheduleBuilder(Collective.ALL_REDUCE, 200, ["gpu0", "gpu1"])
    a, b = builder.chunk(100), builder.chunk(100)
    builder.send("gpu0", "gpu1", a, channel=0)
    builder.send("gpu0", "gpu1", b, channel=1)
    record = replay(builder.build(), topology)
    assert record.op_end_s.tolist() == pytest.approx([20.0, 20.0], rel=REL)
    assert record.makespan_s == pytest.approx(20.0, rel=REL)


def test_one_connection_serves_its_sends_in_order() -> None:
    """The same two sends on one channel: the second starts when the first ends (10 s, 20 s).

    With a 1 s path latency (0.5 s per link): the first is ready at 0, flows from 1 s, ends at
    11 s; the second becomes ready at 11 s, flows from 12 s and ends at 22 s.
    """
    topology = _machine({"gpu0": 10.0, "gpu1": 10.0})
    builder = ScheduleBuilder(Collective.ALL_REDUCE, 200, ["gpu0", "gpu1"])
    a, b = builder.chunk(100), builder.chunk(100)
    builder.send("gpu0", "gpu1", a)
    builder.send("gpu0", "gpu1", b)
    record = replay(builder.build(), topology)
    assert record.op_end_s.tolist() == pytest.approx([10.0, 20.0], rel=REL)
    slow = _machine({"gpu0": 10.0, "gpu1": 10.0}, latency_s={"gpu0": 0.5, "gpu1": 0.5})
    record = replay(builder.build(), slow)
    assert record.op_ready_s.tolist() == pytest.approx([0.0, 11.0], rel=REL)
    assert record.op_data_start_s.tolist() == pytest.approx([1.0, 12.0], rel=REL)
    assert record.op_end_s.tolist() == pytest.approx([11.0, 22.0], rel=REL)


def test_rates_rise_when_a_flow_ends() -> None:
    """Sizes 50 and 100 share 10 B/s: the small ends at 10 s, the big at 15 s (alone at 10 B/s)."""
    topology = _machine({"gpu0": 10.0, "gpu1": 10.0})
    builder = ScheduleBuilder(Collective.ALL_REDUCE, 150, ["gpu0", "gpu1"])
    small, big = builder.chunk(50), builder.chunk(100)
    builder.send("gpu0", "gpu1", small, channel=0)
    builder.send("gpu0", "gpu1", big, channel=1)
    record = replay(builder.build(), topology)
    assert record.op_end_s.tolist() == pytest.approx([10.0, 15.0], rel=REL)


def test_flow_bottlenecked_elsewhere_leaves_its_share() -> None:
    """gpu0 (10 B/s) and gpu1 (2 B/s) both send to gpu2 (10 B/s): rates 8 and 2, not 5 and 5.

    80 B and 20 B therefore both end at 10 s; with 5/5 the 80 B would take 16 s.
    """
    topology = _machine({"gpu0": 10.0, "gpu1": 2.0, "gpu2": 10.0})
    builder = ScheduleBuilder(Collective.ALL_REDUCE, 100, ["gpu0", "gpu1", "gpu2"])
    fast, slow = builder.chunk(80), builder.chunk(20)
    builder.send("gpu0", "gpu2", fast)
    builder.send("gpu1", "gpu2", slow)
    record = replay(builder.build(), topology)
    assert record.op_end_s.tolist() == pytest.approx([10.0, 10.0], rel=REL)
    into_gpu2 = _link(topology, "sw", "gpu2")
    assert record.link_bytes[into_gpu2] == pytest.approx(100.0, rel=REL)
    assert record.link_busy_s[into_gpu2] == pytest.approx(10.0, rel=REL)


def test_directions_do_not_share() -> None:
    """Full duplex: gpu0->gpu1 and gpu1->gpu0 at once each take nbytes/BW."""
    topology = _machine({"gpu0": 10.0, "gpu1": 10.0})
    builder = ScheduleBuilder(Collective.ALL_REDUCE, 100, ["gpu0", "gpu1"])
    a, b = builder.chunk(100), builder.chunk(100)
    builder.send("gpu0", "gpu1", a)
    builder.send("gpu1", "gpu0", b)
    record = replay(builder.build(), topology)
    assert record.op_end_s.tolist() == pytest.approx([10.0, 10.0], rel=REL)


def test_independent_flows_keep_their_rate() -> None:
    """A flow joining one link does not change a flow on links it does not touch."""
    topology = _machine({"gpu0": 10.0, "gpu1": 10.0, "gpu2": 10.0, "gpu3": 10.0})
    builder = ScheduleBuilder(Collective.ALL_REDUCE, 100, ["gpu0", "gpu1", "gpu2", "gpu3"])
    c = [builder.chunk(100) for _ in range(3)]
    first = builder.send("gpu0", "gpu1", c[0])
    builder.send("gpu2", "gpu3", c[1])  # alone all the time: 10 s
    builder.send("gpu0", "gpu1", c[2], channel=1)  # shares with `first` (another channel)
    record = replay(builder.build(), topology)
    assert first == 0
    assert record.op_end_s.tolist() == pytest.approx([20.0, 10.0, 20.0], rel=REL)


def test_latency_is_paid_once_before_bytes_flow() -> None:
    """Path latency is the sum of its links' latencies (1 s + 2 s), then 100 B at 10 B/s."""
    topology = _machine({"gpu0": 10.0, "gpu1": 10.0}, latency_s={"gpu0": 1.0, "gpu1": 2.0})
    builder = ScheduleBuilder(Collective.ALL_REDUCE, 100, ["gpu0", "gpu1"])
    builder.send("gpu0", "gpu1", builder.chunk(100))
    record = replay(builder.build(), topology)
    assert record.op_ready_s.tolist() == [0.0]
    assert record.op_data_start_s.tolist() == pytest.approx([3.0], rel=REL)
    assert record.op_end_s.tolist() == pytest.approx([13.0], rel=REL)
    for link in topology.route("gpu0", "gpu1"):
        assert record.link_busy_s[link] == pytest.approx(10.0, rel=REL)


def test_latency_delays_sharing() -> None:
    """A flow still in its latency does not take bandwidth: 100 B alone for 5 s, then shared.

    gpu0->gpu2 (no latency on gpu0) starts at once; gpu1->gpu2 pays 5 s on gpu1's link.
    From 5 s both share sw->gpu2 (5 B/s each): the first has 50 B left and ends at 15 s;
    the second then has 50 B left alone at 10 B/s and ends at 20 s.
    """
    topology = _machine({"gpu0": 10.0, "gpu1": 10.0, "gpu2": 10.0}, latency_s={"gpu1": 5.0})
    builder = ScheduleBuilder(Collective.ALL_REDUCE, 200, ["gpu0", "gpu1", "gpu2"])
    builder.send("gpu0", "gpu2", builder.chunk(100))
    builder.send("gpu1", "gpu2", builder.chunk(100))
    record = replay(builder.build(), topology)
    assert record.op_data_start_s.tolist() == pytest.approx([0.0, 5.0], rel=REL)
    assert record.op_end_s.tolist() == pytest.approx([15.0, 20.0], rel=REL)


def test_dependencies_delay_sends() -> None:
    """A send starts when the last of its dependencies ends; the chain adds up."""
    topology = _machine({"gpu0": 10.0, "gpu1": 10.0, "gpu2": 20.0}, latency_s={"gpu2": 0.5})
    builder = ScheduleBuilder(Collective.ALL_REDUCE, 100, ["gpu0", "gpu1", "gpu2"])
    chunk = builder.chunk(100)
    short = builder.send("gpu2", "gpu0", builder.chunk(10))  # 0.5 s latency + 1 s
    long = builder.send("gpu0", "gpu1", chunk)  # 10 s
    after = builder.send("gpu1", "gpu2", chunk, deps=[short, long])  # ready at 10 s
    record = replay(builder.build(), topology)
    assert record.op_end_s[short] == pytest.approx(1.5, rel=REL)
    assert record.op_end_s[long] == pytest.approx(10.0, rel=REL)
    assert record.op_ready_s[after] == pytest.approx(10.0, rel=REL)
    assert record.op_data_start_s[after] == pytest.approx(10.5, rel=REL)
    assert record.op_end_s[after] == pytest.approx(20.5, rel=REL)
    assert record.makespan_s == pytest.approx(20.5, rel=REL)


def test_link_bytes_and_busy_time() -> None:
    """Bytes per directed link, and time with at least one flow on it."""
    topology = _machine({"gpu0": 10.0, "gpu1": 10.0, "gpu2": 10.0})
    builder = ScheduleBuilder(Collective.ALL_REDUCE, 100, ["gpu0", "gpu1", "gpu2"])
    a = builder.send("gpu0", "gpu1", builder.chunk(100))  # 0..10 s
    builder.send("gpu0", "gpu2", builder.chunk(30), deps=[a])  # 10..13 s
    record = replay(builder.build(), topology)
    expected_bytes = {("gpu0", "sw"): 130.0, ("sw", "gpu1"): 100.0, ("sw", "gpu2"): 30.0}
    expected_busy = {("gpu0", "sw"): 13.0, ("sw", "gpu1"): 10.0, ("sw", "gpu2"): 3.0}
    for link in topology.links:
        key = (link.src, link.dst)
        assert record.link_bytes[link.index] == pytest.approx(expected_bytes.get(key, 0.0), rel=REL)
        assert record.link_busy_s[link.index] == pytest.approx(expected_busy.get(key, 0.0), rel=REL)
    assert record.op_links[record.op_links_ptr[1] : record.op_links_ptr[2]].tolist() == list(
        topology.route("gpu0", "gpu2")
    )


def test_busy_intervals() -> None:
    """Busy intervals: gpu0's uplink 0-10 s and again 12-14 s after an idle gap."""
    topology = _machine({"gpu0": 10.0, "gpu1": 10.0, "gpu2": 10.0, "gpu3": 10.0})
    builder = ScheduleBuilder(Collective.ALL_REDUCE, 100, ["gpu0", "gpu1", "gpu2", "gpu3"])
    a = builder.send("gpu0", "gpu1", builder.chunk(100))  # 0..10
    b = builder.send("gpu2", "gpu3", builder.chunk(120))  # 0..12 (shares nothing with a)
    builder.send("gpu0", "gpu2", builder.chunk(20), deps=[a, b])  # 12..14
    record = replay(builder.build(), topology)
    uplink = _link(topology, "gpu0", "sw")
    mask = record.interval_link == uplink
    starts, ends = record.interval_start_s[mask].tolist(), record.interval_end_s[mask].tolist()
    assert starts == pytest.approx([0.0, 12.0], rel=REL)
    assert ends == pytest.approx([10.0, 14.0], rel=REL)
    assert record.link_busy_s[uplink] == pytest.approx(12.0, rel=REL)


def test_reduction_bandwidth_on_reducing_sends_only() -> None:
    """gpu2 sums at 4 B/s: a reducing 80 B send ends 20 s after its last byte; a copy does not."""
    topology = _machine({"gpu0": 10.0, "gpu1": 10.0, "gpu2": 10.0}, reduce_Bps={"gpu2": 4.0})
    builder = ScheduleBuilder(Collective.ALL_REDUCE, 100, ["gpu0", "gpu1", "gpu2"])
    reducing = builder.send("gpu0", "gpu2", builder.chunk(40), reduce=True)  # 0..4 s on gpu0's link
    copying = builder.send("gpu1", "gpu2", builder.chunk(40))
    follow = builder.send("gpu2", "gpu0", builder.chunk(10), deps=[reducing])
    record = replay(builder.build(), topology)
    # both flows share sw->gpu2 at 5 B/s: last bytes at 8 s; the reduction takes 40/4 = 10 s more
    assert record.op_end_s[copying] == pytest.approx(8.0, rel=REL)
    assert record.op_end_s[reducing] == pytest.approx(18.0, rel=REL)
    assert record.op_ready_s[follow] == pytest.approx(18.0, rel=REL)
    assert record.op_end_s[follow] == pytest.approx(19.0, rel=REL)
    # the reduction is not link time
    assert record.link_busy_s[_link(topology, "sw", "gpu2")] == pytest.approx(8.0, rel=REL)


def test_sender_reduction_bandwidth_does_not_matter() -> None:
    """Only the receiver sums: a slow reducer sending is not slowed."""
    topology = _machine({"gpu0": 10.0, "gpu1": 10.0}, reduce_Bps={"gpu0": 1.0})
    builder = ScheduleBuilder(Collective.ALL_REDUCE, 100, ["gpu0", "gpu1"])
    builder.send("gpu0", "gpu1", builder.chunk(100), reduce=True)
    assert replay(builder.build(), topology).makespan_s == pytest.approx(10.0, rel=REL)


def test_empty_send_pays_latency_only() -> None:
    """A zero-byte send completes after its path latency and loads no link."""
    topology = _machine({"gpu0": 10.0, "gpu1": 10.0}, latency_s={"gpu0": 0.25})
    builder = ScheduleBuilder(Collective.ALL_REDUCE, 0, ["gpu0", "gpu1"])
    builder.send("gpu0", "gpu1", builder.chunk(0))
    record = replay(builder.build(), topology)
    assert record.op_end_s.tolist() == pytest.approx([0.25], rel=REL)
    assert not record.link_bytes.any()
    assert not record.link_busy_s.any()


def test_empty_schedule() -> None:
    """Nothing to do takes no time."""
    topology = _machine({"gpu0": 10.0, "gpu1": 10.0})
    record = replay(ScheduleBuilder(Collective.ALL_REDUCE, 0, ["gpu0", "gpu1"]).build(), topology)
    assert record.makespan_s == 0.0


def test_explicit_path() -> None:
    """``via`` forces a path; a path not running from src to dst is a TopologyError."""
    topology = Topology(
        "tri",
        [Device("gpu0", "gpu"), Device("gpu1", "gpu"), Device("sw", "switch")],
        [
            PhysicalLink("gpu0", "gpu1", "nvlink2", bandwidth_Bps=10.0, latency_s=0.0),
            PhysicalLink("gpu0", "sw", "eth_100g", bandwidth_Bps=5.0, latency_s=0.0),
            PhysicalLink("sw", "gpu1", "eth_100g", bandwidth_Bps=5.0, latency_s=0.0),
        ],
    )
    builder = ScheduleBuilder(Collective.ALL_REDUCE, 100, ["gpu0", "gpu1"])
    builder.send("gpu0", "gpu1", builder.chunk(100), via=["gpu0", "sw", "gpu1"])
    builder.send("gpu1", "gpu0", builder.chunk(100))  # routed: the direct link
    record = replay(builder.build(), topology)
    assert record.op_end_s.tolist() == pytest.approx([20.0, 10.0], rel=REL)
    bad = ScheduleBuilder(Collective.ALL_REDUCE, 100, ["gpu0", "gpu1"])
    bad.send("gpu0", "gpu1", bad.chunk(100), via=["sw", "gpu1"])
    with pytest.raises(TopologyError, match=r"explicit path \['sw', 'gpu1'\] must run from gpu0 to gpu1"):
        replay(bad.build(), topology)


def test_missing_route_is_a_topology_error() -> None:
    """A send restricted to link kinds that do not join its ends fails to replay."""
    topology = _machine({"gpu0": 10.0, "gpu1": 10.0})
    builder = ScheduleBuilder(Collective.ALL_REDUCE, 100, ["gpu0", "gpu1"])
    builder.send("gpu0", "gpu1", builder.chunk(100), kinds=["nvlink"])
    with pytest.raises(TopologyError, match="has no route from gpu0 to gpu1 over link kinds nvlink1"):
        replay(builder.build(), topology)


# -- determinism ---------------------------------------------------------------------------


def _record_arrays(record: ReplayRecord) -> dict[str, bytes]:
    return {
        name: np.asarray(getattr(record, name)).tobytes()
        for name in record.__dataclass_fields__
        if name != "makespan_s"
    }


@pytest.mark.parametrize(
    ("topology_name", "algorithm", "params"),
    [
        ("dgx1_v100", "ring", {}),
        ("dgx1_v100", "sharded_parameter_server", {}),
        ("pcie_4gpu_switch", "parameter_server", {"server": "cpu"}),
    ],
)
def test_replays_are_bit_identical(topology_name: str, algorithm: str, params: dict[str, object]) -> None:
    """Two replays of the same schedule give the same arrays to the last bit."""
    from commsim.topology import get_topology

    topology = get_topology(topology_name)
    problem = Problem(topology, tuple(topology.gpus), Collective.ALL_REDUCE, 123_456_789.0)
    schedule = make_algorithm(algorithm, params).plan(problem)
    first, second = replay(schedule, topology), replay(schedule, topology)
    assert first.makespan_s == second.makespan_s
    assert _record_arrays(first) == _record_arrays(second)
    again = replay(make_algorithm(algorithm, params).plan(problem), get_topology(topology_name))
    assert _record_arrays(first) == _record_arrays(again)


def test_every_op_is_timed_consistently() -> None:
    """ready <= data start <= end for every op, and the makespan is the last end."""
    topology = ring(5, bandwidth=1e10, latency=1e-6)
    problem = Problem(topology, tuple(topology.gpus), Collective.ALL_REDUCE, 1e7)
    record = replay(make_algorithm("ring").plan(problem), topology)
    assert np.all(record.op_ready_s <= record.op_data_start_s)
    assert np.all(record.op_data_start_s <= record.op_end_s)
    assert record.makespan_s == record.op_end_s.max()
    assert record.link_bytes.sum() == pytest.approx(2 * 4 * 1e7, rel=REL)


# -- clock resolution -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("nbytes", "bandwidth_Bps", "latency_s"),
    [(1.0, 1e11, 1e-3), (8.0, 1e11, 1e-3), (1e3, 1e9, 1e3), (1.0, 1e12, 1e4)],
)
def test_tiny_transfer_late_in_time(deadline, nbytes: float, bandwidth_Bps: float, latency_s: float) -> None:  # type: ignore[no-untyped-def]
    """1 B at 100 GB/s after 1 ms of latency ends at 1 ms + 10 ps (an 8 B nccl-tests size too).

    Regression: the flow lasts less than 1e-7 of the clock; rounding of the clock once left
    more than the done-threshold of its bytes with a next completion below the clock's
    resolution, and the replay never finished.
    """
    topology = ring(2, bandwidth=bandwidth_Bps, latency=latency_s)
    builder = ScheduleBuilder(Collective.ALL_REDUCE, nbytes, ["gpu0", "gpu1"])
    builder.send("gpu0", "gpu1", builder.chunk(nbytes))
    with deadline(2.0, "replay of one tiny send"):
        record = replay(builder.build(), topology)
    assert record.makespan_s == pytest.approx(latency_s + nbytes / bandwidth_Bps, rel=REL)


def test_tiny_transfer_early_in_time() -> None:
    """The same tiny send without latency is exact (the clock is still fine-grained)."""
    topology = ring(2, bandwidth=1e11, latency=0.0)
    builder = ScheduleBuilder(Collective.ALL_REDUCE, 1.0, ["gpu0", "gpu1"])
    builder.send("gpu0", "gpu1", builder.chunk(1.0))
    assert replay(builder.build(), topology).makespan_s == pytest.approx(1e-11, rel=REL)


def test_tiny_collective_on_a_cluster_finishes() -> None:
    """Regression: an 8 B ring on 6 DGX A100 boxes once hung (a step shorter than the clock's resolution)."""
    from commsim.api import simulate
    from commsim.topology import get_topology

    topo = get_topology("cluster", box="dgx_a100", nodes=6, nic="ib_hdr")
    r = simulate(topo, "ring", size=8)
    assert 1e-5 < r.time_s < 1e-3


# -- recorder and sharing policy -----------------------------------------------------------------


def test_recorder_sees_what_the_engine_did() -> None:
    """Sizes 50 and 100 on two channels over 10 B/s: both at 5 B/s until 10 s, then 10 B/s to 15 s.

    The recorder is told each flow start and end, each re-sharing, and each link's state.
    """
    from commsim.engine import LinkActivity, Recorder

    class Log(LinkActivity):
        def __init__(self) -> None:
            super().__init__()
            self.events: list[tuple[str, float, list[int], list[float]]] = []

        def flows_started(self, time_s: float, ops: np.ndarray) -> None:
            self.events.append(("start", time_s, ops.tolist(), []))

        def flows_ended(self, time_s: float, ops: np.ndarray) -> None:
            self.events.append(("end", time_s, ops.tolist(), []))

        def rates_changed(self, time_s: float, ops: np.ndarray, rates_Bps: np.ndarray) -> None:
            self.events.append(("rates", time_s, ops.tolist(), rates_Bps.tolist()))

    assert issubclass(Log, Recorder)
    topology = _machine({"gpu0": 10.0, "gpu1": 10.0})
    builder = ScheduleBuilder(Collective.ALL_REDUCE, 150, ["gpu0", "gpu1"])
    small, big = builder.chunk(50), builder.chunk(100)
    builder.send("gpu0", "gpu1", small, channel=0)
    builder.send("gpu0", "gpu1", big, channel=1)
    log = Log()
    replay(builder.build(), topology, recorder=log)
    assert log.events == [
        ("start", 0.0, [0, 1], []),
        ("rates", 0.0, [0, 1], [5.0, 5.0]),
        ("end", 10.0, [0], []),
        ("rates", 10.0, [1], [10.0]),
        ("end", 15.0, [1], []),
    ]
    link, time, flows, load = log.states()
    up = _link(topology, "gpu0", "sw")
    rows = [(t, f, b) for lk, t, f, b in zip(link, time, flows, load) if lk == up]
    assert rows == [(0.0, 2, 10.0), (10.0, 1, 10.0), (15.0, 0, 0.0)]


def test_sharing_policy_is_replaceable() -> None:
    """A policy that gives every flow 1 B/s: 50 B and 100 B end at 50 s and 100 s."""

    class OneEach:
        def rates(self, entry_flow, entry_link, n_flows, capacity_Bps):  # type: ignore[no-untyped-def]
            return np.ones(n_flows)

    topology = _machine({"gpu0": 10.0, "gpu1": 10.0})
    builder = ScheduleBuilder(Collective.ALL_REDUCE, 150, ["gpu0", "gpu1"])
    small, big = builder.chunk(50), builder.chunk(100)
    builder.send("gpu0", "gpu1", small, channel=0)
    builder.send("gpu0", "gpu1", big, channel=1)
    record = replay(builder.build(), topology, sharing=OneEach())
    assert record.op_end_s.tolist() == pytest.approx([50.0, 100.0], rel=REL)


# -- routes found for many destinations at once ----------------------------------------------


@pytest.mark.parametrize(
    ("kinds", "slots"), [(None, 4), (("nvlink",), 4), (("pcie",), 4), (None, 1), (None, 0)]
)
def test_routes_found_in_bulk_are_the_pairwise_routes(
    kinds: tuple[str, ...] | None, slots: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One search per source (``prefetch_routes``) picks exactly the routes of the pair search.

    On a 2:1 fat tree of four DGX A100 boxes, for every pair of devices (GPUs,
    NICs, switches, CPUs): the same tuple of routes, or the same refusal.
    The pair search is the reference (bidirectional search, then widest
    bottleneck, then the endpoints' own NICs, sorted). ``slots``: how many
    NICs of other GPUs the array version tracks per route before it hands
    the source to the Python version (0: every source with such NICs, 1:
    those whose routes pass two).
    """
    import commsim.topology.source_routes as source_routes
    from commsim.topology import get_topology

    monkeypatch.setattr(source_routes, "_SLOTS", slots)

    bulk = get_topology(
        "cluster", box="dgx_a100", nodes=4, nic="ib_hdr", fabric="fat_tree", oversubscription=2.0
    )
    pairwise = bulk.with_multipath("spray")  # the same machine with an empty route cache
    names = [d.name for d in bulk.devices]
    pairs = [(a, b) for a in names for b in names if a != b]
    bulk.prefetch_routes(pairs, kinds)
    assert len(bulk._route_cache) > (len(pairs) // 2 if kinds is None else 0)  # found in bulk
    for a, b in pairs:
        try:
            expected: object = pairwise.routes(a, b, kinds)
        except TopologyError as exc:
            expected = str(exc)
        try:
            got: object = bulk.routes(a, b, kinds)
        except TopologyError as exc:
            got = str(exc)
        assert got == expected, (a, b)


# -- rings replayed step by step (flow groups) -------------------------------------------


def _ring_records(topology: Topology, collective: Collective, nbytes: float, monkeypatch: pytest.MonkeyPatch):
    """(per-send record, step record) of the ring on ``topology``: the plan as rows, then as a pattern."""
    import commsim.algorithms.ring as ring_module

    problem = Problem(topology, tuple(topology.gpus), collective, nbytes)
    monkeypatch.setattr(ring_module, "PATTERN_SENDS", 1 << 60)
    rows = make_algorithm("ring").plan(problem)
    monkeypatch.setattr(ring_module, "PATTERN_SENDS", 1)
    pattern = make_algorithm("ring").plan(problem)
    return rows, pattern, replay(rows, topology), replay(pattern, topology)


def _reduce_ring(latency_s: float) -> Topology:
    devices = [Device(f"g{i}", "gpu", reduce_bandwidth_Bps=5e10) for i in range(6)]
    links = [PhysicalLink(f"g{i}", f"g{(i + 1) % 6}", "nvlink2", latency_s=latency_s) for i in range(6)]
    return Topology("reduce_ring", devices, links)


@pytest.mark.parametrize(
    "topology",
    [ring(12), _reduce_ring(0.0), _reduce_ring(1e-6)],
    ids=["ring12", "reductions_no_latency", "reductions_latency"],
)
@pytest.mark.parametrize(
    "collective", [Collective.ALL_REDUCE, Collective.REDUCE_SCATTER, Collective.ALL_GATHER]
)
@pytest.mark.parametrize("nbytes", [0.0, 8.0, 1.6e8])
def test_symmetric_ring_steps_replay_bit_identical_to_per_send(
    topology: Topology, collective: Collective, nbytes: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A symmetric ring replayed as flow groups gives the per-send replay's record, every bit.

    The step replay repeats the per-send replay's float operations (same rate
    solve, ``now + latency``, ``start + bytes / rate``, ``end + reduction``,
    link bytes added once per step), so every field, per-send arrays and
    busy intervals included, must be equal (NaN = NaN), dtypes too; and the
    schedule's per-send columns, made when read, equal the rows the builder
    stores.
    """
    from commsim.engine.steps import StepRecord

    rows, pattern, expected, got = _ring_records(topology, collective, nbytes, monkeypatch)
    assert isinstance(got, StepRecord)
    assert pattern.n_ops == rows.n_ops
    for name in rows.__dataclass_fields__:
        a, b = getattr(rows, name), getattr(pattern, name)
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype and np.array_equal(a, b), name
        else:
            assert a == b, name
    for name in expected.__dataclass_fields__:
        a, b = getattr(expected, name), getattr(got, name)
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True), name
        else:
            assert a == b, name


def test_asymmetric_ring_falls_back_to_per_send(monkeypatch: pytest.MonkeyPatch) -> None:
    """dgx1_v100 in rank order has two PCIe/QPI hops among NVLink ones: not one rate per step.

    The step replay must refuse (different rates per lane) and the per-send
    replay run instead, with the same record as for the plan stored as rows.
    """
    from commsim.engine.steps import StepRecord
    from commsim.topology import get_topology

    topology = get_topology("dgx1_v100")
    _, _, expected, got = _ring_records(topology, Collective.ALL_REDUCE, 1.6e8, monkeypatch)
    assert not isinstance(got, StepRecord)
    assert got.makespan_s == expected.makespan_s
    assert np.array_equal(got.op_end_s, expected.op_end_s)


def test_pattern_schedule_survives_pickling_and_replace(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sweeps send schedules to worker processes; composers copy them with ``dataclasses.replace``."""
    import dataclasses
    import pickle

    rows, pattern, _, _ = _ring_records(ring(6), Collective.ALL_REDUCE, 1e6, monkeypatch)
    copied = pickle.loads(pickle.dumps(pattern))
    assert copied.n_ops == rows.n_ops == 60  # 2 (n - 1) steps of n sends
    assert np.array_equal(copied.op_chunk, rows.op_chunk)
    replaced = dataclasses.replace(pattern, nbytes=2e6)
    assert replaced.n_ops == 60 and np.array_equal(replaced.dep_indices, rows.dep_indices)
