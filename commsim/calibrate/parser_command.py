"""What the nccl-tests command line a log shows says: ``-g``, ``-t``, ``-G``, and who started it.

nccl-tests reads ``-t,--nthreads`` (threads per process), ``-g,--ngpus``
(GPUs per thread) and ``-G,--cudagraph`` (CUDA/HIP graph launches) with
``getopt_long`` (nccl-tests and rccl-tests ``src/common.cu``); a process
drives ``t x g`` ranks on its own host. A command with no launcher in front
(``./build/sendrecv_perf -b 128M -e 1G -f 2 -g 8``) is one process: ``t x g``
ranks on one host. An MPI or Slurm launcher that states its process count
(``mpirun -np N``, ``mpiexec -n N``, ``srun -n N``, ``srun --ntasks=N``,
``srun -N nodes --ntasks-per-node M``) starts that many, so ``N x t x g``
ranks (:data:`LAUNCHED`); other launchers (``torchrun``, ``ssh`` ...), or
one without a count, leave the total unknown.

Only what is certain is read: an option whose value is not a plain integer
(``-g $NGPUS``) is left unknown, and a command is *bare* only when every
word before the binary is an environment assignment or a wrapper known to
start a single process (``env``, ``numactl``, ``taskset``, ``timeout`` ...).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from commsim.calibrate.evidence import Evidence
from commsim.calibrate.parser import find_program

__all__ = [
    "LAUNCHED",
    "MAX_RANKS",
    "ONE_PROCESS",
    "TestsCommand",
    "command_evidence",
    "find_command",
    "read_command",
    "root_prompt",
]

_PROGRAM = re.compile(
    r"(?<![\w-])(?:all_reduce|all_gather|reduce_scatter|broadcast|reduce|alltoall|sendrecv"
    r"|gather|scatter|hypercube)_perf(?:_mpi)?$"
)
_OPTIONS = {"-t": "threads", "--nthreads": "threads", "-g": "gpus", "--ngpus": "gpus", "-G": "graph"}
_OPTIONS["--cudagraph"] = "graph"
_SINGLE_PROCESS = {
    "env",
    "sudo",
    "time",
    "nohup",
    "exec",
    "numactl",
    "taskset",
    "stdbuf",
    "nice",
    "timeout",
    "chrt",
    "nsys",
    "ncu",
    "rocprof",
    "rocprofv2",
    "rocprofv3",
    "profile",
}
"""Wrappers that run the binary in their own single process (their options may follow them)."""
_MPI_LAUNCHER = re.compile(r"^(?:mpirun|mpiexec|orterun|prterun|srun)(?:[._-][\w.-]*)?$")
"""MPI and Slurm launchers (``mpirun.mpich``, ``mpiexec.hydra``, ``srun`` ...) whose process count is read."""
_PROCESS_COUNT = {"-np": "total", "--np": "total", "-n": "total", "--n": "total", "--ntasks": "total"}
_PROCESS_COUNT |= {"-N": "nodes", "--nodes": "nodes", "--ntasks-per-node": "per_node"}
_SHELL_END = {"|", "||", "&&", ";", "&", ">", ">>", "2>&1", "<"}
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_WRAPPER_ARGUMENT = re.compile(r"^-|^\d[\d.,:-]*[smhd]?$")  # an option, a number, a CPU list, a duration


@dataclass(frozen=True)
class TestsCommand:
    """The nccl-tests command line of a log, as far as it is certain.

    Attributes
    ----------
    text : str
        The command (continuations joined, prompt removed).
    line : int or None
        1-based line of the log it starts on (None for a ``-J`` document).
    launcher : str or None
        The first word before the binary that is no single-process wrapper
        (``mpirun``, ``srun`` ...); None for a bare command.
    threads, gpus, graph : int or None
        ``-t``, ``-g`` and ``-G`` as given (None when not given or not a
        plain integer).
    unknown : tuple of str
        Options among ``-t``/``-g``/``-G`` given with a value that is not a
        plain integer.
    processes : int or None
        The processes an MPI or Slurm launcher starts (``-np 16``, ``srun -N 2
        --ntasks-per-node 8``); None for other launchers, a bare command, or a
        count that is not a plain integer (``-n $GPUS``).
    per_host : int or None
        The processes an MPI or Slurm launcher starts on each host, when it
        states the same number for every host (:func:`_per_host`); else None.
    """

    text: str
    line: int | None
    launcher: str | None
    threads: int | None = None
    gpus: int | None = None
    graph: int | None = None
    unknown: tuple[str, ...] = ()
    processes: int | None = None
    per_host: int | None = None

    @property
    def one_process_ranks(self) -> int | None:
        """Ranks of a bare command that sets ``-g`` or ``-t``: ``t x g`` in one process; else None."""
        unreadable = {"threads", "gpus"} & set(self.unknown)  # an unreadable -G says nothing of ranks
        if self.launcher is not None or unreadable or (self.gpus is None and self.threads is None):
            return None
        return (self.threads or 1) * (self.gpus or 1)


def _process_count(launcher: str | None, words: list[str]) -> int | None:
    """The process count an MPI or Slurm launcher's options (``words``, before the binary) state."""
    if launcher is None or not _MPI_LAUNCHER.match(launcher):
        return None
    found = _counts(launcher, words)
    if "total" in found:
        total = found["total"]
        return int(total) if total.isdecimal() else None
    nodes, per_node = found.get("nodes", ""), found.get("per_node", "")
    if launcher == "srun" and nodes.isdecimal() and per_node.isdecimal():
        return int(nodes) * int(per_node)
    return None


def _counts(launcher: str, words: list[str]) -> dict[str, str]:
    """What the launcher's count options say: ``total`` (``-np``, ``-n``, ``--ntasks``), ``nodes``
    (``-N``, ``--nodes``) and ``per_node`` (``--ntasks-per-node``), as written."""
    start = next(i for i, word in enumerate(words) if word.rsplit("/", 1)[-1] == launcher)
    found: dict[str, str] = {}
    index = start + 1
    while index < len(words):
        flag, value = words[index], None
        if flag.startswith("--") and "=" in flag:
            flag, value = flag.split("=", 1)
        elif flag[:2] == "-n" and flag[2:].isdecimal():  # srun -n16
            flag, value = "-n", flag[2:]
        if flag in _PROCESS_COUNT:
            if value is None:
                index += 1
                value = words[index] if index < len(words) else ""
            found.setdefault(_PROCESS_COUNT[flag], value)
        index += 1
    return found


_PER_HOST = {"--ntasks-per-node": "srun", "-npernode": "mpi", "--npernode": "mpi", "-ppn": "mpi"}
_PER_HOST |= {"--ppn": "mpi"}
"""Options stating the processes per host: Slurm's, Open MPI's (``-npernode``), MPICH/Hydra's, Intel
MPI's and Cray PALS's (``-ppn``)."""
_HOST_LIST = {"-H", "--host", "-host", "--hosts", "-hosts"}
_OPEN_MPI = re.compile(r"^(?:mpirun|orterun|prterun)\b")
"""Open MPI's launchers, whose ``-N n`` is n processes per node (srun's ``-N`` counts nodes)."""
_PPR = re.compile(r"^ppr:(\d+):node\b")


def _per_host(launcher: str | None, words: list[str], processes: int | None) -> int | None:
    """The processes an MPI or Slurm launcher starts on each host, when its options state it.

    ``srun --ntasks-per-node 4``, ``mpirun -npernode 8`` (or Open MPI's ``-N 8``), ``mpiexec -ppn 8``,
    ``mpirun --map-by ppr:8:node``, or a host list giving every host the same slots (``-H a:8,b:8``; a
    host without ``:N`` has one slot, as Open MPI reads it) that the process count fills. None when
    nothing states it, or its words disagree (``srun -N 2 -n 8`` leaves the layout to Slurm: not read).
    """
    if launcher is None or not _MPI_LAUNCHER.match(launcher):
        return None
    counts = _counts(launcher, words) if launcher == "srun" else {}
    if "total" in counts:
        return _srun_per_node(counts)
    start = next(i for i, word in enumerate(words) if word.rsplit("/", 1)[-1] == launcher)
    stated: set[int] = set()
    index = start + 1
    while index < len(words):
        flag, value = words[index], None
        if flag.startswith("-") and "=" in flag:
            flag, value = flag.split("=", 1)
        kind = _PER_HOST.get(flag) or ("mpi" if flag == "-N" and _OPEN_MPI.match(launcher) else None)
        per_host = kind is not None and (kind == "srun") == (launcher == "srun")
        if per_host or flag in _HOST_LIST or flag in ("--map-by", "-map-by"):
            if value is None:
                index += 1
                value = words[index] if index < len(words) else ""
            ppr = _PPR.match(value)
            if per_host:
                stated.add(int(value) if value.isdecimal() else 0)
            elif flag in _HOST_LIST:
                slots = _slots_per_host(value, processes)  # a list the count does not fill says nothing
                if slots is not None:
                    stated.add(slots)
            elif ppr:
                stated.add(int(ppr.group(1)))
        index += 1
    if len(stated) != 1 or 0 in stated:
        return None
    return stated.pop()


def _srun_per_node(found: dict[str, str]) -> int | None:
    """srun's tasks per node when ``-n`` is given: ``--ntasks`` then takes precedence and
    ``--ntasks-per-node`` is only a maximum (srun(1)), so the layout is known only when ``-N`` and
    ``--ntasks-per-node`` multiply to ``-n``; else Slurm decides it (None)."""
    total, nodes, per_node = found.get("total", ""), found.get("nodes", ""), found.get("per_node", "")
    if not (total.isdecimal() and nodes.isdecimal() and per_node.isdecimal()):
        return None
    return int(per_node) if int(nodes) * int(per_node) == int(total) else None


def _slots_per_host(hosts: str, processes: int | None) -> int | None:
    """Slots per host of a host list (``a:8,b:8``; ``a,b`` is one each) when every host has as many
    and the process count (if stated) fills them; else None."""
    slots: dict[str, int] = {}
    for entry in hosts.split(","):
        name, _, count = entry.partition(":")
        if not name or (count and not count.isdecimal()):
            return None
        slots[name] = slots.get(name, 0) + (int(count) if count else 1)
    counts = set(slots.values())
    if len(counts) != 1 or (processes is not None and processes != sum(slots.values())):
        return None
    return counts.pop()


def _tokens(text: str) -> list[str]:
    try:
        return shlex.split(text, comments=False)
    except ValueError:
        return text.split()


def _launcher(words: list[str]) -> str | None:
    """The first word before the binary that is no assignment, single-process wrapper or its argument."""
    for word in words:
        name = word.rsplit("/", 1)[-1]
        if _ASSIGNMENT.match(word) or name in _SINGLE_PROCESS or _WRAPPER_ARGUMENT.match(word):
            continue
        return name
    return None


def _read_options(words: list[str]) -> tuple[dict[str, int], list[str]]:
    """``-g 8``, ``-g8``, ``--ngpus 8``, ``--ngpus=8`` (and -t, -G): the integers and the unreadable."""
    found: dict[str, int] = {}
    unknown: list[str] = []
    index = 0
    while index < len(words) and words[index] not in _SHELL_END:
        word = words[index]
        flag, value = word, None
        if word.startswith("--") and "=" in word:
            flag, value = word.split("=", 1)
        elif not word.startswith("--") and len(word) > 2 and word[:2] in _OPTIONS:
            flag, value = word[:2], word[2:]
        if flag in _OPTIONS:
            if value is None:
                index += 1
                value = words[index] if index < len(words) else ""
            name = _OPTIONS[flag]
            if re.fullmatch(r"\d+", value):
                found[name] = int(value)
            else:
                unknown.append(name)
        index += 1
    return found, unknown


def read_command(text: str, line: int | None) -> TestsCommand | None:
    """The command's launcher and ``-t``/``-g``/``-G``; None when no word of it is an nccl-tests binary.

    Parameters
    ----------
    text : str
        A command line naming an nccl-tests binary (``data.command``).
    line : int or None
        The log line it starts on.

    Examples
    --------
    >>> read_command("./build/sendrecv_perf -b 128M -e 1G -f 2 -g 8", 4).one_process_ranks
    8
    >>> command = read_command("mpirun -np 8 ./build/all_reduce_perf -g 1 -G 1", 4)
    >>> command.launcher, command.gpus, command.graph, command.one_process_ranks
    ('mpirun', 1, 1, None)
    """
    words = _tokens(text)
    program = next((i for i, word in enumerate(words) if _PROGRAM.search(word)), None)
    if program is None:
        return None
    found, unknown = _read_options(words[program + 1 :])
    launcher = _launcher(words[:program])
    processes = _process_count(launcher, words[:program])
    return TestsCommand(
        text=text,
        line=line,
        launcher=launcher,
        threads=found.get("threads"),
        gpus=found.get("gpus"),
        graph=found.get("graph"),
        unknown=tuple(unknown),
        processes=processes,
        per_host=_per_host(launcher, words[:program], processes),
    )


ONE_PROCESS = "nccl-tests command line (one process)"
"""Source name of the rank evidence a bare command gives."""
LAUNCHED = "launcher command line (processes x nThread x nGpus)"
MAX_RANKS = 65536
"""The largest rank count any source is taken for: a launcher's line, the busbw/algbw ratio's search."""
"""Source name of the rank evidence an MPI or Slurm launcher's process count gives."""


def _header_value(header: dict[str, int | str], key: str) -> int | None:
    value = header.get(key)
    return value if isinstance(value, int) else None


def _where(header_line: tuple[int, str] | None) -> str:
    return f"the run header (line {header_line[0]})" if header_line else "the run header"


def _option_conflicts(
    command: TestsCommand, header: dict[str, int | str], header_line: tuple[int, str] | None
) -> list[str]:
    """Where ``-t``/``-g`` of the command and the run header nccl-tests printed disagree."""
    out = []
    for flag, given, key in (("-t", command.threads, "nThread"), ("-g", command.gpus, "nGpus")):
        printed = _header_value(header, key)
        if given is not None and printed is not None and given != printed:
            out.append(
                f"the command line (line {command.line}) gives {flag} {given} but {_where(header_line)} "
                f"says {key} {printed}; using the header (nccl-tests prints the options it parsed), so "
                "the command shown is not the one that ran as written"
            )
    return out


def _graph_conflict(
    command: TestsCommand, header: dict[str, int | str], header_line: tuple[int, str] | None
) -> list[str]:
    """``-G N`` on the command but ``graph: M`` in the header (rccl-tests builds without HIP graphs)."""
    printed = _header_value(header, "graph")
    if command.graph is None or printed is None or (command.graph > 0) == (printed > 0):
        return []
    return [
        f"the command line (line {command.line}) passes -G {command.graph} (CUDA/HIP graph launches) but "
        f"{_where(header_line)} says graph: {printed}; using the header: nccl-tests and rccl-tests "
        "print there the value they parsed, and ignore -G when built without graph support (NCCL < 2.9, "
        "CUDA < 11.3, ROCm < 5.2), so "
        + (
            "the timed calls are priced with a host issue each; if graphs did run, small sizes measure "
            "faster than predicted"
            if printed == 0
            else "the timed calls are priced as graph launches"
        )
    ]


def command_evidence(
    command: TestsCommand | None,
    header: dict[str, int | str],
    header_line: tuple[int, str] | None,
    launched: bool,
) -> tuple[Evidence | None, list[str]]:
    """Rank evidence of a bare command (``t x g`` ranks in one process), and disagreements with the header.

    Parameters
    ----------
    command : TestsCommand or None
        The log's command line.
    header, header_line : dict, (int, str) or None
        The run header nccl-tests printed, and its line.
    launched : bool
        Whether the log's lines carry an MPI/Slurm rank prefix (a launcher ran it).

    Returns
    -------
    (Evidence or None, list of str)
        The rank count of a bare command (:data:`ONE_PROCESS`; None when a
        launcher ran it, or the header contradicts the command), or of an MPI
        or Slurm launcher that states its process count (:data:`LAUNCHED`:
        processes x the header's nThread x nGpus, or the command's ``-t`` x
        ``-g`` where the header is not printed), and warnings.
    """
    if command is None:
        return None, []
    conflicts = _option_conflicts(command, header, header_line)
    warnings = conflicts + _graph_conflict(command, header, header_line)
    if command.processes is not None:
        return _launched(command, header, command.processes), warnings
    ranks = command.one_process_ranks
    if ranks is None or launched or conflicts:
        return None, warnings
    return Evidence.at(ranks, ONE_PROCESS, command.line, command.text), warnings


def _launched(command: TestsCommand, header: dict[str, int | str], processes: int) -> Evidence | None:
    """``processes x nThread x nGpus`` ranks, the header's values first; None if -t/-g are unreadable."""
    threads = _header_value(header, "nThread") or command.threads
    gpus = _header_value(header, "nGpus") or command.gpus
    unreadable = {"threads", "gpus"} & set(command.unknown)
    if processes < 1 or (unreadable and (threads is None or gpus is None)):
        return None
    threads, gpus = threads or 1, gpus or 1
    if processes * threads * gpus > MAX_RANKS:
        return None  # no machine runs it; the other sources (or --gpus) say
    text = f"{processes} processes x {threads} thread(s) x {gpus} GPU(s): {command.text}"
    return Evidence.at(processes * threads * gpus, LAUNCHED, command.line, text)


_PROMPT = re.compile(r"^(?:#\s+)?(?:[\w.-]+@[^\s#$]*[#$]\s+|\$>?\s+)?")
"""A shell prompt before a command: ``# `` (root's), ``user@host:~$ ``, ``$ ``, ``$> `` (log 287's page)."""
_NOT_COMMAND = re.compile(r"^#\s*(?:Collective test|Rank\b)")
_INLINE_CODE = re.compile(r"^`+([^`]+)`+$")
"""A command quoted as Markdown inline code in issue text (a backtick at each end of the line): the
backticks are the page's, not the shell's, and the last one would stick to the last option's value."""
_ROOT_PROMPT = re.compile(r"^#\s")


def _commands(lines: list[str], first_line: int) -> list[tuple[int, str]]:
    """The lines naming an nccl-tests binary (continuations joined, inline code unquoted), with the
    line each starts on; nccl-tests' own ``# Collective test ..``/``# Rank ..`` and NCCL's lines are none."""
    found = []
    pending, start = "", first_line
    for number, line in enumerate(lines, start=first_line):
        text = line.strip()
        start = number if not pending else start
        if text.endswith("\\"):
            pending += text[:-1].strip() + " "
            continue
        full, pending = (pending + text).strip(), ""
        code = _INLINE_CODE.match(full)
        full = code.group(1).strip() if code else full
        if find_program(full) and not _NOT_COMMAND.match(full) and "NCCL INFO" not in full:
            found.append((start, full))
    return found


def root_prompt(lines: list[str]) -> bool:
    """Whether a ``# `` before a command in ``lines`` is root's shell prompt, not a shell comment.

    A log shows the commands it ran after one prompt: root's is ``# ``, which is also how a script
    comments a command out. So ``# `` is a prompt unless the lines show a command naming an
    nccl-tests binary without a leading ``#`` (bare, or after ``$ ``): then that one ran and the
    ``#`` lines are commented-out alternatives (``mpirun -np 16 ...`` above ``# mpirun -np 8 ...``).
    nccl-tests' own ``#`` lines name no command (``# nThread 1 nGpus 1 ...``) or are not read as one
    (``# Collective test starting: all_reduce_perf``), so they never decide it.
    """
    return all(text.startswith("#") for _, text in _commands(lines, 1))


def find_command(lines: list[str], first_line: int) -> tuple[str | None, int | None]:
    """The last command line naming an nccl-tests binary (continuations joined), and its first line.

    The last one before the run's table is the one that ran it: a page may show a one-node command
    first and the multi-node one it ran below it (log 209: ``./all_reduce_perf ... -g 1``, then
    ``mpirun -np 2 ... -g 8`` above a 16-rank table). A line starting with ``#`` is a command only
    after root's prompt (``# ./build/all_reduce_perf ...``; :func:`root_prompt`): ``#./build/...``,
    or ``# mpirun ...`` below a command shown without it, is commented out.
    """
    prompt = root_prompt(lines)
    ran = [
        (start, text)
        for start, text in _commands(lines, first_line)
        if not text.startswith("#") or (prompt and _ROOT_PROMPT.match(text))
    ]
    if not ran:
        return None, None
    start, text = ran[-1]
    return _PROMPT.sub("", text, count=1), start
