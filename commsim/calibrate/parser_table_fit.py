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

The in-place ``#wrong`` column tells send_recv and all_to_all from the
rest: their ``InitData`` sets ``args->reportErrors = in_place ? 0 : 1``
("We don't support in-place sendrecv", nccl-tests ``src/sendrecv.cu``,
``src/alltoall.cu``) and ``BenchTime`` (``src/common.cu``) then prints
``N/A`` instead of the count. So a table whose out-of-place ``#wrong`` is a
number and in-place ``#wrong`` is ``N/A`` on every row is one of those two;
a number in the in-place column rules both out. (With ``-c 0`` both columns
print ``N/A``: no evidence.)

The column header says more where nccl-tests' formats truly differ. Every
version prints a reduction column for the tests that reduce and a root
column for broadcast and reduce: the 2017 tests (time in ms) print
``bytes N type op`` (all_reduce, reduce_scatter), ``bytes N type root``
(broadcast) and ``bytes N type op root`` (reduce); the per-test headers of
2018-2020 print ``size count type redop`` (all_reduce, reduce_scatter),
``size count type root`` (broadcast) and ``size count type redop root``
(reduce) (``print_header`` of ``src/broadcast.cu`` and ``src/reduce.cu``,
e.g. the nccl-tests fork parasailteam/nccl-tests @47987ba, whose
``src/broadcast.cu`` and ``src/reduce.cu`` keep them; ABCI's NCCL 2.8.4
logs were printed so); later ones print one header with both ``redop`` and
``root`` for every test (``src/common.cu``), which says nothing. The
per-test headers are the ones with an ``error`` (``res``) column: ``#wrong``
came with the common header. So an old header (with ``error``) **without** a
``redop``/``op`` column rules out all_reduce, reduce_scatter and reduce, and
one without a ``root`` column rules out broadcast and reduce. Only absent
columns count, and only for those collectives: early rccl-tests'
``sendrecv.cu`` printed ``size count type`` (no reduction column), and
gather's and scatter's old headers are not known for every version. A
``#wrong`` header that lacks a column was edited (a pasted table) and says
nothing.

The ``count`` column tells the collectives that print a per-rank count:
since the 2018 rewrite ``src/common.cu`` prints ``size`` = max(send, receive
bytes) and ``count`` = the test's ``paramcount``, which all_gather,
reduce_scatter, all_to_all, gather and scatter set to ``count / nranks``
(their ``GetCollByteCount``), so their rows print size / (count x type size)
= n; the others print 1. Rows that all print 1 with 2 or more ranks rule the
per-rank ones out (:data:`PER_RANK_COUNT`; outside log 218, an A100
all_reduce of 2 ranks). The 2017 tables (``bytes N``, time in ms) are left
out: their ``N`` is not known to mean the same.

NCCL older than 2.7.0 has no ``ncclSend``/``ncclRecv`` (NCCL 2.7 release
notes: point-to-point communication is new), and nccl-tests builds
sendrecv, alltoall, gather, scatter and hypercube on them: each test's
``RunColl`` is ``#if NCCL_VERSION_CODE >= NCCL_VERSION(2,7,0)`` and prints
"NCCL 2.7 or later is needed" otherwise. A version below 2.7, printed by the
log or given, rules those five out (:data:`NEED_SEND_RECV`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from commsim.calibrate.evidence import Evidence
from commsim.calibrate.parser import COLLECTIVES, NcclTestsRow
from commsim.calibrate.parser_bandwidth import BUSBW_FACTORS, LEGACY_ALGBW, Measured, legacy_algbw
from commsim.calibrate.parser_common import ColumnHeader
from commsim.calibrate.parser_table import TYPE_BYTES
from commsim.calibrate.parser_table_ranks import RANK_SCALES, informative, ranks_from_bandwidths, ratio_bounds

__all__ = [
    "NEED_COLUMN",
    "NEED_SEND_RECV",
    "NO_IN_PLACE_CHECK",
    "PER_RANK_COUNT",
    "REDUCING",
    "ROOTED",
    "TABLE",
    "TABLE_AMBIGUOUS",
    "TableFit",
    "busbw_factor_fits",
    "in_place_checked",
    "table_fit",
]

NO_IN_PLACE_CHECK = frozenset({"send_recv", "all_to_all"})
"""Collectives whose nccl-tests print ``N/A`` in the in-place ``#wrong`` column (no in-place check)."""

PER_RANK_COUNT = frozenset({"all_gather", "reduce_scatter", "all_to_all", "gather", "scatter"})
"""Collectives whose nccl-tests rows print a per-rank count: size / (count x type size) = ranks."""

REDUCING = frozenset({"all_reduce", "reduce_scatter", "reduce", "send_recv"})
"""Collectives whose rows name a reduction (``sum`` ...) in the ``redop`` column; others print ``none``."""

ROOTED = frozenset({"broadcast", "reduce", "gather", "scatter"})
"""Collectives whose rows print a root rank (0..n-1); the others print -1."""

NEED_COLUMN = {
    "redop": frozenset({"all_reduce", "reduce_scatter", "reduce"}),
    "root": frozenset({"broadcast", "reduce"}),
}
"""Collectives whose nccl-tests print the column in every format: a header without it rules them out."""

NEED_SEND_RECV = frozenset({"send_recv", "all_to_all", "gather", "scatter", "hypercube"})
"""Tests nccl-tests builds on ncclSend/ncclRecv, which NCCL has from 2.7.0 on."""

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
        below 2.7 it rules out :data:`NEED_SEND_RECV`, unless that leaves none.

    Returns
    -------
    TableFit
    """
    pairs = informative(measured)
    old = _old_format(header)  # may predate all_gather's June 2020 bandwidth definition
    fitting, shown = _columns_fit(rows, pairs, (ranks, at_least), header, old)
    candidates, version = _without_send_recv(fitting, nccl_version)
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
    missing = _missing_columns(header)
    full_count = _full_count(rows, header) and (ranks if ranks is not None else at_least) >= 2
    fitting = tuple(
        name
        for name in COLLECTIVES
        if _factor_fits(name, pairs, ranks, at_least, old)
        and _redop_fits(name, redops)
        and _root_fits(name, roots)
        and not any(name in NEED_COLUMN[column] for column in missing)
    )
    per_rank_out = full_count and any(name in PER_RANK_COUNT for name in fitting)
    fitting = tuple(name for name in fitting if not (per_rank_out and name in PER_RANK_COUNT))
    checked = in_place_checked(rows, header)
    candidates = tuple(n for n in fitting if checked is None or checked != (n in NO_IN_PLACE_CHECK))
    if candidates == fitting:
        checked = None  # the in-place column decided nothing: left out of the text
    absent = (header.line, missing, header.headerless) if header is not None and missing else None
    return candidates, (redops, roots, checked, absent, per_rank_out)


def _full_count(rows: Sequence[NcclTestsRow], header: ColumnHeader | None) -> bool:
    """Whether every row with a count prints size = count x type size (not a per-rank count), in a
    format whose count column is ``src/common.cu``'s (not the 2017 ``bytes N`` tables)."""
    if header is not None and not header.per_rank_count:
        return False
    counted = [row for row in rows if row.count > 0 and row.dtype.lower() in TYPE_BYTES]
    return bool(counted) and all(row.nbytes == row.count * TYPE_BYTES[row.dtype.lower()] for row in counted)


def _legacy_note(candidates: tuple[str, ...], pairs: list[Measured], ranks: int | None, old: bool) -> str:
    """The note that an old table's rows fit nccl-tests' busbw = algbw of before June 2020 for the
    candidates that had it (:data:`~commsim.calibrate.parser_bandwidth.LEGACY_ALGBW`); ``""`` if not."""
    legacy = [c for c in candidates if c in LEGACY_ALGBW and ranks is not None and ranks > 1]
    if legacy and old and legacy_algbw(pairs, ranks or 0):
        return f" ({' and '.join(legacy)} as nccl-tests printed it before June 2020: busbw = algbw)"
    return ""


def _without_send_recv(
    candidates: tuple[str, ...], nccl_version: tuple[str, str] | None
) -> tuple[tuple[str, ...], str]:
    """``candidates`` without the send/recv-based tests if the NCCL version predates 2.7, and why."""
    if nccl_version is None:
        return candidates, ""
    version, how = nccl_version
    numbers = re.match(r"(\d+)\.(\d+)", version)
    if numbers is None or (int(numbers[1]), int(numbers[2])) >= (2, 7):
        return candidates, ""
    kept = tuple(name for name in candidates if name not in NEED_SEND_RECV)
    dropped = [name for name in candidates if name in NEED_SEND_RECV]
    if not kept or not dropped:
        return candidates, ""
    return kept, (
        f"NCCL {version} ({how}) predates ncclSend/ncclRecv (2.7.0), which nccl-tests' "
        f"{either(dropped)} {'needs' if len(dropped) == 1 else 'need'}"
    )


def in_place_checked(rows: Sequence[NcclTestsRow], header: ColumnHeader | None = None) -> bool | None:
    """Whether nccl-tests checked the in-place results, as its ``#wrong`` columns show.

    True when some row prints a count in both ``#wrong`` columns, False when
    every row with in-place columns prints a count out of place and ``N/A``
    in place (send_recv, all_to_all), None when the table does not say (no
    in-place columns, old ``error`` columns, ``-c 0``: both ``N/A``). A ``header``
    without the in-place ``#wrong`` column says nothing either: a page that dropped
    it (log 236) printed no ``N/A``.
    """
    if header is not None and not header.in_place_wrong:
        return None
    in_place = [row for row in rows if row.ip_time_s is not None and row.oop_wrong is not None]
    if not in_place or any(row.ip_max_error is not None for row in rows):
        return None
    return any(row.ip_wrong is not None for row in in_place)


def _missing_columns(header: ColumnHeader | None) -> tuple[str, ...]:
    """The columns of :data:`NEED_COLUMN` the header lacks (none without a header)."""
    if header is None or "error" not in header.names:
        return ()  # a common.cu header prints both columns: one missing is an edit, no evidence
    return tuple(column for column in NEED_COLUMN if column not in header.names)


def _ratio_bounds(m: Measured) -> tuple[float, float]:
    """Lowest and highest busbw/algbw the printed pair allows, widened by our float error."""
    low, high = ratio_bounds(m)
    return low * (1 - _SLACK), high * (1 + _SLACK)


def _old_format(header: ColumnHeader | None) -> bool:
    """Whether the table may predate June 2020 (no ``#wrong`` column, which came later).

    nccl-tests counts wrong elements (``#wrong``) since its exact data check,
    introduced after the June 2020 change of all_gather's and reduce_scatter's
    bus bandwidth; a table printing ``error`` may be older. No header is ``-J`` JSON output, which
    nccl-tests writes since 2024.
    """
    return header is not None and "wrong" not in header.names


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
    return _factor_fits(name, informative(measured), ranks, at_least, _old_format(header))


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


def _redop_fits(name: str, redops: set[str]) -> bool:
    if not redops:
        return True
    reduces = [op.lower() not in ("none", "") for op in redops]
    return all(reduces) if name in REDUCING else not any(reduces)


def _root_fits(name: str, roots: set[int]) -> bool:
    if not roots:
        return True
    return all(root >= 0 for root in roots) if name in ROOTED else roots == {-1}


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


def either(names: Sequence[str]) -> str:
    """``a, b and c``: names listed in a sentence."""
    return ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else "".join(names)
