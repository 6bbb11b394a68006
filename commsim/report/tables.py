"""Results as a rich table, JSON records or CSV rows."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence

from rich.table import Table

from commsim.results import Result
from commsim.units import format_bandwidth, format_size, format_time

__all__ = ["results_csv", "results_json", "results_table"]

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
    "bottleneck",
]


def _bottleneck_text(result: Result, most: int = 2) -> str:
    loads = result.bottleneck
    text = ", ".join(load.describe() for load in loads[:most])
    if len(loads) > most:
        text += f" (+{len(loads) - most} more tied)"
    return text


def results_table(results: Sequence[Result], title: str | None = None) -> Table:
    """A rich table: one row per (algorithm, size), with the bottleneck named."""
    table = Table(title=title, title_justify="left")
    for name, justify in (
        ("strategy", "left"),
        ("algorithm", "left"),
        ("size", "right"),
        ("time", "right"),
        ("algbw", "right"),
        ("busbw", "right"),
        ("bottleneck", "left"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for r in results:
        table.add_row(
            r.label,
            r.algorithm,
            format_size(r.nbytes),
            format_time(r.time_s),
            format_bandwidth(r.algbw_Bps),
            format_bandwidth(r.busbw_Bps),
            _bottleneck_text(r),
        )
    return table


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
