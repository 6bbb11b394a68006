"""How a run was launched and what its ranks run on, as facts and warnings.

nccl-tests' GPUs per thread (``-g``), the launch mode (threads or processes),
whether the timed calls were replayed as CUDA graphs (``-G``), and two checks
of the device list: several GPU models (priced as one) and several ranks on
one GPU (refused).
"""

from __future__ import annotations

from typing import NamedTuple

from commsim.calibrate.evidence import Evidence, Fact
from commsim.calibrate.infer_layout import InferenceError
from commsim.calibrate.parser import NcclTestsLog
from commsim.calibrate.parser_checks import number_spans
from commsim.calibrate.parser_command import ONE_PROCESS, read_command
from commsim.hardware import find_gpu

__all__ = ["gpus_per_thread", "infer_cuda_graph", "infer_launch", "refuse_shared_gpus", "warn_mixed_gpus"]


class _SharedPid(NamedTuple):
    """The most ranks one process drives, as the device list's Pids show."""

    ranks: list[int]
    host: str
    pid: int
    line: int | None


def _shared_pid(log: NcclTestsLog) -> _SharedPid | None:
    """The ranks of the (host, Pid) with the most ranks, when that is more than one.

    Pids are compared within a host only: containers on different hosts reuse them.
    """
    owners: dict[tuple[str, int], list[int]] = {}
    for device in log.devices:
        if device.pid is not None:
            owners.setdefault((device.host, device.pid), []).append(device.rank)
    if not owners:
        return None
    (host, pid), ranks = max(owners.items(), key=lambda item: len(item[1]))
    if len(ranks) < 2:
        return None
    line = next((d.line for d in log.devices if d.rank == ranks[-1]), None)
    return _SharedPid(ranks, host, pid, line)


def _threads_stated(log: NcclTestsLog) -> bool:
    """Whether the run header or the command says how many threads each process ran (``-t``) or
    GPUs each thread drove (``-g``)."""
    command = read_command(log.command, None) if log.command else None
    stated = command is not None and (command.threads is not None or command.gpus is not None)
    return "nThread" in log.header or stated


def _gpus_from_pid(log: NcclTestsLog) -> _SharedPid | None:
    """The shared Pid that sets the GPUs per thread: neither the header nor the command says."""
    value = log.header.get("nGpus")
    if (isinstance(value, int) and value > 0) or log.gpus_per_thread > 1 or _threads_stated(log):
        return None
    return _shared_pid(log)


def gpus_per_thread(log: NcclTestsLog) -> int:
    """nccl-tests' ``-g``: the header's ``nGpus``, else the command's, else the ranks of one Pid.

    Without a run header or ``-t``, ranks that share a Pid (on one host) are
    one process's GPUs, taken as one thread's (nccl-tests ``-g N``).
    """
    value = log.header.get("nGpus")
    if isinstance(value, int) and value > 0:
        return value
    shared = _gpus_from_pid(log)
    return len(shared.ranks) if shared is not None else max(1, log.gpus_per_thread)


def infer_launch(log: NcclTestsLog) -> Fact:
    threads = gpus_per_thread(log)
    mode = log.launch if log.launch != "unknown" else ("threads" if threads > 1 else "processes")
    value = f"{mode}, {threads} GPU(s) per thread"
    header = (Evidence(threads, "'# nThread .. nGpus ..' header"),) if "nGpus" in log.header else ()
    evidence = header or tuple(e for e in log.rank_evidence if e.source == ONE_PROCESS)[:1]
    shared = _gpus_from_pid(log)
    if shared is not None:
        text = f"ranks {number_spans(shared.ranks)} share Pid {shared.pid} on {shared.host}"
        return Fact(
            "launch",
            value,
            (Evidence(threads, "device list: ranks sharing a Pid", shared.line, text),),
            note=f"{text}: one process drives {threads} GPUs; one thread assumed (nccl-tests -g {threads})",
        )
    return Fact(
        "launch",
        value,
        evidence,
        assumed=not evidence,
        note="" if evidence else _assumed_note(threads),
    )


def _assumed_note(threads: int) -> str:
    """What an assumed launch rests on: the command's ``-g`` (no run header printed), else nothing."""
    if threads > 1:
        return f"no run header; -g {threads} read from the nccl-tests command line, one thread assumed"
    return "one GPU per process assumed"


def warn_mixed_gpus(log: NcclTestsLog, facts: dict[str, Fact], warnings: list[str]) -> None:
    """Warn when the device list names more than one GPU model: every rank is priced as one."""
    models: dict[str, list[int]] = {}
    for device in log.devices:
        models.setdefault(device.model, []).append(device.rank)
    if len(_entries(models)) < 2 or "gpu" not in facts:
        return
    listed = "; ".join(f"{model!r} on rank(s) {number_spans(ranks)}" for model, ranks in models.items())
    warnings.append(
        f"the device list names {len(models)} GPU models ({listed}): the model prices every rank as "
        f"{facts['gpu'].value}, and a mixed machine is only as fast as its slowest GPU and link; "
        "give --gpu for the slowest one to bound it"
    )


def _entries(models: dict[str, list[int]]) -> set[str]:
    """The catalogue entries the printed names are (a name the catalogue lacks stands for itself):
    two board numbers of one GPU (``NVIDIA PG506-242`` and ``-243``, Leonardo's A100 SXM 64GB) are
    one model, not a mixed machine."""
    entries = set()
    for model in models:
        spec = find_gpu(model).spec
        entries.add(spec.key if spec is not None else model)
    return entries


def infer_cuda_graph(log: NcclTestsLog, facts: dict[str, Fact], warnings: list[str]) -> bool:
    """Whether the timed calls ran as CUDA graphs (nccl-tests ``-G N``), with a fact saying so.

    nccl-tests captures its ``iters`` timed calls in one CUDA graph per GPU and
    times N launches of it, so the host's per-call issue (``launch_s``) is
    not in the time; ``agg iters: A`` > 1 groups A calls per
    ``ncclGroupStart/End``, which NCCL issues with fewer launches than the
    model prices: a warning says so (the model keeps one issue per call).
    """
    graph, agg = log.header.get("graph"), log.header.get("agg iters")
    if isinstance(agg, int) and agg > 1:
        warnings.append(
            f"the log's calls were issued {agg} per group (nccl-tests 'agg iters: {agg}'); NCCL issues "
            "a group with fewer launches, which the model does not price: sizes where the host's issue "
            "time sets the call's time are predicted as separate calls ('commsim calibrate' on this "
            "machine's logs fits launch_s)"
        )
    if not isinstance(graph, int) or graph < 1:
        return False
    facts["cuda_graph"] = Fact(
        "cuda_graph",
        f"yes, {graph} launch(es) of each size's calls: the time holds no host issue per call",
        (Evidence(graph, "'graph: N' in the run header (nccl-tests -G)"),),
    )
    return True


def refuse_shared_gpus(log: NcclTestsLog, rank_gpus: tuple[str, ...]) -> None:
    """Several ranks on one GPU (the device list prints the same host and device for them) are not a
    machine the model describes: refuse, naming them, instead of planning a send from a GPU to itself."""
    owners: dict[str, list[int]] = {}
    for rank, gpu in enumerate(rank_gpus):
        owners.setdefault(gpu, []).append(rank)
    shared = [ranks for ranks in owners.values() if len(ranks) > 1]
    if not shared:
        return
    first = shared[0]
    device = next((d for d in log.devices if d.rank == first[0]), None)
    where = f" (device {device.device} of host {device.host})" if device is not None else ""
    raise InferenceError(
        f"ranks {number_spans(first)} run on one GPU{where}: several ranks sharing a GPU (MPS, "
        "oversubscription) are not modelled; the model needs one GPU per rank (check the device "
        "list, or give --gpus-per-node if it is abridged)",
        log.source,
    )
