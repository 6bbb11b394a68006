"""Result rows without a column header: the standard nccl-tests layouts a row's own fields identify.

Excerpts of a log quoted in issues and pull requests often start inside the
result table, below its column header. nccl-tests has printed few row
layouts (``src/common.cu``, 2018 on): ``size count type redop root``, then
out-of-place and in-place ``time algbw busbw #wrong`` (``error`` with a
maximum error before 2022); older versions dropped ``root`` (all but the
rooted collectives), ``redop`` (broadcast) or both (alltoall, all_gather,
printed as blanks). The fields of a row tell these apart: how many there
are, which are integers (``root``) and which names of a type or reduction.
The time unit is not in a row; each row's algbw (size / time) says whether
its time is in microseconds (nccl-tests since 2019) or milliseconds (2018),
and microseconds are assumed when no row's algbw tells.
"""

from __future__ import annotations

from collections.abc import Callable

from commsim.calibrate.parser_bandwidth import algbw_agrees, printed
from commsim.calibrate.parser_table import INTEGER, Layout, fits, names_printed, read_layout
from commsim.errors import ParseError

__all__ = ["STANDARD_ROWS", "headerless_layout", "standard_row"]

STANDARD_ROWS = (
    "size count type redop root",
    "size count type redop",
    "size count type root",
    "size count type",
)
"""The leading columns of nccl-tests' row layouts; each is followed by the two halves' measurements."""

_HALF = "time algbw busbw {check}"
_UNITS = ((1e6, "microseconds"), (1e3, "milliseconds"))


def _labels(lead: str, check: str) -> list[str]:
    half = _HALF.format(check=check).split()
    return [*lead.split(), *half, *half]


def standard_row(number: int, tokens: list[str], fail: Callable[[str, int], ParseError]) -> Layout | None:
    """The standard layout whose columns the fields of a header-less row fit, else None.

    The check column is ``#wrong`` (a count, or ``N/A``) unless the row prints
    a maximum error there (``2e-07``, ``0e+00``), which older versions print
    under ``error``. Times are taken in microseconds; :func:`headerless_layout`
    settles the unit from all the rows.
    """
    for lead in STANDARD_ROWS:
        width = len(lead.split())
        check_at = width + 3  # size .. root, then time algbw busbw: the out-of-place check column
        if len(tokens) != width + 8:
            continue
        check = "error" if any(c in tokens[check_at].lower() for c in ".e") else "#wrong"
        layout = read_layout(number, _labels(lead, check), fail)
        if fits(tokens, layout.columns) and names_printed(tokens, layout.columns):
            return layout
    return None


def headerless_layout(
    rows: list[tuple[int, list[str]]], units_per_s: float | None, fail: Callable[[str, int], ParseError]
) -> tuple[Layout, str]:
    """The layout of header-less rows (as their first row fits it) and how their time unit is known.

    Parameters
    ----------
    rows : list of (int, list of str)
        The rows: their line in the file and whitespace-split fields.
    units_per_s : float or None
        Printed time units per second from a units line (``(us)``) above the
        rows, if the excerpt kept it.
    fail : callable
        Builds the ParseError of a line.

    Returns
    -------
    (Layout, str)
        The layout, and the clause that says how the time unit was decided.

    Raises
    ------
    ParseError
        When the first row fits none of the standard layouts.
    """
    number, tokens = rows[0]
    layout = standard_row(number, tokens, fail)
    if layout is None:
        raise fail(
            f"this looks like a result row but no column header ('#  size  count  type ...') precedes it, "
            f"and its {len(tokens)} fields are not one of nccl-tests' standard rows "
            "(size count type [redop] [root], then time algbw busbw #wrong out of place and in place)",
            number,
        )
    if units_per_s is not None:
        layout.time_per_s = units_per_s
        return layout, "as the units line above them says"
    agreeing = [(per_s, name) for per_s, name in _UNITS if _algbw_agrees(rows, layout, per_s)]
    if len(agreeing) == 1:
        layout.time_per_s = agreeing[0][0]
        return layout, f"in {agreeing[0][1]}, as their algbw (size / time) shows"
    return layout, "in microseconds (assumed: no row's algbw tells the unit)"


def _algbw_agrees(rows: list[tuple[int, list[str]]], layout: Layout, per_s: float) -> bool:
    """Whether every row with a nonzero algbw prints size / time with its time in this unit."""
    time_at = next(i for i, c in enumerate(layout.columns) if c.name == "time")
    informative = [
        (int(tokens[0]), printed(tokens[time_at]), printed(tokens[time_at + 1]))
        for _, tokens in rows
        if len(tokens) == layout.width
        and INTEGER.match(tokens[0])  # a later row's size is checked when the row is read
        and _positive(tokens[time_at])
        and _positive(tokens[time_at + 1])
    ]
    return bool(informative) and all(
        algbw_agrees(nbytes, time.divided(per_s), algbw) for nbytes, time, algbw in informative
    )


def _positive(token: str) -> bool:
    """Whether a field is a finite number above zero (``0.00``, ``N/A`` and ``inf`` tell no unit)."""
    try:
        value = float(token)
    except ValueError:
        return False
    return 0 < value < float("inf")
