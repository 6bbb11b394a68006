"""Algorithms: the textbook's figures, the book's cost model, engine vs closed form, registry."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commsim.algorithms import Problem, algorithm_names, get_algorithm, make_algorithm
from commsim.collectives import Collective
from commsim.engine import ReplayRecord, replay
from commsim.errors import AlgorithmError, UnknownNameError
from commsim.topology import Topology, fully_connected, get_topology, ring

REL = 1e-9
EXAMPLE_TIME_LIMIT_S = 10.0  # one hypothesis example; a livelocked replay fails instead of hanging
G = 160e6  # SEED_FACTS section 1: one 160 MB gradient per GPU
PCIE_Bps = 16e9  # SEED_FACTS section 1: PCIe 3.0 x16, per direction

Simulate = Callable[..., tuple[ReplayRecord, "float | None"]]


def _load_s(record: ReplayRecord, topology: Topology) -> dict[str, float]:
    """Seconds each directed link would need at full rate for the bytes it carried."""
    return {link.name: record.link_bytes[link.index] / link.bandwidth_Bps for link in topology.links}


def _bottlenecks(record: ReplayRecord, topology: Topology) -> set[str]:
    load = _load_s(record, topology)
    worst = max(load.values())
    return {name for name, seconds in load.items() if seconds >= worst * (1 - REL)}


# -- SEED_FACTS section 1: the 4-GPU PCIe box ---------------------------------------------------


@pytest.mark.parametrize(
    ("name", "params", "time_s"),
    [
        ("parameter_server", {"server": 0}, 0.060),
        ("parameter_server", {"server": "cpu"}, 0.080),
        ("sharded_parameter_server", {}, 0.015),
        ("ring", {}, 0.015),
    ],
)
def test_textbook_strategies(
    pcie_box: Topology, simulate: Simulate, name: str, params: dict[str, object], time_s: float
) -> None:
    """SEED_FACTS section 1: 160 MB on the 4-GPU PCIe box takes 60, 80, 15 and 15 ms.

    Both the engine and the closed form give the textbook's figure exactly.
    """
    record, analytic = simulate(pcie_box, name, G, params)
    assert record.makespan_s == pytest.approx(time_s, rel=REL)
    assert analytic == pytest.approx(time_s, rel=REL)


def test_ps_on_gpu0_bottleneck_is_gpu0s_link(pcie_box: Topology, simulate: Simulate) -> None:
    """SEED_FACTS section 1: 3 x 10 ms in through gpu0's link, then 3 x 10 ms out.

    gpu0's two directed links are the only saturated ones: each carries 480 MB
    (30 ms at 16 GB/s) and is busy for exactly 30 ms; every other GPU link
    carries 160 MB (10 ms of work spread over 30 ms).
    """
    record, _ = simulate(pcie_box, "parameter_server", G, {"server": 0})
    assert _bottlenecks(record, pcie_box) == {"gpu0->pcie_switch0", "pcie_switch0->gpu0"}
    load = _load_s(record, pcie_box)
    for direction in ("gpu0->pcie_switch0", "pcie_switch0->gpu0"):
        link = pcie_box.link(*direction.split("->"))
        assert record.link_bytes[link.index] == pytest.approx(3 * G, rel=REL)
        assert load[direction] == pytest.approx(0.030, rel=REL)
        assert record.link_busy_s[link.index] == pytest.approx(0.030, rel=REL)
    assert load["gpu1->pcie_switch0"] == pytest.approx(0.010, rel=REL)
    assert load["pcie_switch0->cpu0"] == 0.0
    assert float(np.max(record.link_busy_s)) == pytest.approx(0.030, rel=REL)


def test_ps_on_gpu0_phases(pcie_box: Topology) -> None:
    """SEED_FACTS section 1: the push phase ends at 30 ms, the pull phase at 60 ms."""
    problem = Problem(pcie_box, tuple(pcie_box.gpus), Collective.ALL_REDUCE, G)
    schedule = make_algorithm("parameter_server", {"server": 0}).plan(problem)
    record = replay(schedule, pcie_box)
    push = schedule.op_step == 0
    assert int(push.sum()) == 3
    assert record.op_end_s[push].tolist() == pytest.approx([0.030] * 3, rel=REL)
    assert record.op_ready_s[~push].tolist() == pytest.approx([0.030] * 3, rel=REL)
    assert record.op_end_s[~push].tolist() == pytest.approx([0.060] * 3, rel=REL)


def test_ps_on_cpu_bottleneck_is_the_uplink(pcie_box: Topology, simulate: Simulate) -> None:
    """SEED_FACTS section 1: 4 x 10 ms over the CPU's shared uplink in each direction."""
    record, _ = simulate(pcie_box, "parameter_server", G, {"server": "cpu"})
    assert _bottlenecks(record, pcie_box) == {"pcie_switch0->cpu0", "cpu0->pcie_switch0"}
    load = _load_s(record, pcie_box)
    assert load["pcie_switch0->cpu0"] == pytest.approx(0.040, rel=REL)
    assert load["cpu0->pcie_switch0"] == pytest.approx(0.040, rel=REL)
    assert record.link_bytes[pcie_box.link("pcie_switch0", "cpu0").index] == pytest.approx(4 * G, rel=REL)


def test_sharded_ps_uses_every_gpu_link_evenly(pcie_box: Topology, simulate: Simulate) -> None:
    """SEED_FACTS section 1: each GPU receives 3 x 40 MB (7.5 ms) and sends 3 x 40 MB back."""
    record, _ = simulate(pcie_box, "sharded_parameter_server", G)
    load = _load_s(record, pcie_box)
    for gpu in pcie_box.gpus:
        assert load[f"{gpu}->pcie_switch0"] == pytest.approx(0.015, rel=REL)
        assert load[f"pcie_switch0->{gpu}"] == pytest.approx(0.015, rel=REL)
        into = pcie_box.link("pcie_switch0", gpu).index
        assert record.link_bytes[into] == pytest.approx(2 * 3 * G / 4, rel=REL)
    assert load["pcie_switch0->cpu0"] == 0.0


def test_strategy_spread(pcie_box: Topology, simulate: Simulate) -> None:
    """SEED_FACTS section 1: the same sync costs from 15 ms to 80 ms depending on strategy."""
    times = {
        label: simulate(pcie_box, name, G, params)[0].makespan_s
        for label, name, params in [
            ("gpu", "parameter_server", {"server": 0}),
            ("cpu", "parameter_server", {"server": "cpu"}),
            ("sharded", "sharded_parameter_server", {}),
            ("ring", "ring", {}),
        ]
    }
    assert min(times.values()) == pytest.approx(0.015, rel=REL)
    assert max(times.values()) == pytest.approx(0.080, rel=REL)
    assert times["sharded"] < times["gpu"] < times["cpu"]


# -- SEED_FACTS section 3: the book's cost model ---------------------------------------------------


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 12])
def test_naive_ring_cost(simulate: Simulate, n: int) -> None:
    """SEED_FACTS section 3: naive ring t = N g/BW + (N-1) g/BW = (2N-1) g/BW, zero latency."""
    bandwidth_Bps = 25e9
    topology = ring(n, bandwidth=bandwidth_Bps, latency=0.0)
    record, analytic = simulate(topology, "naive_ring", G)
    expected = (2 * n - 1) * G / bandwidth_Bps
    assert record.makespan_s == pytest.approx(expected, rel=REL)
    assert analytic == pytest.approx(expected, rel=REL)


@pytest.mark.parametrize("n", [2, 3, 4, 8, 16])
def test_chunked_ring_hardly_grows_with_n(simulate: Simulate, n: int) -> None:
    """SEED_FACTS section 2: each node sends 2(n-1)/n of the data: t = 2(n-1)/n g/BW."""
    bandwidth_Bps = 25e9
    topology = ring(n, bandwidth=bandwidth_Bps, latency=0.0)
    record, analytic = simulate(topology, "ring", G)
    expected = 2 * (n - 1) / n * G / bandwidth_Bps
    assert record.makespan_s == pytest.approx(expected, rel=REL)
    assert analytic == pytest.approx(expected, rel=REL)
    assert record.makespan_s < 2 * G / bandwidth_Bps


@pytest.mark.parametrize("collective", [Collective.REDUCE_SCATTER, Collective.ALL_GATHER])
@pytest.mark.parametrize("n", [2, 5])
def test_ring_halves(simulate: Simulate, collective: Collective, n: int) -> None:
    """Reduce-scatter and all-gather are each n-1 steps of (alpha + (g/n)/BW)."""
    topology = ring(n, bandwidth=1e10, latency=2e-6)
    record, analytic = simulate(topology, "ring", G, collective=collective)
    expected = (n - 1) * (2e-6 + G / n / 1e10)
    assert record.makespan_s == pytest.approx(expected, rel=REL)
    assert analytic == pytest.approx(expected, rel=REL)


SHARD_GRID = [(n, m) for n in (2, 3, 4, 6, 8) for m in range(1, n + 1)]


def _gpu_shards_time(n: int, m: int, nbytes: float, bandwidth_Bps: float) -> float:
    """Closed form for M shards on the first M of N GPUs of a star (each phase alike).

    A server's link carries (N-1) shards of g/M in; a non-server's link carries
    all M shards (g) out; with M = N every link carries (N-1) g/N.
    """
    per_phase = max((n - 1) / m, 1.0) if m < n else (n - 1) / n
    return 2 * per_phase * nbytes / bandwidth_Bps


@pytest.mark.parametrize(("n", "m"), SHARD_GRID)
def test_sharded_ps_on_gpus(star, simulate: Simulate, n: int, m: int) -> None:  # type: ignore[no-untyped-def]
    """SEED_FACTS section 3: M shards held by M of the N GPUs on one switch."""
    bandwidth_Bps = 16e9
    topology = star(n, bandwidth_Bps)
    record, analytic = simulate(topology, "sharded_parameter_server", G, {"shards": m})
    expected = _gpu_shards_time(n, m, G, bandwidth_Bps)
    assert record.makespan_s == pytest.approx(expected, rel=REL)
    assert analytic == pytest.approx(expected, rel=REL)


@pytest.mark.parametrize(("n", "m"), SHARD_GRID)
def test_sharded_ps_on_separate_servers(star, simulate: Simulate, n: int, m: int) -> None:  # type: ignore[no-untyped-def]
    """SEED_FACTS section 3: N workers, M separate servers: t = N g/(M BW) + N W/(M BW), W = g."""
    bandwidth_Bps = 16e9
    topology = star(n, bandwidth_Bps, servers=m)
    servers = [f"server{s}" for s in range(m)]
    record, analytic = simulate(topology, "sharded_parameter_server", G, {"servers": servers})
    expected = n * G / (m * bandwidth_Bps) + n * G / (m * bandwidth_Bps)
    assert record.makespan_s == pytest.approx(expected, rel=REL)
    assert analytic == pytest.approx(expected, rel=REL)


@pytest.mark.parametrize("n", [2, 3, 4, 6, 8])
def test_more_shards_never_slower(star, simulate: Simulate, n: int) -> None:  # type: ignore[no-untyped-def]
    """SEED_FACTS section 3: time is O(workers / servers): adding a shard never hurts."""
    for servers_apart in (False, True):
        times = []
        for m in range(1, n + 1):
            if servers_apart:
                topology = star(n, 16e9, servers=m)
                params: dict[str, object] = {"servers": [f"server{s}" for s in range(m)]}
            else:
                topology, params = star(n, 16e9), {"shards": m}
            times.append(simulate(topology, "sharded_parameter_server", G, params)[0].makespan_s)
        assert all(b <= a * (1 + REL) for a, b in zip(times, times[1:])), times


@pytest.mark.parametrize("n", [2, 4, 8, 16])
def test_fully_sharded_time_is_constant_in_n(star, simulate: Simulate, n: int) -> None:  # type: ignore[no-untyped-def]
    """SEED_FACTS section 3: with M = N separate servers each worker uses its full link: 2 g/BW."""
    topology = star(n, 16e9, servers=n)
    record, _ = simulate(
        topology, "sharded_parameter_server", G, {"servers": [f"server{s}" for s in range(n)]}
    )
    assert record.makespan_s == pytest.approx(2 * G / 16e9, rel=REL)


@pytest.mark.parametrize("n", [2, 4, 8])
def test_single_server_grows_linearly(star, simulate: Simulate, n: int) -> None:  # type: ignore[no-untyped-def]
    """SEED_FACTS section 3: one server: each worker gets 1/N of its link: 2 N g/BW."""
    topology = star(n, 16e9, servers=1)
    record, _ = simulate(topology, "parameter_server", G, {"server": "server0"})
    assert record.makespan_s == pytest.approx(2 * n * G / 16e9, rel=REL)


# -- engine vs analytic_time on random cases --------------------------------------------------


def _log_uniform(low: float, high: float) -> st.SearchStrategy[float]:
    """Floats spread evenly over the decades from ``low`` to ``high``."""
    return st.floats(np.log10(low), np.log10(high)).map(lambda e: float(10.0**e))


_SIZES = _log_uniform(1.0, 1e10)  # 1 B .. 10 GB
_BANDWIDTHS = _log_uniform(1e8, 1e12)  # 100 MB/s .. 1 TB/s
_LATENCIES = st.one_of(st.just(0.0), _log_uniform(1e-9, 1e-4))


@st.composite
def _ring_cases(draw: st.DrawFn) -> tuple[int, str, dict[str, object], float, float, float]:
    n = draw(st.integers(2, 16))
    name = draw(st.sampled_from(["ring", "naive_ring"]))
    params: dict[str, object] = {}
    if name == "naive_ring":
        params["chunks"] = draw(st.integers(1, n))  # exact up to N chunks (see the xfail below)
    if draw(st.booleans()):  # any rotation of the ring, either way round: hops stay neighbours
        start, step = draw(st.integers(0, n - 1)), draw(st.sampled_from([1, -1]))
        params["order"] = [(start + step * i) % n for i in range(n)]
    return n, name, params, draw(_SIZES), draw(_BANDWIDTHS), draw(_LATENCIES)


@settings(max_examples=150)
@given(_ring_cases())
def test_ring_family_engine_matches_closed_form(  # type: ignore[no-untyped-def]
    deadline, case: tuple[int, str, dict[str, object], float, float, float]
) -> None:
    """The engine reproduces analytic_time of ring / naive_ring on uniform rings (rel 1e-9)."""
    n, name, params, nbytes, bandwidth_Bps, latency_s = case
    topology = ring(n, bandwidth=bandwidth_Bps, latency=latency_s)
    algorithm = make_algorithm(name, params)
    problem = Problem(topology, tuple(topology.gpus), Collective.ALL_REDUCE, nbytes)
    analytic = algorithm.analytic_time(problem)
    with deadline(EXAMPLE_TIME_LIMIT_S, f"replay of {name} on {topology.name}"):
        record = replay(algorithm.plan(problem), topology)
    assert record.makespan_s == pytest.approx(analytic, rel=REL)


@st.composite
def _server_cases(draw: st.DrawFn) -> tuple[int, int, str, dict[str, object], float, float, float]:
    n = draw(st.integers(2, 16))
    kind = draw(st.sampled_from(["ps_gpu", "ps_cpu", "shards_on_gpus", "separate_servers"]))
    if kind == "ps_gpu":
        extra, name, params = 0, "parameter_server", {"server": draw(st.integers(0, n - 1))}
    elif kind == "ps_cpu":
        extra, name, params = 1, "parameter_server", {"server": "cpu"}
    elif kind == "shards_on_gpus":
        extra, name, params = 0, "sharded_parameter_server", {"shards": draw(st.integers(1, n))}
    else:
        extra = draw(st.integers(1, n))
        name, params = "sharded_parameter_server", {"servers": [f"server{s}" for s in range(extra)]}
    return n, extra, name, params, draw(_SIZES), draw(_BANDWIDTHS), draw(_LATENCIES)


@settings(max_examples=100)
@given(_server_cases())
def test_server_family_engine_matches_closed_form(  # type: ignore[no-untyped-def]
    star, deadline, case: tuple[int, int, str, dict[str, object], float, float, float]
) -> None:
    """The engine reproduces analytic_time of the parameter servers on uniform stars (rel 1e-9)."""
    n, servers, name, params, nbytes, bandwidth_Bps, latency_s = case
    topology = star(n, bandwidth_Bps, latency_s, servers=servers)
    algorithm = make_algorithm(name, params)
    problem = Problem(topology, tuple(topology.gpus), Collective.ALL_REDUCE, nbytes)
    analytic = algorithm.analytic_time(problem)
    with deadline(EXAMPLE_TIME_LIMIT_S, f"replay of {name} on {topology.name}"):
        record = replay(algorithm.plan(problem), topology)
    assert record.makespan_s == pytest.approx(analytic, rel=REL)


@pytest.mark.parametrize(("n", "chunks"), [(2, 3), (3, 4), (4, 8)])
def test_naive_ring_has_no_closed_form_with_many_chunks(simulate: Simulate, n: int, chunks: int) -> None:
    """With chunks > N the two chains share links: no closed form; the pipelined formula is a lower bound."""
    topology = ring(n, bandwidth=1e10, latency=1e-6)
    record, analytic = simulate(topology, "naive_ring", 1e8, {"chunks": chunks})
    assert analytic is None
    pipelined = (2 * n - 1 + chunks - 1) * (1e-6 + 1e8 / chunks / 1e10)
    assert record.makespan_s > pipelined * (1 + 1e-6)


# -- monotonicity ---------------------------------------------------------------------------

_MONOTONE_CASES = [
    ("pcie_4gpu_switch", "parameter_server", {"server": "cpu"}),
    ("pcie_4gpu_switch", "sharded_parameter_server", {}),
    ("dgx1_v100", "ring", {}),
    ("dgx1_v100", "naive_ring", {"chunks": 4}),
    ("dgx1_v100", "parameter_server", {"server": 3}),
]


def _time(deadline, topology: Topology, name: str, params: dict[str, object], nbytes: float) -> float:  # type: ignore[no-untyped-def]
    problem = Problem(topology, tuple(topology.gpus), Collective.ALL_REDUCE, nbytes)
    with deadline(EXAMPLE_TIME_LIMIT_S, f"replay of {name} on {topology.name}"):
        return replay(make_algorithm(name, params).plan(problem), topology).makespan_s


@settings(max_examples=40)
@given(st.sampled_from(_MONOTONE_CASES), _SIZES, _SIZES)
def test_time_non_decreasing_in_size(  # type: ignore[no-untyped-def]
    deadline, case: tuple[str, str, dict[str, object]], a: float, b: float
) -> None:
    """More bytes never take less time (real machines, with latencies and contention)."""
    topology_name, name, params = case
    topology = get_topology(topology_name)
    small, big = sorted((a, b))
    assert _time(deadline, topology, name, params, small) <= _time(deadline, topology, name, params, big) * (
        1 + 1e-12
    )


@settings(max_examples=40)
@given(st.sampled_from(_MONOTONE_CASES), _BANDWIDTHS, _BANDWIDTHS, _SIZES)
def test_time_non_increasing_in_bandwidth(  # type: ignore[no-untyped-def]
    deadline, case: tuple[str, str, dict[str, object]], a: float, b: float, nbytes: float
) -> None:
    """Faster links (every family scaled) never make a collective slower."""
    topology_name, name, params = case
    base = get_topology(topology_name)
    slow_Bps, fast_Bps = sorted((a, b))
    families = {link.family for link in base.links}
    slow = base.with_overrides({family: (slow_Bps, None) for family in families})
    fast = base.with_overrides({family: (fast_Bps, None) for family in families})
    assert _time(deadline, fast, name, params, nbytes) <= _time(deadline, slow, name, params, nbytes) * (
        1 + 1e-12
    )


# -- registry and parameters --------------------------------------------------------------------


def test_built_ins_are_registered() -> None:
    """The foundation's algorithms are found by name."""
    names = algorithm_names()
    for name in ("parameter_server", "sharded_parameter_server", "ring", "naive_ring"):
        assert name in names
        assert get_algorithm(name).name == name
        assert get_algorithm(name).reference


def test_unknown_algorithm_lists_valid_names() -> None:
    """An unknown name is an UnknownNameError (also a KeyError) listing every valid name."""
    with pytest.raises(UnknownNameError) as info:
        get_algorithm("butterfly_9000")
    message = str(info.value)
    assert message.startswith("unknown algorithm 'butterfly_9000'; valid: ")
    assert info.value.valid == algorithm_names()
    for name in algorithm_names():
        assert name in message
    assert isinstance(info.value, KeyError)


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        (
            "ring",
            {"chunks": 2},
            "algorithm 'ring': bad parameters: chunks: Extra inputs are not permitted; "
            "valid parameters: order",
        ),
        (
            "naive_ring",
            {"chunks": 0},
            "algorithm 'naive_ring': bad parameters: chunks: Input should be greater "
            "than or equal to 1; valid parameters: order, chunks",
        ),
        ("sharded_parameter_server", {"shards": 0}, "valid parameters: servers, shards"),
        ("parameter_server", {"sever": 0}, "sever: Extra inputs are not permitted; valid parameters: server"),
    ],
)
def test_bad_params_name_valid_ones(name: str, params: dict[str, object], message: str) -> None:
    """Wrong parameters raise AlgorithmError naming the problem and the valid parameters."""
    with pytest.raises(AlgorithmError) as info:
        make_algorithm(name, params)
    assert message in str(info.value)


def test_unsupported_collective(pcie_box: Topology) -> None:
    """A collective an algorithm does not implement is an AlgorithmError naming what it does."""
    problem = Problem(pcie_box, tuple(pcie_box.gpus), Collective.BROADCAST, G)
    with pytest.raises(AlgorithmError) as info:
        make_algorithm("parameter_server").plan(problem)
    assert str(info.value) == (
        "algorithm 'parameter_server' does not implement broadcast; it implements: all_reduce"
    )
    with pytest.raises(AlgorithmError, match="it implements: all_gather, all_reduce, reduce_scatter"):
        make_algorithm("ring").plan(Problem(pcie_box, tuple(pcie_box.gpus), Collective.REDUCE, G))


@pytest.mark.parametrize(
    ("name", "params", "topology", "message"),
    [
        ("ring", {}, "pcie_4gpu_switch:1", "algorithm 'ring' needs at least 2 ranks, got 1"),
        (
            "ring",
            {"order": [0, 1, 1, 2]},
            "pcie_4gpu_switch",
            "ring order [0, 1, 1, 2] must list every rank 0..3",
        ),
        ("parameter_server", {"server": 9}, "pcie_4gpu_switch", "server rank 9 is outside 0..3"),
        (
            "parameter_server",
            {},
            "fully_connected_4",
            "server 'cpu' asked for, but topology 'fully_connected_4' has no CPU",
        ),
        (
            "parameter_server",
            {"server": "nic7"},
            "fully_connected_4",
            "server 'nic7' is not a device of topology "
            "'fully_connected_4'; use a rank index, 'cpu', or one of: gpu0, gpu1, gpu2, gpu3",
        ),
        ("sharded_parameter_server", {"shards": 5}, "pcie_4gpu_switch", "shards=5 but only 4 ranks"),
        (
            "sharded_parameter_server",
            {"shards": 2, "servers": [0, 1]},
            "pcie_4gpu_switch",
            "give either 'servers' or 'shards' to sharded_parameter_server, not both",
        ),
        (
            "sharded_parameter_server",
            {"servers": [0, "gpu0"]},
            "pcie_4gpu_switch",
            "sharded_parameter_server: a server is listed twice in ['gpu0', 'gpu0']",
        ),
    ],
)
def test_problems_an_algorithm_cannot_run(
    name: str, params: dict[str, object], topology: str, message: str
) -> None:
    """Each impossible request is one clear AlgorithmError sentence."""
    topology_name, _, ranks = topology.partition(":")
    machine = get_topology(topology_name)
    gpus = tuple(machine.gpus[: int(ranks)]) if ranks else tuple(machine.gpus)
    with pytest.raises(AlgorithmError) as info:
        make_algorithm(name, params).plan(Problem(machine, gpus, Collective.ALL_REDUCE, G))
    assert message in str(info.value)


def test_subset_of_ranks(simulate: Simulate) -> None:
    """An algorithm may run on some of a machine's GPUs; the others stay idle."""
    topology = fully_connected(6, bandwidth=1e10, latency=0.0)
    problem = Problem(topology, ("gpu1", "gpu3", "gpu5"), Collective.ALL_REDUCE, 3e9)
    schedule = make_algorithm("ring").plan(problem)
    schedule.verify()
    record = replay(schedule, topology)
    assert record.makespan_s == pytest.approx(4 * 1e9 / 1e10, rel=REL)
    for link in topology.links:
        if "gpu0" in (link.src, link.dst):
            assert record.link_bytes[link.index] == 0.0


def test_halving_doubling_lists_one_op_per_direction_of_the_previous_exchange() -> None:
    """Each send of recursive halving/doubling waits for its rank's previous exchange. The sends of
    one direction of an exchange carry equal chunks over one route and start together, so one of
    them stands for all: a send lists its chunk's writers (at most one per earlier step) and two ops
    of that exchange, at most 2 log2(n) + 2 = 14 for 64 ranks; listing every op of the exchange
    (up to n/2 per direction) made the plan O(n^3) in dependencies (11.5 million at 256 ranks).
    The timing is unchanged: on 64 GPUs of an NVSwitch box the replay equals the textbook time,
    2 (log2 n alpha + (n-1)/n x size / beta) with the box's per-GPU rate."""
    import math

    from commsim.algorithms.halving_doubling import HalvingDoubling
    from commsim.api import simulate

    topo = get_topology("nvswitch_box", gpus=64)
    gpus = tuple(topo.devices_of_kind("gpu"))
    problem = Problem(topo, gpus, Collective.ALL_REDUCE, 64e6)
    plan = HalvingDoubling().plan(problem)
    widest = max(len(plan.deps(op)) for op in range(plan.n_ops))
    assert widest <= 2 * int(math.log2(64)) + 2
    replayed = simulate(topo, "halving_doubling", "all_reduce", "64 MB").time_s
    assert replayed == pytest.approx(HalvingDoubling().analytic_time(problem), rel=1e-9)
