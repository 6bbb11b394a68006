"""Symbolic check that a schedule achieves its collective.

First, coverage: the chunks must tile the collective's buffer exactly,
every byte in exactly one chunk (no gap, no overlap), and every chunk must
sit where its owner's data belongs: rank r's slice ``[r g/n, (r+1) g/n)``
of a reduce-scatter, all-gather or gather buffer, the target's slice of
the owner's send buffer for all-to-all. With that, "every rank holds every
chunk with the right contributions" is a statement about every byte.

Then every (device, chunk) buffer holds a vector of counts: how many times each
rank's original data is summed into it. Sends are applied in a topological
order of the dependency DAG (a copy overwrites, a reduce adds). Afterwards
the collective's postcondition must hold, e.g. for all-reduce every rank
holds every chunk with every rank counted exactly once.

Sends on one connection ``(src, dst, channel)`` are ordered (op order), as
in the engine; that order counts as a dependency. Two sends that touch the
same buffer without a dependency path between them are a race (the
result would depend on timing) unless both only add into it. Races are
checked on schedules of up to :data:`RACE_CHECK_LIMIT` ops.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from commsim.collectives import Collective, needs_root
from commsim.errors import ScheduleError
from commsim.schedule import Schedule, connection_next
from commsim.schedule.paths import sorted_unique

__all__ = [
    "RACE_CHECK_LIMIT",
    "VERIFY_LIMIT",
    "check_coverage",
    "should_verify",
    "topological_order",
    "verify_schedule",
]

RACE_CHECK_LIMIT = 20_000
"""Largest schedule (in ops) whose races are checked by default."""

VERIFY_LIMIT = 50_000
"""Largest schedule (in sends) verified by default before a replay (:func:`should_verify`).

Larger plans (e.g. a ring all-reduce over more than 158 GPUs: 2 n (n-1) sends) are replayed unverified
unless verification is asked for: the symbolic state holds one counter per
(device, chunk, rank), which grows with the cube of the GPU count."""

_STATE_LIMIT = 50_000_000
"""Largest symbolic state (device x chunk x rank counters) verified by default."""

_OWNED_START = (Collective.ALL_GATHER, Collective.GATHER, Collective.ALL_TO_ALL)


def should_verify(schedule: Schedule) -> bool:
    """Whether a plan is verified by default: at most :data:`VERIFY_LIMIT` sends (and a state
    of at most 50 million counters)."""
    cells = len(schedule.devices) * schedule.chunk_nbytes.size * len(schedule.ranks)
    return schedule.n_ops <= VERIFY_LIMIT and cells <= _STATE_LIMIT


def _all_dependencies(schedule: Schedule) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(op, dependency) pairs: the explicit ones and the connection order."""
    n = schedule.n_ops
    owners = np.repeat(np.arange(n), np.diff(schedule.dep_indptr))
    following = connection_next(schedule)
    has_next = np.flatnonzero(following >= 0)
    return (
        np.concatenate([owners, following[has_next]]),
        np.concatenate([schedule.dep_indices, has_next]),
    )


def topological_order(schedule: Schedule) -> NDArray[np.int64]:
    """Ops in an order that respects dependencies and connection order (Kahn), ties by op id.

    Raises
    ------
    ScheduleError
        If the dependencies (with the order of sends on each connection)
        contain a cycle.
    """
    n = schedule.n_ops
    owners, deps = _all_dependencies(schedule)
    indeg = np.bincount(owners, minlength=n)
    order_of_deps = np.argsort(deps, kind="stable")
    dependents = owners[order_of_deps]
    dep_ptr = np.searchsorted(deps[order_of_deps], np.arange(n + 1))
    remaining = indeg.copy()
    frontier = np.flatnonzero(remaining == 0)
    order: list[NDArray[np.int64]] = []
    while frontier.size:
        order.append(frontier)
        nxt = np.concatenate([dependents[dep_ptr[i] : dep_ptr[i + 1]] for i in frontier])
        np.subtract.at(remaining, nxt, 1)
        # not np.unique: its first call imports numpy.ma (6-8 ms of every run's start-up)
        frontier = sorted_unique(nxt[remaining[nxt] == 0])
    result = np.concatenate(order) if order else np.empty(0, np.int64)
    if result.size != n:
        raise ScheduleError(
            f"the dependencies of {n - result.size} op(s) form a cycle "
            "(counting that sends on one connection are served in op order)"
        )
    return result


def _initial_state(schedule: Schedule) -> NDArray[np.int64]:
    n_dev, n_chunks, n_ranks = len(schedule.devices), schedule.chunk_nbytes.size, len(schedule.ranks)
    state = np.zeros((n_dev, n_chunks, n_ranks), np.int64)
    collective = schedule.collective
    if collective in _OWNED_START:
        owners = schedule.chunk_owner
        state[owners, np.arange(n_chunks), owners] = 1
    elif collective is Collective.BROADCAST:
        state[_root(schedule), :, _root(schedule)] = 1
    else:
        for rank in range(n_ranks):
            state[rank, :, rank] = 1
    return state


def _check_ranks(schedule: Schedule, ranks: NDArray[np.int64], what: str) -> None:
    bad = np.flatnonzero((ranks < 0) | (ranks >= len(schedule.ranks)))
    if bad.size:
        raise ScheduleError(
            f"{schedule.collective} needs every chunk to have {what}; chunk {int(bad[0])} has "
            f"{int(ranks[bad[0]])} (ranks are 0..{len(schedule.ranks) - 1})"
        )


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
    _initial_state_checks(schedule)
    check_coverage(schedule)
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
    previous = np.full(schedule.n_ops, -1, np.int64)
    following = connection_next(schedule)
    previous[following[following >= 0]] = np.flatnonzero(following >= 0)
    for op in order.tolist():
        mask = 0
        before = schedule.deps(op).tolist()
        if previous[op] >= 0:
            before.append(int(previous[op]))
        for dep in before:
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


def _initial_state_checks(schedule: Schedule) -> None:
    """Owner and target ranks in range where the collective needs them."""
    collective = schedule.collective
    if collective in _OWNED_START or collective is Collective.REDUCE_SCATTER:
        _check_ranks(schedule, schedule.chunk_owner, "an owner rank")
    if collective is Collective.ALL_TO_ALL:
        _check_ranks(schedule, schedule.chunk_target, "a target rank")


def _bytes(a: float, b: float) -> str:
    return f"[{a:.6g}, {b:.6g})"


def check_coverage(schedule: Schedule) -> None:
    """Raise :class:`ScheduleError` unless the chunks tile the buffer(s) exactly.

    Every byte of the collective's buffer lies in exactly one chunk (for
    all-to-all: every byte of every rank's send buffer), and every chunk
    lies in the slice its owner (reduce-scatter, all-gather, gather) or
    target (all-to-all) stands for. Sizes are compared to within a billionth
    of the buffer.
    """
    collective, n = schedule.collective, len(schedule.ranks)
    size = schedule.chunk_nbytes
    tolerance = 1e-9 * max(schedule.nbytes, 1.0)
    if np.any(size < 0):
        raise ScheduleError(f"chunk {int(np.flatnonzero(size < 0)[0])} has a negative size")
    piece = schedule.nbytes / n
    if collective in (Collective.REDUCE_SCATTER, Collective.ALL_GATHER, Collective.GATHER):
        _check_slices(schedule, schedule.chunk_owner, piece, tolerance, "owner")
    elif collective is Collective.ALL_TO_ALL:
        _check_slices(schedule, schedule.chunk_target, piece, tolerance, "target")
    if collective is Collective.ALL_TO_ALL:
        for rank in range(n):
            mine = np.flatnonzero(schedule.chunk_owner == rank)
            _check_tiling(schedule, mine, f"{schedule.ranks[rank]}'s send buffer", tolerance)
    else:
        _check_tiling(schedule, np.arange(size.size), "the buffer", tolerance)


def _check_slices(
    schedule: Schedule, rank_of: NDArray[np.int64], piece: float, tolerance: float, role: str
) -> None:
    """Each chunk lies inside the slice of the rank it belongs to."""
    start, end = schedule.offsets, schedule.offsets + schedule.chunk_nbytes
    low, high = rank_of * piece, (rank_of + 1) * piece
    outside = np.flatnonzero((start < low - tolerance) | (end > high + tolerance))
    if outside.size:
        c = int(outside[0])
        holder = int(np.clip(start[c] // piece if piece > 0 else 0, 0, len(schedule.ranks) - 1))
        where = _bytes(holder * piece, (holder + 1) * piece)
        raise ScheduleError(
            f"{schedule.collective} not achieved: chunk {c} covers bytes {_bytes(start[c], end[c])}, "
            f"which belong to {schedule.ranks[holder]}'s slice {where}, "
            f"but its {role} is {schedule.ranks[rank_of[c]]}"
        )


def _check_tiling(schedule: Schedule, chunks: NDArray[np.int64], where: str, tolerance: float) -> None:
    """The chunks' byte ranges cover [0, nbytes) with no gap and no overlap."""
    total = schedule.nbytes
    chunks = chunks[schedule.chunk_nbytes[chunks] > 0]
    starts, sizes = schedule.offsets[chunks], schedule.chunk_nbytes[chunks]
    order = np.lexsort((chunks, starts))
    chunks, starts, ends = chunks[order], starts[order], (starts + sizes)[order]
    reached = 0.0
    for c, a, b in zip(chunks.tolist(), starts.tolist(), ends.tolist()):
        if a > reached + tolerance:
            break
        if a < reached - tolerance:
            first = int(chunks[np.flatnonzero(ends > a + tolerance)[0]])
            raise ScheduleError(
                f"{schedule.collective} not achieved: chunks {first} and {c} both cover bytes "
                f"{_bytes(a, min(reached, b))} of {where} (a byte must be in exactly one chunk)"
            )
        reached = b
    if reached < total - tolerance or reached > total + tolerance:
        gap_end = min((a for a in starts.tolist() if a > reached + tolerance), default=total)
        if reached > total + tolerance:
            raise ScheduleError(
                f"{schedule.collective} not achieved: chunks reach byte {reached:.6g} of {where}, "
                f"which has {total:.6g} B"
            )
        covered = float(sizes.sum())
        raise ScheduleError(
            f"{schedule.collective} not achieved: bytes {_bytes(reached, gap_end)} of {where} "
            f"are in no chunk (chunks cover {covered:.6g} of {total:.6g} B)"
        )
