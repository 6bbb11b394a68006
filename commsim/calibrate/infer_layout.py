"""The run's shape from a log: ranks, hosts, ranks per host, and which GPUs of each host.

Options always win; a log fact that disagrees with an option is reported,
not silently dropped. Without a complete device list, GPUs per host come
from the board the GPU ships on (an assumption the report names).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from commsim.calibrate.evidence import Evidence, Fact
from commsim.calibrate.parser import NcclTestsLog
from commsim.calibrate.parser_command import LAUNCHED, ONE_PROCESS, TestsCommand, read_command
from commsim.calibrate.parser_ranks import EXACT_SOURCES
from commsim.errors import ParseError

__all__ = ["InferenceError", "Layout", "conflict", "given", "infer_layout", "infer_ranks"]


class InferenceError(ParseError):
    """A fact the prediction needs is neither in the log nor in the options."""


def given(name: str, value: object, option: str, note: str = "") -> Fact:
    """A fact the user gave with ``option``."""
    return Fact(name, value, (Evidence(value, f"option {option}"),), option=option, note=note)


def conflict(name: str, option: str, value: object, log_fact: Fact | None, warnings: list[str]) -> None:
    """Warn when an option disagrees with what the log says (the option wins)."""
    if log_fact is not None and not log_fact.assumed and log_fact.value != value:
        sources = ", ".join(e.describe() for e in log_fact.evidence[:2])
        warnings.append(
            f"{option} {value} disagrees with the log's {name} {log_fact.value} ({sources}); using {option}"
        )


def infer_ranks(log: NcclTestsLog, gpus: int | None, warnings: list[str]) -> Fact:
    """The rank count: ``--gpus``, else what the parser found (with every source's word)."""
    evidence = log.rank_evidence or (Evidence(log.n_ranks, "device list"),)
    from_log = Fact("ranks", log.n_ranks, evidence, option="--gpus")
    if _launcher_alone(evidence):
        note = (
            f"{log.n_ranks} if nccl-tests was built with MPI=1; a build without MPI runs one "
            "test of nThread x nGpus ranks per process the launcher starts"
        )
        from_log = replace(from_log, assumed=True, note=note)
    if gpus is None:
        return from_log
    if gpus < 1:
        raise InferenceError(f"--gpus must be at least 1, not {gpus}")
    conflict("rank count", "--gpus", gpus, from_log, warnings)
    return given("ranks", gpus, "--gpus")


def _launcher_alone(evidence: tuple[Evidence, ...]) -> bool:
    """Whether the rank count rests on a launcher's process count that no other source states.

    A busbw/algbw range holding the count (rows too coarse to name one, at a thousand ranks) states
    it as much as the rows can: those rows were computed by one communicator of that size.
    """
    chosen, others = evidence[0], evidence[1:]
    return chosen.source == LAUNCHED and not any(_states(e, chosen.value) for e in others)


def _states(evidence: Evidence, ranks: object) -> bool:
    """Whether ``evidence`` states ``ranks``: an exact source saying it, or a ratio range holding it."""
    if evidence.source in EXACT_SOURCES:
        return evidence.value == ranks
    value = evidence.value
    return isinstance(value, tuple) and isinstance(ranks, int) and value[0] <= ranks <= value[1]


@dataclass(frozen=True)
class Layout:
    """Hosts, ranks per host, and the CUDA device indices of each host's ranks.

    ``devices`` is None when the log does not say which GPUs of a host ran
    (then the first ``per_node`` GPUs of each host are used, an assumption).
    """

    nodes: Fact
    per_node: Fact
    devices: tuple[tuple[int, ...], ...] | None


def _placement(log: NcclTestsLog) -> dict[str, tuple[int, ...]]:
    if log.placement:
        return dict(log.placement)
    found: dict[str, list[int]] = {}
    for device in log.devices:
        found.setdefault(device.host, []).append(device.device)
    return {host: tuple(devices) for host, devices in found.items()}


def _devices_complete(log: NcclTestsLog) -> bool:
    """Whether the device list names every rank 0 .. n-1."""
    return log.devices_complete or sorted(d.rank for d in log.devices) == list(range(log.n_ranks))


def _from_device_list(log: NcclTestsLog, ranks: int, warnings: list[str]) -> Layout | None:
    placement = _placement(log)
    hostless = any(not d.host for d in log.devices)  # lines without 'on HOST': hosts unknown
    if not placement or hostless or not _devices_complete(log) or len(log.devices) != ranks:
        return None
    counts = sorted({len(v) for v in placement.values()})
    if len(counts) > 1:
        warnings.append(
            f"hosts run different numbers of ranks ({counts}); the model gives every host {counts[-1]}"
        )
    nodes = Fact(
        "nodes",
        len(placement),
        (Evidence(len(placement), "device list: distinct host names"),),
        option="--nodes",
    )
    per = Fact(
        "gpus_per_node",
        counts[-1],
        (Evidence(counts[-1], "device list: ranks per host"),),
        option="--gpus-per-node",
    )
    return Layout(nodes, per, tuple(placement.values()) if len(counts) == 1 else None)


def infer_layout(
    log: NcclTestsLog,
    ranks: int,
    nodes: int | None,
    gpus_per_node: int | None,
    host_gpus: int | None,
    warnings: list[str],
) -> Layout:
    """Hosts and ranks per host.

    Parameters
    ----------
    log : NcclTestsLog
    ranks : int
        The rank count already decided.
    nodes, gpus_per_node : int, optional
        ``--nodes`` and ``--gpus-per-node``.
    host_gpus : int, optional
        GPUs per host of the board the GPU usually ships on, for logs
        without a complete device list.
    warnings : list of str
        Receives disagreements.

    Raises
    ------
    InferenceError
        When nothing says how the ranks are spread, or the numbers disagree.
    """
    listed = _from_device_list(log, ranks, warnings) or _one_process(log, ranks)
    if nodes is None and gpus_per_node is None and listed is not None:
        return listed
    launcher = _launcher_per_node(log, ranks) if listed is None else None
    stated_nodes = listed.nodes if listed else (_launcher_nodes(launcher, log) if launcher else None)
    stated_per_node = listed.per_node if listed else launcher
    if nodes is not None:
        conflict("node count", "--nodes", nodes, stated_nodes, warnings)
    if gpus_per_node is not None:
        conflict("GPUs per node", "--gpus-per-node", gpus_per_node, stated_per_node, warnings)
    if nodes is not None and gpus_per_node is not None:
        n_fact, p_fact = (
            given("nodes", nodes, "--nodes"),
            given("gpus_per_node", gpus_per_node, "--gpus-per-node"),
        )
    elif nodes is not None:
        n_fact = given("nodes", nodes, "--nodes")
        p_fact = _divided("gpus_per_node", ranks, n_fact, "--gpus-per-node", log)
    else:
        p_fact = (
            given("gpus_per_node", gpus_per_node, "--gpus-per-node")
            if gpus_per_node is not None
            else launcher or _per_node_without_list(log, ranks, host_gpus)
        )
        n_fact = _divided("nodes", ranks, p_fact, "--nodes", log)
    if n_fact.value * p_fact.value != ranks:
        raise InferenceError(
            f"{n_fact.value} node(s) x {p_fact.value} GPU(s) per node is not the run's {ranks} ranks; "
            "give a consistent --gpus, --nodes and --gpus-per-node",
            log.source,
        )
    devices = listed.devices if listed and listed.nodes.value == n_fact.value else None
    if devices is not None and any(len(d) != p_fact.value for d in devices):
        devices = None
    return Layout(n_fact, p_fact, devices)


def _one_process(log: NcclTestsLog, ranks: int) -> Layout | None:
    """One host, every rank on it, when a bare nccl-tests command (no launcher) ran all the ranks."""
    seen = next((e for e in log.rank_evidence if e.source == ONE_PROCESS and e.value == ranks), None)
    if seen is None:
        return None
    note = "a command without a launcher runs one process on one host"
    nodes = Fact("nodes", 1, (seen,), option="--nodes", note=note)
    return Layout(nodes, Fact("gpus_per_node", ranks, (seen,), option="--gpus-per-node", note=note), None)


def _divided(name: str, ranks: int, other: Fact, option: str, log: NcclTestsLog) -> Fact:
    if other.value < 1 or ranks % other.value:
        raise InferenceError(
            f"{ranks} ranks do not split evenly into {other.value} ({other.name.replace('_', ' ')}); "
            f"give {option}",
            log.source,
        )
    return replace(
        other,
        name=name,
        value=ranks // other.value,
        option=option,
        note=f"{ranks} ranks / {other.value} ({other.name.replace('_', ' ')})"
        + (f"; {other.note}" if other.note else ""),
    )


LAUNCHER_PER_HOST = "launcher command line (processes per host x nThread x nGpus)"
"""Source name of the ranks per host an MPI or Slurm launcher's options state."""


def _launch(log: NcclTestsLog) -> tuple[TestsCommand, int, int] | None:
    """The log's command, and the threads and GPUs per process it runs (the run header's nThread and
    nGpus, else the command's -t and -g, else 1); None without a command naming the binary."""
    command = read_command(log.command, None) if log.command else None
    if command is None:
        return None
    threads, gpus = log.header.get("nThread"), log.header.get("nGpus")
    threads = threads if isinstance(threads, int) else command.threads or 1
    gpus = gpus if isinstance(gpus, int) else command.gpus or 1
    return command, threads, gpus


def _launcher_per_node(log: NcclTestsLog, ranks: int) -> Fact | None:
    """Ranks per host when the log lists no complete device list but its MPI or Slurm launcher
    states the processes it starts on each host (``srun --ntasks-per-node 4``, ``mpirun -H a:8,b:8``,
    ``-npernode 8`` ...; :func:`~commsim.calibrate.parser_command.read_command`): those processes x
    nThread x nGpus, when they divide the run's ranks (a build without MPI runs one test per
    process, of fewer ranks than the launcher starts on a host: then None)."""
    launched = _launch(log)
    if launched is None:
        return None
    command, threads, gpus = launched
    if command.per_host is None:
        return None
    per = command.per_host * threads * gpus
    if per < 1 or per > ranks or ranks % per:
        return None
    text = f"{command.per_host} process(es) per host x {threads} thread(s) x {gpus} GPU(s): {command.text}"
    evidence = Evidence.at(per, LAUNCHER_PER_HOST, log.command_line, text)
    return Fact("gpus_per_node", per, (evidence,), option="--gpus-per-node")


def _launcher_nodes(per_node: Fact, log: NcclTestsLog) -> Fact | None:
    """The hosts a launcher's line states: its processes x nThread x nGpus over its ranks per host,
    or the hosts of its host list (``-H a:4,b:4``: 2); None when it states neither (a count from
    ``--gpus`` is not the log's)."""
    launched = _launch(log)
    if launched is None:
        return None
    command, threads, gpus = launched
    hosts = command.hosts
    if command.processes is not None:
        total = command.processes * threads * gpus
        hosts = total // per_node.value if total % per_node.value == 0 else None
    if hosts is None:
        return None
    evidence = Evidence.at(hosts, LAUNCHER_HOSTS, log.command_line, command.text)
    return Fact("nodes", hosts, (evidence,), option="--nodes")


LAUNCHER_HOSTS = "launcher command line (hosts)"
"""Source name of the host count an MPI or Slurm launcher's line states."""


def _per_node_without_list(log: NcclTestsLog, ranks: int, host_gpus: int | None) -> Fact:
    """GPUs per host when the log lists only some ranks (or none): the board's size, checked."""
    highest = max(log.devices, key=lambda d: d.device, default=None)
    seen = highest.device + 1 if highest is not None else 0
    evidence = (
        (Evidence(seen, f"device index {highest.device} printed for rank {highest.rank} (a lower bound)"),)
        if highest is not None
        else ()
    )
    if host_gpus is not None and seen <= host_gpus and ranks % min(host_gpus, ranks) == 0:
        per = min(host_gpus, ranks)
        exact = seen == per
        note = f"the usual board of this GPU has {host_gpus} GPUs per host"
        return Fact("gpus_per_node", per, evidence, assumed=not exact, option="--gpus-per-node", note=note)
    raise InferenceError(
        "cannot tell how many GPUs each host runs: the log has no complete '# Rank .. on HOST device ..' "
        "list; give --gpus-per-node (or --nodes)",
        log.source,
    )
