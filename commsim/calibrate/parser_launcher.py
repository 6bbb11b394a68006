"""Who started an nccl-tests binary, read from the words before it: the launcher, its process
count and the processes it starts on each host.

A command is *bare* when every word before the binary is an environment assignment or a wrapper
known to start a single process (``env``, ``numactl``, ``taskset``, ``timeout`` ...); else the first
other word is its launcher. An MPI or Slurm launcher states its process count with ``-np N``,
``mpiexec -n N``, ``srun -n N``, ``srun --ntasks=N`` or ``srun -N nodes --ntasks-per-node M``, and
its processes per host with ``--ntasks-per-node``, ``-npernode``, ``-ppn``, Open MPI's ``-N``,
``--map-by ppr:N:node`` or a host list of equal slots (``-H a:8,b:8``). Only what is certain is
read: a count that is not a plain decimal integer (``-n $GPUS``, ``-np ²``) is unknown.
"""

from __future__ import annotations

import re

__all__ = ["launcher_name", "process_count", "processes_per_host"]

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
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_WRAPPER_ARGUMENT = re.compile(r"^-|^\d[\d.,:-]*[smhd]?$")  # an option, a number, a CPU list, a duration


def launcher_name(words: list[str]) -> str | None:
    """The first word before the binary that is no assignment, single-process wrapper or its argument."""
    for word in words:
        name = word.rsplit("/", 1)[-1]
        if _ASSIGNMENT.match(word) or name in _SINGLE_PROCESS or _WRAPPER_ARGUMENT.match(word):
            continue
        return name
    return None


def process_count(launcher: str | None, words: list[str]) -> int | None:
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


def processes_per_host(launcher: str | None, words: list[str], processes: int | None) -> int | None:
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
    and the process count (if stated) fills them; else None (also for a shell variable the page left
    unexpanded, ``-H ${HOSTS}``: no list of hosts is written, so no host has one slot)."""
    if "$" in hosts or "`" in hosts:
        return None
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


def listed_hosts(launcher: str | None, words: list[str], processes: int | None) -> int | None:
    """The hosts of an MPI launcher's host list (``-H a:4,b:4``: 2) when every host has as many
    slots and the process count (if stated) fills them; else None."""
    if launcher is None or not _MPI_LAUNCHER.match(launcher) or launcher == "srun":
        return None
    for index, word in enumerate(words):
        flag, _, value = word.partition("=") if word.startswith("-") else (word, "", "")
        if flag in _HOST_LIST:
            value = value or (words[index + 1] if index + 1 < len(words) else "")
            if _slots_per_host(value, processes) is None:
                return None
            return len({entry.partition(":")[0] for entry in value.split(",")})
    return None
