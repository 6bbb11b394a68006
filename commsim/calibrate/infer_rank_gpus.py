"""The GPU of every rank on the machine modelled, and whether an assumed choice of GPUs changes it.

:func:`rank_gpus_on_boards` names each rank's GPU: the board GPUs
:func:`~commsim.calibrate.infer_devices.plan_devices` found for each host,
else its first GPUs, assumed. When only some GPUs of a larger board run,
which ones can change the machine: on an 8-GPU NVSwitch board with 4 NICs
(one per GPU pair), GPUs 0-3 reach 2 NICs, GPUs 0, 2, 4, 6 reach all 4; on a
DGX-1 cube mesh GPUs 0-3 are fully joined by NVLink, GPUs 0, 2, 4, 6 are
not. :func:`choice_matters` compares every choice (NICs reached, links
between each pair); an assumed choice that matters withholds the verdict
and names ``--devices``. :func:`rack_gpus` spreads the hosts of a
GB200/GB300 run over its NVL72 racks.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from commsim.calibrate.evidence import Fact
from commsim.calibrate.infer_devices import DevicePlan
from commsim.calibrate.infer_layout import InferenceError, Layout
from commsim.calibrate.parser_checks import number_spans
from commsim.errors import TopologyError
from commsim.topology.model import Topology

__all__ = ["choice_matters", "rack_gpus", "rank_gpus_on_boards"]

_CHOICES_LIMIT = 256
"""Every choice of a host's GPUs is compared up to this many; beyond, a few typical ones."""

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
    """The GPU of every rank: the board GPUs :func:`~commsim.calibrate.infer_devices.plan_devices` names
    for each host, else its first.

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
