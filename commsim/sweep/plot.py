"""Which algorithm wins where: the winner per (case, size) of a sweep's rows, and its heat map.

A *contender* is an algorithm with its parameters (the ``algorithm`` and
``params.*`` columns); a *case* is everything else that varies between
rows except the size (``topology``, ``collective``, ``topology.nic``,
``overrides...``). The winner of a (case, size) cell is the contender with
the least ``time_s`` among the rows that ran (ties go to the first in
scenario order).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from commsim.units import format_size

__all__ = ["Winners", "plot_winners", "winners"]

_NOT_CASE = {"key", "size", "nbytes", "n_ranks", "time_s", "algbw_Bps", "busbw_Bps", "bottleneck", "error"}


@dataclass(frozen=True)
class Winners:
    """The winner of every (case, size) cell.

    Attributes
    ----------
    cases : list of str
        Row labels, in first-appearance order (``"dgx1_v100"``, or
        ``"topology=..., topology.nic=..."`` when several columns vary).
    sizes : list of float
        Column sizes in bytes, ascending.
    contenders : list of str
        Every contender that appears, in first-appearance order.
    cells : dict
        ``(case, nbytes) -> (contender, time_s)`` for cells where some row ran.
    """

    cases: list[str]
    sizes: list[float]
    contenders: list[str]
    cells: dict[tuple[str, float], tuple[str, float]]


def winners(rows: Iterable[dict[str, Any]]) -> Winners:
    """The winner per (case, size) of sweep rows (see the module docstring)."""
    rows = list(rows)
    columns = list(rows[0]) if rows else []
    contender_columns = [c for c in columns if c == "algorithm" or c.startswith("params.")]
    varying = _explaining(
        rows,
        [
            c
            for c in columns
            if c not in _NOT_CASE and c not in contender_columns and len({str(r[c]) for r in rows}) > 1
        ],
    )
    cases: dict[str, None] = {}
    contenders: dict[str, None] = {}
    cells: dict[tuple[str, float], tuple[str, float]] = {}
    for row in rows:
        case = _label(row, varying) if varying else str(row.get("topology"))
        contender = _label(row, contender_columns, bare="algorithm")
        cases.setdefault(case)
        contenders.setdefault(contender)
        time_s = row.get("time_s")
        if row.get("error") or time_s is None:
            continue
        cell = (case, float(row["nbytes"]))
        if cell not in cells or float(time_s) < cells[cell][1]:
            cells[cell] = (contender, float(time_s))
    sizes = sorted({float(r["nbytes"]) for r in rows})
    return Winners(list(cases), sizes, list(contenders), cells)


def _explaining(rows: list[dict[str, Any]], columns: list[str]) -> list[str]:
    """Drop a column (``topology``) whose values its varying fields (``topology.nodes``) explain."""
    kept = []
    for column in columns:
        fields = [c for c in columns if c.startswith(column + ".")]
        combos = {tuple(str(r[c]) for c in fields) for r in rows}
        if not fields or len({str(r[column]) for r in rows}) > len(combos):
            kept.append(column)
    return kept


def _label(row: dict[str, Any], columns: list[str], bare: str | None = None) -> str:
    if len(columns) == 1:
        return str(row[columns[0]])
    return ", ".join(
        str(row[c]) if c == bare else f"{c.split('.', 1)[-1]}={row[c]}" for c in columns if row[c] is not None
    )


def plot_winners(rows: Iterable[dict[str, Any]], path: str | Path, title: str | None = None) -> Path:
    """Draw the winner per (case, size) as a heat map (one colour per contender).

    Parameters
    ----------
    rows : iterable of dict
        Sweep rows (:func:`commsim.sweep.store.read_rows`).
    path : str or Path
        Output image; the suffix picks the format (``.png``, ``.svg``, ``.pdf``).
    title : str, optional

    Returns
    -------
    Path
        ``path``.
    """
    from matplotlib.colors import BoundaryNorm, ListedColormap
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    table = winners(rows)
    grid = [[_contender_index(table, case, nbytes) for nbytes in table.sizes] for case in table.cases]
    colours = _colours(max(1, len(table.contenders)))
    figure = Figure(figsize=(max(4.0, 0.3 * len(table.sizes) + 2), 1.5 + 0.4 * len(table.cases)))
    ax = figure.add_subplot()
    cmap = ListedColormap(colours).with_extremes(bad="#dddddd")
    norm = BoundaryNorm([i - 0.5 for i in range(len(colours) + 1)], len(colours))
    ax.imshow(grid, cmap=cmap, norm=norm, aspect="auto", interpolation="nearest")
    ax.set_xticks(range(len(table.sizes)), [format_size(s) for s in table.sizes], rotation=90, fontsize=7)
    ax.set_yticks(range(len(table.cases)), table.cases, fontsize=8)
    ax.set_xlabel("message size")
    ax.set_title(title or "fastest algorithm per machine and size", fontsize=10)
    handles = [Patch(color=colours[i], label=name) for i, name in enumerate(table.contenders)]
    handles.append(Patch(color="#dddddd", label="no algorithm ran"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    out = Path(path)
    figure.savefig(out, dpi=110, bbox_inches="tight")
    return out


def _contender_index(table: Winners, case: str, nbytes: float) -> float:
    cell = table.cells.get((case, nbytes))
    return float("nan") if cell is None else float(table.contenders.index(cell[0]))


def _colours(count: int) -> list[Any]:
    from matplotlib import colormaps

    palette = colormaps["tab10" if count <= 10 else "tab20"]
    return [palette(i % palette.N) for i in range(count)]
