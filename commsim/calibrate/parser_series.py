"""One nccl-tests table, several series: one run per (type, reduction, root).

nccl-tests measures every data type and reduction operation it is given
(``-d all`` or ``-d float,half``, ``-o all`` or ``-o sum,max``) and, for
broadcast and reduce with ``-r -1``, every root, in ONE table under one
column header: each collective's ``*RunTest`` (nccl-tests
``src/<collective>.cu``) calls ``TimeTest`` (``src/common.cu``) once per
type, operation and root, and every call sweeps all sizes. The text table
and the ``-J`` JSON ``results`` list hold those sweeps one after the other,
each row naming its ``type``, ``redop`` and ``root``. Read as one run, every
size would appear once per series and each be compared with one
prediction; so a table whose rows name more than one (type, redop, root)
is split into one run per such series, in order of first appearance.

A split run keeps its table's header, devices, settings, command, program,
warnings and out-of-bounds count (they describe the whole table) but:

- holds only its series' rows (and their printed triples);
- spans the lines of its own rows (``first_line`` is the line of its first
  row, ``last_line`` of its last), so the spans of two series of the table
  never include the table's header lines;
- has no ``Avg bus bandwidth``: nccl-tests' footer averages the busbw of
  every row of every series (``args->bw`` sums over all ``TimeTest``
  calls), so it belongs to no one series. It is checked against the rows
  of the whole table before the split instead.

Rows of one series that repeat a size are kept, each compared on its own,
never merged: nccl-tests prints a size again when rounding to whole
elements per rank maps several requested sizes to one (reduce_scatter's
first sizes all print as 0 B), and sweeps all sizes again with
``-N``/``--run_cycles``. A size smaller than the row before it in a series
marks such a new sweep (or rows of two runs pasted into one table) and is
warned about once per series. Three or more rows in a row that print one
size (:func:`repeated_sizes`) are that size measured again and again:
nccl-tests with ``-b`` = ``-e`` and ``-i 0`` never steps its size and prints
one row per timing loop until stopped. They are said to be one size, with
the spread of their busbw; the verdict reads a large spread as a disturbed
run.
"""

from __future__ import annotations

import statistics
from dataclasses import replace
from typing import NamedTuple

from commsim.calibrate.parser import NcclTestsRow
from commsim.calibrate.parser_bandwidth import Measured, average_warnings
from commsim.calibrate.parser_common import RunData
from commsim.units import format_size

__all__ = ["RepeatedSize", "SeriesKey", "repeated_sizes", "series_key", "series_label", "split_series"]

REPEAT_MIN = 3
"""Rows in a row that print one size and so repeat it: rounding to whole elements per rank merges
two requested sizes at most (doubling sizes) and only into 0 B, which is not counted."""


class SeriesKey(NamedTuple):
    """What tells the series of one nccl-tests table apart."""

    dtype: str
    redop: str | None
    root: int | None


def series_key(row: NcclTestsRow) -> SeriesKey:
    """The series a result row belongs to."""
    return SeriesKey(row.dtype, row.redop, row.root)


def series_label(key: SeriesKey, *, root: bool = True) -> str:
    """``half sum`` or ``float none root 3``: the key as a user reads it in the table.

    ``root=False`` leaves the root out (when every series has the same one).
    """
    parts = [key.dtype] + ([key.redop] if key.redop is not None else [])
    if root and key.root is not None:
        parts.append(f"root {key.root}")
    return " ".join(parts)


class _Row(NamedTuple):
    row: NcclTestsRow
    measured: list[Measured]


def split_series(data: RunData) -> list[RunData]:
    """The runs of one reader's table: itself when it holds one series, else one per series.

    Parameters
    ----------
    data : RunData
        What a reader found in one table (one run).

    Returns
    -------
    list of RunData
        ``[data]`` (with a warning added if a series sweeps its sizes twice)
        when every row has the same (type, redop, root); else one new
        RunData per series in order of first appearance, as the module
        docstring describes.
    """
    groups: dict[SeriesKey, list[_Row]] = {}
    for row in _with_measured(data):
        groups.setdefault(series_key(row.row), []).append(row)
    if len(groups) <= 1:
        data.warnings.extend(_repeated_sweeps(data.rows, "") + _repeated_size_warnings(data.rows))
        return [data]
    table_warnings = data.warnings + average_warnings(data)
    with_root = len({key.root for key in groups}) > 1
    return [
        _series_run(data, key, rows, table_warnings, len(groups), series_label(key, root=with_root))
        for key, rows in groups.items()
    ]


def _with_measured(data: RunData) -> list[_Row]:
    """Each row with its printed triples: out-of-place, then in-place when the row has one.

    Both readers append a row's triples in that order as they append the row.
    """
    pairs, position = [], 0
    for row in data.rows:
        taken = 1 if row.ip_time_s is None else 2
        own = data.measured[position : position + taken]
        assert len(own) == taken and all(m.line == row.line for m in own), "triples follow the rows"
        pairs.append(_Row(row, own))
        position += taken
    assert position == len(data.measured), "every printed triple belongs to a row"
    return pairs


def _series_run(
    data: RunData, key: SeriesKey, rows: list[_Row], table_warnings: list[str], count: int, label: str
) -> RunData:
    first, last = rows[0].row.line, rows[-1].row.line
    top, bottom = data.rows[0].line, data.rows[-1].line
    footer = (
        "; the table's 'Avg bus bandwidth' averages every series and is not used" if data.avg_busbw else ""
    )
    note = (
        f"lines {first}-{last}: the {label} series, one of {count} in the table of lines "
        f"{top}-{bottom} (nccl-tests -d/-o/-r ran several types, reductions or roots); "
        f"read as a run of its own{footer}"
    )
    own_rows = [r.row for r in rows]
    return replace(
        data,
        devices=list(data.devices),
        header=dict(data.header),
        rows=own_rows,
        measured=[m for r in rows for m in r.measured],
        avg_busbw=None,
        warnings=[
            *table_warnings,
            note,
            *_repeated_sweeps(own_rows, f" of the {label} series"),
            *_repeated_size_warnings(own_rows),
        ],
        prefix_ranks=dict(data.prefix_ranks),
        info_nranks=list(data.info_nranks),
        first_line=first,
        last_line=last,
    )


def _repeated_sweeps(rows: list[NcclTestsRow], what: str) -> list[str]:
    """One warning if the sizes of ``rows`` (one series) go down anywhere: a new sweep starts there."""
    restarts = [
        row.line for previous, row in zip(rows, rows[1:], strict=False) if row.nbytes < previous.nbytes
    ]
    if not restarts:
        return []
    shown = ", ".join(map(str, restarts[:6])) + (", ..." if len(restarts) > 6 else "")
    return [
        f"line{'s' if len(restarts) > 1 else ''} {shown}: the sizes{what} start again from a smaller one, "
        f"so they are swept {len(restarts) + 1} times (nccl-tests -N/--run_cycles, or rows of several runs "
        "in one table); every row is kept and compared on its own, none merged"
    ]


class RepeatedSize(NamedTuple):
    """Rows in a row of one series that print one size: that size measured again and again."""

    nbytes: int
    first_line: int
    last_line: int
    busbw_Bps: tuple[float, ...]  # out-of-place busbw of each row, in order
    times_s: tuple[float, ...]  # out-of-place time of each row, in order

    @property
    def spread(self) -> float:
        """The slowest row's time over the fastest's (1.0 when a time is 0)."""
        fastest = min(self.times_s)
        return max(self.times_s) / fastest if fastest > 0 else 1.0


def repeated_sizes(rows: list[NcclTestsRow]) -> list[RepeatedSize]:
    """Each run of :data:`REPEAT_MIN` or more rows in a row of one nonzero size, in order."""
    groups: list[list[NcclTestsRow]] = []
    for row in rows:
        if groups and groups[-1][-1].nbytes == row.nbytes:
            groups[-1].append(row)
        else:
            groups.append([row])
    return [
        RepeatedSize(
            group[0].nbytes,
            group[0].line,
            group[-1].line,
            tuple(r.oop_busbw_Bps for r in group),
            tuple(r.oop_time_s for r in group),
        )
        for group in groups
        if len(group) >= REPEAT_MIN and group[0].nbytes > 0
    ]


def _repeated_size_warnings(rows: list[NcclTestsRow]) -> list[str]:
    """``lines 12-30: 17 rows of one size, 8 GiB ...``: each repeated size, with its busbw spread."""
    out = []
    for group in repeated_sizes(rows):
        busbw = sorted(group.busbw_Bps)
        spread = (
            f"; busbw min {busbw[0] / 1e9:.4g}, median {statistics.median(busbw) / 1e9:.4g}, "
            f"max {busbw[-1] / 1e9:.4g} GB/s ({group.spread:.2f}x in time)"
        )
        out.append(
            f"lines {group.first_line}-{group.last_line}: {len(busbw)} rows of one size, "
            f"{format_size(group.nbytes)}: the same size measured again and again (nccl-tests "
            f"-b = -e with -i 0 prints one row per timing loop), not {len(busbw)} sizes; every row "
            f"is compared on its own{spread}"
        )
    return out
