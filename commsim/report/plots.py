"""Plots of results: bandwidth against size, link timelines, utilisation heat maps.

matplotlib is imported when a plot is made, never at import time, so the
CLI starts fast. Figures are plain :class:`matplotlib.figure.Figure`
objects, not pyplot figures: nothing is registered with pyplot, nothing
needs closing, and no backend is switched under a notebook's feet. Each
function returns its Figure, after saving it to ``path`` when one is given
(the suffix picks the format: ``.png``, ``.svg`` or ``.pdf``).
:func:`plot_validation` keeps its older contract and returns the written path.
Making, saving and the shared axes are :mod:`commsim.report.figures`'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from commsim.report.activity import binned_utilisation, run_parts
from commsim.report.figures import (
    FORMATS,
    PlotError,
    check_count,
    check_output,
    figure_png,
    finish_figure,
    new_figure,
    place_legend,
    save_figure,
    size_axis,
    time_unit,
    value_axis,
)
from commsim.results import Result
from commsim.units import format_size, format_time

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from commsim.calibrate.parser import NcclTestsLog

__all__ = [
    "FORMATS",
    "PlotError",
    "check_output",
    "figure_png",
    "plot_busbw",
    "plot_timeline",
    "plot_utilisation_heatmap",
    "plot_validation",
    "save_figure",
    "validation_figure",
]

BOTTLENECK_COLOUR = "tab:red"
LINK_COLOUR = "tab:blue"


# -- busbw (or time) against size -------------------------------------------------
def _record(item: Result | Mapping[str, Any]) -> tuple[str, float, float, float]:
    """(label, nbytes, time_s, busbw_Bps) of a Result or a ``to_record()`` mapping."""
    if isinstance(item, Result):
        return item.label, item.nbytes, item.time_s, item.busbw_Bps
    try:
        return str(item["label"]), float(item["nbytes"]), float(item["time_s"]), float(item["busbw_Bps"])
    except KeyError as exc:
        raise PlotError(f"result record {dict(item)!r} lacks {exc.args[0]!r}") from None


def _measured(measured: NcclTestsLog | str | Path) -> NcclTestsLog:
    from commsim.calibrate.parser import NcclTestsLog
    from commsim.errors import check_argument

    check_argument(
        measured, (NcclTestsLog, str, Path), "measured", "an nccl-tests log's path or NcclTestsLog"
    )
    if isinstance(measured, str | Path):
        from commsim.calibrate import load_nccl_tests

        return load_nccl_tests(measured)
    return measured


def plot_busbw(
    results: Sequence[Result] | Sequence[Mapping[str, Any]],
    measured: NcclTestsLog | str | Path | None = None,
    path: str | Path | None = None,
    *,
    metric: str = "busbw",
    title: str | None = None,
) -> Figure:
    """Bus bandwidth (or time) against message size, one line per algorithm label.

    Parameters
    ----------
    results : sequence of Result or of ``Result.to_record()`` mappings
        Several sizes per label; lines follow the labels' first appearance.
    measured : NcclTestsLog or path, optional
        An nccl-tests log (see :func:`commsim.calibrate.load_nccl_tests`)
        whose out-of-place figures are drawn as points.
    path : str or Path, optional
        Where to save the figure (``.png``, ``.svg``, ``.pdf``).
    metric : {"busbw", "time"}
        Bus bandwidth in GB/s, or time in microseconds (nccl-tests' units);
        both axes are logarithmic.
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    from commsim.report.tables import check_results

    if metric not in ("busbw", "time"):
        raise PlotError(f"unknown metric {metric!r}; valid: busbw, time")
    check_results(results, records=True)
    rows = [_record(r) for r in results]
    if not rows and measured is None:
        raise PlotError("nothing to plot: no results and no measurements")
    lines: dict[str, list[tuple[float, float, float]]] = {}
    for label, nbytes, time_s, busbw in rows:
        lines.setdefault(label, []).append((nbytes, time_s, busbw))
    fig, (ax,) = new_figure(8, 4.5)
    sizes = [nbytes for _, nbytes, _, _ in rows]
    _plot_lines(ax, lines, metric)
    if measured is not None:
        sizes += _plot_measured(ax, _measured(measured), metric)
    size_axis(ax, sizes)
    value_axis(ax, "bus bandwidth (GB/s)" if metric == "busbw" else "time (us)")
    if title is None and results and isinstance(results[0], Result):
        title = _case_title(results[0])
    if title:
        ax.set_title(title, fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    place_legend(ax)
    fig.tight_layout()
    return finish_figure(fig, path)


def _plot_lines(ax: Axes, lines: Mapping[str, list[tuple[float, float, float]]], metric: str) -> None:
    """One line per label of (nbytes, time_s, busbw_Bps) points, in GB/s or us, a marker each."""
    markers = "os^vDP*Xhd<>"
    for i, (label, points) in enumerate(lines.items()):
        points.sort()
        y = [p[2] / 1e9 if metric == "busbw" else p[1] * 1e6 for p in points]
        ax.plot([p[0] for p in points], y, marker=markers[i % len(markers)], ms=4, label=label)


def _plot_measured(ax: Axes, log: NcclTestsLog, metric: str) -> Sequence[float]:
    """A log's out-of-place figures as black crosses; returns the sizes drawn (bytes)."""
    x = [r.nbytes for r in log.rows if r.nbytes > 0]
    y = [r.oop_busbw_Bps / 1e9 if metric == "busbw" else r.oop_time_s * 1e6 for r in log.rows if r.nbytes > 0]
    ax.plot(x, y, "kx", ms=6, label=f"measured ({Path(str(log.source or 'log')).name})")
    return x


def _case_title(first: Result) -> str:
    """The default title: the first result's collective, machine and ranks."""
    return f"{first.collective.value} on {first.topology}, {first.ranks} ranks"


# -- timeline of link busy intervals -----------------------------------------------
def _merged(starts: np.ndarray, ends: np.ndarray, gap_s: float) -> list[tuple[float, float]]:
    """Busy intervals with gaps shorter than ``gap_s`` closed: (start, width) pairs."""
    if not starts.size:
        return []
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], np.maximum.accumulate(ends[order])
    split = np.flatnonzero(starts[1:] - ends[:-1] > gap_s) + 1
    first = np.concatenate([[0], split])
    last = np.concatenate([split - 1, [starts.size - 1]])
    return list(zip(starts[first].tolist(), (ends[last] - starts[first]).tolist()))


def _timeline_panel(ax: Axes, result: Result, max_links: int, factor: float) -> None:
    run = run_parts(result)
    rec = run.record
    shown = result.links[:max_links]
    hot = {load.link for load in result.bottleneck}
    by_name = {link.name: link.index for link in run.topology.links}
    gap_s = rec.makespan_s / 4000  # below a pixel: merged for drawing
    for row, load in enumerate(shown):
        mine = rec.interval_link == by_name[load.link]
        spans = _merged(rec.interval_start_s[mine], rec.interval_end_s[mine], gap_s)
        colour = BOTTLENECK_COLOUR if load.link in hot else LINK_COLOUR
        ax.broken_barh([(s / factor, w / factor) for s, w in spans], (row - 0.4, 0.8), color=colour)
    ax.set_yticks(range(len(shown)), [f"{load.link} ({load.utilisation:.0%})" for load in shown], fontsize=7)
    ax.set_ylim(len(shown) - 0.5, -0.5)
    more = len(result.links) - len(shown)
    suffix = f"; {len(shown)} busiest of {len(result.links)} links" if more > 0 else ""
    ax.set_title(
        f"{result.label}: {result.collective.value} of {format_size(result.nbytes)} on {result.topology}, "
        f"{format_time(result.time_s)}{suffix}",
        fontsize=9,
        loc="left",
    )
    ax.set_ylabel("link (full-rate share of run)", fontsize=8)
    ax.grid(True, axis="x", alpha=0.3)


def plot_timeline(
    results: Result | Sequence[Result],
    path: str | Path | None = None,
    *,
    max_links: int = 24,
) -> Figure:
    """Gantt chart of when each link carried data; the bottleneck links in red.

    Several results are drawn as panels over one time axis, so their
    lengths compare at a glance (15 ms against 80 ms).

    Parameters
    ----------
    results : Result or sequence of Result
        Results with their replay record (from :func:`commsim.api.simulate`).
    path : str or Path, optional
        Where to save the figure.
    max_links : int
        Most links per panel: the busiest (label: share of the run each
        link needed at full rate, as in the results table).

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.patches import Patch

    from commsim.report.tables import check_results

    runs = [results] if isinstance(results, Result) else results
    check_results(runs)
    max_links = check_count(max_links, "max_links")
    if path is not None:
        check_output(path)  # before drawing
    runs = list(runs)
    if not runs:
        raise PlotError("nothing to plot: no results")
    rows = [min(len(r.links), max_links) for r in runs]
    makespan = max(run_parts(r).record.makespan_s for r in runs)
    factor, unit = time_unit(makespan)
    height = sum(0.9 + 0.2 * max(n, 2) for n in rows) + 0.9
    fig, axes = new_figure(
        9, height, rows=len(runs), sharex=True, height_ratios=[max(n, 2) + 3 for n in rows]
    )
    for ax, result in zip(axes, runs):
        _timeline_panel(ax, result, max_links, factor)
    axes[-1].set_xlabel(f"time ({unit})")
    axes[0].set_xlim(0, makespan / factor * 1.02 if makespan > 0 else 1)
    fig.legend(
        handles=[
            Patch(color=BOTTLENECK_COLOUR, label="bottleneck link"),
            Patch(color=LINK_COLOUR, label="other link"),
        ],
        loc="lower right",
        ncols=2,
        frameon=False,
        fontsize=8,
    )
    fig.tight_layout(rect=(0.0, 0.35 / height, 1.0, 1.0))  # the legend below the time axis, clear of titles
    return finish_figure(fig, path)


# -- utilisation heat map ----------------------------------------------------------
def plot_utilisation_heatmap(
    result: Result,
    path: str | Path | None = None,
    *,
    bins: int = 100,
    max_links: int = 64,
) -> Figure:
    """Links against time bins, coloured by the share of each link's capacity in use.

    Rows are the links that carried data (the ``max_links`` busiest), in the
    topology's link order; the value is the bytes a link carried in a bin
    over what it could carry (rates as the replay shared them, see
    :mod:`commsim.report.activity`).

    Returns
    -------
    matplotlib.figure.Figure
    """
    from commsim.errors import check_argument

    check_argument(result, Result, "result", "one Result (from simulate or run_file)")
    bins, max_links = check_count(bins, "bins"), check_count(max_links, "max_links")
    if path is not None:
        check_output(path)  # before drawing
    run = run_parts(result)
    makespan = run.record.makespan_s
    if not result.links or makespan <= 0:
        raise PlotError(f"nothing to plot: {result.label!r} moved no data")
    by_name = {link.name: link.index for link in run.topology.links}
    links = np.sort(np.array([by_name[load.link] for load in result.links[:max_links]], np.int64))
    edges = np.linspace(0.0, makespan, bins + 1)
    utilisation = binned_utilisation(run, links, edges)
    factor, unit = time_unit(makespan)
    fig, (ax,) = new_figure(9, 1.4 + 0.16 * max(links.size, 4))
    image = ax.imshow(
        utilisation,
        aspect="auto",
        interpolation="nearest",
        cmap="viridis",
        vmin=0.0,
        vmax=1.0,
        extent=(0.0, makespan / factor, links.size - 0.5, -0.5),
    )
    ax.set_yticks(range(links.size), [run.topology.links[i].name for i in links.tolist()], fontsize=7)
    ax.set_xlabel(f"time ({unit})")
    ax.set_ylabel("link")
    more = f", {links.size} busiest of {len(result.links)} links" if len(result.links) > links.size else ""
    ax.set_title(
        f"{result.label}: {result.collective.value} of {format_size(result.nbytes)} on "
        f"{result.topology}, {format_time(result.time_s)}{more}",
        fontsize=9,
        loc="left",
    )
    bar = fig.colorbar(image, ax=ax, pad=0.01, fraction=0.04)
    bar.set_label("utilisation (share of link capacity)")
    fig.tight_layout()
    return finish_figure(fig, path)


# -- measured against predicted (calibration) ----------------------------------------
def plot_validation(report: Any, path: str | Path, calibrated: Any = None) -> Path:
    """Measured and predicted bus bandwidth against size (log-log), nccl-tests style, saved to ``path``.

    Parameters
    ----------
    report : commsim.calibrate.validate.Validation
    path : str or Path
        Output file; the suffix picks the format (``.png``, ``.svg``, ``.pdf``).
    calibrated : commsim.calibrate.validate.Validation, optional
        The same log validated with calibrated parameters, drawn as a third line.

    Returns
    -------
    Path
        The written file.
    """
    out = check_output(path)
    return save_figure(validation_figure(report, calibrated), out)


def validation_figure(report: Any, calibrated: Any = None) -> Figure:
    """The figure of :func:`plot_validation`: GB/s against bytes, both axes logarithmic."""
    fig, (ax,) = new_figure(8, 4.5)
    sizes = [r.nbytes for r in report.rows]
    ax.plot(sizes, [r.measured_busbw_Bps / 1e9 for r in report.rows], "o-", label="measured (nccl-tests)")
    ax.plot(
        sizes,
        [r.predicted_busbw_Bps / 1e9 for r in report.rows],
        "s--",
        label="predicted (commsim NCCL model)",
    )
    if calibrated is not None:
        ax.plot(
            [r.nbytes for r in calibrated.rows],
            [r.predicted_busbw_Bps / 1e9 for r in calibrated.rows],
            "^:",
            label="predicted, calibrated",
        )
    size_axis(ax, sizes)
    value_axis(ax, "bus bandwidth (GB/s)")
    ax.set_title(f"{report.collective}: {Path(str(report.source)).name}", fontsize=9)
    ax.grid(True, which="major", alpha=0.3)
    place_legend(ax)
    fig.tight_layout()
    return fig
