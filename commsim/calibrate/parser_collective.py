"""Which collective an nccl-tests run measured, and how that is known.

A log usually names its binary (``all_reduce_perf``); when it does not
(a pasted table, a page that kept only the rows), the table itself often
settles it: its busbw/algbw factor, reduction and root, its ``#wrong`` and
header columns and the NCCL version leave the collectives
:func:`~commsim.calibrate.parser_table_fit.table_fit` says fit, and why.

A file name is weaker evidence: :func:`~commsim.calibrate.parser_names.collectives_in_name` reads every
spelling people and nccl-tests binaries use (``all_reduce``, ``allreduce``,
``all-reduce``, ``AllReduce``, ``bcast`` ...) as whole words, the longest
first, so ``allreduce`` is never read as ``reduce``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import PurePath

from commsim.calibrate.evidence import Evidence
from commsim.calibrate.parser import NcclTestsRow, normalise_collective
from commsim.calibrate.parser_bandwidth import Measured
from commsim.calibrate.parser_common import CUT_LIST, ColumnHeader
from commsim.calibrate.parser_names import collectives_in_name
from commsim.calibrate.parser_ranks import EXACT_SOURCES
from commsim.calibrate.parser_table_columns import either
from commsim.calibrate.parser_table_fit import (
    TABLE,
    TABLE_AMBIGUOUS,
    TableFit,
    busbw_factor_fits,
    table_fit,
)
from commsim.calibrate.parser_table_ranks import informative

__all__ = [
    "BINARY",
    "FILE_NAME",
    "GIVEN",
    "TABLE",
    "TABLE_AMBIGUOUS",
    "decide_collective",
]

GIVEN = "collective given (--collective)"
"""Evidence source: the user named the collective."""
BINARY = "nccl-tests binary named in the log"
"""Evidence source: the log names the test it ran (``all_reduce_perf``)."""
FILE_NAME = "file name"
"""Evidence source: the log's file name; used only among what the table allows."""


def decide_collective(
    explicit: str | None,
    program: str | None,
    rows: Sequence[NcclTestsRow],
    measured: Sequence[Measured],
    rank_evidence: Sequence[Evidence],
    name_hint: str | None = None,
    header: ColumnHeader | None = None,
    nccl_version: tuple[str, str] | None = None,
) -> tuple[str | None, tuple[Evidence, ...], list[str]]:
    """The collective of one run, every source's word on it, and warnings.

    Order: ``explicit`` (the user), the binary the log names, the result
    table when it leaves one collective, the file name when it names one of
    the collectives the table leaves (or the table says nothing).

    Parameters
    ----------
    explicit : str or None
        The collective the user gave.
    program : str or None
        The nccl-tests binary the log names (``all_reduce_perf``).
    rows, measured : sequence
        The run's rows and their printed triples.
    rank_evidence : sequence of Evidence
        The rank count's evidence, the one used first (see
        :func:`~commsim.calibrate.parser_common.finish_log`).
    name_hint : str or None
        The log's file name.
    header : ColumnHeader or None
        The result table's column header (None for JSON).
    nccl_version : (str, str) or None
        The NCCL version and where it comes from, for
        :func:`~commsim.calibrate.parser_table_fit.table_fit`.

    Returns
    -------
    (name, evidence, warnings)
        ``name`` is None when nothing settles it; ``evidence`` starts with
        the source used (when there is one).
    """
    given = Evidence(normalise_collective(explicit), GIVEN) if explicit else None
    binary = Evidence(normalise_collective(program), BINARY, None, program) if program else None
    fit = (
        None
        if binary is not None
        else _fit_past_cut_list(rows, measured, rank_evidence, header, nccl_version)
    )
    table = fit.evidence if fit is not None else None
    named = collectives_in_name(name_hint) if name_hint else []
    rows_say = _rows_against_binary(binary, given, rows, measured, rank_evidence, header, nccl_version)
    overruled = []
    if rows_say is not None and binary is not None:
        overruled.append(
            f"the log names {binary.text} but {rows_say.text}; using {rows_say.value} (the rows were "
            "measured by that test: a page pasting one test's command above another's table?)"
        )
        binary, table = None, rows_say
    chosen = given or binary or (table if table is not None and table.source == TABLE else None)
    chosen, cited = _by_file_name(chosen, named, name_hint, fit)
    evidence = [e for e in (chosen, given, binary, table, cited) if e is not None]
    unique = tuple(dict.fromkeys(evidence))  # the chosen one first, each source once
    return (chosen.value if chosen else None), unique, _warnings(chosen, fit, named) + overruled


_SIZES = 3
"""Sizes whose busbw/algbw must misfit the named binary before the table overrules it."""


def _rows_against_binary(
    binary: Evidence | None,
    given: Evidence | None,
    rows: Sequence[NcclTestsRow],
    measured: Sequence[Measured],
    rank_evidence: Sequence[Evidence],
    header: ColumnHeader | None,
    nccl_version: tuple[str, str] | None,
) -> Evidence | None:
    """The table's collective when its rows rule out the binary the log names; None otherwise.

    nccl-tests prints each test's own redop, root and ``#wrong`` columns and its busbw factor, so a
    table fitting one collective that is not the named binary's was measured by another test: log
    209 pastes an ``all_reduce_perf`` command above alltoall rows (redop ``none``, in-place ``N/A``,
    busbw/algbw 15/16 with 16 ranks), read as all_reduce with every busbw 'disagreeing'. Only a
    misfit of the binary's busbw factor overrules it (not its redop or root alone), at :data:`_SIZES`
    sizes or more (one misprinted row is flagged as such), and only for a table fitting exactly one
    collective; the user's ``--collective`` still wins.
    """
    if binary is None or given is not None or len({m.nbytes for m in informative(measured)}) < _SIZES:
        return None
    ranks, at_least, how = _rank_facts(rank_evidence)
    if busbw_factor_fits(str(binary.value), measured, (ranks, at_least), header):
        return None
    table = table_fit(rows, measured, ranks, at_least, how, header, nccl_version).evidence
    return table if table is not None and table.source == TABLE else None


def _by_file_name(
    chosen: Evidence | None, named: list[str], name_hint: str | None, fit: TableFit | None
) -> tuple[Evidence | None, Evidence | None]:
    """The choice once the file name is heard, and the file name's evidence to cite (None: none).

    The name decides only when no stronger source did (``chosen`` None) and it names exactly one
    of the collectives the table leaves. A name naming several collectives
    ('allgather-or-alltoall') is evidence for none of them; it is cited only to explain a refusal.
    """
    by_name = Evidence(
        named[0] if len(named) == 1 else tuple(named), FILE_NAME, None, PurePath(str(name_hint)).name
    )
    if chosen is None and fit is not None:
        inside = [name for name in named if name in fit.candidates]
        chosen = Evidence(inside[0], FILE_NAME, None, by_name.text) if len(inside) == 1 else None
    cited = by_name if len(named) == 1 or (named and chosen is None) else None
    return chosen, cited


def _fit_past_cut_list(
    rows: Sequence[NcclTestsRow],
    measured: Sequence[Measured],
    rank_evidence: Sequence[Evidence],
    header: ColumnHeader | None,
    nccl_version: tuple[str, str] | None,
) -> TableFit:
    """The table's fit, read past a device list no collective fits.

    nccl-tests prints one device line per rank, so a list shorter than the communicator was cut
    (probe 14's 257: a README keeps ranks 0-4 of a 32-rank all_reduce, then '...'; busbw/algbw
    1.9375 = 2 x 31/32). When no collective's factor fits the list's count, the rows are fitted
    with the list as a lower bound only, and the evidence says the list looks cut.
    """
    ranks, at_least, how = _rank_facts(rank_evidence)
    fit = table_fit(rows, measured, ranks, at_least, how, header, nccl_version)
    if fit.candidates or how != "device list" or ranks is None:
        return fit
    retry = table_fit(rows, measured, None, ranks, "", header, nccl_version)
    if not retry.candidates or retry.evidence is None:
        return fit
    cut = f"; no collective fits the device list's {ranks} ranks: {CUT_LIST}"
    return retry._replace(evidence=replace(retry.evidence, text=f"{retry.evidence.text}{cut}"))


def _rank_facts(rank_evidence: Sequence[Evidence]) -> tuple[int | None, int, str]:
    """``(ranks, at_least, how)`` for :func:`table_fit`: an exact count unless it came from the ratio."""
    if not rank_evidence:
        return None, 1, ""
    chosen = rank_evidence[0]
    if chosen.source in EXACT_SOURCES and chosen.source != "busbw/algbw ratio":
        return int(chosen.value), int(chosen.value), chosen.source
    bounds = [
        int(e.value) for e in rank_evidence if e.source not in EXACT_SOURCES and isinstance(e.value, int)
    ]
    return None, max(bounds, default=1), ""


def _warnings(chosen: Evidence | None, fit: TableFit | None, named: list[str]) -> list[str]:
    table = fit.evidence if fit is not None else None
    if chosen is None:
        could = (
            f"; its result table fits {either(fit.candidates)}" if fit and fit.candidates and table else ""
        )
        return [
            "collective unknown (the log names no nccl-tests binary"
            f"{could}): busbw was not checked against size and time; give --collective"
        ]
    if table is None or fit is None or chosen.value in fit.candidates:
        if chosen.source == TABLE and named and chosen.value not in named:
            return [f"the file name names {either(named)} but {chosen.text}; using {chosen.value}"]
        return []
    return [f"collective given as {chosen.value!r}, but {table.text}"]
