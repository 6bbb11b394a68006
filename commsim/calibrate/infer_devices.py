"""Which GPUs of each host the ranks ran on, and how that is known.

Sources, most trusted first: ``--devices`` (the board's GPU indices, as
``nvidia-smi`` numbers them); the log's device list (``# Rank .. device D``:
CUDA's ordinal of the GPU in its process); ``CUDA_VISIBLE_DEVICES`` (or
``HIP_VISIBLE_DEVICES`` / ``ROCR_VISIBLE_DEVICES``) on a command line, an
``export`` or the ``-J`` JSON's ``env``, which maps those ordinals to the
board's GPUs (CUDA numbers the visible GPUs 0, 1, ... in the order listed:
CUDA C Programming Guide, "CUDA Environment Variables"; ROCm's HIP and ROCr
variables do the same, HIP's applied within ROCr's). Without any, the first
GPUs of each host are assumed.

:mod:`commsim.calibrate.infer_rank_gpus` then places the ranks on the
machine modelled: the GPUs planned here, else the first of each host, and
whether that assumed choice changes the machine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from commsim.calibrate.evidence import Evidence, Fact
from commsim.calibrate.infer_layout import InferenceError, Layout, given
from commsim.calibrate.parser import Device, NcclTestsLog
from commsim.calibrate.parser_checks import number_spans
from commsim.calibrate.settings import RunSettings

__all__ = ["DevicePlan", "Visible", "one_gpu_per_process", "plan_devices", "visible_devices"]


def _indices(text: str) -> tuple[int, ...] | None:
    """``"0,2,4,6"`` as indices; None for UUIDs, MIG names, shell variables or repeats."""
    parts = [p.strip() for p in text.strip().strip("\"'").split(",")]
    if not parts or not all(re.fullmatch(r"\d{1,4}", p) for p in parts):
        return None
    found = tuple(int(p) for p in parts)
    return found if len(set(found)) == len(found) else None


@dataclass(frozen=True)
class Visible:
    """The board's GPUs a process sees, in CUDA/HIP ordinal order, and the evidence; or why not read.

    ``problem`` is a sentence when a variable does not list GPU indices (a UUID, a per-rank shell
    variable) or its lists disagree; ``gpus`` is then empty.
    """

    gpus: tuple[int, ...]
    evidence: tuple[Evidence, ...]
    problem: str = ""


def visible_devices(settings: RunSettings) -> Visible | None:
    """The GPUs ``CUDA_VISIBLE_DEVICES`` / ``HIP_VISIBLE_DEVICES`` / ``ROCR_VISIBLE_DEVICES`` leave visible.

    ``HIP_VISIBLE_DEVICES`` (else ``CUDA_VISIBLE_DEVICES``, which HIP reads too) indexes the GPUs
    ``ROCR_VISIBLE_DEVICES`` leaves visible. None when the log sets none of them.

    Examples
    --------
    >>> from commsim.calibrate.settings import read_settings
    >>> visible_devices(read_settings(["export CUDA_VISIBLE_DEVICES=0,2,4,6"])).gpus
    (0, 2, 4, 6)
    >>> visible_devices(read_settings(["export ROCR_VISIBLE_DEVICES=4,5,6,7 HIP_VISIBLE_DEVICES=1,3"])).gpus
    (5, 7)
    """
    outer = settings.env.get("ROCR_VISIBLE_DEVICES")
    inner = settings.env.get("HIP_VISIBLE_DEVICES")
    inner_name = "HIP_VISIBLE_DEVICES"
    if inner is None:
        inner, inner_name = settings.env.get("CUDA_VISIBLE_DEVICES"), "CUDA_VISIBLE_DEVICES"
    named = [(n, e) for n, e in (("ROCR_VISIBLE_DEVICES", outer), (inner_name, inner)) if e is not None]
    if not named:
        return None
    evidence = tuple(e for _, e in reversed(named))
    lists = {n: _indices(str(e.value)) for n, e in named}
    for name, seen in named:
        if lists[name] is None:
            why = (
                f"{name}={seen.value} ({seen.describe()}) does not list GPU indices (a UUID or a "
                "per-rank variable): not read"
            )
            return Visible((), evidence, why)
    gpus, ordinals = lists.get("ROCR_VISIBLE_DEVICES"), lists.get(inner_name)
    if gpus is not None and ordinals is not None:
        if max(ordinals) >= len(gpus):
            why = (
                f"{inner_name}={evidence[0].value} indexes past the {len(gpus)} GPU(s) "
                "ROCR_VISIBLE_DEVICES leaves: not read"
            )
            return Visible((), evidence, why)
        return Visible(tuple(gpus[o] for o in ordinals), evidence)
    return Visible(gpus or ordinals or (), evidence)


@dataclass(frozen=True)
class DevicePlan:
    """The board GPU indices each host's ranks use, in rank order, and the fact that says how it is known.

    ``devices`` (and ``fact``) are None when the first GPUs of each host are assumed.
    """

    devices: tuple[tuple[int, ...], ...] | None
    fact: Fact | None


def plan_devices(
    layout: Layout,
    settings: RunSettings,
    option: tuple[int, ...] | None,
    warnings: list[str],
    per_process: bool = False,
) -> DevicePlan:
    """Which GPUs of each host the ranks use (board indices) and how it is known.

    Parameters
    ----------
    layout : Layout
        Hosts, ranks per host and the device list's CUDA ordinals.
    settings : RunSettings
        The log's settings (``CUDA_VISIBLE_DEVICES`` ...).
    option : tuple of int, optional
        ``--devices``: the board's GPUs every host's ranks use, in local rank order.
    warnings : list of str
        Receives a visibility variable that was not read or disagrees with the run.
    per_process : bool
        Every process sees only its own GPU (:func:`one_gpu_per_process`): a host-wide visibility
        list does not map the printed device 0 and is not read.

    Raises
    ------
    InferenceError
        When ``--devices`` does not list one distinct GPU per rank of a host.
    """
    per_node = int(layout.per_node.value)
    if option is not None:
        if len(option) != per_node or len(set(option)) != len(option):
            raise InferenceError(
                f"--devices {','.join(map(str, option))} lists {len(set(option))} distinct GPU(s) but each "
                f"host runs {per_node} rank(s); give one board GPU index per rank, e.g. --devices "
                f"{','.join(map(str, range(0, 2 * per_node, 2)))}"
            )
        value = list(option)
        return DevicePlan((option,) * int(layout.nodes.value), given("gpus_used", value, "--devices"))
    seen = visible_devices(settings)
    if seen is not None and per_process:
        warnings.append(
            f"{seen.evidence[0].describe()} lists GPUs of a host ({seen.evidence[0].value}), but each of "
            "its processes prints device 0 (it sees only its own GPU): not read"
        )
        return _listed(layout.devices)
    if seen is not None and seen.problem:
        warnings.append(seen.problem)
    listed = layout.devices
    if seen is None or seen.problem:
        return _listed(listed)
    ordinals = listed or (tuple(range(per_node)),) * int(layout.nodes.value)
    highest = max(max(o, default=-1) for o in ordinals)
    first = seen.evidence[0]
    if highest >= len(seen.gpus):
        warnings.append(
            f"{first.describe()} makes {len(seen.gpus)} GPU(s) of a host visible ({first.value}) but its "
            f"ranks use CUDA device {highest}: not read (the setting may not apply to this run)"
        )
        return _listed(listed)
    mapped = tuple(tuple(seen.gpus[o] for o in host) for host in ordinals)
    note = (
        f"the ranks' CUDA devices {number_spans(sorted(set(ordinals[0])))} are the board's GPUs "
        f"{','.join(map(str, mapped[0]))}"
    )
    fact = Fact("gpus_used", list(mapped[0]), seen.evidence, option="--devices", note=note)
    return DevicePlan(mapped, fact)


def _listed(listed: tuple[tuple[int, ...], ...] | None) -> DevicePlan:
    """The device list's CUDA indices as the board's (no visibility variable remaps them)."""
    if listed is None:
        return DevicePlan(None, None)
    evidence = (Evidence(list(listed[0]), "device list: CUDA device indices"),)
    return DevicePlan(listed, Fact("gpus_used", sorted(set(listed[0])), evidence))


def _isolated(group: list[Device]) -> bool:
    """Whether ranks printing one device index can still be on distinct GPUs: separate processes
    (distinct pids) whose bus ids are all the short form (``0x01``: the PCI bus number alone)."""
    pids = [d.pid for d in group]
    short = all(d.bus_id is not None and ":" not in d.bus_id for d in group)
    return short and None not in pids and len(set(pids)) == len(pids)


def one_gpu_per_process(
    log: NcclTestsLog, layout: Layout, gpus_per_node: int | None
) -> tuple[Layout, Fact | None]:
    """The layout without its device indices, and a fact, when every rank of a host is its own process
    pinned to its own GPU (a per-process ``CUDA_VISIBLE_DEVICES``, as Slurm's ``--gpus-per-task``
    gives), so that all print ``device 0``.

    Old nccl-tests print only the PCI bus number (``[0x01]``), the same for GPUs in different PCI
    domains (four GH200 of a node are 0009:01:00, 0019:01:00, ...), so equal short ids of distinct
    processes do not say one GPU; a full bus id (``[0000:02:00]``) repeated does, and is left to
    the refusal of shared GPUs. The layout is returned unchanged (and no fact) otherwise.
    ``gpus_per_node`` (``--gpus-per-node``) confirms one GPU per rank; without it the fact is assumed.
    """
    devices = layout.devices
    if devices is None or all(len(set(host)) == len(host) for host in devices):
        return layout, None
    groups: dict[tuple[str, int], list[Device]] = {}
    for device in log.devices:
        groups.setdefault((device.host, device.device), []).append(device)
    repeated = [g for g in groups.values() if len(g) > 1]
    if not all(_isolated(g) for g in repeated):
        return layout, None
    first = repeated[0]
    lines = f" (line {first[0].line})" if first[0].line is not None else ""
    seen = Evidence(
        f"device {first[0].device} [{first[0].bus_id}]",
        f"device list{lines}: ranks {number_spans([d.rank for d in first])} of host {first[0].host} "
        "print one device index and short bus id from distinct processes",
    )
    value = "one GPU per process"
    note = (
        "each process sees only its own GPU (a per-process CUDA_VISIBLE_DEVICES), so every rank prints "
        "the same index; a short bus id (the PCI bus number) does not tell the GPUs apart"
    )
    per_node = int(layout.per_node.value)
    if gpus_per_node is not None and gpus_per_node == per_node:
        fact = Fact("gpus_used", value, (Evidence(gpus_per_node, "option --gpus-per-node"), seen), note=note)
    else:
        option = "--gpus-per-node or --devices"
        fact = Fact("gpus_used", value, (seen,), assumed=True, option=option, note=note)
    return replace(layout, devices=None), fact
