"""What the nccl-tests readers share: the run data they fill, and the checks that assemble the log.

The text reader (:mod:`~commsim.calibrate.parser_text`) and the JSON reader
(:mod:`~commsim.calibrate.parser_json`) each fill a :class:`RunData`;
:func:`finish_log` checks it and builds the public
:class:`~commsim.calibrate.parser.NcclTestsLog`. The checks of the printed
bandwidths are :mod:`~commsim.calibrate.parser_bandwidth`; the text's
cleaning :mod:`~commsim.calibrate.parser_lines`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import NamedTuple

from commsim.calibrate.evidence import Evidence
from commsim.calibrate.parser import Device, NcclTestsLog, NcclTestsRow, normalise_collective
from commsim.calibrate.parser_bandwidth import GBPS, Measured, Printed, average_warnings, bandwidth_warnings
from commsim.calibrate.parser_checks import unique_devices, wrong_warnings
from commsim.calibrate.parser_command import TestsCommand, command_evidence, read_command
from commsim.calibrate.settings import RunSettings, split_mask
from commsim.errors import ParseError

__all__ = ["CUT_LIST", "ColumnHeader", "RunData", "finish_log", "split_warnings"]

CUT_LIST = "the list looks cut"
"""Said by the table's collective evidence when no collective fits the device list's rank count."""


class ColumnHeader(NamedTuple):
    """A result table's column header: its line and the names of its columns.

    ``names`` are canonical (``size``, ``count``, ``type``, ``redop``, ``root``,
    ``time``, ``error`` ...: an old ``op`` column is ``redop``, ``res`` is
    ``error``); which of them an old header lacks tells collectives apart
    (:mod:`~commsim.calibrate.parser_table_fit`).
    """

    line: int
    names: frozenset[str]
    headerless: bool = False  # the standard layout of rows quoted without their header
    in_place_wrong: bool = True  # an in-place '#wrong' column (a page may drop the last one)
    per_rank_count: bool = True  # 'count' is common.cu's per-rank count (not the 2017 'bytes N' ms tables)


@dataclass
class RunData:
    """What a reader found in one log, before checks (internal to the readers)."""

    source: str | None
    devices: list[Device] = field(default_factory=list)
    header: dict[str, int | str] = field(default_factory=dict)
    rows: list[NcclTestsRow] = field(default_factory=list)
    measured: list[Measured] = field(default_factory=list)
    avg_busbw: Printed | None = None  # GB/s, as printed
    out_of_bounds: int | None = None
    out_of_bounds_line: int | None = None
    failure: tuple[int, str] | None = None  # (line, text) of the first 'Test ... failure'
    nccl_warn: tuple[int, str] | None = None  # (line, text) of NCCL's first 'NCCL WARN'
    nccl_version: str | None = None
    command: str | None = None
    command_line: int | None = None  # the line the command starts on
    program: str | None = None
    topo_matrix: str | None = None
    warnings: list[str] = field(default_factory=list)
    header_line: tuple[int, str] | None = None  # (line, text) of the run header
    prefix_ranks: dict[int, int] = field(default_factory=dict)  # line -> launcher rank
    info_nranks: list[tuple[int, int, str]] = field(default_factory=list)  # (line, nranks, text)
    settings: RunSettings = field(default_factory=RunSettings)
    column_header: ColumnHeader | None = None  # None in JSON (no header)
    first_line: int | None = None
    last_line: int | None = None
    last_text: str | None = None  # the run's last non-blank line, stripped
    dropped_row: str | None = None  # the warning on a last row cut too short to read
    hashed_row: int | None = None  # the first line in a table that is a result row behind '#'


def _failure_warning(data: RunData) -> str:
    """The warning for the run's failed call: after the footer's out-of-bounds line, nccl-tests' own
    exit on wrong values (the table is whole); before it, a failure that cut the sizes short."""
    assert data.failure is not None
    line, what = data.failure
    footer = data.out_of_bounds_line
    if footer is not None and footer < line and data.out_of_bounds:
        return (
            f"line {line}: the run exited with a failure ({what}) after its footer (line {footer}) "
            f"reported {data.out_of_bounds} out-of-bounds values: no size is missing"
        )
    if footer is not None and footer < line:
        return f"line {line}: the run failed ({what}) after its footer (line {footer}): no size is missing"
    return f"line {line}: the run failed ({what}): later sizes are missing"


def finish_log(
    data: RunData,
    collective: str | None,
    n_ranks: int | None,
    run_index: int = 1,
    name_hint: str | None = None,
    nccl_version: str | None = None,
) -> NcclTestsLog:
    """Check what a reader found and build the :class:`NcclTestsLog`.

    The collective is the one given, else the binary the log names, else
    the one the result table leaves, else the one ``name_hint`` (the file
    name) names among those the table allows
    (:func:`~commsim.calibrate.parser_collective.decide_collective`, told
    the NCCL version given as ``nccl_version``, else the one printed); the
    number of ranks is read with the first two, and read again with the
    collective the rows decide when the first count rested on a cut device
    list or a lower bound; busbw is checked with the collective decided.
    """
    _refuse_empty(data, run_index)
    warnings = list(data.warnings)
    if data.failure is not None:
        warnings.append(_failure_warning(data))
    named = _resolve_collective(collective, data.program, warnings)
    devices = unique_devices(data.devices, warnings)
    command = read_command(data.command, data.command_line) if data.command else None
    counted: list[str] = []
    ranks, evidence = _count_ranks(data, named, n_ranks, devices, command, counted)
    at = len(warnings)
    name, collective_evidence = _which_collective(
        data, collective, evidence, name_hint, nccl_version, warnings
    )
    if named is None and name is not None and any(CUT_LIST in (e.text or "") for e in collective_evidence):
        counted = []  # the rows' collective outweighs the cut list's count (probe 14's 257)
        ranks, evidence = _count_ranks(data, name, n_ranks, devices, command, counted)
    elif named is None and name is not None and _only_bound(evidence):
        ranks, evidence, counted = _recount(data, name, n_ranks, devices, command, (ranks, evidence, counted))
    warnings[at:at] = counted  # where the count's warnings always stood
    warnings += _check_warnings(data, name, ranks)
    complete = _complete(devices, ranks) and all(d.host for d in devices)
    hosts = list(dict.fromkeys(d.host for d in devices if d.host))
    warnings += _hostless_warnings(devices)
    launch, per_thread = _launch(devices, data.header, command)
    return NcclTestsLog(
        source=data.source,
        collective=name,
        collective_evidence=collective_evidence,
        n_ranks=ranks,
        devices=devices,
        hosts=hosts,
        nodes=len(hosts) if complete else 0,
        gpu_models=list(dict.fromkeys(d.model for d in devices)),
        nccl_version=data.nccl_version,
        command=data.command,
        command_line=data.command_line,
        header=data.header,
        rows=data.rows,
        avg_busbw_Bps=_average_Bps(data.avg_busbw),
        topo_matrix=data.topo_matrix,
        warnings=warnings,
        out_of_bounds=data.out_of_bounds,
        out_of_bounds_line=data.out_of_bounds_line,
        rank_evidence=evidence,
        rank_source=evidence[0].source,
        placement={host: tuple(d.device for d in devices if d.host == host) for host in hosts},
        devices_complete=complete,
        launch=launch,
        gpus_per_thread=per_thread,
        run_index=run_index,
        first_line=data.first_line,
        last_line=data.last_line,
        settings=data.settings,
    )


def _count_ranks(
    data: RunData,
    named: str | None,
    n_ranks: int | None,
    devices: list[Device],
    command: TestsCommand | None,
    warnings: list[str],
) -> tuple[int, tuple[Evidence, ...]]:
    """The number of ranks and every source's evidence, the one used first; the warnings go into
    ``warnings``. ``named`` is the collective given or the binary's only: the table's word on the
    collective needs the rank count. A bare command line's process count is one more source."""
    from commsim.calibrate.parser_ranks import resolve_ranks  # it reads this module's types

    one_process, command_warnings = command_evidence(
        command, data.header, data.header_line, bool(data.prefix_ranks)
    )
    warnings += command_warnings
    return resolve_ranks(n_ranks, devices, named, data, warnings, one_process)


def _only_bound(evidence: tuple[Evidence, ...]) -> bool:
    """Whether the rank count chosen rests on a lower bound (a launcher's prefix, nThread x nGpus)."""
    from commsim.calibrate.parser_ranks import EXACT_SOURCES  # it reads this module's types

    return evidence[0].source not in EXACT_SOURCES


def _recount(
    data: RunData,
    name: str,
    n_ranks: int | None,
    devices: list[Device],
    command: TestsCommand | None,
    first: tuple[int, tuple[Evidence, ...], list[str]],
) -> tuple[int, tuple[Evidence, ...], list[str]]:
    """The rank count read again with the collective the rows decided, when the first count (read
    without a collective: no binary named) rests on a lower bound. The busbw/algbw ratio says the
    count only for a known collective's factor: busbw = algbw fits any n for broadcast but n = 2
    for all_reduce (probe 16's 286: '[1,1]<stdout>' prefixes, 'at least 2', and busbw = algbw in
    every row of an all_reduce). The first count stays when the second does not state one."""
    counted: list[str] = []
    try:
        ranks, evidence = _count_ranks(data, name, n_ranks, devices, command, counted)
    except ParseError:
        return first
    return (ranks, evidence, counted) if not _only_bound(evidence) else first


def _which_collective(
    data: RunData,
    collective: str | None,
    rank_evidence: tuple[Evidence, ...],
    name_hint: str | None,
    nccl_version: str | None,
    warnings: list[str],
) -> tuple[str | None, tuple[Evidence, ...]]:
    """The collective and its evidence
    (:func:`~commsim.calibrate.parser_collective.decide_collective`), told the NCCL version given
    as ``nccl_version``, else the one printed; the warnings go into ``warnings``."""
    from commsim.calibrate.parser_collective import decide_collective

    version = (nccl_version, "given") if nccl_version else None
    version = version or ((data.nccl_version, "printed") if data.nccl_version else None)
    name, evidence, found = decide_collective(
        collective,
        data.program,
        data.rows,
        data.measured,
        rank_evidence,
        name_hint,
        data.column_header,
        version,
    )
    warnings += found
    return name, evidence


def _refuse_empty(data: RunData, run_index: int) -> None:
    """Refuse a run without result rows, saying whether it failed first."""
    if not data.rows and data.failure is not None:
        line, what = data.failure
        warn = data.nccl_warn
        cause = f"; NCCL's first warning before it, line {warn[0]}: {warn[1]}" if warn else ""
        cause = cause if warn and warn[0] < line else ""
        raise ParseError(
            f"the run failed before printing a result row: line {line}: {what}{cause}; no result to validate",
            source=data.source,
        )
    if not data.rows:
        raise ParseError(
            _empty_reason(data),
            source=data.source,
            line=data.first_line if run_index > 1 else None,
        )


_NCCL_PREFIX = re.compile(r"^[^:]*:\d+:\d+ \[\d+\] NCCL (?:INFO|WARN) ")
"""NCCL's ``host:pid:tid [dev] NCCL INFO`` line prefix, left out where a line is quoted."""


def _quoted_last(data: RunData) -> str:
    """`` ('<the run's last line>')``, without NCCL's prefix and cut to 120 characters, or ``""``."""
    last = _NCCL_PREFIX.sub("", data.last_text or "")
    return f" ({last[:117] + '...' if len(last) > 120 else last!r})" if last else ""


def _after_header(data: RunData) -> str:
    """What follows the run's column header, when something does: NCCL's first warning after it,
    else the run's last line, quoted."""
    header = data.column_header
    if header is None:
        return ""
    warn = data.nccl_warn
    if warn is not None and warn[0] > header.line:
        return f": NCCL warns at line {warn[0]}: {_NCCL_PREFIX.sub('', warn[1])[:120]}"
    text = (data.last_text or "").strip()
    if data.last_line is None or data.last_line <= header.line or text[:1] in ("", "#"):
        return ""  # nothing after the header, or only its own '#' lines (the units)
    return f": its output ends at line {data.last_line}{_quoted_last(data)}"


def _empty_reason(data: RunData) -> str:
    """Why a run has no result row: its table holds no whole row, or it stopped before its table
    (NCCL's first warning, if any, named), or no table was found at all."""
    if data.column_header is not None and not data.column_header.headerless:
        cut = data.dropped_row
        why = (
            f"its only row is cut short ({cut})"
            if cut
            else "no result row (a line not starting with '#') follows it" + _after_header(data)
        )
        if not cut and data.hashed_row is not None:
            why += f"; line {data.hashed_row} is a result row behind '#': remove the '#' to validate the rows"
        return (
            f"no result rows found: the table's column header is at line {data.column_header.line}, "
            f"but {why}; no result to validate"
        )
    started = data.header_line[0] if data.header_line else (data.devices[0].line if data.devices else None)
    if started is not None:
        warn = data.nccl_warn
        cause = f"; NCCL's first warning, line {warn[0]}: {warn[1]}" if warn else ""
        return (
            f"no result rows found: the run started (line {started}) but its output ends at line "
            f"{data.last_line}{_quoted_last(data)} before the table: it hung, failed or was cut before its "
            f"first result{cause}; no result to validate"
        )
    return (
        "no result rows found; expected nccl-tests' table (a '#  size  count  type ...' "
        "column header followed by one row per message size)"
    )


def _check_warnings(data: RunData, collective: str | None, ranks: int) -> list[str]:
    """What the checks of a run's rows and settings find: printed bandwidths that their size and time
    cannot explain, wrong results, the average's mismatch, disagreeing settings, a split mask."""
    warnings = bandwidth_warnings(data.measured, collective, ranks)
    warnings += wrong_warnings(data)
    warnings += average_warnings(data)
    warnings += data.settings.warnings
    warnings += split_warnings(data.settings, ranks)
    return warnings


def _resolve_collective(explicit: str | None, program: str | None, warnings: list[str]) -> str | None:
    found = normalise_collective(program) if program else None
    if explicit is None:
        return found
    name = normalise_collective(explicit)
    if found is not None and found != name:
        warnings.append(f"collective given as {name!r} but the log runs {program}")
    return name


def split_warnings(settings: RunSettings, ranks: int) -> list[str]:
    """What ``NCCL_TESTS_SPLIT_MASK`` does to the run, when the log sets it to split the ranks."""
    found = split_mask(settings)
    if found is None:
        return []
    mask, seen = found
    return [
        f"NCCL_TESTS_SPLIT_MASK={seen.value} ({seen.describe()}): nccl-tests splits the ranks into "
        f"communicators by color = rank & {mask:#x} (up to {2 ** bin(mask).count('1')} of them) that run "
        f"the collective at the same time; the model prices one communicator of {ranks} rank(s) "
        "alone, but the concurrent communicators share the hosts' NICs and links, so the measured "
        "times are longer than one communicator's"
    ]


def _hostless_warnings(devices: list[Device]) -> list[str]:
    """A warning when the device lines name no host (an edited format without ``on HOST``)."""
    lines = [d.line for d in devices if not d.host and d.line is not None]
    if not lines:
        return []
    where = f"lines {min(lines)}-{max(lines)}" if len(lines) > 1 else f"line {lines[0]}"
    return [
        f"{where}: the '# Rank .. device ..' lines name no host (no 'on HOST'): the GPU is read "
        "from them, the number of hosts and ranks per host are not"
    ]


def _complete(devices: list[Device], ranks: int) -> bool:
    return len(devices) == ranks and [d.rank for d in devices] == list(range(ranks))


def _launch(
    devices: list[Device], header: dict[str, int | str], command: TestsCommand | None = None
) -> tuple[str, int]:
    """Launch mode and GPUs per thread, from the run header (else the command's -t/-g) and the devices' Pids.

    A Pid shared by two ranks means one process drives both, but only on one
    host: containers and pods on different hosts reuse the same Pid numbers.
    """
    threads, gpus = header.get("nThread"), header.get("nGpus")
    if gpus is None and command is not None and command.gpus is not None:
        threads, gpus = command.threads or 1, command.gpus
    per_thread = gpus if isinstance(gpus, int) and gpus > 0 else 1
    pids = [(d.host, d.pid) for d in devices if d.pid is not None]
    if per_thread > 1 or (isinstance(threads, int) and threads > 1) or len(pids) != len(set(pids)):
        return "threads", per_thread
    if len(pids) > 1 or (isinstance(threads, int) and isinstance(gpus, int)):
        return "processes", per_thread
    return "unknown", per_thread


def _average_Bps(average: Printed | None) -> float | None:
    if average is None or math.isnan(average.value):
        return None
    return average.value * GBPS
