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
by :mod:`~commsim.calibrate.parser_json`; :mod:`~commsim.calibrate.parser_common`
checks what they found (busbw against size and time) and builds the log.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from os import PathLike
from pathlib import Path

from commsim.errors import ParseError, UnknownNameError

__all__ = [
    "COLLECTIVES",
    "Device",
    "NcclTestsLog",
    "NcclTestsRow",
    "load_nccl_tests",
    "normalise_collective",
    "parse_nccl_tests",
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


@dataclass(frozen=True)
class NcclTestsRow:
    """One message size of an nccl-tests run, in SI units.

    Attributes
    ----------
    nbytes, count : int
        nccl-tests' ``size`` (bytes) and ``count`` (elements) columns.
    dtype : str
        Element type (``float``, ``half``, ...).
    redop : str or None
        Reduction (``sum``, ``none`` ...), None when the format has no column.
    root : int or None
        Root rank (-1 when the collective has none), None without the column.
    oop_time_s, oop_algbw_Bps, oop_busbw_Bps : float
        Out-of-place time (s), algorithm and bus bandwidth (bytes/s).
    oop_wrong : int or None
        Wrong elements found (``#wrong``); None for ``N/A`` or old formats.
    ip_time_s, ip_algbw_Bps, ip_busbw_Bps : float or None
        The in-place values; None when missing or ``N/A``.
    ip_wrong : int or None
        In-place wrong elements.
    line : int
        1-based line of the row in its file (of the result in JSON).
    oop_max_error, ip_max_error : float or None
        Old formats' ``error`` column (largest deviation), else None.
    """

    nbytes: int
    count: int
    dtype: str
    redop: str | None
    root: int | None
    oop_time_s: float
    oop_algbw_Bps: float
    oop_busbw_Bps: float
    oop_wrong: int | None
    ip_time_s: float | None
    ip_algbw_Bps: float | None
    ip_busbw_Bps: float | None
    ip_wrong: int | None
    line: int
    oop_max_error: float | None = None
    ip_max_error: float | None = None


@dataclass(frozen=True)
class Device:
    """One rank of the run and the GPU it used (``#  Rank ... on HOST device ...``).

    ``pid`` and ``bus_id`` (as printed, e.g. ``0000:19:00`` or ``0x07``) are
    None when the format does not print them.
    """

    rank: int
    host: str
    device: int
    model: str
    pid: int | None = None
    bus_id: str | None = None


@dataclass(frozen=True)
class NcclTestsLog:
    """Everything an nccl-tests log says about one run.

    Attributes
    ----------
    source : str or None
        File name, if read from a file.
    collective : str or None
        Normalised collective name (see :data:`COLLECTIVES`), None if unknown.
    n_ranks : int
        Number of ranks (GPUs) in the run.
    devices : list of Device
        The ``# Using devices`` list, one entry per rank.
    hosts : list of str
        Distinct host names in rank order; ``nodes`` is their number (0 if
        the log has no device list).
    gpu_models : list of str
        Distinct GPU names in rank order.
    nccl_version : str or None
        ``2.26.2+cuda12.8`` from an ``NCCL version`` line, else the library
        version nccl-tests reports, else None.
    command : str or None
        The command line that ran the test, if the log shows it.
    header : dict
        The run header (``nThread``, ``nGpus``, ``minBytes``, ``maxBytes``,
        ``step``, ``warmup iters``, ``iters``, ``agg iters``, ``validation``,
        ``graph`` ...): ints where the value is an integer, else strings.
    rows : list of NcclTestsRow
        Every result row, in file order.
    avg_busbw_Bps : float or None
        The ``# Avg bus bandwidth`` line, in bytes/s.
    topo_matrix : str or None
        Raw text of an ``nvidia-smi topo -m`` matrix in the file, header row
        through last row.
    warnings : list of str
        Oddities found (inconsistent bandwidths, wrong elements ...).
    out_of_bounds : int or None
        The ``# Out of bounds values`` count.
    """

    source: str | None
    collective: str | None
    n_ranks: int
    devices: list[Device]
    hosts: list[str]
    nodes: int
    gpu_models: list[str]
    nccl_version: str | None
    command: str | None
    header: dict[str, int | str]
    rows: list[NcclTestsRow]
    avg_busbw_Bps: float | None
    topo_matrix: str | None
    warnings: list[str]
    out_of_bounds: int | None = None

    @property
    def gpu_model(self) -> str | None:
        """The most common GPU name (the first one on a tie), None without devices."""
        if not self.devices:
            return None
        return Counter(d.model for d in self.devices).most_common(1)[0][0]

    @property
    def gpus_per_node(self) -> int | None:
        """The largest number of ranks on one host, None without devices."""
        if not self.devices:
            return None
        return max(Counter(d.host for d in self.devices).values())


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


def decode_version_code(code: int) -> str:
    """NCCL's ``NCCL_VERSION_CODE`` as ``major.minor.patch``.

    Codes from 2.9 on are ``major*10000 + minor*100 + patch``; older ones
    ``major*1000 + minor*100 + patch``.

    Examples
    --------
    >>> decode_version_code(22602), decode_version_code(2408)
    ('2.26.2', '2.4.8')
    """
    if code >= 10000:
        return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"
    return f"{code // 1000}.{code % 1000 // 100}.{code % 100}"


def parse_nccl_tests(
    text: str,
    source: str | None = None,
    collective: str | None = None,
    *,
    n_ranks: int | None = None,
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
        Number of ranks, for logs without a device list; wins over the list.

    Returns
    -------
    NcclTestsLog

    Raises
    ------
    ParseError
        If a result row is truncated or garbled (the message names the line
        and what was expected), or the log holds no result rows.
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
    # The readers build this module's data classes, so they are imported when used.
    from commsim.calibrate.parser_common import clean_lines, finish_log
    from commsim.calibrate.parser_json import read_json_run
    from commsim.calibrate.parser_text import read_text_run

    cleaned = clean_lines(text)
    first = next((line for line in cleaned if line.strip()), "")
    if first.lstrip().startswith("{"):
        data = read_json_run(cleaned, source)
    else:
        data = read_text_run(cleaned, source)
    return finish_log(data, collective, n_ranks)


def load_nccl_tests(
    path: str | PathLike[str], collective: str | None = None, *, n_ranks: int | None = None
) -> NcclTestsLog:
    """Read an nccl-tests log file (text or ``-J`` JSON).

    Parameters
    ----------
    path : str or path-like
        The log file; its name becomes the log's ``source``.
    collective, n_ranks
        As for :func:`parse_nccl_tests`.

    Returns
    -------
    NcclTestsLog

    Raises
    ------
    ParseError
        If the file cannot be read or parsed.
    """
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ParseError(f"cannot read nccl-tests log: {exc.strerror}", source=str(path)) from None
    return parse_nccl_tests(text, source=str(path), collective=collective, n_ranks=n_ranks)
