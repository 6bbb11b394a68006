"""Results as a rich table, JSON records or CSV rows."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence

from rich.table import Table

from commsim.results import Result
from commsim.units import format_bandwidth, format_size, format_time

__all__ = ["results_csv", "results_json", "results_table", "winners_table"]

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


def results_table(results: Sequence[Result], title: str | None = None) -> Table:
    """A rich table: one row per (algorithm, size), with the bottleneck named.

    The label column is shown only when some label differs from its algorithm.
    """
    labelled = any(r.label != r.algorithm for r in results)
    table = Table(title=title, title_justify="left")
    columns = [("strategy", "left")] if labelled else []
    columns += [
        ("algorithm", "left"),
        ("size", "right"),
        ("time", "right"),
        ("algbw", "right"),
        ("busbw", "right"),
        ("bottleneck", "left"),
    ]
    for name, justify in columns:
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
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
        table.add_row(*cells)
    return table


def winners_table(results: Sequence[Result]) -> Table:
    """The fastest result per size, with the runner-up and its time."""
    by_size: dict[float, list[Result]] = {}
    for r in results:
        by_size.setdefault(r.nbytes, []).append(r)
    table = Table(title="fastest per size", title_justify="left")
    for name in ("size", "fastest", "time", "busbw", "runner-up", "its time", "bottleneck of the fastest"):
        table.add_column(name)
    for nbytes in sorted(by_size):
        ranked = sorted(by_size[nbytes], key=lambda r: (r.time_s, r.label))
        best, second = ranked[0], (ranked[1] if len(ranked) > 1 else None)
        table.add_row(
            format_size(nbytes),
            best.label,
            format_time(best.time_s),
            format_bandwidth(best.busbw_Bps),
            second.label if second else "-",
            format_time(second.time_s) if second else "-",
            _bottleneck_text(best, most=1),
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
