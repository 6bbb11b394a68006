"""The result table of an nccl-tests text log: its columns, and reading one row by them.

The column header fixes the table's layout (:class:`Layout`): which columns,
in which order, and how many whitespace-separated fields each takes (a time
stamp two). :func:`read_row` reads a row by it into SI units;
:func:`fits` tells whether fields are of their columns' kinds (integers for
size, count and root, words for type and reduction, numbers or ``N/A`` for
measurements), which is how a row split by other lines is put back together.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from commsim.calibrate.parser import NcclTestsRow
from commsim.calibrate.parser_bandwidth import (
    GBPS,
    Measured,
    Printed,
    bandwidth_fault,
    printed,
    size_fault,
    time_fault,
)
from commsim.errors import ParseError

__all__ = [
    "INTEGER",
    "REDUCTIONS",
    "TYPE_BYTES",
    "Column",
    "Layout",
    "boundary",
    "check_plausible",
    "fits",
    "looks_like_row",
    "names_printed",
    "read_layout",
    "read_row",
    "width_message",
    "with_empty_columns",
    "without_start",
]

INTEGER = re.compile(r"^-?\d{1,640}$")
"""A whole number of at most 640 digits, which ``int`` reads under any ``sys.set_int_max_str_digits``
(a garbled row's size of a million digits raised its ValueError)."""

_NUMBER = re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$")
_STAMP = re.compile(r"^(?:\d{4}-\d\d-\d\d|\d\d:\d\d:\d\d)$")
_NOT_NUMBERS = {"n/a", "nan", "-nan", "inf", "-inf"}  # printed in measurement columns
_ROW_WORDS = {  # type and reduction names nccl-tests prints, lower case
    *("int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "float", "double", "bfloat16"),
    *("fp8_e4m3", "fp8_e5m2", "f8e4m3", "f8e5m2", "int", "char", "bf16", "fp16", "fp32", "fp64"),
    *("sum", "prod", "max", "min", "avg", "premulsum", "mulsum", "none", "all"),
    *("n/a", "nan", "inf", "-nan", "-inf"),
}
_LABELS = {  # canonical column name: header labels of all nccl-tests versions
    "size": "size bytes",
    "count": "count n",
    "type": "type",
    "redop": "redop op",
    "root": "root",
    "time": "time cputime",
    "algbw": "algbw",
    "busbw": "busbw",
    "wrong": "#wrong",
    "error": "error res",
    "timestamp": "timestamp",
}
_CANONICAL = {label: name for name, labels in _LABELS.items() for label in labels.split()}
_MEASURES = {"time", "algbw", "busbw", "wrong", "error"}
_REQUIRED = (("", "size"), ("", "count"), ("", "type"), ("oop", "time"), ("oop", "algbw"), ("oop", "busbw"))
_SLOT_NAMES = {"oop": "out-of-place", "ip": "in-place", "": ""}
_MAY_BE_EMPTY = (("redop",), ("root",), ("redop", "root"))
"""Columns old nccl-tests print as blanks: ``redop`` of collectives without a reduction
(``%6s`` of ``""`` in alltoall, gather, hypercube), ``root`` -1 (``%6s`` of ``""``)."""


class Column(NamedTuple):
    """One column of a table header."""

    label: str  # as printed in the header
    name: str  # canonical, or "other"
    slot: str  # "oop", "ip" or "" (not a measurement)
    width: int  # number of whitespace-separated fields in a row


@dataclass
class Layout:
    """The columns of a result table, as its header announced them."""

    line: int
    columns: list[Column]
    time_per_s: float  # printed time units per second: 1e6 for us

    @property
    def width(self) -> int:
        return sum(column.width for column in self.columns)

    def has(self, slot: str, name: str) -> bool:
        return any(c.slot == slot and c.name == name for c in self.columns)


class _Half(NamedTuple):
    """One half (out-of-place or in-place) of a result row, in SI units."""

    time_s: float | None
    algbw_Bps: float | None
    busbw_Bps: float | None
    wrong: int | None
    max_error: float | None


def looks_like_row(tokens: list[str]) -> bool:
    """Whether whitespace-split ``tokens`` have the shape of a result row.

    The first token must be an integer-like number and at least two thirds
    of the tokens numbers, ``N/A``, time stamps or type and reduction names;
    MPI help text (``8 more processes have sent help message ...``) is not.
    """
    if len(tokens) < 4 or not tokens[0][:1].isdigit():
        return False
    fitting = sum(
        1 for token in tokens if _NUMBER.match(token) or _STAMP.match(token) or token.lower() in _ROW_WORDS
    )
    return 3 * fitting >= 2 * len(tokens)


def width_message(tokens: list[str], layout: Layout) -> str:
    labels = " ".join(column.label for column in layout.columns)
    return (
        f"result row has {len(tokens)} fields but the column header at line {layout.line} "
        f"announces {layout.width} ({labels}); the row is truncated or garbled"
    )


def boundary(columns: list[Column], count: int) -> int | None:
    """How many leading ``columns`` ``count`` fields fill exactly; None if they end inside one or run past."""
    used = 0
    for index, column in enumerate(columns):
        if used == count:
            return index
        used += column.width
    return len(columns) if used == count else None


TYPE_BYTES = {
    **dict.fromkeys(("int8", "uint8", "char", "fp8_e4m3", "fp8_e5m2", "f8e4m3", "f8e5m2"), 1),
    **dict.fromkeys(("half", "fp16", "bfloat16", "bf16"), 2),
    **dict.fromkeys(("int32", "uint32", "int", "float", "fp32"), 4),
    **dict.fromkeys(("int64", "uint64", "double", "fp64"), 8),
}
"""Bytes per element of the type names nccl-tests prints (``wordSize`` in ``src/common.cu``)."""
REDUCTIONS = frozenset({"sum", "prod", "min", "max", "avg", "premulsum", "mulsum", "none"})
"""Reduction names nccl-tests prints in the redop column (``ncclRedOp_t``; ``none`` for collectives
without one)."""


def fits(tokens: list[str], columns: list[Column]) -> bool:
    """Whether ``tokens`` are exactly the fields of ``columns``, each of its column's kind."""
    position = 0
    for column in columns:
        cell = tokens[position : position + column.width]
        position += column.width
        if len(cell) < column.width or not _cell_fits(cell, column.name):
            return False
    return position == len(tokens)


def _cell_fits(cell: list[str], name: str) -> bool:
    if name in ("size", "count", "root"):
        return bool(INTEGER.match(cell[0]))
    if name in ("type", "redop"):
        return not _NUMBER.match(cell[0])
    if name in _MEASURES:
        return bool(_NUMBER.match(cell[0])) or cell[0].lower() in _NOT_NUMBERS
    if name == "timestamp":
        return all(_STAMP.match(token) for token in cell)
    return True


def without_start(tokens: list[str], columns: list[Column]) -> bool:
    """Whether a short row is the end of a row whose start is missing: it fits the last columns only."""
    start = boundary(columns[::-1], len(tokens))
    if start is None or start == len(columns):
        return False
    head = boundary(columns, len(tokens))
    fits_head = head is not None and fits(tokens, columns[:head])
    return not fits_head and fits(tokens, columns[len(columns) - start :])


def with_empty_columns(tokens: list[str], layout: Layout) -> Layout | None:
    """The layout of a row whose ``redop`` and/or ``root`` field is blank, else None.

    nccl-tests of 2019-2021 print ``redop`` with ``%6s`` of an empty name for
    collectives without a reduction (alltoall, gather, hypercube) and some
    versions ``root`` -1 as blanks, so such a row has fewer fields than its
    header has columns. The row is read without those columns only when
    every field then fits its column (sizes and counts integers, the type and
    reduction names nccl-tests prints, every measurement a number) and the row is not simply cut short
    (its fields do not also fit the header's first columns): a truncated row
    stays an error.
    """
    head = boundary(layout.columns, len(tokens))
    if head is not None and fits(tokens, layout.columns[:head]):
        return None
    for names in _MAY_BE_EMPTY:
        if not all(layout.has("", name) for name in names):
            continue
        columns = [c for c in layout.columns if not (c.slot == "" and c.name in names)]
        if (
            sum(c.width for c in columns) == len(tokens)
            and fits(tokens, columns)
            and names_printed(tokens, columns)
        ):
            return Layout(layout.line, columns, layout.time_per_s)
    return None


def names_printed(tokens: list[str], columns: list[Column]) -> bool:
    """Whether the row's type and reduction are names nccl-tests prints (a shifted field is not)."""
    position = 0
    for column in columns:
        word = tokens[position].lower()
        if column.name == "type" and word not in TYPE_BYTES:
            return False
        if column.name == "redop" and word not in REDUCTIONS:
            return False
        position += column.width
    return True


def read_layout(number: int, labels: list[str], fail: Callable[[str, int], ParseError]) -> Layout:
    """The table layout announced by the column header ``labels``."""
    if "|" in labels and "size" in (label.lower() for label in labels[labels.index("|") + 1 :]):
        raise fail(
            "the column header holds two tables side by side (a second 'size count type ...' after "
            "'|'), as pages arrange two runs for comparison; nccl-tests prints one table per run: "
            "put each side in a file of its own",
            number,
        )
    columns = []
    slots = iter(("oop", "ip"))
    slot = ""
    for label in labels:
        name = _CANONICAL.get(label.lower(), "other")
        if name == "time":
            slot = next(slots, "extra")
        width = 2 if name == "timestamp" else 1  # "2025-05-20 12:00:00"
        columns.append(Column(label, name, slot if name in _MEASURES else "", width))
    layout = Layout(number, columns, 1e3 if labels[0].lower() == "bytes" else 1e6)
    for slot, name in _REQUIRED:
        if not layout.has(slot, name):
            what = f"{_SLOT_NAMES[slot]} {name}".strip()
            raise fail(
                f"the column header has no {what} column; expected nccl-tests' "
                "'size count type [redop] [root] time algbw busbw ...' header",
                number,
            )
    return layout


def check_plausible(
    number: int, tokens: list[str], layout: Layout, fail: Callable[[str, int], ParseError]
) -> None:
    """Refuse a row whose size or out-of-place time reads but no run could print (more than a day per
    call or 1 PiB), even where a row that does not read is forgiven (a cut last row; a time of 0 there
    may be a cut one)."""
    cells = _Cells(number, tokens, layout, fail)
    size = cells.text("", "size")
    if size is not None and INTEGER.match(size) and (fault := size_fault(int(size))):
        raise cells.bad("", "size", fault)
    token = cells.text("oop", "time")
    try:
        seconds = printed(token).value / layout.time_per_s if token is not None else None
    except ValueError:
        return
    if seconds is not None and seconds > 0 and (fault := time_fault(seconds, layout.time_per_s)):
        raise cells.bad("oop", "time", fault)


def read_row(
    number: int, tokens: list[str], layout: Layout, fail: Callable[[str, int], ParseError]
) -> tuple[NcclTestsRow, list[Measured]]:
    """One result row, read by the layout of its table."""
    if len(tokens) != layout.width:
        raise fail(width_message(tokens, layout), number)
    cells = _Cells(number, tokens, layout, fail)
    nbytes = cells.integer("", "size", "size")
    if fault := size_fault(nbytes):
        raise cells.bad("", "size", fault)
    measured: list[Measured] = []
    oop = cells.half("oop", nbytes, measured, optional=False)
    ip = cells.half("ip", nbytes, measured, optional=True)
    root = cells.text("", "root")
    row = NcclTestsRow(
        nbytes=nbytes,
        count=cells.integer("", "count", "count"),
        dtype=cells.text("", "type") or "",
        redop=cells.text("", "redop"),
        root=cells.integer("", "root", "root") if root is not None else None,
        oop_time_s=_required(oop.time_s),
        oop_algbw_Bps=_required(oop.algbw_Bps),
        oop_busbw_Bps=_required(oop.busbw_Bps),
        oop_wrong=oop.wrong,
        ip_time_s=ip.time_s,
        ip_algbw_Bps=ip.algbw_Bps,
        ip_busbw_Bps=ip.busbw_Bps,
        ip_wrong=ip.wrong,
        line=number,
        oop_max_error=oop.max_error,
        ip_max_error=ip.max_error,
    )
    return row, measured


def _required(value: float | None) -> float:
    assert value is not None, "out-of-place values are read with optional=False"
    return value


class _Cells:
    """The fields of one row, addressed by (slot, column name)."""

    def __init__(
        self, number: int, tokens: list[str], layout: Layout, fail: Callable[[str, int], ParseError]
    ) -> None:
        self.line = number
        self.fail = fail
        self.time_per_s = layout.time_per_s
        self.cells: dict[tuple[str, str], tuple[int, str]] = {}
        position = 0
        for column in layout.columns:
            value = " ".join(tokens[position : position + column.width])
            self.cells.setdefault((column.slot, column.name), (position + 1, value))
            position += column.width

    def text(self, slot: str, name: str) -> str | None:
        cell = self.cells.get((slot, name))
        return cell[1] if cell else None

    def bad(self, slot: str, name: str, expected: str) -> ParseError:
        field, token = self.cells[(slot, name)]
        what = f"{_SLOT_NAMES[slot]} {name}".strip()
        shown = repr(token) if len(token) <= 40 else f"{token[:20]!r}... ({len(token):,} characters)"
        return self.fail(f"field {field} ({what}) should be {expected}, found {shown}", self.line)

    def integer(self, slot: str, name: str, what: str) -> int:
        token = self.text(slot, name) or ""
        if not INTEGER.match(token):
            long = token.lstrip("-").isdigit()  # too many digits for INTEGER
            raise self.bad(slot, name, "an integer" + (" of at most 640 digits" if long else ""))
        return int(token)

    def number(self, slot: str, name: str, optional: bool) -> Printed | None:
        token = self.text(slot, name)
        if token is None or (optional and token == "N/A"):
            return None
        try:
            return printed(token)
        except ValueError:
            raise self.bad(slot, name, "a number" + (" or N/A" if optional else "")) from None

    def half(self, slot: str, nbytes: int, measured: list[Measured], optional: bool) -> _Half:
        time = self.number(slot, "time", optional)
        algbw = self.number(slot, "algbw", optional)
        busbw = self.number(slot, "busbw", optional)
        wrong = self.number(slot, "wrong", optional=True)
        error = self.number(slot, "error", optional=True)
        if time is None or algbw is None or busbw is None:
            return _Half(None, None, None, None, None)
        seconds = time.divided(self.time_per_s)
        if fault := time_fault(seconds.value, self.time_per_s):
            raise self.bad(slot, "time", fault)
        for name, shown in (("algbw", algbw), ("busbw", busbw)):
            if fault := bandwidth_fault(shown.value):
                raise self.bad(slot, name, fault)
        if wrong is not None and not math.isfinite(wrong.value):
            raise self.bad(slot, "wrong", "a count of wrong elements or N/A")
        label = _SLOT_NAMES[slot]
        measured.append(Measured(self.line, label, nbytes, seconds, algbw, busbw))
        return _Half(
            seconds.value,
            algbw.value * GBPS,
            busbw.value * GBPS,
            None if wrong is None else int(wrong.value),
            None if error is None else error.value,
        )
