"""Figures without pyplot: made, saved byte-for-byte reproducibly, and their shared axes.

matplotlib is imported when a figure is made, never at import time, so
the CLI starts fast. :func:`new_figure` makes a plain
:class:`matplotlib.figure.Figure` (nothing registered with pyplot, nothing
to close, no backend switched under a notebook's feet); :func:`save_figure`
writes it whole in the format its suffix names (:data:`FORMATS`). The axes
helpers give every plot the same nccl-tests-style scales.
"""

from __future__ import annotations

import io
import math
import numbers
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from commsim.errors import CommsimError
from commsim.units import format_size

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "FORMATS",
    "MAX_COUNT",
    "PlotError",
    "check_count",
    "check_output",
    "figure_png",
    "finish_figure",
    "new_figure",
    "place_legend",
    "save_figure",
    "size_axis",
    "time_unit",
    "value_axis",
]

FORMATS = ("png", "svg", "pdf")
"""Output formats the plot functions write, by file suffix."""
MAX_COUNT = 10_000
"""The most time bins, or links, a plot draws (as ``commsim plot`` allows)."""


class PlotError(CommsimError, ValueError):
    """A plot cannot be made as asked (unknown output format, nothing to draw)."""


def check_output(path: str | Path) -> Path:
    """``path`` as a Path, if its suffix is a format we write.

    Raises
    ------
    ArgumentError
        If ``path`` is no str or path.
    PlotError
        If the suffix is not ``.png``, ``.svg`` or ``.pdf``.
    """
    from commsim.errors import check_argument

    check_argument(path, (str, os.PathLike), "path", "a file path ending .png, .svg or .pdf")
    out = Path(path)
    suffix = out.suffix.lower().lstrip(".")
    if suffix not in FORMATS:
        raise PlotError(
            f"cannot write a plot to {str(out)!r}: unknown format {out.suffix or '(no suffix)'!r}; "
            f"use one of {', '.join('.' + f for f in FORMATS)}"
        )
    return out


def check_count(value: Any, name: str) -> int:
    """``value`` if it is a whole number from 1 to :data:`MAX_COUNT` (a plot's bins or links).

    Raises
    ------
    PlotError
        Otherwise, e.g. ``max_links must be a whole number from 1 to 10,000, got 0``: a
        float failed deep inside (a slice index), and 0 or -1 cut the links silently.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 1 <= int(value) <= MAX_COUNT:
        raise PlotError(f"{name} must be a whole number from 1 to {MAX_COUNT:,}, got {value!r}")
    return int(value)


def new_figure(width_in: float, height_in: float, rows: int = 1, **kwargs: Any) -> tuple[Figure, Any]:
    """A pyplot-free Figure of the given size (inches, 100 dpi) and its axes."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width_in, height_in), dpi=100)
    axes = fig.subplots(rows, 1, squeeze=False, **kwargs)[:, 0]
    return fig, axes


def save_figure(fig: Figure, path: str | Path) -> Path:
    """Save ``fig`` to ``path`` (format from the suffix) and return the path.

    The same figure gives the same bytes: no dates in SVG or PDF metadata,
    and SVG element ids from a fixed salt.
    """
    import matplotlib

    from commsim.textfile import write_whole

    out = check_output(path)
    buffer = io.BytesIO()  # drawn whole, then written whole: a failed drawing leaves no file
    with matplotlib.rc_context({"svg.hashsalt": "commsim"}):
        fig.savefig(buffer, format=out.suffix.lower().lstrip("."), metadata=_metadata(out))
    write_whole(out, buffer.getvalue())
    return out


def _metadata(out: Path) -> dict[str, Any]:
    """File metadata without dates, so the same figure gives the same bytes."""
    suffix = out.suffix.lower()
    if suffix == ".svg":
        return {"Date": None}
    if suffix == ".pdf":
        return {"CreationDate": None}
    return {}


def figure_png(fig: Figure) -> bytes:
    """``fig`` as PNG bytes, e.g. for ``IPython.display.Image(figure_png(fig))``."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def finish_figure(fig: Figure, path: str | Path | None) -> Figure:
    """``fig``, saved to ``path`` first when one is given."""
    if path is not None:
        save_figure(fig, path)
    return fig


def time_unit(max_s: float) -> tuple[float, str]:
    """(seconds per unit, unit name) to show times up to ``max_s`` readably."""
    for factor, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us")):
        if max_s >= factor:
            return factor, unit
    return 1e-9, "ns"


def size_axis(ax: Axes, sizes: Sequence[float]) -> None:
    """Log-2 x axis of message sizes, ticks at powers of two labelled ``8 B``, ``1 KiB``, ``1 MiB``...

    The labels are :func:`commsim.units.format_size`'s: binary prefixes for
    the powers of two nccl-tests sweeps (``-b 8 -e 128M -f 2``).
    """
    positive = [s for s in sizes if s > 0]
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)")
    if not positive:
        return
    low, high = math.floor(math.log2(min(positive))), math.ceil(math.log2(max(positive)))
    step = max(1, math.ceil((high - low) / 9))
    ticks = [2.0**e for e in range(low, high + 1, step)]
    ax.set_xticks(ticks, [format_size(t) for t in ticks])
    ax.xaxis.set_minor_locator(_null_locator())


def value_axis(ax: Axes, label: str) -> None:
    """Log-10 y axis labelled with plain numbers (``0.01``, ``1``, ``100``), as nccl-tests prints them.

    On a linear axis the small-message regime (microseconds, MB/s) is a
    flat line at zero; on a log axis it reads like the large one.
    """
    from matplotlib.ticker import FuncFormatter, LogLocator

    ax.set_yscale("log", nonpositive="mask")  # nccl-tests prints 0.00 GB/s for tiny sizes
    ax.yaxis.set_major_locator(LogLocator(base=10))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    ax.set_ylabel(label)


def place_legend(ax: Axes, **options: Any) -> None:
    """The legend in the axes' upper left, empty under curves that rise with size, and below the title."""
    ax.legend(loc="upper left", fontsize=8, framealpha=0.9, **options)


def _null_locator() -> Any:
    from matplotlib.ticker import NullLocator

    return NullLocator()
