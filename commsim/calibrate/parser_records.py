"""What an nccl-tests log says, as records: one row per size, one device per rank, the log of one run.

:mod:`~commsim.calibrate.parser` reads logs into these (and re-exports them).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from commsim.calibrate.evidence import Evidence
from commsim.calibrate.settings import RunSettings

__all__ = ["Device", "NcclTestsLog", "NcclTestsRow"]


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
    None when the format does not print them; ``host`` is ``""`` when the
    line names none (an edited format without ``on HOST``), ``"node N"``
    when it notes ``(node N)`` after the model instead; ``line`` is the 1-based line
    of the log that lists it (None in JSON) and takes no part in comparisons.
    """

    rank: int
    host: str
    device: int
    model: str
    pid: int | None = None
    bus_id: str | None = None
    line: int | None = field(default=None, compare=False)


@dataclass(frozen=True)
class NcclTestsLog:
    """Everything an nccl-tests log says about one run.

    Attributes
    ----------
    source : str or None
        File name, if read from a file.
    collective : str or None
        Normalised collective name (see :data:`~commsim.calibrate.parser.COLLECTIVES`): the one given,
        else the binary the log names, else the one its result table leaves
        (or the file name picks among those it allows); None if unknown.
    n_ranks : int
        Number of ranks (GPUs) in the run, chosen from ``rank_evidence``.
    devices : list of Device
        The ``# Using devices`` list, one entry per rank (possibly only some
        ranks: see ``devices_complete``).
    hosts : list of str
        Distinct host names of the device list in rank order.
    nodes : int
        Number of hosts when the device list is complete, else 0 (unknown).
    gpu_models : list of str
        Distinct GPU names in rank order.
    nccl_version : str or None
        ``2.26.2+cuda12.8`` from an ``NCCL version`` line, else the library
        version nccl-tests reports, else None.
    command : str or None
        The command line that ran the test, if the log shows it.
    command_line : int or None
        The line of the log that command starts on (None without one, or for a ``-J`` document).
    header : dict
        The run header (``nThread``, ``nGpus``, ``minBytes``, ``maxBytes``,
        ``step``, ``warmup iters``, ``iters``, ``agg iters``, ``validation``,
        ``graph`` ...): ints where the value is an integer, else strings.
    rows : list of NcclTestsRow
        Every result row, in file order.
    avg_busbw_Bps : float or None
        The ``# Avg bus bandwidth`` line, in bytes/s; None for one series of
        a table holding several (the footer averages them all).
    topo_matrix : str or None
        Raw text of an ``nvidia-smi topo -m`` matrix in the file, header row
        through last row.
    warnings : list of str
        Oddities found (inconsistent bandwidths, wrong elements ...).
    out_of_bounds : int or None
        The ``# Out of bounds values`` count.
    out_of_bounds_line : int or None
        The line of that count.
    collective_evidence : tuple of Evidence
        Every source's word on the collective, the one used first:
        ``"collective given (--collective)"``, ``"nccl-tests binary named in
        the log"``, ``"result table"`` (busbw/algbw, redop and root leave one
        collective), ``"result table (ambiguous)"`` (value: the tuple of
        collectives that fit), ``"file name"``; see
        :mod:`~commsim.calibrate.parser_collective`. Empty when nothing names it.
    rank_evidence : tuple of Evidence
        Every source's word on the number of ranks, the one used first:
        ``"device list"`` (complete list), ``"highest rank listed"``,
        ``"nThread x nGpus"`` and ``"MPI/Slurm line prefix"`` (lower bounds),
        ``"NCCL INFO nranks"``, ``"count column (size / (count x type size))"``
        (collectives that divide their buffer among the ranks),
        ``"busbw/algbw ratio"`` (unique answer) or
        ``"busbw/algbw ratio (ambiguous)"`` (value: lowest and highest fit),
        ``"n_ranks given (--gpus, or --nodes x --gpus-per-node)"``.
    rank_source : str
        The ``source`` of the evidence ``n_ranks`` was taken from.
    placement : dict of str to tuple of int
        Host -> CUDA device indices of its ranks, in rank order (from the
        device list).
    devices_complete : bool
        Whether the device list names every rank 0..n_ranks-1.
    launch : str
        ``"threads"`` (one process drives several GPUs), ``"processes"``
        (one GPU per process) or ``"unknown"``.
    gpus_per_thread : int
        The run header's ``nGpus`` (1 when not printed).
    run_index : int
        1-based position of this run in its file.
    first_line, last_line : int or None
        The lines of the file this run spans (1-based, inclusive); for one
        series of a table holding several, the lines of its first and last
        row.
    settings : RunSettings
        Library, version, forced ``NCCL_*`` settings and network the log shows.
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
    out_of_bounds_line: int | None = None
    collective_evidence: tuple[Evidence, ...] = ()
    rank_evidence: tuple[Evidence, ...] = ()
    rank_source: str = ""
    placement: dict[str, tuple[int, ...]] = field(default_factory=dict)
    devices_complete: bool = False
    launch: str = "unknown"
    gpus_per_thread: int = 1
    run_index: int = 1
    first_line: int | None = None
    last_line: int | None = None
    settings: RunSettings = field(default_factory=RunSettings)
    command_line: int | None = None

    @property
    def gpu_model(self) -> str | None:
        """The most common GPU name (the first one on a tie), None without devices or names."""
        names = [d.model for d in self.devices if d.model]
        if not names:
            return None
        return Counter(names).most_common(1)[0][0]

    @property
    def gpus_per_node(self) -> int | None:
        """The largest number of ranks on one host, None without a complete device list."""
        if not self.devices or not self.devices_complete:
            return None
        return max(Counter(d.host for d in self.devices).values())
