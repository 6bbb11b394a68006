"""What a result table's columns show beyond its bandwidths, and which collectives that rules out.

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
from collections.abc import Sequence

from commsim.calibrate.parser import NcclTestsRow
from commsim.calibrate.parser_common import ColumnHeader
from commsim.calibrate.parser_table import TYPE_BYTES

__all__ = [
    "NEED_COLUMN",
    "NEED_SEND_RECV",
    "NO_IN_PLACE_CHECK",
    "PER_RANK_COUNT",
    "REDUCING",
    "ROOTED",
    "either",
    "full_count",
    "in_place_checked",
    "missing_columns",
    "old_format",
    "redop_fits",
    "root_fits",
    "without_send_recv",
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


def full_count(rows: Sequence[NcclTestsRow], header: ColumnHeader | None) -> bool:
    """Whether every row with a count prints size = count x type size (not a per-rank count), in a
    format whose count column is ``src/common.cu``'s (not the 2017 ``bytes N`` tables)."""
    if header is not None and not header.per_rank_count:
        return False
    counted = [row for row in rows if row.count > 0 and row.dtype.lower() in TYPE_BYTES]
    return bool(counted) and all(row.nbytes == row.count * TYPE_BYTES[row.dtype.lower()] for row in counted)


def without_send_recv(
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


def missing_columns(header: ColumnHeader | None) -> tuple[str, ...]:
    """The columns of :data:`NEED_COLUMN` the header lacks (none without a header)."""
    if header is None or "error" not in header.names:
        return ()  # a common.cu header prints both columns: one missing is an edit, no evidence
    return tuple(column for column in NEED_COLUMN if column not in header.names)


def old_format(header: ColumnHeader | None) -> bool:
    """Whether the table may predate June 2020 (no ``#wrong`` column, which came later).

    nccl-tests counts wrong elements (``#wrong``) since its exact data check,
    introduced after the June 2020 change of all_gather's and reduce_scatter's
    bus bandwidth; a table printing ``error`` may be older. No header is ``-J`` JSON output, which
    nccl-tests writes since 2024.
    """
    return header is not None and "wrong" not in header.names


def redop_fits(name: str, redops: set[str]) -> bool:
    if not redops:
        return True
    reduces = [op.lower() not in ("none", "") for op in redops]
    return all(reduces) if name in REDUCING else not any(reduces)


def root_fits(name: str, roots: set[int]) -> bool:
    if not roots:
        return True
    return all(root >= 0 for root in roots) if name in ROOTED else roots == {-1}


def either(names: Sequence[str]) -> str:
    """``a, b and c``: names listed in a sentence."""
    return ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else "".join(names)
