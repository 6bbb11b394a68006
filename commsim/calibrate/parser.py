"""Read nccl-tests results: the text nccl-tests prints, or its ``-J`` JSON.

nccl-tests (https://github.com/NVIDIA/nccl-tests) prints a run header
(``# nThread 1 nGpus 8 minBytes 8 ...``), the list of ranks and their GPUs
(``#  Rank  0 Group  0 Pid 54740 on thanos device  0 [0x07] NVIDIA ...``), a
column header and one row per message size with the out-of-place and the
in-place time (us), algorithm bandwidth and bus bandwidth (GB/s, 1e9 B/s),
then ``# Avg bus bandwidth``. Its columns changed over the years (``error``
became ``#wrong``, ``redop`` and ``root`` came and went, time was once in
ms), so rows are read by their column header, never by fixed positions.

Real logs are messy: MPI and Slurm prefix every line (``[1,0]<stdout>:``,
`` 0: ``, ``rank0:``), NCCL INFO lines and MPI warnings interleave anywhere.
Those are stripped or skipped; a row that cannot be read is a
:class:`~commsim.errors.ParseError` naming its line, never silently dropped.
Lines starting with ``## `` are our own provenance commentary and are
ignored entirely.

The text format is read by :mod:`~commsim.calibrate.parser_text`, ``-J`` JSON
by :mod:`~commsim.calibrate.parser_json`; :mod:`~commsim.calibrate.parser_series`
splits a table that holds several data types or reductions (``-d all``,
``-o all``) into one run per series; :mod:`~commsim.calibrate.parser_common`
checks what they found (busbw against size and time:
:mod:`~commsim.calibrate.parser_bandwidth`) and builds the log.
"""

from __future__ import annotations

import re
from os import PathLike
from pathlib import Path

from commsim.calibrate.parser_records import Device, NcclTestsLog, NcclTestsRow
from commsim.errors import ParseError, UnknownNameError

__all__ = [
    "COLLECTIVES",
    "Device",
    "NcclTestsLog",
    "NcclTestsRow",
    "describe_runs",
    "load_nccl_tests",
    "load_nccl_tests_runs",
    "normalise_collective",
    "parse_nccl_tests",
    "parse_nccl_tests_runs",
]

COLLECTIVES = (
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "broadcast",
    "reduce",
    "all_to_all",
    "send_recv",
    "gather",
    "scatter",
    "hypercube",
)
"""Normalised names of the collectives nccl-tests measures."""

_ALIASES = {name.replace("_", ""): name for name in COLLECTIVES}
_PROGRAM = re.compile(
    r"(?<![\w-])(all_reduce|all_gather|reduce_scatter|broadcast|reduce|alltoall|sendrecv"
    r"|gather|scatter|hypercube)_perf(?:_mpi)?\b"
)


def normalise_collective(name: str) -> str:
    """The commsim name of a collective given by name or nccl-tests binary.

    Parameters
    ----------
    name : str
        ``all_reduce``, ``allreduce``, ``AllReduce``, ``all-reduce``,
        ``all_reduce_perf``, ``./build/alltoall_perf_mpi`` ...

    Returns
    -------
    str
        One of :data:`COLLECTIVES`.

    Raises
    ------
    UnknownNameError
        If ``name`` is no collective nccl-tests measures.

    Examples
    --------
    >>> normalise_collective("./build/alltoall_perf_mpi")
    'all_to_all'
    """
    stem = re.split(r"[\\/]", name.strip())[-1].lower()
    stem = re.sub(r"(?:_perf)?(?:_mpi)?(?:\.exe)?$", "", stem)
    key = re.sub(r"[-_ ]", "", stem)
    if key not in _ALIASES:
        raise UnknownNameError("collective", name, COLLECTIVES)
    return _ALIASES[key]


def find_program(text: str) -> str | None:
    """The first nccl-tests binary name (``all_reduce_perf`` ...) in ``text``."""
    match = _PROGRAM.search(text)
    return match.group(0) if match else None


def parse_nccl_tests(
    text: str,
    source: str | None = None,
    collective: str | None = None,
    *,
    n_ranks: int | None = None,
    run: int | None = None,
    name_hint: str | None = None,
    nccl_version: str | None = None,
) -> NcclTestsLog:
    r"""Read the output of one nccl-tests run (text or ``-J`` JSON).

    Parameters
    ----------
    text : str
        The log. JSON is recognised by its opening brace.
    source : str, optional
        File name for messages.
    collective : str, optional
        The collective measured; wins over the binary named in the log.
    n_ranks : int, optional
        Number of ranks; wins over everything the log says (a disagreement
        is warned about).
    run : int, optional
        Which run (1-based) of a log that holds several; see
        :func:`parse_nccl_tests_runs`.
    name_hint : str, optional
        The log's file name, which may name the collective; used only when
        the log names no binary, to choose among the collectives its table
        allows (:mod:`~commsim.calibrate.parser_collective`).
    nccl_version : str, optional
        The NCCL release given (``--nccl-version``), as for :func:`parse_nccl_tests_runs`.

    Returns
    -------
    NcclTestsLog

    Raises
    ------
    ParseError
        If a result row is garbled (the message names the line and what was
        expected), the log holds no result rows, the number of ranks cannot
        be told, or the log holds several runs and ``run`` is not given.
    UnknownNameError
        If ``collective`` is no collective nccl-tests measures.
    ValueError
        If ``n_ranks`` is less than 1.

    Examples
    --------
    >>> log = parse_nccl_tests(
    ...     "./build/all_reduce_perf -g 2\n"
    ...     "#  Rank  0 Group  0 Pid 7 on box device  0 [0x01] NVIDIA A10\n"
    ...     "#  Rank  1 Group  0 Pid 7 on box device  1 [0x02] NVIDIA A10\n"
    ...     "#  size  count  type  redop  root  time  algbw  busbw  #wrong\n"
    ...     " 1048576 262144 float sum -1 100.0 10.49 10.49 0\n"
    ... )
    >>> log.collective, log.n_ranks, log.rows[0].oop_busbw_Bps
    ('all_reduce', 2, 10490000000.0)
    """
    runs = parse_nccl_tests_runs(
        text, source, collective, n_ranks=n_ranks, name_hint=name_hint, nccl_version=nccl_version
    )
    if run is not None:
        return _pick_run(runs, run, source)
    if len(runs) > 1:
        raise ParseError(
            f"the log holds {len(runs)} nccl-tests runs ({describe_runs(runs)}); pick one with --run N",
            source=source,
            line=runs[1].first_line,
        )
    return runs[0]


def parse_nccl_tests_runs(
    text: str,
    source: str | None = None,
    collective: str | None = None,
    *,
    n_ranks: int | None = None,
    name_hint: str | None = None,
    nccl_version: str | None = None,
) -> list[NcclTestsLog]:
    """Read every nccl-tests run in one log (scripts that loop over tests).

    A new run starts at a new run header (``# nThread ...``) or at a new
    column header after result rows were read. Each run has its own
    collective (the nearest ``*_perf`` name before its table), devices, rows
    and settings; ``run_index``, ``first_line`` and ``last_line`` say where
    it is. A ``-J`` JSON file holds one table.

    A table whose rows name several data types, reductions or roots
    (``-d all``, ``-o all``, ``-r -1``) is split into one run per
    (type, redop, root) series, in order of first appearance; see
    :mod:`~commsim.calibrate.parser_series`.

    Parameters
    ----------
    text, source, collective, n_ranks, name_hint
        As for :func:`parse_nccl_tests`; ``collective``, ``n_ranks`` and
        ``name_hint`` apply to every run.
    nccl_version : str, optional
        The NCCL version the user gave (``--nccl-version``); wins over the
        printed one where the version tells collectives apart (below 2.7
        there is no send/recv).

    Returns
    -------
    list of NcclTestsLog
        In file order; ``runs[i].run_index == i + 1``.

    Raises
    ------
    ParseError
        As for :func:`parse_nccl_tests`, for any run.
    """
    # The readers build this module's data classes, so they are imported when used.
    from commsim.calibrate.parser_common import finish_log
    from commsim.calibrate.parser_json import read_json_run
    from commsim.calibrate.parser_lines import clean_text
    from commsim.calibrate.parser_runs import read_text_runs
    from commsim.calibrate.parser_series import split_series
    from commsim.textfile import plain_text

    cleaned = clean_text(plain_text(text))
    first = next((line for line in cleaned.lines if line.strip()), "")
    if first.lstrip().startswith("{"):
        tables = [read_json_run(cleaned.lines, source)]
    else:
        tables = read_text_runs(cleaned, source)
        if cleaned.hidden_header is not None and not any(data.rows for data in tables):
            _refuse_hidden_header(*cleaned.hidden_header, source)
    found = [series for data in tables for series in split_series(data)]
    return [
        finish_log(data, collective, n_ranks, index, name_hint, nccl_version)
        for index, data in enumerate(found, start=1)
    ]


def _refuse_hidden_header(line: int, prefix: str, source: str | None) -> None:
    """Refuse a log whose column header follows a line prefix no reader removes."""
    shown = prefix.strip()
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    raise ParseError(
        f"no result rows found: a table's column header is at line {line}, but its lines start "
        f"with {shown!r}, which is not a launcher prefix commsim knows (mpirun --tag-output's "
        "'[1,0]<stdout>:', srun --label's '0:', mpiexec -prepend-rank's '[0]', 'rank 0:', Ray's "
        "'(name pid=N)', a time stamp, a Markdown quote's '> '); remove it from every line and run again",
        source=source,
        line=line,
    )


def describe_runs(runs: list[NcclTestsLog]) -> str:
    """``run 1: lines 23-53 reduce_scatter float sum; run 2: ...``: how to tell the runs apart.

    Each run is named by its lines and collective, and by its rows' data
    type and reduction (and root) when runs of the same collective differ in
    them, as the series of one ``-d all``/``-o all`` table do.
    """
    from commsim.calibrate.parser_series import SeriesKey, series_key, series_label

    keys = [series_key(log.rows[0]) for log in runs]
    seen: dict[str | None, set[SeriesKey]] = {}
    for log, key in zip(runs, keys, strict=True):
        seen.setdefault(log.collective, set()).add(key)
    described = []
    for log, key in zip(runs, keys, strict=True):
        same = seen[log.collective]
        by_type = len({(k.dtype, k.redop) for k in same}) > 1
        by_root = len({k.root for k in same}) > 1
        series = series_label(key, root=by_root) if by_type else f"root {key.root}" if by_root else ""
        collective = log.collective or "(no collective)"
        described.append(f"run {log.run_index}: lines {log.first_line}-{log.last_line} {collective} {series}")
    return "; ".join(text.rstrip() for text in described)


def _pick_run(runs: list[NcclTestsLog], run: int, source: str | None) -> NcclTestsLog:
    if not 1 <= run <= len(runs):
        raise ParseError(
            f"there is no run {run}: the log holds {len(runs)} run(s) ({describe_runs(runs)})",
            source=source,
        )
    return runs[run - 1]


def _read_log_file(path: str | PathLike[str]) -> str:
    from commsim.textfile import read_text_file

    return read_text_file(path, "nccl-tests log")


def load_nccl_tests(
    path: str | PathLike[str],
    collective: str | None = None,
    *,
    n_ranks: int | None = None,
    run: int | None = None,
    name_hint: bool = False,
    nccl_version: str | None = None,
) -> NcclTestsLog:
    """Read an nccl-tests log file (text or ``-J`` JSON).

    Parameters
    ----------
    path : str or path-like
        The log file; its name becomes the log's ``source``.
    collective, n_ranks, run, nccl_version
        As for :func:`parse_nccl_tests`.
    name_hint : bool
        Whether the file's name may choose the collective among those the
        table allows, when the log names no binary.

    Returns
    -------
    NcclTestsLog

    Raises
    ------
    ParseError
        If the file cannot be read or parsed.
    """
    text = _read_log_file(path)
    hint = Path(path).name if name_hint else None
    return parse_nccl_tests(
        text,
        source=str(path),
        collective=collective,
        n_ranks=n_ranks,
        run=run,
        name_hint=hint,
        nccl_version=nccl_version,
    )


def load_nccl_tests_runs(
    path: str | PathLike[str],
    collective: str | None = None,
    *,
    n_ranks: int | None = None,
    name_hint: bool = False,
    nccl_version: str | None = None,
) -> list[NcclTestsLog]:
    """Read every run of an nccl-tests log file; see :func:`parse_nccl_tests_runs`.

    ``name_hint`` is as for :func:`load_nccl_tests`, ``nccl_version`` as for
    :func:`parse_nccl_tests_runs`.

    Raises
    ------
    ParseError
        If the file cannot be read or parsed.
    """
    text = _read_log_file(path)
    hint = Path(path).name if name_hint else None
    return parse_nccl_tests_runs(
        text,
        source=str(path),
        collective=collective,
        n_ranks=n_ranks,
        name_hint=hint,
        nccl_version=nccl_version,
    )
