"""Symbolic check that a schedule achieves its collective.

Every (device, chunk) buffer holds a vector of counts: how many times each
rank's original data is summed into it. Sends are applied in a topological
order of the dependency DAG (a copy overwrites, a reduce adds). Afterwards
the collective's postcondition must hold, e.g. for all-reduce every rank
holds every chunk with every rank counted exactly once.

Two sends that touch the same buffer without a dependency path between them
are a race (the result would depend on timing) unless both only add into
it. Races are checked on schedules of up to :data:`RACE_CHECK_LIMIT` ops.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from commsim.collectives import Collective, needs_root
from commsim.errors import ScheduleError
from commsim.schedule import Schedule

__all__ = ["RACE_CHECK_LIMIT", "topological_order", "verify_schedule"]

RACE_CHECK_LIMIT = 20_000
"""Largest schedule (in ops) whose races are checked by default."""

_OWNED_START = (Collective.ALL_GATHER, Collective.GATHER, Collective.ALL_TO_ALL)


def topological_order(schedule: Schedule) -> NDArray[np.int64]:
    """Ops in an order that respects dependencies (Kahn), ties by op id.

    Raises
    ------
    ScheduleError
        If the dependencies contain a cycle.
    """
    n = schedule.n_ops
    indeg = np.diff(schedule.dep_indptr)
    owners = np.repeat(np.arange(n), indeg)
    order_of_deps = np.argsort(schedule.dep_indices, kind="stable")
    dependents = owners[order_of_deps]
    dep_ptr = np.searchsorted(schedule.dep_indices[order_of_deps], np.arange(n + 1))
    remaining = indeg.copy()
    frontier = np.flatnonzero(remaining == 0)
    order: list[NDArray[np.int64]] = []
    while frontier.size:
        order.append(frontier)
        nxt = np.concatenate([dependents[dep_ptr[i] : dep_ptr[i + 1]] for i in frontier])
        np.subtract.at(remaining, nxt, 1)
        frontier = np.unique(nxt[remaining[nxt] == 0])
    result = np.concatenate(order) if order else np.empty(0, np.int64)
    if result.size != n:
        raise ScheduleError(f"the dependencies of {n - result.size} op(s) form a cycle")
    return result


def _initial_state(schedule: Schedule) -> NDArray[np.int64]:
    n_dev, n_chunks, n_ranks = len(schedule.devices), schedule.chunk_nbytes.size, len(schedule.ranks)
    state = np.zeros((n_dev, n_chunks, n_ranks), np.int64)
    collective = schedule.collective
    if collective in _OWNED_START:
        owners = schedule.chunk_owner
        if np.any(owners < 0):
            raise ScheduleError(f"{collective} needs every chunk to have an owner rank")
        state[owners, np.arange(n_chunks), owners] = 1
    elif collective is Collective.BROADCAST:
        state[_root(schedule), :, _root(schedule)] = 1
    else:
        for rank in range(n_ranks):
            state[rank, :, rank] = 1
    return state


def _root(schedule: Schedule) -> int:
    if schedule.root is None or not 0 <= schedule.root < len(schedule.ranks):
        raise ScheduleError(f"{schedule.collective} needs a root rank, got {schedule.root!r}")
    return schedule.root


def _expected(schedule: Schedule) -> dict[tuple[int, int], NDArray[np.int64]]:
    """(device, chunk) -> required counts after the collective."""
    n_chunks, n_ranks = schedule.chunk_nbytes.size, len(schedule.ranks)
    everyone = np.ones(n_ranks, np.int64)
    only = np.eye(n_ranks, dtype=np.int64)
    collective, chunks = schedule.collective, range(n_chunks)
    owner, target = schedule.chunk_owner, schedule.chunk_target
    if collective is Collective.ALL_REDUCE:
        return {(r, c): everyone for r in range(n_ranks) for c in chunks}
    if collective is Collective.REDUCE_SCATTER:
        return {(int(owner[c]), c): everyone for c in chunks}
    if collective is Collective.ALL_GATHER:
        return {(r, c): only[owner[c]] for r in range(n_ranks) for c in chunks}
    if collective is Collective.BROADCAST:
        return {(r, c): only[_root(schedule)] for r in range(n_ranks) for c in chunks}
    if collective is Collective.REDUCE:
        return {(_root(schedule), c): everyone for c in chunks}
    if collective is Collective.GATHER:
        return {(_root(schedule), c): only[owner[c]] for c in chunks}
    return {(int(target[c]), c): only[owner[c]] for c in chunks}


def _describe(counts: NDArray[np.int64], ranks: tuple[str, ...]) -> str:
    parts = [f"{ranks[r]}x{int(k)}" if k != 1 else ranks[r] for r, k in enumerate(counts) if k]
    return "{" + ", ".join(parts) + "}" if parts else "nothing"


def verify_schedule(schedule: Schedule, check_races: bool | None = None) -> None:
    """Raise :class:`ScheduleError` unless ``schedule`` achieves its collective.

    Parameters
    ----------
    schedule : Schedule
    check_races : bool, optional
        Check for unordered conflicting sends; by default only on schedules
        of at most :data:`RACE_CHECK_LIMIT` ops.

    Raises
    ------
    ScheduleError
        Naming the first violation: a send of data the sender does not
        hold, a race, or a rank that ends with the wrong contributions.
    """
    if needs_root(schedule.collective):
        _root(schedule)
    order = topological_order(schedule)
    if check_races is None:
        check_races = schedule.n_ops <= RACE_CHECK_LIMIT
    if check_races:
        _check_races(schedule, order)
    state = _initial_state(schedule)
    names, sizes = schedule.devices, schedule.chunk_nbytes
    for op in order.tolist():
        src, dst, chunk = schedule.op_src[op], schedule.op_dst[op], schedule.op_chunk[op]
        value = state[src, chunk]
        if not value.any():
            raise ScheduleError(
                f"op {op}: {names[src]} sends chunk {chunk} ({sizes[chunk]:.0f} B) to {names[dst]} "
                "but holds no data of it yet (a missing send or dependency before it)"
            )
        if schedule.op_reduce[op]:
            state[dst, chunk] = state[dst, chunk] + value
        else:
            state[dst, chunk] = value
    for (device, chunk), want in _expected(schedule).items():
        have = state[device, chunk]
        if not np.array_equal(have, want):
            raise ScheduleError(
                f"{schedule.collective} not achieved: {names[device]} ends with chunk {chunk} "
                f"holding {_describe(have, schedule.ranks)}, expected {_describe(want, schedule.ranks)}"
            )


def _check_races(schedule: Schedule, order: NDArray[np.int64]) -> None:
    """Every two ops touching one buffer, unless both add into it, must be ordered."""
    ancestors = [0] * schedule.n_ops
    for op in order.tolist():
        mask = 0
        for dep in schedule.deps(op).tolist():
            mask |= ancestors[dep] | (1 << dep)
        ancestors[op] = mask
    accesses: dict[tuple[int, int], list[tuple[int, str]]] = {}
    for op in range(schedule.n_ops):
        chunk = int(schedule.op_chunk[op])
        accesses.setdefault((int(schedule.op_src[op]), chunk), []).append((op, "read"))
        mode = "add" if schedule.op_reduce[op] else "write"
        accesses.setdefault((int(schedule.op_dst[op]), chunk), []).append((op, mode))
    for (device, chunk), ops in accesses.items():
        _check_buffer(schedule, device, chunk, ops, ancestors)


def _check_buffer(
    schedule: Schedule, device: int, chunk: int, ops: list[tuple[int, str]], ancestors: list[int]
) -> None:
    for i, (a, mode_a) in enumerate(ops):
        for b, mode_b in ops[i + 1 :]:
            if a == b or {mode_a, mode_b} <= {"read"} or (mode_a == mode_b == "add"):
                continue
            if (ancestors[a] >> b) & 1 or (ancestors[b] >> a) & 1:
                continue
            raise ScheduleError(
                f"race on chunk {chunk} at {schedule.devices[device]}: op {a} ({mode_a}) and "
                f"op {b} ({mode_b}) are not ordered by dependencies"
            )
