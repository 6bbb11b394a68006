"""Results as a rich table, JSON records or CSV rows.

Tables fit the console they are printed on: numbers never wrap, names
(algorithms, link names) are never cut mid-word (a column is at least as
wide as its longest word), and text wraps at spaces. Every cell is escaped,
so labels and names from files are shown as written, never as markup.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence

from rich.console import Console, ConsoleOptions, RenderResult
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from commsim.results import Result
from commsim.units import format_bandwidth, format_size, format_time

__all__ = ["FittedTable", "fitted_table", "results_csv", "results_json", "results_table", "winners_table"]

_CSV_FIELDS = [
    "label",
    "algorithm",
    "collective",
    "topology",
    "ranks",
    "nbytes",
    "time_s",
    "algbw_Bps",
    "busbw_Bps",
    "analytic_time_s",
    "replay_time_s",
    "bottleneck",
]


def _bottleneck_text(result: Result, most: int = 2) -> str:
    loads = result.bottleneck
    text = ", ".join(load.describe() for load in loads[:most])
    if len(loads) > most:
        text += f" (+{len(loads) - most} more tied)"
    return text


class FittedTable:
    """A table of plain-text cells that fits the console it is printed on.

    Rendered as a rich :class:`~rich.table.Table` when every column fits at
    least its longest word (numbers whole); on a narrower console, as one
    block of ``column: value`` lines per row, wrapped at spaces, so that no
    name is ever cut mid-word.

    Parameters
    ----------
    columns : sequence of (name, kind)
        ``kind`` is ``"number"`` (right-aligned, never wrapped) or ``"text"``
        (left-aligned, wrapped at spaces).
    rows : sequence of sequences of str
        Plain text (escaped when rendered).
    title : str, optional
        Plain text (escaped when rendered).
    """

    def __init__(
        self, columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[str]], title: str | None = None
    ) -> None:
        self.columns = list(columns)
        self.rows = [[str(cell) for cell in row] for row in rows]
        self.title = title

    def _narrowest(self, index: int) -> int:
        name, kind = self.columns[index]
        cells = [row[index] for row in self.rows]
        if kind == "number":
            return max(map(len, [*cells, name]))
        return max(map(len, [w for cell in [*cells, name] for w in cell.split()]), default=1)

    def narrowest_width(self) -> int:
        """Columns the table needs without cutting a word (cells, padding and borders)."""
        return sum(self._narrowest(i) + 3 for i in range(len(self.columns))) + 1

    def table(self) -> Table:
        """The rich table (wraps text at spaces; numbers never wrap)."""
        table = Table(title=escape(self.title) if self.title else None, title_justify="left")
        for index, (name, kind) in enumerate(self.columns):
            if kind == "number":
                table.add_column(name, justify="right", no_wrap=True)
            else:
                table.add_column(name, justify="left", min_width=self._narrowest(index))
        for row in self.rows:
            table.add_row(*(escape(cell) for cell in row))
        return table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self.narrowest_width() <= options.max_width:
            yield self.table()
            return
        if self.title:
            yield Text(self.title, style="italic")
        for row in self.rows:
            lines = Text("")
            for (name, _), cell in zip(self.columns, row, strict=True):
                lines.append(f"{name}: ", style="bold")
                lines.append(f"{cell}\n")
            yield lines


def fitted_table(
    columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[str]], title: str | None = None
) -> FittedTable:
    """A :class:`FittedTable` (see there)."""
    return FittedTable(columns, rows, title)


def check_results(results: object, name: str = "results", records: bool = False) -> None:
    """Refuse what is not a list of :class:`Result` (or, with ``records``, of their record mappings).

    Raises
    ------
    commsim.errors.ArgumentError
        ``results: expected a list of Result (from simulate or run_file), got int 5``.
    """
    from collections.abc import Mapping

    from commsim.errors import check_argument

    expected = "a list of Result (from simulate or run_file)" + (" or of their records" if records else "")
    check_argument(results, (list, tuple), name, expected)
    kinds = (Result, Mapping) if records else Result
    items: Sequence[object] = results  # type: ignore[assignment]  # checked just above
    for index, item in enumerate(items):
        check_argument(item, kinds, f"{name}[{index}]", expected.replace("a list of ", "a "))


def results_table(results: Sequence[Result], title: str | None = None) -> FittedTable:
    """A rich table: one row per (algorithm, size), with the bottleneck named.

    The label column is shown only when some label differs from its algorithm.
    """
    check_results(results)
    labelled = any(r.label != r.algorithm for r in results)
    columns = [("strategy", "text")] if labelled else []
    columns += [
        ("algorithm", "text"),
        ("size", "number"),
        ("time", "number"),
        ("algbw", "number"),
        ("busbw", "number"),
        ("bottleneck", "text"),
    ]
    rows = []
    for r in results:
        cells = [r.label] if labelled else []
        cells += [
            r.algorithm,
            format_size(r.nbytes),
            format_time(r.time_s),
            format_bandwidth(r.algbw_Bps),
            format_bandwidth(r.busbw_Bps),
            _bottleneck_text(r),
        ]
        rows.append(cells)
    return fitted_table(columns, rows, title)


def winners_table(results: Sequence[Result]) -> FittedTable:
    """The fastest result per size, with the runner-up and its time."""
    by_size: dict[float, list[Result]] = {}
    for r in results:
        by_size.setdefault(r.nbytes, []).append(r)
    columns = [
        ("size", "number"),
        ("fastest", "text"),
        ("time", "number"),
        ("busbw", "number"),
        ("runner-up", "text"),
        ("its time", "number"),
        ("bottleneck of the fastest", "text"),
    ]
    rows = []
    for nbytes in sorted(by_size):
        ranked = sorted(by_size[nbytes], key=lambda r: (r.time_s, r.label))
        best, second = ranked[0], (ranked[1] if len(ranked) > 1 else None)
        rows.append(
            [
                format_size(nbytes),
                best.label,
                format_time(best.time_s),
                format_bandwidth(best.busbw_Bps),
                second.label if second else "-",
                format_time(second.time_s) if second else "-",
                _bottleneck_text(best, most=1),
            ]
        )
    return fitted_table(columns, rows, "fastest per size")


def results_json(results: Sequence[Result]) -> str:
    """A JSON list with one record per result."""
    return json.dumps([r.to_record() for r in results], indent=2)


def results_csv(results: Sequence[Result]) -> str:
    """CSV with a header; the bottleneck column lists ``link:utilisation`` pairs."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=_CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for r in results:
        record = r.to_record()
        record["bottleneck"] = ";".join(f"{b['link']}:{b['utilisation']:.4f}" for b in record["bottleneck"])
        writer.writerow(record)
    return buffer.getvalue()
