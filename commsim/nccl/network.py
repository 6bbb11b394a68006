"""NCCL's channels across nodes: one ring per GPU of a node, entering and leaving through its NICs.

NCCL builds as many network channels as a node has NICs to use, each ring
entering a node at one GPU and leaving it at another, so that every NIC
carries one channel's traffic in each direction (``src/graph/search.cc``,
rings over ``NET``). Here a node of ``p`` ranks gets ``p`` channels: channel
``c`` visits the node's ranks in the box's ring order rotated to start at its
``c``-th rank, so each rank is once the entry and once the exit of a node,
and each hop between nodes takes its route from the exit GPU through the
NIC nearest to it, across the fabric, into the NIC nearest the next node's
entry GPU.

The network bandwidth of a node is measured, not assumed: one ring step
across every node at once (each channel's exit GPU sending to the next
node's entry GPU) is replayed on the machine with its links at NCCL's
efficiencies, so NIC speeds, rails and an oversubscribed fabric all count.
"""

from __future__ import annotations

from commsim.algorithms.tree import add_tree, shape_parents
from commsim.collectives import Collective
from commsim.engine import replay
from commsim.nccl.channels import ring_packing
from commsim.schedule import Schedule, ScheduleBuilder
from commsim.topology.model import Topology

__all__ = ["MAX_CHANNEL_RANKS", "crossing_send_Bps", "network_Bps", "node_hops", "node_rings", "node_trees"]

MAX_CHANNEL_RANKS = 1024
"""Largest (ranks x channels) planned as separate channels; larger runs plan one ring per node order."""

_STEP_BYTES = 256e6
"""Bytes each channel sends in the measured step (large enough to be bandwidth-bound)."""


def _boxes(topology: Topology, ranks: tuple[str, ...]) -> list[tuple[str, ...]]:
    boxes: dict[int, list[str]] = {}
    for rank in ranks:
        boxes.setdefault(topology.device(rank).box, []).append(rank)
    return [tuple(boxes[b]) for b in sorted(boxes)]


def _box_order(topology: Topology, box: tuple[str, ...], transport: str) -> tuple[str, ...]:
    """The ranks of one box in ring order: NCCL's best NVLink ring on a mesh, else as given."""
    if transport == "nvlink" and len(box) > 2:
        rings = ring_packing(topology, box)
        if rings:
            return rings[0][0]
    return box


def node_rings(topology: Topology, ranks: tuple[str, ...], transport: str) -> list[tuple[str, ...]]:
    """One multi-node ring per rank of a node (see the module docstring), as global rank orders."""
    boxes = _boxes(topology, ranks)
    orders = [_box_order(topology, box, transport) for box in boxes]
    channels = len(orders[0])
    rings = []
    for c in range(channels):
        ring: list[str] = []
        for order in orders:
            start = c % len(order)
            ring.extend(order[start:] + order[:start])
        rings.append(tuple(ring))
    return rings


def node_hops(rings: list[tuple[str, ...]]) -> list[tuple[str, str]]:
    """Every hop between nodes of the rings from :func:`node_rings`: (exit rank, next node's entry rank).

    The rings hold one channel per rank of a node, so a node has ``len(rings)`` ranks.
    """
    per_node = len(rings)
    nodes = len(rings[0]) // per_node
    return [
        (ring[node * per_node + per_node - 1], ring[((node + 1) % nodes) * per_node])
        for ring in rings
        for node in range(nodes)
    ]


def network_Bps(
    topology: Topology, ranks: tuple[str, ...], transport: str, rings: list[tuple[str, ...]] | None = None
) -> float:
    """Bandwidth (B/s, one direction) a node's channels reach across the network, by replay.

    ``topology`` should already run at NCCL's efficiencies (see :meth:`Topology.scaled`);
    ``rings`` (from :func:`node_rings` on the nominal machine) saves finding them again.
    """
    rings = rings or node_rings(topology, ranks, transport)
    hops = node_hops(rings)
    builder = ScheduleBuilder(Collective.ALL_TO_ALL, _STEP_BYTES * len(hops), ranks)
    for exit_rank, entry_rank in hops:
        src, dst = builder.device_index(exit_rank), builder.device_index(entry_rank)
        chunk = builder.chunk(_STEP_BYTES, owner=src, target=dst)
        builder.send(exit_rank, entry_rank, chunk)
    time_s = replay(builder.build(), topology).makespan_s
    return _STEP_BYTES * len(rings) / time_s


def crossing_send_Bps(topology: Topology, ranks: tuple[str, ...]) -> float:
    """Bandwidth (B/s) of one send between nodes in nccl-tests' send/recv, by replay.

    Every rank sends to the next rank; those whose next rank is in another box
    send across the network, all at once, each on its route through the NIC
    nearest its GPU. Replayed on ``topology`` (at NCCL's efficiencies), so the
    NIC, the rails and an oversubscribed fabric count as these few flows meet
    them, not as a node's every channel would (:func:`network_Bps`). The
    slowest crossing send's rate; infinite when no send crosses.
    """
    n = len(ranks)
    pairs = [
        (ranks[i], ranks[(i + 1) % n])
        for i in range(n)
        if topology.device(ranks[i]).box != topology.device(ranks[(i + 1) % n]).box
    ]
    if not pairs:
        return float("inf")
    builder = ScheduleBuilder(Collective.ALL_TO_ALL, _STEP_BYTES * len(pairs), ranks)
    for src, dst in pairs:
        chunk = builder.chunk(_STEP_BYTES, owner=builder.device_index(src), target=builder.device_index(dst))
        builder.send(src, dst, chunk)
    return _STEP_BYTES / replay(builder.build(), topology).makespan_s


def node_trees(
    topology: Topology, ranks: tuple[str, ...], transport: str, nbytes: float, pieces: int = 8
) -> Schedule:
    """NCCL's tree all-reduce across nodes: a chain inside each node, a double binary tree across.

    One channel per rank of a node (as for rings), each rotating the box
    order so that a different rank leads the node; each channel runs both
    trees of NCCL's double binary tree over the nodes (the second mirrors
    the first, so on two nodes each tree's root is in a different node and
    every NIC direction carries the buffer once), each on an equal
    share of the buffer, pipelined in ``pieces``.
    """
    rings = node_rings(topology, ranks, transport)  # channel c's rank order: the node's chains, node by node
    per_node = len(rings)
    nodes = len(ranks) // per_node
    trees = [
        [
            (i * per_node + j - 1) if j else (node_parents[i] * per_node if node_parents[i] >= 0 else -1)
            for i in range(nodes)
            for j in range(per_node)
        ]
        for node_parents in shape_parents("double_binary", nodes)
    ]
    builder = ScheduleBuilder(Collective.ALL_REDUCE, nbytes, ranks)
    for c, devices in enumerate(rings):
        for t, parents in enumerate(trees):
            chunks = builder.split(nbytes / (per_node * len(trees)), pieces)
            add_tree(builder, devices, parents, chunks, Collective.ALL_REDUCE, channel=c * len(trees) + t)
    return builder.build()
