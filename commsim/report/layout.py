"""Where each device of a machine is drawn: layers by kind, boxes side by side.

The layout a person recognises rather than a force-directed tangle
(see :mod:`commsim.report.draw` for the picture):

- devices in rows by kind: network switches on top, then NICs, CPUs,
  PCIe switches, GPUs in one row, and an NVSwitch below its GPUs (a star);
- GPUs spaced so the NICs that share their PCIe switches fit above them
  side by side (an HGX H100 with two NICs per switch gets an even NIC row,
  not a fan wider than the machine);
- an 8-GPU NVLink box whose GPUs 0-3 and 4-7 each form a fully linked
  quad (the DGX-1 hybrid cube-mesh) as two squares side by side;
- a cluster as its boxes side by side under the network;
- a topology of GPUs only (ring, fully connected) as a circle.

Each device above or below the GPUs sits over the middle of the devices it
links to (its barycentre), spread so no two overlap.
"""

from __future__ import annotations

import math

from commsim.topology.model import Topology

__all__ = ["MIN_SPACING", "Position", "topology_positions"]

Position = tuple[float, float]

_LAYER_Y = {"nic": 4.0, "cpu": 3.0, "memory": 3.6, "pcie_switch": 2.0, "gpu": 0.0}
_NVSWITCH_DROP = 2.0  # an NVSwitch sits this far below the lowest GPU
_BOX_GAP = 1.5
MIN_SPACING = 0.8


def _is_dgx1_mesh(topology: Topology, gpus: list[str]) -> bool:
    """Eight GPUs whose 0-3 and 4-7 are each fully linked GPU to GPU (two quads)."""
    if len(gpus) != 8:
        return False
    graph = topology.graph
    return all(graph.has_edge(a, b) for quad in (gpus[:4], gpus[4:]) for a in quad for b in quad if a != b)


def _gpu_positions(topology: Topology, gpus: list[str], pitch: float = 1.0) -> dict[str, Position]:
    """GPUs of one box: two squares for a DGX-1-like mesh, else one row ``pitch`` apart."""
    if _is_dgx1_mesh(topology, gpus):
        left = [(0.0, 0.0), (1.0, 0.0), (0.0, -1.0), (1.0, -1.0)]
        right = [(3.5, 0.0), (2.5, 0.0), (3.5, -1.0), (2.5, -1.0)]  # mirrored: GPU i+4 faces GPU i
        return dict(zip(gpus, left + right))
    return {gpu: (i * pitch, 0.0) for i, gpu in enumerate(gpus)}


def gpu_pitch(topology: Topology, gpus: list[str], nics: list[str]) -> float:
    """Distance between neighbouring GPUs of a row: room for the NICs that share a GPU's PCIe switch.

    A PCIe switch holding one GPU and two NICs (an HGX H100 with 16 NICs)
    needs two NIC places above its GPU: the GPUs are ``2 * MIN_SPACING``
    apart, so the NIC row is as wide as the GPU row.
    """
    if not gpus or not nics:
        return 1.0
    graph = topology.graph
    per_gpu = []
    for gpu in gpus:
        parents = [n for n in graph.successors(gpu) if topology.device(n).kind == "pcie_switch"]
        gpus_there = max((sum(1 for n in graph.successors(p) if n in gpus) for p in parents), default=1)
        nics_there = max((sum(1 for n in graph.successors(p) if n in nics) for p in parents), default=0)
        per_gpu.append(nics_there / max(gpus_there, 1))
    return max(1.0, MIN_SPACING * max(per_gpu))


def _spread(xs: list[tuple[float, str]]) -> dict[str, float]:
    """Keep the order of wished-for x positions, at least MIN_SPACING apart, centred on their mean."""
    xs = sorted(xs)
    placed: list[float] = []
    for x, _ in xs:
        placed.append(max(x, placed[-1] + MIN_SPACING) if placed else x)
    shift = sum(x for x, _ in xs) / len(xs) - sum(placed) / len(placed)
    return {name: x + shift for (_, name), x in zip(xs, placed)}


def _layer(
    topology: Topology, names: list[str], pos: dict[str, Position], y: float, fallback_x: float
) -> None:
    """Place ``names`` at height ``y``, each over the barycentre of its placed neighbours."""
    if not names:
        return
    wished = []
    for i, name in enumerate(names):
        near = [pos[n][0] for n in topology.graph.successors(name) if n in pos]
        wished.append((sum(near) / len(near) if near else fallback_x + i, name))
    for name, x in _spread(wished).items():
        pos[name] = (x, y)


def _box_positions(topology: Topology, devices: list[str]) -> dict[str, Position]:
    kinds: dict[str, list[str]] = {}
    for name in devices:
        kinds.setdefault(topology.device(name).kind, []).append(name)
    gpus, nics = kinds.get("gpu", []), kinds.get("nic", [])
    pos = _gpu_positions(topology, gpus, gpu_pitch(topology, gpus, nics))
    right = max((p[0] for p in pos.values()), default=0.0) + 1
    lowest = min((p[1] for p in pos.values()), default=0.0)
    _layer(topology, kinds.get("pcie_switch", []), pos, _LAYER_Y["pcie_switch"], right)
    _layer(topology, kinds.get("nvswitch", []), pos, lowest - _NVSWITCH_DROP, right)
    for kind in ("cpu", "memory", "nic"):
        _layer(topology, kinds.get(kind, []), pos, _LAYER_Y[kind], right)
    return pos


def _circle(names: list[str]) -> dict[str, Position]:
    radius = max(1.5, len(names) / (2 * math.pi) * 1.2)
    return {
        name: (
            radius * math.sin(2 * math.pi * i / len(names)),
            radius * math.cos(2 * math.pi * i / len(names)),
        )
        for i, name in enumerate(names)
    }


def topology_positions(topology: Topology) -> dict[str, Position]:
    """Drawing positions of every device (see the module docstring for the layout)."""
    if all(d.kind == "gpu" for d in topology.devices):
        return _circle([d.name for d in topology.devices])
    boxes: dict[int, list[str]] = {}
    network = []
    for device in topology.devices:
        if device.kind == "switch":
            network.append(device.name)
        else:
            boxes.setdefault(device.box, []).append(device.name)
    pos: dict[str, Position] = {}
    offset = 0.0
    for box in sorted(boxes):
        local = _box_positions(topology, boxes[box])
        low = min(p[0] for p in local.values())
        high = max(p[0] for p in local.values())
        pos.update({name: (x - low + offset, y) for name, (x, y) in local.items()})
        offset += high - low + _BOX_GAP
    leaves = [n for n in network if any(topology.device(m).kind != "switch" for m in topology.graph[n])]
    top = max((y for _, y in pos.values()), default=0.0)
    rise = max(1.0, 0.2 * offset)  # steep enough that no network link grazes another NIC
    _layer(topology, leaves, pos, top + rise, 0.0)
    _layer(topology, [n for n in network if n not in leaves], pos, top + rise + 1.5, 0.0)
    return pos
