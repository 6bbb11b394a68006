"""Result rows that are not whole lines of their table, read by
:class:`~commsim.calibrate.parser_text.TextReader` through :class:`PartialRows`.

A row that does not match its column header is a :class:`~commsim.errors.ParseError`, except in
these cases, each with a warning:

* a truncated last row of a table (a run killed mid-line, or a page cut mid-number) is dropped,
  or kept when its out-of-place half is whole;
* a row split in two (or more) by interleaved lines (``NCCL INFO``, warnings, MPI help text) is
  rejoined when the start of the row and the fragments after it fit the header's columns exactly,
  field for field; only splits between whole fields are rejoined (a number cut in two is not),
  and pieces that do not fit stay a ParseError naming the row's line;
* rows printing only the header's out-of-place half (the in-place columns left empty, as some
  pages and old tools print) are read as that half;
* result rows before any column header (an excerpt that starts inside the table) are read in the
  standard layout their fields identify (:mod:`~commsim.calibrate.parser_headerless`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from commsim.calibrate.parser import NcclTestsRow
from commsim.calibrate.parser_bandwidth import Measured
from commsim.calibrate.parser_checks import line_spans
from commsim.calibrate.parser_common import ColumnHeader, RunData
from commsim.calibrate.parser_headerless import headerless_layout
from commsim.calibrate.parser_table import (
    Column,
    Layout,
    boundary,
    check_plausible,
    fits,
    read_row,
    width_message,
)
from commsim.errors import ParseError

__all__ = ["PartialRows", "Pending", "read_cut_row"]


_TWO_DECIMALS = re.compile(r"\d\.\d\d$")
"""A bandwidth as nccl-tests prints it (``%6.2f``): a cut inside it loses the decimals."""


def read_cut_row(
    number: int, tokens: list[str], layout: Layout, fail: Callable[[str, int], ParseError]
) -> tuple[NcclTestsRow, list[Measured]] | None:
    """A row cut short (a table's last, the run killed or the page cut), if its out-of-place half is whole.

    The fields must be exactly the header's first columns, each of its kind,
    up to at least the out-of-place busbw, printed whole: a field after it, or
    the two decimals nccl-tests prints it with (``%6.2f``), so that a cut
    inside it (``47`` or ``479.5`` of ``479.50``) is not read as a busbw (a cut in-place
    bandwidth is left out, and with it the in-place half, read whole or not at all). The
    in-place half and ``#wrong`` they lack stay unknown. None when they are
    not, or do not read.
    """
    head = boundary(layout.columns, len(tokens))
    part = Layout(layout.line, layout.columns[:head], layout.time_per_s) if head else None
    if part is None or not fits(tokens, part.columns):
        return None
    if not all(part.has("oop", name) for name in ("time", "algbw", "busbw")):
        return None
    last = part.columns[-1]
    if last.name in ("algbw", "busbw") and _looks_cut(tokens[-1]):
        if (last.slot, last.name) == ("oop", "busbw"):
            return None
        return read_cut_row(number, tokens[:-1], layout, fail)  # cut inside an in-place bandwidth
    check_plausible(number, tokens, part, fail)  # a cut row is forgiven, a corrupt one is not
    try:
        return read_row(number, tokens, part, fail)
    except ParseError:
        return None


def _looks_cut(token: str) -> bool:
    """A bandwidth nccl-tests would have printed otherwise: ``%6.2f`` gives values below 1000 two
    decimals (``231.59``; ``231`` is a cut), while larger ones fill the six places with fewer
    (``1120.3``, ``19517``), so those are read as whole."""
    if _TWO_DECIMALS.search(token):
        return False
    try:
        return float(token) < 1000
    except ValueError:
        return True


class Pending(NamedTuple):
    """The start of a result row with too few fields, waiting for the rest of the row.

    ``strict`` is True when the start has the shape of a row (a row after it
    is an error, and the table's last is dropped); a shorter start (two or
    three fields) is other text after all if no fragment completes it.
    """

    lines: tuple[int, ...]
    tokens: list[str]
    strict: bool
    text: str
    cut_field: ParseError | None = None  # a whole-width row whose last field does not read


class PartialRows:
    """The part of :class:`~commsim.calibrate.parser_text.TextReader` that reads rows cut short,
    split, printed by half, or without a column header; the reader holds the state it uses."""

    data: RunData
    layout: Layout | None
    in_table: bool
    skipped: list[tuple[int, str]]
    pending: Pending | None
    half_rows: list[int]
    last_row: int | None
    headerless: list[tuple[int, list[str]]]
    units_per_s: float | None

    def _row_start(self, tokens: list[str]) -> bool:
        """Whether a short line (2 or 3 fields) inside a table fits the first columns of its header."""
        if self.layout is None or not self.in_table or not 2 <= len(tokens) < self.layout.width:
            return False
        head = boundary(self.layout.columns, len(tokens))
        return head is not None and fits(tokens, self.layout.columns[:head])

    def _continued(self, number: int, tokens: list[str]) -> bool:
        """Join ``tokens`` to the pending row start if they are its next whole fields; True if joined."""
        pending, layout = self.pending, self.layout
        assert pending is not None and layout is not None
        start = boundary(layout.columns, len(pending.tokens))
        if start is None or not fits(pending.tokens, layout.columns[:start]):
            return False
        rest = layout.columns[start:]
        end = boundary(rest, len(tokens))
        if end is None or not fits(tokens, rest[:end]):
            return False
        lines, joined = (*pending.lines, number), pending.tokens + tokens
        if len(joined) < layout.width:
            self.pending = pending._replace(lines=lines, tokens=joined)
            return True
        self.pending = None
        row, measured = read_row(lines[0], joined, layout, self._fail)
        self.data.rows.append(row)
        self.last_row = lines[-1]
        self.data.measured.extend(measured)
        self.data.warnings.append(
            f"lines {', '.join(map(str, lines))}: one result row split by other lines was rejoined "
            f"({layout.width} fields, as the column header at line {layout.line} announces)"
        )
        return True

    def _drop_start(self) -> None:
        """A short pending row start that nothing completed was other text after all."""
        if self.pending is not None and not self.pending.strict:
            self.skipped = sorted([*self.skipped, (self.pending.lines[0], self.pending.text)])
            self.pending = None

    def _out_of_place_columns(self) -> list[Column] | None:
        """The header's columns before its in-place half, None when it has no in-place half."""
        assert self.layout is not None, "only inside a table"
        columns = self.layout.columns
        half = next((i for i, c in enumerate(columns) if c.slot == "ip"), None)
        return None if half is None else list(columns[:half])

    def _half_width(self) -> int | None:
        """The number of fields of the header's out-of-place half, None when it has no in-place half."""
        columns = self._out_of_place_columns()
        return None if columns is None else sum(c.width for c in columns)

    def _out_of_place_half(self, pending: Pending) -> None:
        """A short row followed by another row: read when it is exactly the header's out-of-place
        half (the in-place columns left empty, as some pages and old tools print), else refused."""
        assert self.layout is not None, "a row is pending only inside a table"
        read = None
        if self._half_width() == len(pending.tokens):
            read = read_cut_row(pending.lines[0], pending.tokens, self.layout, self._fail)
        if read is None:
            raise self._fail(width_message(pending.tokens, self.layout), pending.lines[0])
        self.data.rows.append(read[0])
        self.data.measured.extend(read[1])
        self.last_row = pending.lines[0]
        self.half_rows.append(pending.lines[0])
        self.pending = None

    def _half_rows_warning(self) -> None:
        if not self.half_rows or self.layout is None:
            return
        labels = " ".join(c.label for c in self._out_of_place_columns() or [])
        self.data.warnings.append(
            f"{line_spans(self.half_rows)}: result rows print only the out-of-place half of the header at "
            f"line {self.layout.line} ({labels}); their out-of-place figures are read, the in-place "
            "ones are missing"
        )
        self.half_rows = []

    def _truncated_last_row(self, pending: Pending) -> None:
        """The table's last row, cut short: kept when its out-of-place half is whole, else dropped."""
        assert self.layout is not None, "a row is pending only inside a table"
        line, width = pending.lines[0], self.layout.width
        found = str(len(pending.tokens))
        if pending.cut_field is not None:
            found = f"cut inside its last field {pending.text.split()[-1]!r}: {found}"
        read = read_cut_row(line, pending.tokens, self.layout, self._fail)
        if read is None:
            self.data.dropped_row = (
                f"line {line}: the last row of the table is truncated ({found} of {width} fields) "
                "and was dropped"
            )
            self.data.warnings.append(self.data.dropped_row)
            return
        self.data.rows.append(read[0])
        self.data.measured.extend(read[1])
        whole = "out-of-place time, algbw and busbw"
        if read[0].ip_time_s is not None:
            whole = "out-of-place and in-place times and bandwidths"
        self.data.warnings.append(
            f"line {line}: the last row of the table is truncated ({found} of {width} fields); its "
            f"{whole} are read, the rest is missing"
        )

    def _fail(self, message: str, line: int) -> ParseError:
        return ParseError(message, source=self.data.source, line=line)

    def _read_headerless(self) -> None:
        """Rows before any column header (an excerpt that starts inside the table), in a standard layout."""
        rows, self.headerless = self.headerless, []
        layout, how = headerless_layout(rows, self.units_per_s, self._fail)
        self.layout = layout
        names = frozenset(column.name for column in layout.columns)
        self.data.column_header = ColumnHeader(
            rows[0][0], names, headerless=True, per_rank_count=layout.time_per_s != 1e3
        )
        for number, tokens in rows:
            read = self._headerless_row(number, tokens, layout, last=number == rows[-1][0])
            if read is not None:
                self.data.rows.append(read[0])
                self.data.measured.extend(read[1])
        self.last_row = rows[-1][0]
        labels = " ".join(column.label for column in layout.columns)
        self.data.warnings.append(
            f"{line_spans([n for n, _ in rows])}: result rows without a column header (the text starts "
            f"inside the table?) were read as nccl-tests' standard {layout.width}-field rows ({labels}), "
            f"times {how}"
        )

    def _headerless_row(
        self, number: int, tokens: list[str], layout: Layout, last: bool
    ) -> tuple[NcclTestsRow, list[Measured]] | None:
        """One header-less row; the last may be cut short (as under a header: see _truncated_last_row)."""
        if len(tokens) == layout.width:
            return read_row(number, tokens, layout, self._fail)
        if not last:
            raise self._fail(
                f"result row has {len(tokens)} fields where the rows above it, without a column header, "
                f"have {layout.width}; the row is truncated or garbled",
                number,
            )
        self._truncated_last_row(Pending((number,), tokens, strict=True, text=" ".join(tokens)))
        return None
