"""The collectives a result table fits: its busbw/algbw factor, reduction, root and columns.

When a log names no nccl-tests binary,
:func:`~commsim.calibrate.parser_collective.decide_collective` asks the
table. nccl-tests prints ``busbw = algbw x factor`` with the factor of
the collective's ``GetBw`` (nccl-tests ``src/*.cu``, ``doc/PERFORMANCE.md``):

=====================================  ==========  ================  ==========
collective                             factor      ``redop`` column  ``root``
=====================================  ==========  ================  ==========
all_reduce                             2(n-1)/n    sum, max ...      -1
reduce_scatter                         (n-1)/n     sum, max ...      -1
all_gather, all_to_all                 (n-1)/n     none              -1
gather, scatter                        (n-1)/n     none              0..n-1
broadcast                              1           none              0..n-1
reduce                                 1           sum, max ...      0..n-1
send_recv                              1           sum, max ...      -1
hypercube                              1           none              -1
=====================================  ==========  ================  ==========

(send_recv's ``RunTest`` loops over the reduction operations like
all_reduce's, so it prints ``sum``; the tests of collectives that do not
reduce pass no operation and print ``none``.) With the number of ranks
``n`` known, the factor, the reduction and the root leave one collective in
most cases; :func:`table_fit` says which collectives fit and why.

What the table's columns show beyond its bandwidths (the in-place ``#wrong`` column, an old
header's missing columns, the ``count`` column, the NCCL release) is
:mod:`~commsim.calibrate.parser_table_columns`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from commsim.calibrate.evidence import Evidence
from commsim.calibrate.parser import COLLECTIVES, NcclTestsRow
from commsim.calibrate.parser_bandwidth import BUSBW_FACTORS, LEGACY_ALGBW, Measured, legacy_algbw
from commsim.calibrate.parser_common import ColumnHeader
from commsim.calibrate.parser_table_columns import (
    NEED_COLUMN,
    NO_IN_PLACE_CHECK,
    PER_RANK_COUNT,
    either,
    full_count,
    in_place_checked,
    missing_columns,
    old_format,
    redop_fits,
    root_fits,
    without_send_recv,
)
from commsim.calibrate.parser_table_ranks import RANK_SCALES, informative, ranks_from_bandwidths, ratio_bounds

__all__ = [
    "TABLE",
    "TABLE_AMBIGUOUS",
    "TableFit",
    "busbw_factor_fits",
    "table_fit",
]

TABLE = "result table"
"""Evidence source: the table's busbw/algbw, redop and root leave one collective."""
TABLE_AMBIGUOUS = "result table (ambiguous)"
"""Evidence source: the table leaves several collectives (its value is their tuple)."""

_FORMULA = {"all_reduce": "2(n-1)/n", **{name: "(n-1)/n" for name in RANK_SCALES if name != "all_reduce"}}
_SLACK = 1e-9
_Shown = tuple[set[str], set[int], bool | None, tuple[int, tuple[str, ...], bool] | None, bool]
"""What a table shows beyond its bandwidths: its reductions, its roots, whether the in-place
results were checked (None: it ruled nothing out) and the missing columns of an old header
(its line, the columns, whether the rows have no header at all; None: none missing) and whether
size = count x type size ruled out a per-rank-count collective."""


class TableFit(NamedTuple):
    """The collectives a result table fits.

    ``candidates`` keeps the order of :data:`~commsim.calibrate.parser.COLLECTIVES`;
    ``says_nothing`` is True when the table rules none out (no informative
    bandwidths, no redop or root column). ``evidence`` is the decisive
    :class:`Evidence` (source :data:`TABLE` when one collective fits,
    :data:`TABLE_AMBIGUOUS` with the tuple of candidates otherwise, None when
    the table says nothing).
    """

    candidates: tuple[str, ...]
    says_nothing: bool
    evidence: Evidence | None


def table_fit(
    rows: Sequence[NcclTestsRow],
    measured: Iterable[Measured],
    ranks: int | None,
    at_least: int = 1,
    ranks_how: str = "",
    header: ColumnHeader | None = None,
    nccl_version: tuple[str, str] | None = None,
) -> TableFit:
    """The collectives whose busbw factor, reduction and root fit every row of a table.

    Parameters
    ----------
    rows : sequence of NcclTestsRow
        The run's rows (their ``redop`` and ``root`` columns; None when absent).
    measured : iterable of Measured
        The rows' printed (time, algbw, busbw) triples.
    ranks : int or None
        The number of ranks when a source other than the busbw/algbw ratio
        states it; None when it is unknown or read from the ratio itself
        (then a collective is ruled out only when no number of ranks of at
        least ``at_least`` explains the ratio: reading the collective from
        a ratio that gave the rank count would be circular).
    at_least : int
        A lower bound on the number of ranks, used when ``ranks`` is None.
    ranks_how : str
        Where ``ranks`` comes from (``"device list"``), for the evidence text.
    header : ColumnHeader or None
        The table's column header (None for JSON): a missing ``redop`` or
        ``root`` column of an old header (with ``error``) rules out the
        collectives of :data:`NEED_COLUMN`.
    nccl_version : (str, str) or None
        The NCCL version and where it comes from (``("2.6.4", "printed")``):
        below 2.7 it rules out
        :data:`~commsim.calibrate.parser_table_columns.NEED_SEND_RECV`, unless that leaves none.

    Returns
    -------
    TableFit
    """
    pairs = informative(measured)
    old = old_format(header)  # may predate all_gather's June 2020 bandwidth definition
    fitting, shown = _columns_fit(rows, pairs, (ranks, at_least), header, old)
    candidates, version = without_send_recv(fitting, nccl_version)
    says_nothing = len(candidates) == len(COLLECTIVES)
    if says_nothing:
        return TableFit(candidates, True, None)
    first = min((row.line for row in rows), default=None)
    text = _describe(pairs, shown, (ranks, at_least, ranks_how), candidates)
    text += _legacy_note(candidates, pairs, ranks, old)
    text = f"{version}; {text}" if version else text
    if len(candidates) == 1:
        return TableFit(candidates, False, Evidence(candidates[0], TABLE, first, text))
    return TableFit(candidates, False, Evidence(candidates, TABLE_AMBIGUOUS, first, text))


def _columns_fit(
    rows: Sequence[NcclTestsRow],
    pairs: list[Measured],
    rank_bounds: tuple[int | None, int],
    header: ColumnHeader | None,
    old: bool,
) -> tuple[tuple[str, ...], _Shown]:
    """The collectives whose factor, reduction, root, header columns and in-place ``#wrong`` fit
    every row (``rank_bounds``: the rank count or None, and its lower bound), and what the table
    showed to rule the others out."""
    ranks, at_least = rank_bounds
    redops = {row.redop for row in rows if row.redop is not None}
    roots = {row.root for row in rows if row.root is not None}
    missing = missing_columns(header)
    full = full_count(rows, header) and (ranks if ranks is not None else at_least) >= 2
    fitting = tuple(
        name
        for name in COLLECTIVES
        if _factor_fits(name, pairs, ranks, at_least, old)
        and redop_fits(name, redops)
        and root_fits(name, roots)
        and not any(name in NEED_COLUMN[column] for column in missing)
    )
    per_rank_out = full and any(name in PER_RANK_COUNT for name in fitting)
    fitting = tuple(name for name in fitting if not (per_rank_out and name in PER_RANK_COUNT))
    checked = in_place_checked(rows, header)
    candidates = tuple(n for n in fitting if checked is None or checked != (n in NO_IN_PLACE_CHECK))
    if candidates == fitting:
        checked = None  # the in-place column decided nothing: left out of the text
    absent = (header.line, missing, header.headerless) if header is not None and missing else None
    return candidates, (redops, roots, checked, absent, per_rank_out)


def _legacy_note(candidates: tuple[str, ...], pairs: list[Measured], ranks: int | None, old: bool) -> str:
    """The note that an old table's rows fit nccl-tests' busbw = algbw of before June 2020 for the
    candidates that had it (:data:`~commsim.calibrate.parser_bandwidth.LEGACY_ALGBW`); ``""`` if not."""
    legacy = [c for c in candidates if c in LEGACY_ALGBW and ranks is not None and ranks > 1]
    if legacy and old and legacy_algbw(pairs, ranks or 0):
        return f" ({' and '.join(legacy)} as nccl-tests printed it before June 2020: busbw = algbw)"
    return ""


def _ratio_bounds(m: Measured) -> tuple[float, float]:
    """Lowest and highest busbw/algbw the printed pair allows, widened by our float error."""
    low, high = ratio_bounds(m)
    return low * (1 - _SLACK), high * (1 + _SLACK)


def busbw_factor_fits(
    name: str,
    measured: Iterable[Measured],
    rank_bounds: tuple[int | None, int],
    header: ColumnHeader | None,
) -> bool:
    """Whether ``name``'s busbw/algbw factor fits every informative row (``rank_bounds``: the rank
    count or None, and its lower bound); nccl-tests computes that factor per test, so a misfit says
    the rows were measured by another test."""
    ranks, at_least = rank_bounds
    return _factor_fits(name, informative(measured), ranks, at_least, old_format(header))


def _factor_fits(name: str, pairs: list[Measured], ranks: int | None, at_least: int, old: bool) -> bool:
    if not pairs:
        return True
    if old and ranks is not None and name in LEGACY_ALGBW and ranks > 1 and legacy_algbw(pairs, ranks):
        return True  # busbw = algbw = size / time x (n-1)/n: nccl-tests before June 2020
    if ranks is not None:
        factor = BUSBW_FACTORS[name](ranks)
        return all(low <= factor <= high for low, high in map(_ratio_bounds, pairs))
    if name in RANK_SCALES:
        fits = ranks_from_bandwidths(name, pairs)
        return bool(fits) and fits[-1] >= at_least
    return all(low <= 1.0 <= high for low, high in map(_ratio_bounds, pairs))


def _describe(
    pairs: list[Measured],
    columns: _Shown,
    rank_facts: tuple[int | None, int, str],
    candidates: tuple[str, ...],
) -> str:
    """``busbw/algbw 1.75 with 8 ranks (device list), redop sum, root -1: only all_reduce fits``."""
    redops, roots, checked, absent, per_rank_out = columns
    ranks, at_least, ranks_how = rank_facts
    parts = []
    if pairs:
        best = max(pairs, key=lambda m: m.algbw.value)  # the most precise printed pair
        ratio = best.busbw.value / best.algbw.value
        if ranks is not None:
            where = f" ({ranks_how})" if ranks_how else ""
            parts.append(f"busbw/algbw {ratio:.3g} with {ranks} ranks{where}")
        else:
            unknown = f"no rank count but from this ratio: any n >= {at_least} allowed"
            parts.append(f"busbw/algbw {ratio:.3g} ({unknown})")
    if redops:
        parts.append(f"redop {'/'.join(sorted(redops))}")
    if roots:
        parts.append(f"root {'/'.join(map(str, sorted(roots)))}")
    if absent is not None:
        line, missing, headerless = absent
        where = (
            f"field in the old-format rows from line {line} (no header above them)"
            if headerless
            else (f"column in the old-format column header (line {line})")
        )
        parts.append(f"no {' or '.join(missing)} {where}")
    if per_rank_out:
        parts.append("size = count x type size (all_gather, reduce_scatter ... print a per-rank count)")
    if checked is not None:
        parts.append(
            "in-place #wrong counted (send_recv and all_to_all print N/A there)"
            if checked
            else "in-place #wrong N/A (only send_recv and all_to_all skip the in-place check)"
        )
    facts = ", ".join(parts) or "the table"
    if not candidates:
        return f"{facts}: no collective fits every row"
    if len(candidates) == 1:
        name = candidates[0]
        formula = f" (busbw = {_FORMULA[name]} x algbw)" if name in _FORMULA and pairs else ""
        return f"{facts}: only {name} fits{formula}"
    return f"{facts}: {either(candidates)} fit"
