"""What NCCL would see on a topology: nodes, GPUs per node, transports, NICs.

NCCL chooses its transport between two GPUs of one node in this order:
NVLink (direct or through an NVSwitch), PCIe peer-to-peer, and, when the
GPUs cannot reach each other's memory (``peer_to_peer`` false), shared host
memory (SHM), which stages every byte through the CPU. Between nodes it
uses the NICs (NET).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from commsim.errors import TopologyError
from commsim.topology.model import Topology

__all__ = ["GPU_ARCHS", "NcclMachine", "analyse", "gpu_arch"]

GPU_ARCHS = ("kepler", "pascal", "volta", "turing", "ampere", "ada", "hopper", "blackwell", "unknown")
"""GPU generations, oldest first."""

_ARCH_PATTERNS = [
    ("blackwell", r"\bB[12]00\b|GB200"),
    ("hopper", r"H100|H200|H800|GH200|H20\b"),
    ("ada", r"RTX 40\d\d|\b4090\b|\b4080\b|L40|\bL4\b|RTX 6000 Ada"),
    ("ampere", r"A100|A800|A30\b|A40\b|A10\b|RTX 30\d\d|\b3090\b|RTX A\d000"),
    ("turing", r"RTX 20\d\d|\b2080\b|\bT4\b|Quadro RTX|TITAN RTX"),
    ("volta", r"V100|TITAN V"),
    ("pascal", r"P100|P40\b|GTX 10\d\d"),
]


def gpu_arch(model: str | None) -> str:
    """The generation of a GPU model string (catalogue first, then name patterns), or ``"unknown"``.

    Blackwell Ultra (B300, GB300) counts as ``"blackwell"``; AMD generations
    (``cdna3`` ...) are returned as the catalogue names them.
    """
    if model:
        from commsim.hardware import find_gpu

        spec = find_gpu(model).spec
        if spec is not None:
            return "blackwell" if spec.arch == "blackwell_ultra" else spec.arch
        for arch, pattern in _ARCH_PATTERNS:
            if re.search(pattern, model, re.IGNORECASE):
                return arch
    return "unknown"


@dataclass(frozen=True)
class NcclMachine:
    """The facts NCCL's algorithm and protocol choice depends on.

    Attributes
    ----------
    nodes : int
        Boxes the ranks span.
    per_node : int
        Ranks per box (the same in every box).
    transport : str
        Between GPUs of one box: ``"nvlink"`` (direct NVLink or xGMI links), ``"nvswitch"``, ``"pcie"``,
        ``"shm"`` (through host memory), or ``"none"`` with one GPU per box.
    arch : str
        GPU generation (see :data:`GPU_ARCHS`).
    nvls : bool
        NVLink SHARP available (NVSwitch with Hopper or newer GPUs).
    nic_Bps : float
        Network bandwidth of one box, per direction, summed over its NICs.
    net_family : str or None
        ``"infiniband"`` or ``"ethernet"`` for multi-node runs.
    net_kind : str or None
        The link kind of the used NICs (``"ib_ndr"``, ``"efa_v2"`` ...).
    net_transport : str or None
        NCCL's network transport over them (``"ib"``, ``"roce"``, ``"efa"``, ``"socket"`` ...).
    nics : int
        NICs of one box that serve its ranks (those ``nic_Bps`` sums); 1 on one box.
    fabric_Bps : float
        A GPU's NVLink (or xGMI) bandwidth to the box's other ranks and its NVSwitches, per direction,
        as the links are rated (the least over the first box's ranks); 0 without a GPU fabric.
    """

    nodes: int
    per_node: int
    transport: str
    arch: str
    nvls: bool
    nic_Bps: float
    net_family: str | None
    net_kind: str | None = None
    net_transport: str | None = None
    nics: int = 1
    fabric_Bps: float = 0.0

    @property
    def intra_hop(self) -> str:
        """NCCL's hop class inside a box: ``"nvlink"`` or ``"pcie"`` (SHM counts as PCIe)."""
        return "nvlink" if self.transport in ("nvlink", "nvswitch") else "pcie"

    def describe(self) -> str:
        """One line, e.g. ``2 nodes x 8 GPUs (hopper), nvswitch in a box, 400 GB/s NET per node``."""
        text = f"{self.nodes} node(s) x {self.per_node} GPU(s) ({self.arch}), {self.transport} in a box"
        if self.nodes > 1:
            text += f", {self.nic_Bps / 1e9:.4g} GB/s {self.net_family} per node"
        if self.nvls:
            text += ", NVLS"
        return text


GPU_FABRICS = ("nvlink", "xgmi")
"""Link families of GPU-to-GPU fabrics (NVLink, AMD Infinity Fabric): NCCL/RCCL's P2P over them."""


def _transport(topology: Topology, box_ranks: list[str]) -> str:
    if len(box_ranks) < 2:
        return "none"
    members = set(box_ranks)
    for link in topology.links:
        if link.family not in GPU_FABRICS or link.src not in members:
            continue
        if link.dst in members:
            return "nvlink"
        if topology.device(link.dst).kind == "nvswitch":
            return "nvswitch"
    return "pcie" if topology.peer_to_peer else "shm"


def _network(topology: Topology, box: int, box_ranks: list[str]) -> tuple[float, str | None, str | None, int]:
    """Network bandwidth of the NICs the box's ranks use, the network family, the NICs' link kind, and
    how many NICs they are.

    NCCL gives each GPU the NIC(s) closest to it, so only NICs that serve a
    rank of the box count (a run with one GPU per host uses one of its eight
    NICs); NICs that serve no particular GPU count when no NIC serves a rank.
    """
    members = set(box_ranks)
    by_nic: dict[str, tuple[float, str, str]] = {}
    for link in topology.links:
        device = topology.device(link.src)
        if device.kind == "nic" and device.box == box and link.family in ("infiniband", "ethernet"):
            bandwidth, _, _ = by_nic.get(device.name, (0.0, link.family, link.kind))
            by_nic[device.name] = (bandwidth + link.bandwidth_Bps, link.family, link.kind)
    serving = [n for n in by_nic if members & set(topology.device(n).serves)]
    unassigned = [n for n in by_nic if not topology.device(n).serves]
    chosen = serving or unassigned or list(by_nic)
    family, kind = (by_nic[chosen[0]][1], by_nic[chosen[0]][2]) if chosen else (None, None)
    return sum(by_nic[n][0] for n in chosen), family, kind, max(len(chosen), 1)


def analyse(topology: Topology, ranks: tuple[str, ...]) -> NcclMachine:
    """Describe ``ranks`` on ``topology`` as NCCL would find them."""
    boxes: dict[int, list[str]] = {}
    for rank in ranks:
        boxes.setdefault(topology.device(rank).box, []).append(rank)
    sizes = sorted({len(members) for members in boxes.values()})
    if len(sizes) > 1:
        counts = ", ".join(f"box {box}: {len(members)}" for box, members in sorted(boxes.items()))
        raise TopologyError(
            f"the ranks are spread unevenly over the boxes ({counts}); NCCL's model (channels across "
            "nodes, trees, NVLS) assumes the same number of ranks on every node, and so does commsim's: "
            "give --gpus-per-node (or --topology) so that every node holds the same number of ranks"
        )
    first = boxes[min(boxes)]
    transport = _transport(topology, first)
    arch = gpu_arch(topology.device(first[0]).model)
    nvls = transport == "nvswitch" and arch in ("hopper", "blackwell")
    nic_Bps, family, kind, nics = (
        _network(topology, min(boxes), first) if len(boxes) > 1 else (0.0, None, None, 1)
    )
    net_transport = _transport_of(kind)
    fabric = _fabric_Bps(topology, first)
    return NcclMachine(
        len(boxes), len(first), transport, arch, nvls, nic_Bps, family, kind, net_transport, nics, fabric
    )


def _fabric_Bps(topology: Topology, box_ranks: list[str]) -> float:
    """The least, over ``box_ranks``, of a GPU's fabric links to the other ranks and to NVSwitches."""
    members = set(box_ranks)
    out = dict.fromkeys(box_ranks, 0.0)
    for link in topology.links:
        if link.family not in GPU_FABRICS or link.src not in members:
            continue
        if link.dst in members or topology.device(link.dst).kind == "nvswitch":
            out[link.src] += link.bandwidth_Bps
    return min(out.values()) if len(box_ranks) > 1 else 0.0


def _transport_of(kind: str | None) -> str | None:
    from commsim.topology.linkkinds import LINK_KINDS

    entry = LINK_KINDS.get(kind) if kind else None
    return entry.transport if entry is not None else None
