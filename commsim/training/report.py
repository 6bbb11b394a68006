"""Training results for people (rich tables) and scripts (JSON).

:func:`training_report` is what ``commsim run`` prints for a training
scenario: one row per step, then the best bucket size per strategy (and
node count), and for scaling runs a table of efficiency against node count
naming the link most to blame.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from commsim.errors import check_argument
from commsim.training.step import StepResult
from commsim.units import format_size, format_time

__all__ = ["best_steps", "scaling_table", "training_json", "training_report", "training_table"]

SCALING_BREAK = 0.9
"""Scaling efficiency below which a report says scaling breaks."""


def _link_text(step: StepResult) -> str:
    load = step.bottleneck
    if load is None:
        return "-"
    return f"{load.link} ({load.kind}) {load.utilisation:.0%}"


def _group_key(step: StepResult) -> tuple[int | None, str]:
    return step.nodes, step.label


def training_table(results: Sequence[StepResult], title: str | None = None) -> Table:
    """One row per step: iteration, compute, exposed communication, efficiency, busiest link."""
    scaling = any(r.nodes is not None for r in results)
    table = Table(title=title, title_justify="left")
    columns = [("nodes", "right"), ("GPUs", "right")] if scaling else [("GPUs", "right")]
    columns += [
        ("sync", "left"),
        ("overlap", "left"),
        ("bucket", "right"),
        ("buckets", "right"),
        ("iteration", "right"),
        ("compute", "right"),
        ("exposed comm", "right"),
        ("efficiency", "right"),
        ("busiest link over the step", "left"),
    ]
    for name, justify in columns:
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    previous = None
    for r in results:
        key = _group_key(r)
        cells = [str(r.nodes)] if scaling else []
        cells += [
            str(r.ranks),
            r.label,
            "yes" if r.overlap else "no",
            format_size(r.bucket_bytes),
            str(len(r.buckets)),
            format_time(r.iteration_s),
            format_time(r.compute_s),
            format_time(r.exposed_comm_s),
            f"{r.scaling_efficiency:.2%}",
            _link_text(r),
        ]
        if previous is not None and previous != key:
            table.add_section()
        table.add_row(*cells)
        previous = key
    return table


def best_steps(results: Sequence[StepResult]) -> list[StepResult]:
    """The fastest step per (node count, sync strategy), ties to the smaller bucket, in input order."""
    best: dict[tuple[int | None, str], StepResult] = {}
    check_argument(results, Sequence, "results", "a list of StepResult (from simulate_step)")
    for r in results:
        check_argument(r, StepResult, "results[...]", "a StepResult (from simulate_step)")
        key = _group_key(r)
        current = best.get(key)
        if current is None or (r.iteration_s, r.bucket_bytes) < (current.iteration_s, current.bucket_bytes):
            best[key] = r
    return list(best.values())


def _best_lines(results: Sequence[StepResult]) -> list[str]:
    lines = []
    for r in best_steps(results):
        where = f"{r.nodes} node(s), " if r.nodes is not None else ""
        mode = "with overlap" if r.overlap else "without overlap"
        lines.append(
            f"best bucket size for {where}{r.label}: {format_size(r.bucket_bytes)} {mode} "
            f"({format_time(r.iteration_s)} per iteration, exposed communication "
            f"{format_time(r.exposed_comm_s)}, {r.scaling_efficiency:.1%} of one GPU)"
        )
    return lines


def scaling_table(results: Sequence[StepResult]) -> Table:
    """Per node count and strategy, the best step's efficiency and the link most to blame."""
    table = Table(title="scaling (best bucket size per node count)", title_justify="left")
    for name in (
        "sync",
        "nodes",
        "GPUs",
        "best bucket",
        "iteration",
        "exposed comm",
        "efficiency",
        "busiest link over the step",
    ):
        table.add_column(name)
    for r in best_steps(results):
        table.add_row(
            r.label,
            str(r.nodes),
            str(r.ranks),
            f"{format_size(r.bucket_bytes)}{'' if r.overlap else ' (no overlap)'}",
            format_time(r.iteration_s),
            format_time(r.exposed_comm_s),
            f"{r.scaling_efficiency:.2%}",
            _link_text(r),
        )
    return table


def _busy_share(step: StepResult) -> float:
    """How much of the communication time the busiest link spends at full rate."""
    load = step.bottleneck
    return load.busy_s / step.comm_s if load is not None and step.comm_s > 0 else 0.0


def _break_lines(results: Sequence[StepResult]) -> list[str]:
    """For every (strategy, overlap, bucket) series, where efficiency first drops below :data:`SCALING_BREAK`.

    The busiest link is named with the share of the communication time it
    is busy: a small share means the collectives are latency-bound (many
    small steps), not limited by that link's bandwidth.
    """
    series: dict[tuple[str, bool, float], list[StepResult]] = {}
    for r in sorted(results, key=lambda s: s.nodes or 0):
        series.setdefault((r.label, r.overlap, r.bucket_bytes), []).append(r)
    lines, holding = [], []
    for (label, overlap, bucket), steps in series.items():
        mode = "with overlap" if overlap else "without overlap"
        broken = next((r for r in steps if r.scaling_efficiency < SCALING_BREAK), None)
        if broken is None:
            holding.append(f"{label}, {format_size(bucket)} buckets {mode}")
            continue
        share = _busy_share(broken)
        kind = "latency-bound" if share < 0.5 else "bandwidth-bound"
        lines.append(
            f"{label}, {format_size(bucket)} buckets {mode}: efficiency falls below {SCALING_BREAK:.0%} at "
            f"{broken.nodes} nodes ({broken.scaling_efficiency:.1%}); busiest link {_link_text(broken)}, "
            f"busy {share:.0%} of the communication time ({kind})"
        )
    if holding:
        most = max(r.nodes or 0 for r in results)
        lines.append(f"at least {SCALING_BREAK:.0%} up to {most} nodes: {'; '.join(holding)}")
    return lines


def training_report(results: Sequence[StepResult], title: str | None = None) -> RenderableType:
    """The full report: steps table, best bucket sizes, and for scaling runs the scaling table."""
    parts: list[RenderableType] = [training_table(results, title)]
    parts += [Text(line) for line in _best_lines(results)]
    if any(r.nodes is not None for r in results):
        parts.append(scaling_table(results))
        parts += [Text(line) for line in _break_lines(results)]
    return Group(*parts)


def training_json(results: Sequence[StepResult]) -> str:
    """A JSON list with one record per step."""
    return json.dumps([r.to_record() for r in results], indent=2)
