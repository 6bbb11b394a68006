"""The shape of a log's rows that says its run was disturbed: a row slower than the next larger size,
a step down of bandwidth at large sizes, bandwidth falling with size (notes the verdict adds).

nccl-tests' time grows with size and its bandwidth grows or holds, so these shapes are the run's,
not the model's (:mod:`commsim.calibrate.verdict`).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from commsim.calibrate.parser import NcclTestsRow

__all__ = ["BANDWIDTH_BOUND", "NON_MONOTONE_LIMIT", "falling_bandwidth", "non_monotone", "step_down"]

NON_MONOTONE_LIMIT = 1.5
"""A row this many times slower than the next larger size is called out."""
BANDWIDTH_BOUND = 64 * 2**20
"""Sizes from which a call is bandwidth-bound (the regime boundary of the error summary)."""


def non_monotone(rows: Sequence[NcclTestsRow], ranks: int, *, large_only: bool) -> list[str]:
    """Rows more than :data:`NON_MONOTONE_LIMIT` times slower than the next larger size: the three
    most disturbed, in size order, and how many more there are.

    Outside probe 10's log 180 (4 x 2 A100): the 1 MiB row takes 3.7x the 4 MiB one, the run's
    largest disturbance, but three milder ones at smaller sizes came first and it went unsaid.
    """
    rows = [r for r in rows if r.nbytes > 0]
    found: list[tuple[float, int, str]] = []
    for index, (row, bigger) in enumerate(zip(rows, rows[1:])):
        if bigger.nbytes <= row.nbytes or (large_only and row.nbytes < BANDWIDTH_BOUND):
            continue
        pairs = [(row.oop_time_s, bigger.oop_time_s, "out-of-place")]
        if ranks > 1 and row.ip_time_s and bigger.ip_time_s:
            pairs.append((row.ip_time_s, bigger.ip_time_s, "in-place"))
        worst = max(pairs, key=lambda pair: pair[0] / pair[1])
        time_s, next_s, label = worst
        if time_s > NON_MONOTONE_LIMIT * next_s:
            found.append(
                (
                    time_s / next_s,
                    index,
                    f"the {_size(row.nbytes)} row (line {row.line}, {label}) is {_times(time_s / next_s)} "
                    f"slower than the larger {_size(bigger.nbytes)} one: a disturbed measurement",
                )
            )
    kept = sorted(sorted(found, reverse=True)[:3], key=lambda item: item[1])
    out = [text for _, _, text in kept]
    if len(found) > len(kept):
        more = len(found) - len(kept)
        out[-1] += f" ({more} more row{'s' if more > 1 else ''} slower than the next larger size)"
    return out


def step_down(rows: Sequence[NcclTestsRow]) -> list[str]:
    """A persistent step down at large sizes: every row from some size on is slower than the smaller ones.

    Among bandwidth-bound rows (out-of-place busbw), the first row whose busbw
    is under the median of the rows before it by more than
    :data:`NON_MONOTONE_LIMIT`, when every larger row stays that low too (at
    least two rows after the step): bandwidth grows or holds with size in
    nccl-tests, so this is the run (memory, a link, a switch) changing at
    that size, not noise in one row. Single disturbed rows are
    :func:`non_monotone`'s.
    """
    big = [r for r in rows if r.nbytes >= BANDWIDTH_BOUND and r.oop_busbw_Bps > 0]
    for k in range(2, len(big) - 1):
        before = statistics.median(r.oop_busbw_Bps for r in big[:k])
        after = big[k:]
        if all(r.oop_busbw_Bps * NON_MONOTONE_LIMIT < before for r in after):
            level = statistics.median(r.oop_busbw_Bps for r in after)
            first, last = after[0], after[-1]
            return [
                f"from {_size(first.nbytes)} on ({len(after)} rows, lines {first.line}-{last.line}) busbw "
                f"drops to {level / before:.2f}x that of the smaller sizes ({_gbps_bytes(level)} against "
                f"{_gbps_bytes(before)} out-of-place): a step between the {_size(big[k - 1].nbytes)} and "
                f"{_size(first.nbytes)} rows that the model does not have"
            ]
    return []


def falling_bandwidth(rows: Sequence[NcclTestsRow], *, skip_from: int | None = None) -> list[str]:
    """A sustained fall of bandwidth with growing size anywhere in the sweep (the first one), or nothing.

    A row is *fallen* when its out-of-place bandwidth (size / time, which is
    busbw up to the collective's constant factor, without the printed
    columns' two-decimal rounding at small sizes) is under the best of every
    smaller size by more than :data:`NON_MONOTONE_LIMIT`. Two or more
    consecutive fallen rows are reported, as :func:`step_down` asks of a step
    (one alone is :func:`non_monotone`'s disturbed row): bandwidth holds or
    grows with size in nccl-tests, so a run of slower sizes is something in
    the run (contention, a degraded link, throttling), not the model. Rows
    from ``skip_from`` bytes on are left to :func:`step_down` when it found a
    step there. None of the 42 development logs has such a run; of the
    outside logs, those whose pages call the run poor, noisy or disturbed do
    (tests/data/outside 11, 20, 48, 53, 60; 78's is its step), and probe 7's
    log 123 (an ABCI V100 broadcast, 7.0 GB/s busbw at 2 MiB, 2.5 and 2.0
    GB/s at 16 and 32 MiB).
    """
    run: list[NcclTestsRow] = []
    best: NcclTestsRow | None = None
    found: list[NcclTestsRow] = []
    for row in (r for r in rows if r.nbytes > 0 and r.oop_time_s > 0):
        if best is not None and row.nbytes <= best.nbytes:
            best, run = None, []  # another run of sizes (several data types): start again
        if skip_from is not None and row.nbytes >= skip_from:
            break
        if best is not None and _Bps(row) * NON_MONOTONE_LIMIT < _Bps(best):
            run.append(row)
            continue
        if len(run) >= 2:
            found = run
            break
        run = []
        best = row if best is None or _Bps(row) > _Bps(best) else best
    found = found or (run if len(run) >= 2 else [])
    if not found or best is None:
        return []
    low = min(found, key=_Bps)
    return [
        f"bandwidth falls with size: the {_size(found[0].nbytes)}-{_size(found[-1].nbytes)} rows "
        f"({len(found)} rows, lines {found[0].line}-{found[-1].line}) reach {_Bps(low) / _Bps(best):.2f}-"
        f"{max(_Bps(r) for r in found) / _Bps(best):.2f}x the bandwidth of the smaller {_size(best.nbytes)} "
        f"row (busbw {_gbps_bytes(low.oop_busbw_Bps)} at {_size(low.nbytes)} against "
        f"{_gbps_bytes(best.oop_busbw_Bps)}, out-of-place): bandwidth holds or grows with size in "
        "nccl-tests, so something in the run slowed these sizes (contention, a degraded link, "
        "throttling), not the model"
    ]


def _Bps(row: NcclTestsRow) -> float:
    """Out-of-place bytes per second of ``row`` (its algbw, unrounded)."""
    return row.nbytes / row.oop_time_s


def _gbps_bytes(bytes_per_s: float) -> str:
    return f"{bytes_per_s / 1e9:.3g} GB/s"


def _size(nbytes: int) -> str:
    """A size as reports print it (``64 MiB``)."""
    from commsim.units import format_size

    return format_size(nbytes)


def _times(ratio: float) -> str:
    """``1.7x``; a ratio of 1000 or more in three significant digits (``1.23e+04x``), not a long integer."""
    return f"{ratio:.1f}x" if ratio < 1000 else f"{ratio:.3g}x"
