"""The machine a run is priced on, built from the facts about it.

One host's box (the topology given, else the board built for the GPU), a
cluster of such boxes joined by the network, peer-to-peer on or off, and the
box without its GPU fabric when NCCL's P2P transport is off (NCCL then stages
every byte between the GPUs of a host through host memory).
"""

from __future__ import annotations

from commsim.calibrate.evidence import Fact
from commsim.calibrate.infer_machine import Board, build_box
from commsim.calibrate.settings import RunSettings, p2p_disabled
from commsim.errors import TopologyError
from commsim.hardware import GpuSpec
from commsim.topology.linkkinds import LINK_KINDS
from commsim.topology.model import Topology

__all__ = ["has_fabric", "host_box", "p2p_transport_off", "replace_p2p", "whole_machine", "without_fabric"]


def has_fabric(spec: GpuSpec | None, board: Board | None) -> bool:
    """Whether the GPUs of a host are joined by their NVLink/xGMI fabric on the board modelled."""
    return board is not None and board.cls not in ("pcie",) and spec is not None and spec.fabric is not None


def host_box(
    spec: GpuSpec | None,
    board: Board | None,
    given_box: Topology | None,
    p2p: bool,
    nics: int,
    nic: str | None,
) -> Topology:
    """One host's box: the topology given (``given_box``) with peer-to-peer as found, else the board
    built for the GPU with its ``nics`` NICs of link kind ``nic``."""
    if given_box is not None:
        return replace_p2p(given_box, p2p) if given_box.peer_to_peer != p2p else given_box
    assert board is not None and spec is not None, "a board is only chosen for a known GPU"
    return build_box(spec, board, p2p, nics, nic)


def whole_machine(box: Topology, boxes: int, nic: str | None, nics: int) -> tuple[Topology, list[list[str]]]:
    """The whole machine and, per box, its GPU names in box order."""
    if len(box.boxes) > 1:  # a given topology that is a whole cluster already
        return box, [list(gpus) for gpus in box.boxes.values()]
    if boxes <= 1:
        return box, [list(box.gpus)]
    from commsim.topology.cluster import cluster

    assert nic is not None
    machine = cluster(box, nodes=boxes, nic=nic, nics_per_node=nics)
    per_box = len(box.gpus)
    gpus = list(machine.gpus)
    return machine, [gpus[k * per_box : (k + 1) * per_box] for k in range(boxes)]


def p2p_transport_off(p2p: Fact, settings: RunSettings) -> bool:
    """Whether NCCL's whole P2P transport is off, over NVLink and xGMI too: NCCL_P2P_DISABLE=1, or
    NCCL's own channel lines joining GPUs of a host through host memory (SHM). Peer-to-peer off for
    any other reason (a GeForce card's PCIe, an ``nvidia-smi topo -p2p`` matrix) leaves a GPU fabric
    (NVLink bridges, NVSwitch, xGMI) in use."""
    if p2p.value or p2p.assumed:
        return False
    return p2p_disabled(settings) is not None or any(
        e.source == "NCCL INFO channel line" for e in p2p.evidence
    )


def without_fabric(box: Topology, warnings: list[str]) -> Topology:
    """``box`` without its GPU-to-GPU fabric (NCCL's P2P transport is off, so NCCL stages every byte
    between its GPUs through host memory), when its GPUs reach host memory; else ``box`` as it is,
    with a warning (an NVL72 rack is modelled without its Grace CPUs)."""
    from commsim.nccl.machine import GPU_FABRICS

    switches = set(box.devices_of_kind("nvswitch"))
    links = [
        p
        for p in box.physical_links
        if LINK_KINDS[p.kind].family not in GPU_FABRICS and not {p.a, p.b} & switches
    ]
    if len(links) == len(box.physical_links):
        return replace_p2p(box, False)  # no fabric: a PCIe box with peer-to-peer off
    note = " NCCL's P2P transport off: its GPUs join through host memory, not their fabric."
    devices = [d for d in box.devices if d.name not in switches]
    try:
        bare = Topology(box.name, devices, links, box.kind_overrides, box.description + note, False, box.nccl)
        cpus = bare.devices_of_kind("cpu")
        if cpus and all(any(bare.route(g, c) for c in cpus) for g in bare.gpus):
            return bare
    except TopologyError:
        pass
    warnings.append(
        "NCCL's P2P transport is off, so NCCL stages data between the GPUs of a host through host "
        f"memory, but the model of this machine ({box.name}) has no path from its GPUs to host memory: "
        "its GPU fabric is kept, so its predictions are faster than the run can be"
    )
    return box


def replace_p2p(topology: Topology, peer_to_peer: bool) -> Topology:
    """The same machine with peer-to-peer on or off."""
    if topology.peer_to_peer == peer_to_peer:
        return topology
    note = "" if peer_to_peer else " GPU peer-to-peer unavailable: NCCL stages data through host memory."
    return Topology(
        topology.name,
        topology.devices,
        topology.physical_links,
        topology.kind_overrides,
        topology.description + note,
        peer_to_peer,
        topology.nccl,
    )
