"""Every algorithm x collective pair passes the symbolic verifier on random machines (hypothesis)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from commsim.algorithms import Problem, algorithm_names, get_algorithm
from commsim.algorithms.base import NotApplicableError
from commsim.collectives import Collective
from commsim.errors import AlgorithmError, TopologyError
from commsim.topology import fully_connected, get_topology, ring
from commsim.topology.model import Device, PhysicalLink, Topology


def _star(gpus: int) -> Topology:
    devices = [Device("cpu0", "cpu"), Device("sw0", "pcie_switch")] + [
        Device(f"gpu{i}", "gpu") for i in range(gpus)
    ]
    links = [PhysicalLink("sw0", "cpu0", "pcie4_x16")] + [
        PhysicalLink(f"gpu{i}", "sw0", "pcie4_x16") for i in range(gpus)
    ]
    return Topology(f"star_{gpus}", devices, links)


MACHINES = st.one_of(
    st.integers(2, 6).map(lambda n: fully_connected(n)),
    st.integers(2, 6).map(lambda n: ring(n)),
    st.integers(2, 6).map(_star),
    st.sampled_from(["dgx1_v100", "dgx1_p100", "pcie_4gpu_switch", "dgx_a100"]).map(get_topology),
    st.sampled_from(["pcie_4gpu_switch", "fully_connected_4"]).map(
        lambda box: get_topology("cluster", box=box, nodes=2, nic="ib_hdr")
    ),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    machine=MACHINES,
    name=st.sampled_from(algorithm_names()),
    data=st.data(),
    nbytes=st.floats(1, 1e9),
)
def test_every_algorithm_and_collective_verifies(
    machine: Topology, name: str, data: st.DataObject, nbytes: float
) -> None:
    cls = get_algorithm(name)
    collective = data.draw(
        st.sampled_from(sorted(cls.collectives, key=lambda c: c.value)), label="collective"
    )
    ranks = data.draw(st.integers(2, len(machine.gpus)), label="ranks")
    root = data.draw(st.integers(0, ranks - 1), label="root")
    problem = Problem(machine, tuple(machine.gpus[:ranks]), collective, nbytes, root)
    try:
        schedule = cls().plan(problem)
    except AlgorithmError as exc:
        _assert_legitimate_refusal(name, problem, exc)
        event(f"{name} does not apply")
        return
    event(f"{name} {collective.value} verified")
    assert schedule.collective is collective
    schedule.verify()
    covered = abs(sum(schedule.chunk_nbytes) - _expected_total(collective.value, nbytes, ranks))
    assert covered <= 1e-6 * max(1.0, nbytes) * ranks


ROUTE_ONLY = {"ring", "naive_ring", "direct", "tree", "sharded_parameter_server"}
"""Algorithms that need nothing from a machine but a route between every two ranks."""


def _every_pair_routed(problem: Problem) -> bool:
    try:
        for a in problem.ranks:
            for b in problem.ranks:
                if a != b:
                    problem.topology.route(a, b)
    except TopologyError:
        return False
    return True


def _assert_legitimate_refusal(name: str, problem: Problem, exc: AlgorithmError) -> None:
    """A refusal names the algorithm and says why; route-only algorithms refuse only missing routes.

    The one parameter-default refusal allowed: a CPU server asked for on a machine without a CPU.
    """
    if isinstance(exc, NotApplicableError):
        assert str(exc).startswith(f"algorithm {name!r} is not applicable: "), str(exc)
        if name in ROUTE_ONLY:
            assert not _every_pair_routed(problem), f"{name} refused a machine with every route: {exc}"
    else:
        assert "has no CPU" in str(exc) and not problem.topology.devices_of_kind("cpu"), str(exc)


def _expected_total(collective: str, nbytes: float, ranks: int) -> float:
    """Bytes the schedule's chunks cover: the buffer, or one piece per rank pair for all-to-all."""
    return nbytes * ranks if collective == "all_to_all" else nbytes


PAIRS = [
    (name, c)
    for name in algorithm_names()
    for c in sorted(get_algorithm(name).collectives, key=lambda c: c.value)
]


@pytest.mark.parametrize(("name", "collective"), PAIRS, ids=[f"{n}-{c.value}" for n, c in PAIRS])
def test_every_pair_verifies_on_some_shipped_machine(name: str, collective: Collective) -> None:
    """Each declared (algorithm, collective) pair runs and verifies on at least one machine."""
    verified = 0
    for machine in (
        fully_connected(4),
        get_topology("dgx1_v100"),
        get_topology("cluster", box="pcie_4gpu_switch", nodes=2, nic="ib_hdr"),
    ):
        problem = Problem(machine, tuple(machine.gpus), collective, 1e6 + 7, root=1)
        try:
            schedule = get_algorithm(name)().plan(problem)
        except AlgorithmError as exc:
            _assert_legitimate_refusal(name, problem, exc)
            continue
        schedule.verify()
        verified += 1
    assert verified >= 1
