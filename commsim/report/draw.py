"""Drawings of machines: devices in recognisable layers, links coloured by family.

:func:`topology_positions` computes a layout a person recognises rather
than a force-directed tangle:

- devices in layers by kind: network switches on top, then NICs, CPUs,
  PCIe switches, GPUs, and an NVSwitch below its GPUs (a star);
- a PCIe box as a tree (CPU on top, switch, GPUs below);
- an 8-GPU NVLink box whose GPUs 0-3 and 4-7 each form a fully linked
  quad (the DGX-1 hybrid cube-mesh) as two squares side by side with the
  cross links between them;
- a cluster as its boxes side by side under the network;
- a topology of GPUs only (ring, fully connected) as a circle.

Each device above or below the GPUs sits over the middle of the devices it
links to (its barycentre), spread so no two overlap. A link that would run
straight through another device is drawn as an arc.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import networkx as nx

from commsim.report.plots import PlotError, new_figure, save_figure
from commsim.topology.model import PhysicalLink, Topology
from commsim.units import format_bandwidth

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["DEVICE_STYLE", "FAMILY_COLOURS", "draw_topology", "topology_positions"]

Position = tuple[float, float]

FAMILY_COLOURS = {
    "nvlink": "#4d9a06",
    "pcie": "#1f77b4",
    "inter_socket": "#9467bd",
    "infiniband": "#d62728",
    "ethernet": "#ff7f0e",
    "host_memory": "#8c564b",
}
"""Edge colour per link family."""

DEVICE_STYLE = {  # kind: (marker, fill colour)
    "gpu": ("s", "#c7e9a0"),
    "cpu": ("o", "#aec7e8"),
    "pcie_switch": ("D", "#dadaeb"),
    "nvswitch": ("h", "#fdd0a2"),
    "nic": ("^", "#fcbba1"),
    "switch": ("p", "#e0e0e0"),
    "memory": ("v", "#d9d9d9"),
}
"""Marker and fill colour per device kind."""

_LAYER_Y = {"nic": 4.0, "cpu": 3.0, "memory": 3.6, "pcie_switch": 2.0, "gpu": 0.0}
_NVSWITCH_DROP = 2.0  # an NVSwitch sits this far below the lowest GPU
_BOX_GAP = 1.5
_MIN_SPACING = 0.8
_LABEL_ALL_UP_TO = 20  # physical links; bigger machines get labels on unusual links only


# -- layout ------------------------------------------------------------------------
def _is_dgx1_mesh(topology: Topology, gpus: list[str]) -> bool:
    """Eight GPUs whose 0-3 and 4-7 are each fully linked GPU to GPU (two quads)."""
    if len(gpus) != 8:
        return False
    graph = topology.graph
    return all(graph.has_edge(a, b) for quad in (gpus[:4], gpus[4:]) for a in quad for b in quad if a != b)


def _gpu_positions(topology: Topology, gpus: list[str]) -> dict[str, Position]:
    """GPUs of one box: two squares for a DGX-1-like mesh, else one row."""
    if _is_dgx1_mesh(topology, gpus):
        left = [(0.0, 0.0), (1.0, 0.0), (0.0, -1.0), (1.0, -1.0)]
        right = [(3.5, 0.0), (2.5, 0.0), (3.5, -1.0), (2.5, -1.0)]  # mirrored: GPU i+4 faces GPU i
        return dict(zip(gpus, left + right))
    return {gpu: (float(i), 0.0) for i, gpu in enumerate(gpus)}


def _spread(xs: list[tuple[float, str]]) -> dict[str, float]:
    """Keep the order of wished-for x positions, at least _MIN_SPACING apart, centred on their mean."""
    xs = sorted(xs)
    placed: list[float] = []
    for x, _ in xs:
        placed.append(max(x, placed[-1] + _MIN_SPACING) if placed else x)
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
    pos = _gpu_positions(topology, kinds.get("gpu", []))
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


# -- drawing -----------------------------------------------------------------------
def _passes_through(a: Position, b: Position, c: Position, tolerance: float = 0.15) -> bool:
    """Whether point ``c`` lies within ``tolerance`` of the segment from ``a`` to ``b`` (not at its ends)."""
    ax, ay = a
    dx, dy = b[0] - ax, b[1] - ay
    length2 = dx * dx + dy * dy
    if length2 == 0:
        return False
    t = ((c[0] - ax) * dx + (c[1] - ay) * dy) / length2
    if not 0.02 < t < 0.98:
        return False
    return math.hypot(ax + t * dx - c[0], ay + t * dy - c[1]) < tolerance


def _outward_rad(a: Position, b: Position, centre: Position, size: float = 0.3) -> float:
    """Arc radius (matplotlib ``arc3``) that bows the link from ``a`` to ``b`` away from ``centre``."""
    dx, dy = b[0] - a[0], b[1] - a[1]
    mid = ((a[0] + b[0]) / 2, (a[1] + b[1]) / 2)
    # arc3 puts its control point at mid + rad * (dy, -dx)
    away = dy * (mid[0] - centre[0]) - dx * (mid[1] - centre[1])
    return size if away >= 0 else -size


def _centre(topology: Topology, pos: dict[str, Position], kinds: set[str]) -> Position:
    points = [pos[d.name] for d in topology.devices if d.kind in kinds]
    return sum(p[0] for p in points) / len(points), sum(p[1] for p in points) / len(points)


def _edge_groups(topology: Topology, pos: dict[str, Position]) -> dict[tuple[str, float], list[PhysicalLink]]:
    """Physical links grouped by (family, arc radius): straight (0) or bent around a device."""
    groups: dict[tuple[str, float], list[PhysicalLink]] = {}
    for physical in topology.physical_links:
        link = topology.link(physical.a, physical.b)
        a, b = pos[physical.a], pos[physical.b]
        rad = 0.0
        if any(_passes_through(a, b, c) for n, c in pos.items() if n not in (physical.a, physical.b)):
            kinds = {topology.device(physical.a).kind, topology.device(physical.b).kind}
            rad = _outward_rad(a, b, _centre(topology, pos, kinds))
        groups.setdefault((link.family, rad), []).append(physical)
    return groups


def _labelled(topology: Topology, edge_labels: bool | None) -> set[tuple[str, str]]:
    """Links to label: all, none, or (auto) all of a small machine, else the unusual ones.

    Unusual: bonded links, and links whose per-link bandwidth differs from
    the legend's figure for their kind.
    """
    links = topology.physical_links
    if edge_labels is False:
        return set()
    if edge_labels or len(links) <= _LABEL_ALL_UP_TO:
        return {(p.a, p.b) for p in links}
    usual: dict[str, float] = {}
    for p in links:
        usual.setdefault(p.kind, topology.link(p.a, p.b).bandwidth_Bps / p.count)
    return {
        (p.a, p.b)
        for p in links
        if p.count > 1 or topology.link(p.a, p.b).bandwidth_Bps / p.count != usual[p.kind]
    }


def _edge_label(topology: Topology, a: str, b: str) -> str:
    link = topology.link(a, b)
    return format_bandwidth(link.bandwidth_Bps, digits=3)


def _draw_edges(
    ax: Any,
    topology: Topology,
    graph: nx.Graph,
    pos: dict[str, Position],
    labelled: set[tuple[str, str]],
    node_size: int,
) -> None:
    for (family, rad), links in sorted(_edge_groups(topology, pos).items()):
        colour = FAMILY_COLOURS.get(family, "black")
        style = f"arc3,rad={rad}" if rad else "arc3"
        options: dict[str, Any] = {"ax": ax, "edgelist": [(p.a, p.b) for p in links], "node_size": node_size}
        if rad:
            options.update(arrows=True, arrowstyle="-", connectionstyle=style)
        widths = [1.2 + math.log2(p.count) for p in links]
        nx.draw_networkx_edges(graph, pos, width=widths, edge_color=colour, **options)
        texts = {(p.a, p.b): _edge_label(topology, p.a, p.b) for p in links if (p.a, p.b) in labelled}
        for label_pos, group in _label_positions(texts, pos).items():
            nx.draw_networkx_edge_labels(
                graph,
                pos,
                edge_labels=group,
                ax=ax,
                font_size=6,
                font_color=colour,
                label_pos=label_pos,
                bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.8},
                node_size=node_size,
                connectionstyle=style,
                rotate=False,
            )


def _label_positions(
    texts: dict[tuple[str, str], str], pos: dict[str, Position]
) -> dict[float, dict[tuple[str, str], str]]:
    """Labels grouped by position along their edge: links crossing at their middles (a
    quad's diagonals) get their labels moved apart, to 30 % and 70 % of their length."""
    by_middle: dict[tuple[float, float], list[tuple[str, str]]] = {}
    for a, b in texts:
        middle = (round((pos[a][0] + pos[b][0]) / 2, 3), round((pos[a][1] + pos[b][1]) / 2, 3))
        by_middle.setdefault(middle, []).append((a, b))
    groups: dict[float, dict[tuple[str, str], str]] = {}
    for edges in by_middle.values():
        places = [0.5] if len(edges) == 1 else [0.3, 0.7, 0.5]
        for i, edge in enumerate(edges):
            groups.setdefault(places[i % len(places)], {})[edge] = texts[edge]
    return dict(sorted(groups.items()))


def _draw_nodes(
    ax: Any, topology: Topology, graph: nx.Graph, pos: dict[str, Position], names: bool, node_size: int
) -> None:
    for kind, (marker, colour) in DEVICE_STYLE.items():
        nodes = topology.devices_of_kind(kind)
        if nodes:
            nx.draw_networkx_nodes(
                graph,
                pos,
                nodelist=nodes,
                node_shape=marker,
                node_color=colour,
                edgecolors="#444444",
                node_size=node_size,
                ax=ax,
            )
    if names:
        nx.draw_networkx_labels(
            graph, pos, labels={d.name: _short(d.name) for d in topology.devices}, font_size=6, ax=ax
        )


def _short(name: str) -> str:
    return name.replace("pcie_switch", "pcie sw").replace("nvswitch", "nvsw").replace("_", " ")


def _legend(ax: Any, topology: Topology) -> None:
    from matplotlib.lines import Line2D

    handles = []
    for kind in sorted({p.kind for p in topology.physical_links}):
        sample = next(p for p in topology.physical_links if p.kind == kind)
        per_link = topology.link(sample.a, sample.b).bandwidth_Bps / sample.count
        family = topology.link(sample.a, sample.b).family
        handles.append(
            Line2D(
                [],
                [],
                color=FAMILY_COLOURS.get(family, "black"),
                lw=2,
                label=f"{kind} ({format_bandwidth(per_link, digits=3)} per link per direction)",
            )
        )
    present = {d.kind for d in topology.devices}
    for kind, (marker, colour) in DEVICE_STYLE.items():
        if kind in present:
            handles.append(
                Line2D(
                    [],
                    [],
                    ls="",
                    marker=marker,
                    mfc=colour,
                    mec="#444444",
                    ms=8,
                    label=kind.replace("_", " "),
                )
            )
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False)


def _extent(points: Iterable[Position]) -> tuple[float, float]:
    xs, ys = zip(*points)
    return max(xs) - min(xs), max(ys) - min(ys)


def draw_topology(
    topology: Topology,
    path: str | Path | None = None,
    *,
    edge_labels: bool | None = None,
    title: str | None = None,
) -> Figure:
    """Draw a machine: devices by kind, links coloured by family and labelled with bandwidth.

    Bonded links (``count`` > 1) are drawn thicker; edge labels give each
    link's capacity per direction. The legend lists every link kind with its
    bandwidth per single link and direction, and the device kinds.

    Parameters
    ----------
    topology : Topology
    path : str or Path, optional
        Where to save the figure (``.png``, ``.svg``, ``.pdf``).
    edge_labels : bool, optional
        Label every link with its capacity per direction (True), none
        (False), or (default) every link of a machine with at most 20
        links and only the bonded or unusually fast or slow links of a
        bigger one. Machines of more than 64 devices get no labels.
    title : str, optional
        Default: the topology's name and GPU count.

    Returns
    -------
    matplotlib.figure.Figure
    """
    if not topology.devices:
        raise PlotError(f"topology {topology.name!r} has no device to draw")
    pos = topology_positions(topology)
    width, height = _extent(pos.values())
    many = len(topology.devices) > 64
    fig, (ax,) = new_figure(min(18.0, 3.5 + 1.3 * max(width, 3)), min(14.0, 1.8 + 1.1 * max(height, 2)))
    graph = nx.Graph()
    graph.add_nodes_from(pos)
    graph.add_edges_from((p.a, p.b) for p in topology.physical_links)
    node_size = 60 if many else 500
    _draw_edges(ax, topology, graph, pos, set() if many else _labelled(topology, edge_labels), node_size)
    _draw_nodes(ax, topology, graph, pos, not many, node_size)
    _legend(ax, topology)
    ax.set_title(title or f"{topology.name}: {len(topology.gpus)} GPUs", fontsize=10, loc="left")
    ax.set_axis_off()
    ax.set_aspect("equal", adjustable="datalim")
    ax.margins(0.08)
    fig.tight_layout()
    if path is not None:
        save_figure(fig, path)
    return fig
