"""Read the text of one nccl-tests run (every format since 2017) into RunData.

Lines are classified one at a time: the run header, the device list, version
lines, the column header (which fixes the table's layout), result rows, and
the footer. A result row is told from other text by its shape (the first
field an integer and at least two thirds of the fields numbers, ``N/A``,
type or reduction names); a line of another shape inside a table (MPI help
text, NCCL INFO, warnings) is skipped with a warning naming it, except
NCCL's INFO lines and OpenMPI's help-aggregation notes after the table's
last row (``comm 0x... - Destroy COMPLETE`` as the communicators are
destroyed), which end the run. The units line (``(B) (elements) ...``) is
nccl-tests' own with or without its ``#`` (extracts of the table drop it).
A row that does not match its column header is a
:class:`~commsim.errors.ParseError`, except a row cut short, split by
interleaved lines, printed by its out-of-place half only, or read before any
column header: :mod:`~commsim.calibrate.parser_partial_rows`, each with a
warning; a row fragment whose start is missing (it fits the last columns of
the header but cannot begin a row: its first field is no size) is skipped.

How a log is cut into runs, each read by :class:`TextReader`, is
:mod:`~commsim.calibrate.parser_runs`; how the lines other than result rows
(run header, device list, versions, footer) are told and read is
:mod:`~commsim.calibrate.parser_run_lines`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from commsim.calibrate.parser_bandwidth import printed
from commsim.calibrate.parser_checks import line_spans
from commsim.calibrate.parser_common import ColumnHeader, RunData
from commsim.calibrate.parser_partial_rows import PartialRows, Pending, read_cut_row
from commsim.calibrate.parser_run_lines import (
    AVG_BUSBW,
    COMPILED_WITH,
    DEVICE,
    NCCL_LOG,
    OUT_OF_BOUNDS,
    RUN_HEADER,
    TESTS_VERSION,
    UNITS,
    is_column_header,
    read_device,
    read_run_header,
    scan_info,
)
from commsim.calibrate.parser_table import (
    Layout,
    fits,
    looks_like_row,
    read_layout,
    read_row,
    with_empty_columns,
    without_start,
)
from commsim.calibrate.settings_lines import decode_version_code
from commsim.errors import ParseError

__all__ = ["TextReader", "looks_like_row"]

_NCCL_INFO = re.compile(r"^\S+:\d+:\d+\s+\[\d+\]\s+NCCL INFO\s")
"""NCCL's own INFO lines (``host:pid:tid [dev] NCCL INFO ...``)."""
_TEARDOWN = re.compile(
    r"^\S+:\d+:\d+\s+\[\d+\]\s+NCCL INFO\s"  # NCCL's own lines ("comm 0x... - Destroy COMPLETE")
    r"|^(?:\[[^\]\s]+:\d+\]\s+)?(?:\d+ more process(?:es)? ha(?:ve|s) sent help message"  # OpenMPI
    r"|Set MCA parameter \"orte_base_help_aggregate\")"
)
"""NCCL's and OpenMPI's routine end-of-run lines: after a table's last row they are no warning.

A launcher's report of a failure (``srun: error: ... Exited with exit code 1``) is not one of them:
it stays a warning."""
_FENCE = re.compile(r"^\s*(?:```|~~~)[\w+-]*\s*$")
"""A Markdown code fence (```, ```console ...): the page's markup around a pasted log, not a line of it,
so no warning when one closes the block after a table without its footer (log 191)."""


class TextReader(PartialRows):
    """A line-by-line state machine over the text of one run."""

    def __init__(self, source: str | None) -> None:
        self.data = RunData(source=source)
        self.layout: Layout | None = None
        self.in_table = False
        self.library_version: str | None = None
        self.skipped: list[tuple[int, str]] = []
        self.orphans: list[int] = []  # result rows after a table's end, before another header
        self.pending: Pending | None = None
        self.half_rows: list[int] = []  # rows printing only their out-of-place half
        self.last_row: int | None = None  # line of the current table's last row
        self.headerless: list[tuple[int, list[str]]] = []  # rows before any column header, read at its end
        self.units_per_s: float | None = None  # from a units line before any column header
        self.handlers: list[tuple[re.Pattern[str], Callable[[int, re.Match[str]], None]]] = [
            (DEVICE, self._device),
            (RUN_HEADER, self._run_header),
            (TESTS_VERSION, self._tests_version),
            (COMPILED_WITH, self._compiled_with),
            (UNITS, self._units),
            (AVG_BUSBW, self._avg_busbw),
            (OUT_OF_BOUNDS, self._out_of_bounds),
        ]

    def feed(self, number: int, line: str) -> None:
        """Read one cleaned line of the run (``number``: its line in the file)."""
        text = line.strip()
        if not text:
            return
        scan_info(self.data, number, text)
        if NCCL_LOG.match(text):
            self._not_a_row(number, text)
            return
        for pattern, handler in self.handlers:
            match = pattern.match(text)
            if match:
                handler(number, match)
                return
        if is_column_header(text):
            self._end_table()
            self.layout = read_layout(number, text.lstrip("#").split(), self._fail)
            names = frozenset(column.name for column in self.layout.columns)
            in_place_wrong = self.layout.has("ip", "wrong") or not self.layout.has("ip", "time")
            self.data.column_header = ColumnHeader(
                number, names, in_place_wrong=in_place_wrong, per_rank_count=self.layout.time_per_s != 1e3
            )
            self.in_table, self.last_row = True, None
        elif not text.startswith("#"):
            self._table_line(number, text, text.split())
        elif self.in_table and self.data.hashed_row is None and self._hashed_row(text):
            self.data.hashed_row = number

    def _hashed_row(self, text: str) -> bool:
        """Whether a '#' line of the table is a whole result row behind the '#' (a page that printed
        its rows as comments), not one of nccl-tests' own '#' lines."""
        tokens = text.lstrip("#").split()
        return (
            self.layout is not None and len(tokens) == self.layout.width and fits(tokens, self.layout.columns)
        )

    def finish(self) -> None:
        """End of the run's text: close the table; warn of result rows outside any table."""
        self._end_table()
        if self.orphans:
            count = len(self.orphans)
            self.data.warnings.append(
                f"{line_spans(self.orphans)}: {count} result row{'s' if count > 1 else ''} after the "
                "end of a table (its footer) and before any column header were skipped; the output "
                "of several runs may be interleaved in this log"
            )

    def _not_a_row(self, number: int, text: str) -> None:
        if self.in_table and not _FENCE.match(text):
            self.skipped.append((number, text))

    def _table_line(self, number: int, text: str, tokens: list[str]) -> None:
        """A line that is no header, footer or NCCL log line: a row, a piece of one, or other text."""
        if self.pending is not None and self._continued(number, tokens):
            return
        if looks_like_row(tokens):
            self._row(number, tokens)
        elif self.pending is None and self._row_start(tokens):
            self.pending = Pending((number,), tokens, strict=False, text=text)
        else:
            self._not_a_row(number, text)

    def _end_table(self) -> None:
        if self.headerless:
            self._read_headerless()
        self._drop_start()
        if self.pending is None:  # no row is cut short at the end: what follows the last row may be teardown
            self.skipped = [(n, t) for n, t in self.skipped if not self._teardown(n, t)]
        if self.data.failure is not None:  # the failure and what follows it: warned as the failure
            self.skipped = [(n, t) for n, t in self.skipped if n < self.data.failure[0]]
        if self.skipped:
            lines = ", ".join(str(n) for n, _ in self.skipped[:6]) + (
                ", ..." if len(self.skipped) > 6 else ""
            )
            first = self.skipped[0][1][:80]
            self.data.warnings.append(
                f"line{'s' if len(self.skipped) > 1 else ''} {lines}: not result rows inside the table "
                f"(skipped); the first reads {first!r}"
            )
        if self.pending is not None and self.half_rows and self._half_width() == len(self.pending.tokens):
            self._out_of_place_half(self.pending)  # the last of the out-of-place-only rows, not a cut one
        elif self.pending is not None:
            self._truncated_last_row(self.pending)
        self._half_rows_warning()
        self.skipped, self.pending, self.in_table = [], None, False

    def _teardown(self, number: int, text: str) -> bool:
        """Whether a skipped line is NCCL's own INFO line before the table's first row (NCCL <= 2.7's
        'Launch mode Parallel' on the first call), or NCCL's or the launcher's teardown after its last."""
        header = self.layout.line if self.layout is not None else 0
        first = next((row.line for row in self.data.rows if row.line > header), None)
        if first is None or number < first:
            return bool(_NCCL_INFO.match(text))
        return self.last_row is not None and number > self.last_row and bool(_TEARDOWN.match(text))

    def _device(self, number: int, match: re.Match[str]) -> None:
        self.data.devices.append(read_device(number, match))

    def _run_header(self, number: int, match: re.Match[str]) -> None:
        if "nThread" in self.data.header:
            self.data.warnings.append(
                f"line {number}: a second run header before any result; were several "
                "non-MPI nccl-tests processes started by mpirun?"
            )
        self.data.header.update(read_run_header(match.string))
        self.data.header_line = (number, match.string)

    def _tests_version(self, number: int, match: re.Match[str]) -> None:
        tests, headers, library = match.groups()
        self.data.header.update(
            {"nccl-tests version": tests, "nccl-headers": int(headers), "nccl-library": int(library)}
        )
        self.library_version = decode_version_code(int(library))

    def _compiled_with(self, number: int, match: re.Match[str]) -> None:
        self.data.header["compiled with NCCL"] = match.group(1)

    def _units(self, number: int, match: re.Match[str]) -> None:
        units = match.string.split()
        per_s = 1e3 if "(ms)" in units else 1e6 if "(us)" in units else None
        if self.layout is not None and per_s is not None:
            self.layout.time_per_s = per_s
        elif self.layout is None:
            self.units_per_s = per_s

    def _avg_busbw(self, number: int, match: re.Match[str]) -> None:
        self._end_table()
        try:
            self.data.avg_busbw = printed(match.group(1))
        except ValueError:
            found = match.group(1)
            raise self._fail(f"'Avg bus bandwidth' should be a number, found {found!r}", number) from None

    def _out_of_bounds(self, number: int, match: re.Match[str]) -> None:
        self._end_table()
        self.data.out_of_bounds = int(match.group(1))
        self.data.out_of_bounds_line = number

    def _row(self, number: int, tokens: list[str]) -> None:
        if self.layout is None:
            if len(tokens) >= 8 and tokens[0].isdigit() and tokens[1].isdigit():
                self.headerless.append((number, tokens))
            return
        if not self.in_table:
            self.orphans.append(number)
            return
        self._drop_start()
        if self.pending is not None and self.pending.cut_field is not None:
            raise self.pending.cut_field  # not the table's last row: a garbled field, not a cut one
        if self.pending is not None:
            self._out_of_place_half(self.pending)
        layout = self.layout
        if len(tokens) < layout.width:
            blanks = with_empty_columns(tokens, layout)
            if blanks is not None:
                layout = blanks
            elif without_start(tokens, layout.columns):
                self.data.warnings.append(
                    f"line {number}: a fragment of a result row ({len(tokens)} fields that fit the last "
                    f"columns of the header at line {self.layout.line}) without the start of its row "
                    "was skipped"
                )
                return
            else:
                self.pending = Pending((number,), tokens, strict=True, text=" ".join(tokens))
                return
        try:
            row, measured = read_row(number, tokens, layout, self._fail)
        except ParseError as error:
            if not (len(tokens) == layout.width and fits(tokens[:-1], layout.columns[:-1])):
                raise
            if read_cut_row(number, tokens[:-1], layout, self._fail) is None:
                raise  # a field before the last is wrong (a negative time): no cut explains it
            # every field but the last reads: the text may end inside it (a page cut mid-number)
            self.pending = Pending(
                (number,), tokens[:-1], strict=True, text=" ".join(tokens), cut_field=error
            )
            return
        self.data.rows.append(row)
        self.last_row = number
        self.data.measured.extend(measured)
