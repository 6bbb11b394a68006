"""What the nccl-tests readers share: line cleaning, checks, assembling the log.

The text reader (:mod:`~commsim.calibrate.parser_text`) and the JSON reader
(:mod:`~commsim.calibrate.parser_json`) each fill a :class:`RunData`;
:func:`finish_log` checks it and builds the public
:class:`~commsim.calibrate.parser.NcclTestsLog`.

The checks redo nccl-tests' arithmetic (SEED_FACTS.md section 6; the
``GetBw`` functions of nccl-tests ``src/*.cu``): ``algbw = size / time`` and
``busbw = algbw x factor``. Bandwidths are printed with two decimals and the
time with about four significant digits, so a row is only inconsistent when
no values inside the rounding intervals of the printed strings fit.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

from commsim.calibrate.parser import Device, NcclTestsLog, NcclTestsRow, normalise_collective
from commsim.calibrate.parser_checks import unique_devices, wrong_warnings
from commsim.calibrate.parser_command import TestsCommand, command_evidence, read_command
from commsim.calibrate.settings import RunSettings, split_mask
from commsim.errors import ParseError

__all__ = [
    "ALGBW_FACTORS",
    "BUSBW_FACTORS",
    "GBPS",
    "CleanText",
    "ColumnHeader",
    "Measured",
    "Printed",
    "RunData",
    "average_warnings",
    "bandwidth_warnings",
    "clean_lines",
    "clean_text",
    "find_topo_matrix",
    "finish_log",
    "printed",
]

GBPS = 1e9
"""Bytes per second in nccl-tests' "GB/s" (decimal)."""

_SLACK = 1e-9  # relative, for the floating-point error of our own arithmetic


def _one(ranks: int) -> float:
    return 1.0


def _ring(ranks: int) -> float:
    return (ranks - 1) / ranks


ALGBW_FACTORS: dict[str, Callable[[int], float]] = {"hypercube": _ring}
"""algbw / (size / time) per collective; 1 for every collective not listed.

nccl-tests' hypercube test counts only the ``n-1`` received blocks of the
``n``-block buffer it prints as the size.
"""

BUSBW_FACTORS: dict[str, Callable[[int], float]] = {
    "all_reduce": lambda ranks: 2.0 * _ring(ranks),
    "all_gather": _ring,
    "reduce_scatter": _ring,
    "all_to_all": _ring,
    "gather": _ring,
    "scatter": _ring,
    "broadcast": _one,
    "reduce": _one,
    "send_recv": _one,
    "hypercube": _one,
}
"""busbw / algbw per collective, as a function of the number of ranks."""


class Printed(NamedTuple):
    """A printed number and half a unit of its last printed digit.

    The true value lies in ``[value - half_ulp, value + half_ulp]``.
    """

    value: float
    half_ulp: float

    def divided(self, divisor: float) -> Printed:
        """The same printed number in a larger unit (microseconds / 1e6 = seconds)."""
        return Printed(self.value / divisor, self.half_ulp / divisor)


class Measured(NamedTuple):
    """One printed (time, algbw, busbw) triple of a result row.

    ``time`` is in seconds, ``algbw`` and ``busbw`` in GB/s (1e9 bytes/s) as
    printed; ``label`` says which half of the row it is ("out-of-place").
    """

    line: int
    label: str
    nbytes: int
    time: Printed
    algbw: Printed
    busbw: Printed


def printed(token: str) -> Printed:
    """Read a number as nccl-tests printed it, keeping its precision.

    Examples
    --------
    >>> printed("40.12")
    Printed(value=40.12, half_ulp=0.005)
    >>> printed("1.2e+08").half_ulp
    5000000.0
    """
    mantissa, _, exponent = token.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    power = int(exponent) if exponent else 0
    return Printed(float(token), 0.5 * 10.0 ** (power - decimals))


def _expected_GBps(nbytes: int, time: Printed, factor: float) -> tuple[float, float]:
    """Lowest and highest bandwidth that ``nbytes`` over the printed time allow."""
    if nbytes == 0:
        return 0.0, 0.0
    longest = time.value + time.half_ulp
    shortest = time.value - time.half_ulp
    low = nbytes * factor / longest / GBPS if longest > 0 else math.inf
    high = nbytes * factor / shortest / GBPS if shortest > 0 else math.inf
    return low, high


def _disagrees(shown: Printed, low: float, high: float) -> bool:
    slack = _SLACK * max(abs(shown.value), 1.0)
    return shown.value + shown.half_ulp + slack < low or shown.value - shown.half_ulp - slack > high


def _check(m: Measured, column: str, shown: Printed, factor: float, why: str) -> str | None:
    if math.isnan(m.time.value) or math.isnan(shown.value):
        return None
    low, high = _expected_GBps(m.nbytes, m.time, factor)
    if not _disagrees(shown, low, high):
        return None
    return (
        f"line {m.line}: {m.label} {column} {shown.value:g} GB/s disagrees with "
        f"size / time{why} = {m.nbytes} B / {m.time.value * 1e6:.6g} us{why}, which allows "
        f"{low:.6g} to {high:.6g} GB/s after print rounding"
    )


def bandwidth_warnings(measured: list[Measured], collective: str | None, ranks: int) -> list[str]:
    """Warnings for printed bandwidths that their size and time cannot explain.

    Parameters
    ----------
    measured : list of Measured
        The printed triples of every row.
    collective : str or None
        Normalised collective name; without it only algbw is checked (its
        factor is 1 for every collective but hypercube) and busbw is not
        (:func:`finish_log` says so in its own warning).
    ranks : int
        Number of ranks; 0 when unknown (then only algbw is checked).

    Returns
    -------
    list of str
        One message per disagreeing column, naming the line; past
        :data:`_MAX_ROW_WARNINGS` the rest are summed up in one message.
    """
    known = ranks > 0 and collective is not None
    alg = ALGBW_FACTORS.get(collective or "", _one)(ranks) if known else 1.0
    bus = BUSBW_FACTORS[collective](ranks) if known and collective in BUSBW_FACTORS else None
    alg_why = f" x {alg:.4g}" if alg != 1.0 else ""
    warnings: list[str] = []
    rows: list[tuple[int, str]] = []
    for m in measured:
        found = [_check(m, "algbw", m.algbw, alg, alg_why)]
        if bus is not None:
            found.append(_check(m, "busbw", m.busbw, alg * bus, f" x {alg * bus:.4g}"))
        rows.extend((m.line, w) for w in found if w is not None)
    warnings.extend(w for _, w in rows[:_MAX_ROW_WARNINGS])
    if len(rows) > _MAX_ROW_WARNINGS:
        rest = rows[_MAX_ROW_WARNINGS:]
        warnings.append(
            f"... and {len(rest)} more printed bandwidths disagree the same way (lines {rest[0][0]} to "
            f"{rest[-1][0]}); if every row disagrees, check the number of ranks ({ranks}) and the collective"
        )
    return warnings


_MAX_ROW_WARNINGS = 3
"""Disagreeing bandwidths reported one by one; the rest in one line (a wrong rank count hits every row)."""


class ColumnHeader(NamedTuple):
    """A result table's column header: its line and the names of its columns.

    ``names`` are canonical (``size``, ``count``, ``type``, ``redop``, ``root``,
    ``time``, ``error`` ...: an old ``op`` column is ``redop``, ``res`` is
    ``error``); which of them an old header lacks tells collectives apart
    (:mod:`~commsim.calibrate.parser_collective`).
    """

    line: int
    names: frozenset[str]


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


_COMMENTARY = re.compile(r"^\s*##(?:\s|$)")
_PREFIXES = (
    re.compile(r"^\s*\[\d+,(?P<rank>\d+)\]<(?:stdout|stderr)>:"),  # mpirun --tag-output
    re.compile(r"^\s*\[(?P<rank>\d+)\](?:[ \t]|$)"),  # mpiexec -prepend-rank (MPICH, Intel MPI)
    re.compile(r"^\s*(?P<rank>\d+):(?:[ \t]|$)"),  # srun --label
    re.compile(r"^\s*rank\s*(?P<rank>\d+)\s*:[ \t]?", re.IGNORECASE),
    re.compile(r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?[ \t]"),
)


class CleanText(NamedTuple):
    """A log's lines with commentary blanked and launcher prefixes removed.

    ``prefix_ranks`` maps a line number to the rank its MPI or Slurm prefix
    named (``[1,15]<stdout>:`` or ``15:`` -> 15).
    """

    lines: list[str]
    prefix_ranks: dict[int, int]


def clean_text(text: str) -> CleanText:
    """The lines of ``text`` with commentary blanked and launcher prefixes removed.

    Blanking (rather than dropping) keeps list index + 1 equal to the line number.
    """
    cleaned: list[str] = []
    ranks: dict[int, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if _COMMENTARY.match(line):
            cleaned.append("")
            continue
        line, rank = _strip_prefixes(line)
        cleaned.append(line)
        if rank is not None:
            ranks[number] = rank
    return CleanText(cleaned, ranks)


_BRACKETED = re.compile(r"\[[\d,]+\](?:<(?:stdout|stderr)>:)?")
"""A bracketed launcher prefix (``[0]``, ``[1,0]<stdout>:``) as text, to find it again inside a line."""
_ROW_START = re.compile(r"\s*\d")
"""A result row starts with its size; NCCL's lines start with a host name or a bracketed tag."""


def _strip_prefixes(line: str) -> tuple[str, int | None]:
    """``line`` without its launcher prefixes, and the rank they name.

    A launcher that tags each write rather than each line (``mpiexec
    -prepend-rank``) puts its bracketed prefix again inside a result row,
    glued to the field before it, since nccl-tests prints a row in pieces
    (``-1[0]    1626.5``): those repeats are replaced by a blank, in result rows
    only (NCCL's channel lines name ranks as ``0[0] -> 1[1]``).
    """
    rank, tags = None, set()
    for _ in range(4):  # a time stamp, a launcher, a tagger, a rank
        stripped = line
        for prefix in _PREFIXES:
            match = prefix.match(stripped)
            if match:
                stripped = stripped[match.end() :]
                rank = int(match.group("rank")) if match.groupdict().get("rank") else rank
                tags.update(_BRACKETED.findall(match.group(0)))
        if stripped == line:
            break
        line = stripped
    if _ROW_START.match(line) and "NCCL" not in line:  # NCCL's own lines keep their 0[0] rank tags
        for tag in tags:
            line = re.sub(r"(?<=\S)" + re.escape(tag), " ", line)
    return line, rank


def clean_lines(text: str) -> list[str]:
    """The lines of ``text`` with commentary blanked and launcher prefixes removed."""
    return clean_text(text).lines


def finish_log(
    data: RunData,
    collective: str | None,
    n_ranks: int | None,
    run_index: int = 1,
    name_hint: str | None = None,
) -> NcclTestsLog:
    """Check what a reader found and build the :class:`NcclTestsLog`.

    The collective is the one given, else the binary the log names, else
    the one the result table leaves, else the one ``name_hint`` (the file
    name) names among those the table allows
    (:func:`~commsim.calibrate.parser_collective.decide_collective`); the
    number of ranks is read with the first two only, and busbw is checked
    with the collective decided.
    """
    from commsim.calibrate.parser_collective import decide_collective

    if not data.rows and data.failure is not None:
        line, what = data.failure
        raise ParseError(
            f"the run failed before printing a result row: line {line}: {what}; no result to validate",
            source=data.source,
        )
    if not data.rows:
        raise ParseError(
            "no result rows found; expected nccl-tests' table (a '#  size  count  type ...' "
            "column header followed by one row per message size)",
            source=data.source,
            line=data.first_line if run_index > 1 else None,
        )
    warnings = list(data.warnings)
    if data.failure is not None:
        warnings.append(
            f"line {data.failure[0]}: the run failed ({data.failure[1]}): later sizes are missing"
        )
    named = _resolve_collective(collective, data.program, warnings)
    devices = unique_devices(data.devices, warnings)
    command = read_command(data.command, data.command_line) if data.command else None
    one_process, command_warnings = command_evidence(
        command, data.header, data.header_line, bool(data.prefix_ranks)
    )
    warnings += command_warnings
    from commsim.calibrate.parser_ranks import resolve_ranks  # it reads this module's types

    ranks, evidence = resolve_ranks(n_ranks, devices, named, data, warnings, one_process)
    name, collective_evidence, found = decide_collective(
        collective, data.program, data.rows, data.measured, evidence, name_hint, data.column_header
    )
    warnings += found
    warnings += bandwidth_warnings(data.measured, name, ranks)
    warnings += wrong_warnings(data)
    warnings += average_warnings(data)
    warnings += data.settings.warnings
    warnings += split_warnings(data.settings, ranks)
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
    return bool(devices) and [d.rank for d in devices] == list(range(ranks))


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


def _show(value: object) -> str:
    return f"{value[0]} to {value[1]}" if isinstance(value, tuple) else str(value)


def _average_Bps(average: Printed | None) -> float | None:
    if average is None or math.isnan(average.value):
        return None
    return average.value * GBPS


def average_warnings(data: RunData) -> list[str]:
    """Whether ``# Avg bus bandwidth`` is the mean busbw of the rows, as nccl-tests computes it.

    A mismatch means rows are missing (cut from the log) or were edited.
    """
    busbw = [m.busbw for m in data.measured if not math.isnan(m.busbw.value)]
    if data.avg_busbw is None or math.isnan(data.avg_busbw.value) or not busbw:
        return []
    mean = math.fsum(b.value for b in busbw) / len(busbw)
    rounding = math.fsum(b.half_ulp for b in busbw) / len(busbw) + data.avg_busbw.half_ulp
    if abs(mean - data.avg_busbw.value) <= rounding * (1 + _SLACK) + _SLACK:
        return []
    return [
        f"Avg bus bandwidth {data.avg_busbw.value:g} GB/s is not the mean busbw of the "
        f"{len(busbw)} results read ({mean:.6g} GB/s): rows may be missing from the log"
    ]


_TOPO_CELL = re.compile(r"^(?:X|SYS|SOC|NODE|PHB|PXB|PIX|PXN|NV\d+)$")
_TOPO_LABEL = re.compile(r"^[A-Za-z][\w-]*\d$")


def find_topo_matrix(lines: list[str]) -> str | None:
    """The raw text of the first ``nvidia-smi topo -m`` matrix in ``lines``.

    The matrix runs from its ``GPU0 GPU1 ...`` header row through its last
    row (``GPUn``/``NICn`` followed by one connection code per column).
    Other matrices with the same header, e.g. ``topo -p2p``, are skipped.
    """
    for index, line in enumerate(lines):
        labels = _topo_labels(line)
        if labels:
            count = _count_topo_rows(lines, index + 1, labels)
            if count:
                return "\n".join(lines[index : index + 1 + count])
    return None


def _topo_labels(line: str) -> list[str]:
    tokens = line.split()
    if not tokens or tokens[0] != "GPU0":
        return []
    labels = list(itertools.takewhile(_TOPO_LABEL.match, tokens))
    if len(tokens) > len(labels) and _TOPO_CELL.match(tokens[len(labels)]):
        return []  # a matrix row, not the header
    return labels


def _count_topo_rows(lines: list[str], start: int, labels: list[str]) -> int:
    count = 0
    for line in lines[start:]:
        tokens = line.split()
        cells = tokens[1 : 1 + len(labels)]
        if not tokens or tokens[0] not in labels or len(cells) < len(labels):
            break
        if not all(_TOPO_CELL.match(cell) for cell in cells):
            break
        count += 1
    return count
