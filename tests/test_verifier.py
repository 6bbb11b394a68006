"""The verifier cannot be fooled: wrong schedules that keep every rank's counts right still fail.

Each schedule below passed the verifier before it checked byte coverage
(every rank ended with "every chunk it should hold" because the chunks
themselves were wrong). The messages are exact, derived by hand.
"""

from __future__ import annotations

import dataclasses
import re

import pytest

from commsim.algorithms import Algorithm, NoParams, Problem, make_algorithm
from commsim.algorithms.base import NotApplicableError
from commsim.api import simulate
from commsim.collectives import Collective
from commsim.errors import ScheduleError
from commsim.schedule import Schedule, ScheduleBuilder
from commsim.topology import fully_connected, get_topology, ring
from commsim.verify import VERIFY_LIMIT, should_verify, verify_schedule

RANKS = [f"gpu{i}" for i in range(4)]


def _fail(schedule: Schedule) -> str:
    with pytest.raises(ScheduleError) as info:
        verify_schedule(schedule, check_races=True)
    return str(info.value)


def test_all_reduce_with_zero_chunks() -> None:
    """No chunk, no send: nothing is wrong per chunk, but no byte of the 1000 B buffer is covered."""
    schedule = ScheduleBuilder(Collective.ALL_REDUCE, 1000, RANKS).build()
    assert _fail(schedule) == (
        "all_reduce not achieved: bytes [0, 1000) of the buffer are in no chunk (chunks cover 0 of 1000 B)"
    )


def test_ring_with_every_chunk_at_half_size() -> None:
    """The ring's 4 chunks of 250 B sit at 0, 250, 500, 750; at 125 B each, [125, 250) is uncovered.

    Half the bytes would move, and the replay would be twice as fast as it should.
    """
    topology = ring(4)
    good = make_algorithm("ring").plan(Problem(topology, tuple(topology.gpus), Collective.ALL_REDUCE, 1000))
    verify_schedule(good, check_races=True)
    assert good.offsets.tolist() == [0, 250, 500, 750]
    half = dataclasses.replace(good, chunk_nbytes=good.chunk_nbytes / 2)
    assert _fail(half) == (
        "all_reduce not achieved: bytes [125, 250) of the buffer are in no chunk (chunks cover 500 of 1000 B)"
    )


def test_all_to_all_with_one_piece() -> None:
    """gpu0 sends its piece for gpu1 (bytes [250, 500) of its send buffer) and nothing else moves."""
    builder = ScheduleBuilder(Collective.ALL_TO_ALL, 1000, RANKS)
    builder.send("gpu0", "gpu1", builder.chunk(250, owner=0, target=1))
    assert _fail(builder.build()) == (
        "all_to_all not achieved: bytes [0, 250) of gpu0's send buffer are in no chunk "
        "(chunks cover 250 of 1000 B)"
    )


def test_all_gather_where_only_rank_0_contributes() -> None:
    """Four 250 B chunks all owned by gpu0 reach everyone; the second lies in gpu1's slice."""
    builder = ScheduleBuilder(Collective.ALL_GATHER, 1000, RANKS)
    for chunk in builder.split(1000, 4, owners=[0, 0, 0, 0]):
        builder.sends(["gpu0"] * 3, RANKS[1:], chunk)
    assert _fail(builder.build()) == (
        "all_gather not achieved: chunk 1 covers bytes [250, 500), which belong to gpu1's slice "
        "[250, 500), but its owner is gpu0"
    )


def test_reduce_scatter_where_rank_0_owns_everything() -> None:
    """Every rank adds every chunk into gpu0: gpu0 holds the whole sum, the others nothing."""
    builder = ScheduleBuilder(Collective.REDUCE_SCATTER, 1000, RANKS)
    for chunk in builder.split(1000, 4, owners=[0, 0, 0, 0]):
        builder.sends(RANKS[1:], ["gpu0"] * 3, chunk, reduce=True)
    assert _fail(builder.build()) == (
        "reduce_scatter not achieved: chunk 1 covers bytes [250, 500), which belong to gpu1's slice "
        "[250, 500), but its owner is gpu0"
    )


def test_overlapping_chunks_are_duplicates() -> None:
    """Explicit offsets 0, 250, 750 with sizes 500, 500, 250: bytes [250, 500) are in two chunks."""
    builder = ScheduleBuilder(Collective.ALL_REDUCE, 1000, RANKS[:2])
    for offset, size in ((0, 500), (250, 500), (750, 250)):
        chunk = builder.chunk(size, offset=offset)
        push = builder.send("gpu0", "gpu1", chunk, reduce=True)
        builder.send("gpu1", "gpu0", chunk, deps=[push])
    assert _fail(builder.build()) == (
        "all_reduce not achieved: chunks 0 and 1 both cover bytes [250, 500) of the buffer "
        "(a byte must be in exactly one chunk)"
    )


def test_offsets_for_some_chunks_only_are_rejected() -> None:
    builder = ScheduleBuilder(Collective.ALL_REDUCE, 1000, RANKS[:2])
    builder.chunk(500, offset=0)
    builder.chunk(500)
    with pytest.raises(
        ScheduleError, match=r"^1 of 2 chunks give an offset; give one for every chunk or none$"
    ):
        builder.build()


def test_reduce_scatter_chunk_without_owner() -> None:
    """A reduce-scatter chunk must say which rank ends with it (it used to index device -1)."""
    builder = ScheduleBuilder(Collective.REDUCE_SCATTER, 1000, RANKS[:2])
    builder.send("gpu0", "gpu1", builder.chunk(1000), reduce=True)
    assert _fail(builder.build()) == (
        "reduce_scatter needs every chunk to have an owner rank; chunk 0 has -1 (ranks are 0..1)"
    )


# -- default-on verification -----------------------------------------------------------------


class _HalfRing(Algorithm):
    """A ring whose chunks are half as large as they should be (not registered)."""

    name = "half_ring"
    collectives = frozenset({Collective.ALL_REDUCE})
    Params = NoParams

    def plan(self, problem: Problem) -> Schedule:
        good = make_algorithm("ring").plan(problem)
        return dataclasses.replace(good, chunk_nbytes=good.chunk_nbytes / 2)


def test_simulate_verifies_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """simulate() refuses the wrong plan unless verification is switched off."""
    monkeypatch.setattr("commsim.api.make_algorithm", lambda name, params: _HalfRing())
    # a registered name, so the case is valid; planning it gives the half ring
    with pytest.raises(ScheduleError, match=r"^all_reduce not achieved: bytes \[125, 250\) of the buffer"):
        simulate(ring(4), "ring", size=1000)
    unchecked = simulate(ring(4), "ring", size=1000, verify=False)
    assert unchecked.time_s > 0


def test_default_verification_threshold() -> None:
    """A ring all-reduce has 2 n (n-1) sends: 158 GPUs give 49,612 (verified), 159 give 50,244."""
    assert VERIFY_LIMIT == 50_000
    for n, expected in ((158, True), (159, False)):
        topology = ring(n)
        schedule = make_algorithm("ring").plan(
            Problem(topology, tuple(topology.gpus), Collective.ALL_REDUCE, 1e6)
        )
        assert schedule.n_ops == 2 * n * (n - 1)
        assert should_verify(schedule) is expected


# -- not applicable: <reason> ------------------------------------------------------------------


@pytest.mark.parametrize("name", ["direct", "tree", "sharded_parameter_server"])
def test_algorithms_say_not_applicable_on_a_ring(name: str) -> None:
    """On a 5-GPU ring only neighbours are linked and GPUs never forward: a send between two
    non-neighbours has no route. Planning, not replaying, says so, naming the pair."""
    topology = ring(5)
    problem = Problem(topology, tuple(topology.gpus), Collective.ALL_REDUCE, 1e6)
    with pytest.raises(NotApplicableError) as info:
        make_algorithm(name).plan(problem)
    match = re.fullmatch(
        rf"algorithm '{name}' is not applicable: topology 'ring_5' has no route from gpu(\d) to gpu(\d) "
        r"over any link \(routes may pass switches, CPUs and NICs, never another GPU\)",
        str(info.value),
    )
    assert match is not None, str(info.value)
    a, b = int(match[1]), int(match[2])
    assert (a - b) % 5 in (2, 3)  # not neighbours
    assert info.value.algorithm == name


def test_hybrid_says_not_applicable_without_pcie() -> None:
    """hybrid's second part runs a ring over PCIe; fully_connected_4 has NVLink only."""
    topology = fully_connected(4)
    problem = Problem(topology, tuple(topology.gpus), Collective.ALL_REDUCE, 1e6)
    with pytest.raises(NotApplicableError) as info:
        make_algorithm("hybrid").plan(problem)
    message = str(info.value)
    assert message.startswith(
        "algorithm 'hybrid' is not applicable: topology 'fully_connected_4' has no route from gpu0 to "
        "gpu1 over link kinds "
    )
    assert "pcie3_x16" in message and "nvlink" not in message


def test_machine_refusals_are_not_applicable() -> None:
    """Refusals about the machine (not the parameters) carry the same prefix."""
    cases = [
        ("multi_ring", get_topology("pcie_4gpu_switch"), "no Hamiltonian cycle over direct nvlink links"),
        ("halving_doubling", ring(5), "it needs a power-of-two number of ranks, got 5"),
    ]
    for name, topology, reason in cases:
        problem = Problem(topology, tuple(topology.gpus), Collective.ALL_REDUCE, 1e6)
        with pytest.raises(NotApplicableError, match=rf"^algorithm '{name}' is not applicable: {reason}"):
            make_algorithm(name).plan(problem)
