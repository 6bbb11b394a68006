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
The launcher and the counts its options state are read by
:mod:`~commsim.calibrate.parser_launcher`; here, where the command is in the log
(:func:`find_command`, root's prompt or a comment: :func:`root_prompt`) and what its
nccl-tests options say.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from commsim.calibrate.evidence import Evidence
from commsim.calibrate.parser import find_program
from commsim.calibrate.parser_launcher import launcher_name, listed_hosts, process_count, processes_per_host
from commsim.calibrate.settings_commands import BRACKET_PROMPT, ENV_PREFIX

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
_SHELL_END = {"|", "||", "&&", ";", "&", ">", ">>", "2>&1", "<"}


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
        states the same number for every host
        (:func:`~commsim.calibrate.parser_launcher.processes_per_host`); else None.
    hosts : int or None
        The hosts of an MPI launcher's host list that gives each as many slots
        (``-H a:4,b:4``: 2; :func:`~commsim.calibrate.parser_launcher.listed_hosts`); else None.
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
    hosts: int | None = None

    @property
    def one_process_ranks(self) -> int | None:
        """Ranks of a bare command that sets ``-g`` or ``-t``: ``t x g`` in one process; else None."""
        unreadable = {"threads", "gpus"} & set(self.unknown)  # an unreadable -G says nothing of ranks
        if self.launcher is not None or unreadable or (self.gpus is None and self.threads is None):
            return None
        return (self.threads or 1) * (self.gpus or 1)


def _tokens(text: str) -> list[str]:
    try:
        return shlex.split(text, comments=False)
    except ValueError:
        return text.split()


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
    launcher = launcher_name(words[:program])
    processes = process_count(launcher, words[:program])
    return TestsCommand(
        text=text,
        line=line,
        launcher=launcher,
        threads=found.get("threads"),
        gpus=found.get("gpus"),
        graph=found.get("graph"),
        unknown=tuple(unknown),
        processes=processes,
        per_host=processes_per_host(launcher, words[:program], processes),
        hosts=listed_hosts(launcher, words[:program], processes),
    )


ONE_PROCESS = "nccl-tests command line (one process)"
"""Source name of the rank evidence a bare command gives."""
LAUNCHED = "launcher command line (processes x nThread x nGpus)"
"""Source name of the rank evidence an MPI or Slurm launcher's process count gives."""
MAX_RANKS = 65536
"""The largest rank count any source is taken for: a launcher's line, the busbw/algbw ratio's search."""


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


_USER_PROMPTS = rf"{ENV_PREFIX}(?:{BRACKET_PROMPT}|[\w.-]+@[^\s#$]*[#$]\s+|\$>?\s+)"
"""A user's shell prompt: ``user@host:~$ ``, ``[user@host dir]$ `` (Red Hat's), ``$ ``, ``$> `` (log
287's page), each maybe after a conda or virtualenv name (``(base) ``); ``#`` ends root's."""
_PROMPT = re.compile(rf"^(?:#\s+)?{_USER_PROMPTS}?")
"""A shell prompt before a command: ``# `` (root's) or a user's (:data:`_USER_PROMPTS`)."""
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
    comments a command out. So ``# `` is a prompt unless the lines show, bare (as a script or a
    page prints it: no prompt), a command naming an nccl-tests binary that ran: then that one ran and
    the ``#`` lines are commented-out alternatives (``mpirun -np 16 ...`` above ``# mpirun -np 8``).
    A command after a user's prompt (``$ ./build/all_reduce_perf``) is an interactive session, in
    which a ``# `` command after that command's output is root's prompt (after ``sudo -i``), and
    one typed right below it a comment. The binary alone is a command, run with nccl-tests' default
    options, when typed after a prompt (``$ ./build/all_reduce_perf``), or written as a script's line
    (``./build/all_reduce_perf``) that is neither ``which``'s output nor a listing's (:func:`_bare_runs`).
    Other lines that only name the binary are no command: ``which``'s output (an absolute path, or
    any path below a ``which`` command), a listing (``ls build``, ``find . -name '*_perf'``: one path
    per line), a shell's error
    (``bash: ./build/all_reduce_perf: Permission denied``), a backtrace frame
    (``[node:123] [ 3] ./build/all_reduce_perf(+0x5b2c)``).
    nccl-tests' own ``#`` lines name no command (``# nThread 1 nGpus 1 ...``) or are not read as one
    (``# Collective test starting: all_reduce_perf``), so they never decide it.
    """
    commands = _commands(lines, 1)
    ran = [
        (number, text)
        for number, text in commands
        if not text.startswith("#") and _runs(text, _bare_runs(lines, number))
    ]
    if not ran:
        return True
    if not all(_USER_PROMPT.match(text) for _, text in ran):
        return False  # a script's or a page's bare command ran
    return any(  # a session: root's prompt once the user's command has printed (then sudo -i)
        _printed_between(lines, max(m for m, _ in ran if m < number), number)
        for number, text in commands
        if text.startswith("#") and any(m < number for m, _ in ran)
    )


def _printed_between(lines: list[str], command: int, later: int) -> bool:
    """Whether a non-blank line other than ``command``'s continuation lies between lines ``command``
    and ``later`` (1-based): the command's output, which a comment typed beside it has not."""
    index = command - 1
    while index < later - 1 and lines[index].rstrip().endswith("\\"):
        index += 1  # the command goes on
    return any(line.strip() for line in lines[index + 1 : later - 1])


_USER_PROMPT = re.compile(rf"^{_USER_PROMPTS}")
_COMMAND_WORD = re.compile(r"^(?:[\w.~/+-]+|[A-Za-z_]\w*=\S*)$")
"""A command's first word: a name or path (``mpirun``, ``./build/all_reduce_perf``) or a variable's
assignment (``NCCL_ALGO=Tree``); not ``bash:`` or ``[node:123]``."""


_WHICH = re.compile(rf"^(?:#\s+)?{_USER_PROMPTS}?(?:which|command\s+-v|type\s+-[aPp]+)\s")
"""A command printing where a binary is (``which all_reduce_perf``, ``command -v ...``, ``type -P ...``)."""


def _runs(text: str, bare_runs: bool = False) -> bool:
    """Whether a line naming an nccl-tests binary is a command that runs one (see :func:`root_prompt`).

    The binary alone runs it with nccl-tests' defaults when typed after a user's prompt, or where
    ``bare_runs`` (:func:`_bare_runs`: no ``which`` or listing printed it) and it is no absolute path
    (``which``'s output).
    """
    words = _PROMPT.sub("", text, count=1).split()
    if not words or not _COMMAND_WORD.match(words[0]):
        return False
    if len(words) > 1 or not find_program(words[0]):
        return True
    return _USER_PROMPT.match(text) is not None or (bare_runs and not words[0].startswith("/"))


_LISTING = re.compile(rf"^(?:#\s+)?{_USER_PROMPTS}?(?:ls|find|locate|tree)\b")
"""A command that lists files (``ls build``, ``find . -name '*_perf'``): its output is paths, one per line."""


def _bare_runs(lines: list[str], number: int) -> bool:
    """Whether the binary alone on line ``number`` (1-based), with no prompt, is a script's command:
    not ``which``'s output (a ``which``, ``command -v`` or ``type -P`` command above it with only paths
    between) and not a listing's (an ``ls`` or ``find`` command above it, or another path alone on the
    line above or below: ``ls`` and ``find`` print one per line)."""
    before = [line.strip() for line in lines[: number - 1] if line.strip()]
    after = next((line.strip() for line in lines[number:] if line.strip()), "")
    if _alone(after) or (before and _alone(before[-1])):
        return False
    for text in reversed(before):
        if _WHICH.match(text) or _LISTING.match(text):
            return False
        if not _alone(text):
            return True
    return True


def _alone(text: str) -> bool:
    """Whether ``text`` is an nccl-tests binary's path or name alone (no prompt, no arguments)."""
    return len(text.split()) == 1 and bool(find_program(text))


def find_command(
    lines: list[str], first_line: int, prompt: bool | None = None
) -> tuple[str | None, int | None]:
    """The last command line naming an nccl-tests binary (continuations joined), and its first line.

    The last one before the run's table is the one that ran it: a page may show a one-node command
    first and the multi-node one it ran below it (log 209: ``./all_reduce_perf ... -g 1``, then
    ``mpirun -np 2 ... -g 8`` above a 16-rank table). A line starting with ``#`` is a command only
    after root's prompt (``# ./build/all_reduce_perf ...``; :func:`root_prompt`): ``#./build/...``,
    or ``# mpirun ...`` below a command shown without it, is commented out. ``prompt``: whether
    ``# `` is root's prompt, decided by the caller for the whole run (None: from ``lines``).
    """
    prompt = root_prompt(lines) if prompt is None else prompt
    ran = [
        (start, text)
        for start, text in _commands(lines, first_line)
        if not text.startswith("#") or (prompt and _ROOT_PROMPT.match(text))
    ]
    if not ran:
        return None, None
    start, text = ran[-1]
    return _PROMPT.sub("", text, count=1), start
