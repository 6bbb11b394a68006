"""Which GPUs of each host the ranks ran on, and whether the choice changes the machine.

Sources, most trusted first: ``--devices`` (the board's GPU indices, as
``nvidia-smi`` numbers them); the log's device list (``# Rank .. device D``:
CUDA's ordinal of the GPU in its process); ``CUDA_VISIBLE_DEVICES`` (or
``HIP_VISIBLE_DEVICES`` / ``ROCR_VISIBLE_DEVICES``) on a command line, an
``export`` or the ``-J`` JSON's ``env``, which maps those ordinals to the
board's GPUs (CUDA numbers the visible GPUs 0, 1, ... in the order listed:
CUDA C Programming Guide, "CUDA Environment Variables"; ROCm's HIP and ROCr
variables do the same, HIP's applied within ROCr's). Without any, the first
GPUs of each host are assumed.

When only some GPUs of a larger board run, which ones can change the machine:
on an 8-GPU NVSwitch board with 4 NICs (one per GPU pair), GPUs 0-3 reach 2
NICs, GPUs 0, 2, 4, 6 reach all 4; on a DGX-1 cube mesh GPUs 0-3 are fully
joined by NVLink, GPUs 0, 2, 4, 6 are not. :func:`choice_matters` compares
every choice (NICs reached, links between each pair); an assumed choice that
matters withholds the verdict and names ``--devices``.

:func:`rank_gpus_on_boards` then names the GPU of every rank of the machine modelled;
:func:`rack_gpus` spreads the hosts of a GB200/GB300 run over its NVL72 racks.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from commsim.calibrate.evidence import Evidence, Fact
from commsim.calibrate.infer_layout import InferenceError, Layout, given
from commsim.calibrate.parser import Device, NcclTestsLog
from commsim.calibrate.parser_checks import number_spans
from commsim.calibrate.settings import RunSettings
from commsim.errors import TopologyError
from commsim.topology.model import Topology

__all__ = [
    "DevicePlan",
    "Visible",
    "choice_matters",
    "one_gpu_per_process",
    "plan_devices",
    "rack_gpus",
    "rank_gpus_on_boards",
    "visible_devices",
]

_CHOICES_LIMIT = 256
"""Every choice of a host's GPUs is compared up to this many; beyond, a few typical ones."""


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


_Signature = tuple[int, tuple[tuple[int, tuple[tuple[str, int], ...]], ...]]
"""NICs reached, and per GPU pair (sorted) its number of routes and one route's (link kind, links)."""


def _signature(box: Topology, members: Sequence[str]) -> _Signature:
    """What a choice of a host's GPUs decides: the NICs they reach, and the links joining each pair."""
    chosen = set(members)
    box_index = box.device(members[0]).box
    nics = [n for n in box.devices_of_kind("nic") if box.device(n).box == box_index]
    serving = [n for n in nics if chosen & set(box.device(n).serves)]
    pairs = []
    for a, b in itertools.combinations(members, 2):
        routes = box.routes(a, b)
        path = tuple((box.links[i].kind, box.links[i].count) for i in routes[0])
        pairs.append((len(routes), path))
    return len(serving or nics), tuple(sorted(pairs))


def _choices(total: int, count: int) -> list[tuple[int, ...]]:
    """Every choice of ``count`` of ``total`` GPUs (the first first), or a few typical ones if too many."""
    from math import comb

    if comb(total, count) <= _CHOICES_LIMIT:
        return list(itertools.combinations(range(total), count))
    step = total // count
    typical = [
        tuple(range(count)),
        tuple(range(total - count, total)),
        tuple(range(0, step * count, step)),
        tuple(range(1, total, 2))[:count] if count <= total // 2 else tuple(range(count)),
    ]
    return list(dict.fromkeys(typical))


def choice_matters(box: Topology, gpus: Sequence[str], count: int, networked: bool) -> str | None:
    """How the choice of ``count`` of a host's ``gpus`` changes the machine, in words; None if it does not.

    Parameters
    ----------
    box : Topology
        The machine holding ``gpus`` (one host's box, or the cluster).
    gpus : sequence of str
        One host's GPU names in board order.
    count : int
        GPUs the run uses per host.
    networked : bool
        Whether the run crosses hosts (only then do the NICs reached matter).

    Examples
    --------
    >>> from commsim.topology.machines import nvswitch_box
    >>> box = nvswitch_box(gpus=8, nics=4)
    >>> choice_matters(box, box.gpus, 4, networked=True)
    'GPUs 0-3 reach 2 NIC(s), GPUs 0,2,4,6 reach 4'
    >>> choice_matters(box, box.gpus, 4, networked=False) is None
    True
    """
    if count >= len(gpus) or count < 1:
        return None
    first = tuple(range(count))
    base = _signature(box, [gpus[i] for i in first])
    others = [(choice, _signature(box, [gpus[i] for i in choice])) for choice in _choices(len(gpus), count)]
    reach = [(sig[0], choice) for choice, sig in others if sig[0] != base[0]]
    if networked and reach:
        nics, choice = max(reach, key=lambda item: (abs(item[0] - base[0]), -item[1][0]))
        return (
            f"GPUs {number_spans(list(first))} reach {base[0]} NIC(s), GPUs "
            f"{','.join(map(str, choice))} reach {nics}"
        )
    linked = next((choice for choice, sig in others if sig[1] != base[1]), None)
    if linked is not None:
        return (
            f"GPUs {number_spans(list(first))} and GPUs {','.join(map(str, linked))} are joined by "
            "different links"
        )
    return None


def rank_gpus_on_boards(
    machine: Topology,
    gpu_names: list[list[str]],
    plan: DevicePlan,
    layout: Layout,
    facts: dict[str, Fact],
) -> tuple[str, ...]:
    """The GPU of every rank: the board GPUs :func:`plan_devices` names for each host, else its first.

    When a host runs only some GPUs of its board and nothing says which, the first are assumed, and
    whether another choice would change the machine (:func:`choice_matters`) decides whether that
    assumption withholds the verdict.
    """
    per_node = int(layout.per_node.value)
    hosts, box_gpus = int(layout.nodes.value), len(gpu_names[0])
    if per_node > box_gpus or len(gpu_names) < hosts:
        raise TopologyError(
            f"the machine has {len(gpu_names)} box(es) of {box_gpus} GPU(s) but the run has "
            f"{hosts} host(s) of {per_node} rank(s); give a topology of one host with at "
            "least as many GPUs (--topology: a topology YAML, or a builder file such as "
            f"'{{builder: nvswitch_box, gpus: {per_node}}}'), or --gpus-per-node"
        )
    devices = plan.devices
    if devices is not None and max(max(d, default=-1) for d in devices) >= box_gpus:
        if plan.fact is not None and plan.fact.evidence[0].source == "option --devices":
            raise InferenceError(
                f"--devices names GPU {max(max(d) for d in devices)} but a host of the machine has "
                f"{box_gpus} GPU(s) (0-{box_gpus - 1})"
            )
        devices, plan = None, DevicePlan(None, None)  # indices past the board: the first GPUs
    out: list[str] = []
    for host in range(hosts):
        wanted = devices[host] if devices is not None else tuple(range(per_node))
        out += [gpu_names[host][d] for d in wanted]
    if per_node < box_gpus:
        facts["gpus_used"] = plan.fact or _assumed_gpus(machine, gpu_names[0], per_node, hosts > 1)
    return tuple(out)


def _assumed_gpus(machine: Topology, gpus: list[str], per_node: int, networked: bool) -> Fact:
    """The first ``per_node`` GPUs of each host, assumed; a fact that withholds the verdict only when
    another choice of them would change the machine (the NICs they reach, the links between them)."""
    value = f"the first {per_node} of {len(gpus)}"
    why = choice_matters(machine, gpus, per_node, networked)
    if why is None:
        same = "would be joined by the same links"
        if networked:
            same = "would reach the same NICs over the same links"
        note = f"the log does not say which GPUs of a host ran; any {per_node} of its GPUs {same}"
        return Fact("gpus_used", value, (), option="--devices", note=note)
    note = f"the log does not say which GPUs of a host ran, and the choice changes the machine: {why}"
    return Fact("gpus_used", value, (), assumed=True, option="--devices", note=note)


def rack_gpus(
    gpu_names: list[list[str]], ranks: int, per_node: int, facts: dict[str, Fact]
) -> tuple[str, ...]:
    """The GPU of every rank of an NVL72 run: its hosts spread evenly over the fewest racks.

    A log names hosts, not racks; a run of 32 hosts of 4 GPUs needs two racks of 18 hosts, and is
    placed 16 + 16 (an operator splits a job evenly; filling one rack first would leave 72 + 56 ranks,
    domains NCCL would not pair). When the hosts do not split evenly, the first racks take one more.
    A ``racks`` fact already in ``facts`` (NCCL's node count, with its line) makes the count known.
    """
    racks = len(gpu_names)
    per_host = max(per_node, 1)
    hosts = -(-ranks // per_host)
    if racks == 1 or hosts <= 0:
        return tuple([g for box in gpu_names for g in box][:ranks])
    base, extra = divmod(hosts, racks)
    out: list[str] = []
    for rack, box in enumerate(gpu_names):
        out += box[: (base + (rack < extra)) * per_host]
    if hosts % racks:
        note = f"{hosts} hosts do not split evenly over {racks} racks: the first {extra} take one more"
    else:
        note = f"the log names hosts, not racks: {hosts} hosts spread evenly, {base} per rack"
    value = f"{racks} x {base}{'+' if extra else ''} hosts"
    counted = facts.get("racks")
    if counted is not None and counted.evidence and counted.value == racks:  # NCCL's node count
        note = f"{counted.note}; {note.removeprefix('the log names hosts, not racks: ')}"
        facts["racks"] = Fact("racks", value, counted.evidence, note=note)
    else:
        facts["racks"] = Fact("racks", value, (), assumed=True, note=note)
    return tuple(out[:ranks])
