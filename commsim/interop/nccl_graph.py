"""NCCL's graph dump (``NCCL_GRAPH_DUMP_FILE``): the rings and trees NCCL chose, as channel sets.

``<graphs>`` holds one ``<graph>`` per algorithm NCCL searched for
(``id`` 0 ring, 1 tree, 2 CollNet chain, 3 NVLS, 4 CollNet direct), with
its search ``pattern`` (1 balanced tree, 2 split tree, 3 tree, 4 ring,
5 NVLS, 6 CollNet direct), the channels found (``nchannels``), the
bandwidth per channel it searched for inside and across nodes
(``speedintra``/``speedinter``, GB/s) and the path types it accepted
(``typeintra``/``typeinter``: LOC, NVL, NVB, C2C, PIX, PXB, PXN, P2C, PHB,
SYS, NET). Each ``<channel>`` lists, in order, the ``<net dev>`` it enters
by, its ``<gpu dev>`` and the ``<net dev>`` it leaves by: a ring's order, or
a tree's chain inside the node.

:meth:`NcclChannels.ring_orders` gives the rings as rank orders, which the
``multi_ring`` algorithm takes as its ``rings`` parameter, so the rings
NCCL really built can be replayed.

References
----------
NVIDIA/nccl ``src/graph/search.cc`` (``ncclTopoGetXmlFromGraphs``,
``ncclTopoGetGraphFromXml``), ``src/include/graph.h`` (the pattern numbers);
the real dump ``tests/data/h100-1gpu/nccl_graph.xml`` (NCCL 2.28.9).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from os import PathLike

from commsim.interop.errors import FormatError
from commsim.interop.xmlread import XmlElement, read_xml_file
from commsim.topology.model import Topology

__all__ = ["GRAPH_IDS", "PATTERNS", "NcclChannels", "NcclGraph", "nccl_graphs", "read_nccl_graph"]

PATTERNS = {1: "balanced_tree", 2: "split_tree", 3: "tree", 4: "ring", 5: "nvls", 6: "collnet_direct"}
"""NCCL's search patterns (``NCCL_TOPO_PATTERN_*``)."""
GRAPH_IDS = {0: "ring", 1: "tree", 2: "collnet_chain", 3: "nvls", 4: "collnet_direct"}
"""Which algorithm each graph id serves."""
PATH_TYPES = ("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "PXN", "P2C", "PHB", "SYS", "NET", "DIS")
"""Path types NCCL names (``topoPathTypeStr``)."""


@dataclass
class NcclGraph:
    """One ``<graph>``: the channels NCCL found for one algorithm.

    Attributes
    ----------
    id : int
    algorithm : str
        ``ring``, ``tree``, ``collnet_chain``, ``nvls`` or ``collnet_direct`` (from ``id``).
    pattern : str
        The search pattern (:data:`PATTERNS`).
    nchannels : int
    speed_intra_GBps, speed_inter_GBps : float
        Bandwidth per channel NCCL searched for, GB/s.
    type_intra, type_inter : str
        Worst path type accepted inside and across nodes.
    channels : list of list of str
        Per channel, its endpoints in order: ``gpu<dev>`` and ``net<dev>``.
    line : int
    """

    id: int
    algorithm: str
    pattern: str
    nchannels: int
    speed_intra_GBps: float
    speed_inter_GBps: float
    type_intra: str
    type_inter: str
    channels: list[list[str]] = field(default_factory=list)
    line: int = 0

    def gpu_orders(self) -> list[list[str]]:
        """Per channel, its GPUs in order (networks left out)."""
        return [[e for e in channel if e.startswith("gpu")] for channel in self.channels]


@dataclass
class NcclChannels:
    """Every graph of a dump, by algorithm."""

    graphs: dict[str, NcclGraph]
    source: str | None = None

    def ring_orders(self, topology: Topology) -> list[list[int]]:
        """The distinct rings NCCL built, as rank-index orders of ``topology``'s GPUs.

        Raises
        ------
        FormatError
            If there is no ring graph with channels, or a ring names a GPU the machine lacks.
        """
        graph = self.graphs.get("ring")
        if graph is None or not graph.channels:
            raise FormatError("the graph dump has no ring channels", self.source)
        index = {name: i for i, name in enumerate(topology.gpus)}
        orders: list[list[int]] = []
        for order in graph.gpu_orders():
            missing = [g for g in order if g not in index]
            if missing:
                raise FormatError(
                    f"ring channel names {', '.join(missing)}, not a GPU of {topology.name!r} "
                    f"({', '.join(topology.gpus)})",
                    self.source,
                    graph.line,
                )
            ranks = [index[g] for g in order]
            if ranks not in orders:
                orders.append(ranks)
        return orders


def _graph(node: XmlElement) -> NcclGraph:
    graph_id, pattern = node.integer("id"), node.integer("pattern")
    if graph_id not in GRAPH_IDS:
        raise node.error(
            f"graph id {graph_id} is not one of {', '.join(f'{k} ({v})' for k, v in GRAPH_IDS.items())}"
        )
    if pattern not in PATTERNS:
        raise node.error(
            f"pattern {pattern} is not one of {', '.join(f'{k} ({v})' for k, v in PATTERNS.items())}"
        )
    types = []
    for name in ("typeintra", "typeinter"):
        value = node.text(name, "a path type")
        if value not in PATH_TYPES:
            raise node.error(f"{name}={value!r} is not a path type; valid: {', '.join(PATH_TYPES)}")
        types.append(value)
    graph = NcclGraph(
        id=graph_id,
        algorithm=GRAPH_IDS[graph_id],
        pattern=PATTERNS[pattern],
        nchannels=node.integer("nchannels"),
        speed_intra_GBps=node.number("speedintra"),
        speed_inter_GBps=node.number("speedinter"),
        type_intra=types[0],
        type_inter=types[1],
        line=node.line,
    )
    for channel in (c for c in node.children if c.tag == "channel"):
        ends = [f"{e.tag}{e.integer('dev')}" for e in channel.children if e.tag in ("gpu", "net")]
        graph.channels.append(ends)
    if len(graph.channels) != graph.nchannels:
        raise node.error(f"nchannels={graph.nchannels} but {len(graph.channels)} <channel> elements follow")
    return graph


def nccl_graphs(root: XmlElement) -> NcclChannels:
    """The channel sets of a parsed graph dump (see the module docstring)."""
    if root.tag != "graphs":
        raise root.error("an NCCL graph dump starts with <graphs version=...>")
    graphs = [_graph(child) for child in root.children if child.tag == "graph"]
    return NcclChannels({g.algorithm: g for g in graphs}, root.source)


def read_nccl_graph(path: str | PathLike[str]) -> NcclChannels:
    """Read an ``NCCL_GRAPH_DUMP_FILE``."""
    return nccl_graphs(read_xml_file(path, "NCCL graph dump"))
