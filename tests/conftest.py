"""Shared fixtures and the hypothesis profile of the test suite.

The "ci" profile makes property tests deterministic (derandomize) and free
of wall-clock deadlines, so the same commit always runs the same cases.
"""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Callable, Iterator

import pytest
from hypothesis import HealthCheck, settings

from commsim.algorithms import Problem, make_algorithm
from commsim.collectives import Collective
from commsim.engine import ReplayRecord, replay
from commsim.topology import Device, PhysicalLink, Topology, get_topology

settings.register_profile(
    "ci",
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("ci")

TEST_TIME_LIMIT_S = 120.0
"""No single test may run longer: a livelocked replay fails instead of hanging the suite."""


@contextlib.contextmanager
def time_limit(seconds: float, what: str) -> Iterator[None]:
    """Raise TimeoutError if the block runs longer than ``seconds`` (POSIX; no-op elsewhere).

    Nests: the enclosing limit's handler and remaining time are restored afterwards.
    """
    if not hasattr(signal, "setitimer"):
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise TimeoutError(f"{what} did not finish within {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    outer_left_s, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    started = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer_left_s:
            spent_s = time.monotonic() - started
            signal.setitimer(signal.ITIMER_REAL, max(outer_left_s - spent_s, 1e-3))


@pytest.fixture(autouse=True)
def _test_time_limit(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test runs under :data:`TEST_TIME_LIMIT_S`."""
    with time_limit(TEST_TIME_LIMIT_S, request.node.nodeid):
        yield


@pytest.fixture(scope="session")
def deadline() -> Callable[[float, str], contextlib.AbstractContextManager[None]]:
    """``with deadline(2.0, "replay"):`` raises TimeoutError if the block takes longer."""
    return time_limit


@pytest.fixture(scope="session")
def pcie_box() -> Topology:
    """The textbook's 4-GPU PCIe-switch server (SEED_FACTS section 1)."""
    return get_topology("pcie_4gpu_switch")


@pytest.fixture(scope="session")
def dgx1_v100() -> Topology:
    """The shipped DGX-1 (V100) hybrid cube-mesh (SEED_FACTS section 2)."""
    return get_topology("dgx1_v100")


@pytest.fixture(scope="session")
def dgx1_p100() -> Topology:
    """The shipped DGX-1 (P100) hyper-cube (SEED_FACTS section 2)."""
    return get_topology("dgx1_p100")


def build_star(
    gpus: int,
    bandwidth_Bps: float,
    latency_s: float = 0.0,
    servers: int = 0,
    server_kind: str = "cpu",
) -> Topology:
    """``gpus`` GPUs and ``servers`` extra server devices on one PCIe switch.

    Every link has the same bandwidth and latency (per direction), so each
    device's single link is its only possible bottleneck.
    """
    devices = [Device("sw", "pcie_switch")]
    devices += [Device(f"gpu{i}", "gpu") for i in range(gpus)]
    devices += [Device(f"server{s}", server_kind) for s in range(servers)]
    links = [
        PhysicalLink(d.name, "sw", "pcie3_x16", 1, bandwidth_Bps, latency_s)
        for d in devices
        if d.name != "sw"
    ]
    return Topology(f"star_{gpus}_{servers}", devices, links)


@pytest.fixture(scope="session")
def star() -> Callable[..., Topology]:
    """Factory of star topologies: N GPUs (and M server devices) on one switch."""
    return build_star


def run_algorithm(
    topology: Topology,
    name: str,
    nbytes: float,
    params: dict[str, object] | None = None,
    collective: Collective = Collective.ALL_REDUCE,
    verify: bool = True,
) -> tuple[ReplayRecord, float | None]:
    """Plan, verify and replay ``name`` on all GPUs; return (record, analytic time)."""
    algorithm = make_algorithm(name, params)
    problem = Problem(topology, tuple(topology.gpus), collective, nbytes)
    schedule = algorithm.plan(problem)
    if verify:
        schedule.verify()
    return replay(schedule, topology), algorithm.analytic_time(problem)


@pytest.fixture(scope="session")
def simulate() -> Callable[..., tuple[ReplayRecord, float | None]]:
    """Plan + verify + replay an algorithm: ``simulate(topology, name, nbytes, params)``."""
    return run_algorithm
