"""Working out the machine behind an nccl-tests log, and the topology to model it.

Order of evidence: an ``nvidia-smi topo -m`` matrix inside the log (imported
as it stands); else, for SXM server parts, a shipped box for the GPU
generation (A100 -> ``dgx_a100``, H100 -> ``hgx_h100``, V100 -> ``dgx1_v100``,
P100 -> ``dgx1_p100``); else (PCIe cards such as an A10, A40 or RTX 3090) a
plain PCIe box. Several hosts make a cluster of such boxes; the network is
read from the log's NCCL INFO lines (``NET/IB``, ``NET/OFI ... efa``,
``NET/Socket``) or from the GPU generation's usual fabric, unless ``nic``
is given. GPU peer-to-peer is taken from an ``nvidia-smi topo -p2p`` matrix
in the log; without one, GeForce cards without NVLink are assumed to have
none (NVIDIA's GeForce drivers disable PCIe P2P on them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from commsim.calibrate.parser import NcclTestsLog
from commsim.nccl.machine import gpu_arch
from commsim.topology.model import Device, PhysicalLink, Topology
from commsim.topology.resolve import get_topology

__all__ = ["Inference", "infer_topology"]

_SHIPPED_BOX = {"ampere": "dgx_a100", "hopper": "hgx_h100", "volta": "dgx1_v100", "pascal": "dgx1_p100"}
_PCIE_BY_ARCH = {
    "pascal": "pcie3_x16",
    "volta": "pcie3_x16",
    "turing": "pcie3_x16",
    "ampere": "pcie4_x16",
    "ada": "pcie4_x16",
    "hopper": "pcie5_x16",
    "blackwell": "pcie5_x16",
}
_NIC_BY_ARCH = {"ampere": "ib_hdr", "hopper": "ib_ndr", "blackwell": "ib_ndr"}


@dataclass(frozen=True)
class Inference:
    """The topology chosen for a log, and why."""

    topology: Topology
    reasons: list[str]
    gpus_per_thread: int
    algorithms: tuple[str, ...] | None


def _is_sxm(model: str | None) -> bool:
    """Whether a GPU is a server part on an NVLink board (SXM; SXM H100s report "HBM3")."""
    return bool(model) and re.search(r"SXM|HBM3", model or "") is not None and "PCIe" not in (model or "")


def _pcie_box(gpus: int, model: str | None, arch: str) -> Topology:
    """GPUs each on its own PCIe root port of one CPU (no switch, no NVLink)."""
    kind = _PCIE_BY_ARCH.get(arch, "pcie4_x16")
    devices = [Device("cpu0", "cpu")] + [Device(f"gpu{i}", "gpu", 0, model) for i in range(gpus)]
    links = [PhysicalLink(f"gpu{i}", "cpu0", kind) for i in range(gpus)]
    return Topology("pcie_box", devices, links, description=f"{gpus} GPUs on {kind} root ports of one CPU")


def _network(raw: str, arch: str) -> tuple[str, str, str]:
    """(nic kind, nic_per, reason) from the log's NCCL INFO lines or the GPU generation."""
    if re.search(r"NET/OFI.*\befa\b|Selected Provider is efa", raw):
        return "eth_100g", "box", "the log shows AWS EFA (NET/OFI provider efa): 100 Gbit/s per instance"
    if "NET/Socket" in raw:
        return "eth_100g", "box", "the log shows NCCL's socket transport (NET/Socket): Ethernet"
    if "NET/IB" in raw:
        nic = _NIC_BY_ARCH.get(arch, "ib_edr")
        return nic, "gpu", f"the log shows InfiniBand (NET/IB); {nic} per GPU assumed for {arch} GPUs"
    nic = _NIC_BY_ARCH.get(arch, "eth_100g")
    return (
        nic,
        "gpu" if nic.startswith("ib") else "box",
        f"no network named in the log; {nic} assumed for {arch}",
    )


def _p2p(raw: str, log: NcclTestsLog, topology: Topology, reasons: list[str]) -> bool:
    from commsim.topology.nvsmi import find_p2p_status

    status = find_p2p_status(raw)
    if status is not None:
        reasons.append(
            f"GPU peer-to-peer {'available' if status else 'NOT available'} (nvidia-smi topo -p2p)"
        )
        return status
    nvlinked = any(link.family == "nvlink" for link in topology.links)
    geforce = "geforce" in (log.gpu_model or "").lower()
    if geforce and not nvlinked:
        reasons.append("GeForce GPUs without NVLink: no peer-to-peer assumed (stock drivers disable it)")
        return False
    return topology.peer_to_peer


def infer_topology(
    log: NcclTestsLog, raw: str, topology: Topology | None = None, nic: str | None = None
) -> Inference:
    """Pick or build the topology a log was measured on, with the reasons."""
    reasons: list[str] = []
    arch = gpu_arch(log.gpu_model)
    per_node = log.n_ranks // max(log.nodes, 1)
    box: Topology | None = topology
    if box is not None:
        reasons.append(f"topology given: {box.name}")
    elif log.topo_matrix:
        from commsim.topology.nvsmi import find_p2p_status, topo_matrix_from_log

        status = find_p2p_status(raw)
        box = topo_matrix_from_log(log, p2p=status is not False)
        reasons.append("built from the nvidia-smi topo -m matrix in the log")
    elif arch in _SHIPPED_BOX and per_node <= 8 and _is_sxm(log.gpu_model):
        box = get_topology(_SHIPPED_BOX[arch])
        reasons.append(f"{log.gpu_model}: shipped box {box.name}")
    else:
        box = _pcie_box(per_node, log.gpu_model, arch)
        reasons.append(f"{log.gpu_model or 'unknown GPU'}: no matrix and no shipped box; plain PCIe box")
    assert box is not None
    if topology is None:
        box = replace_p2p(box, _p2p(raw, log, box, reasons))
    if log.nodes > 1 and topology is None:
        kind, nic_per, why = _network(raw, arch) if nic is None else (nic, "gpu", f"network given: {nic}")
        reasons.append(why)
        box = get_topology("cluster", box=box, nodes=log.nodes, nic=kind, nic_per=nic_per)
        reasons.append(f"{log.nodes} hosts in the device list: a cluster of {log.nodes} boxes")
    algorithms = None
    if re.search(
        r"NCCL_TREE_THRESHOLD(=| set by environment to )0\b|NCCL_ALGO(=| set by environment to )[Rr]ing\b",
        raw,
    ):
        algorithms = ("ring",)
        reasons.append("the log forces NCCL's ring algorithm (NCCL_TREE_THRESHOLD=0 or NCCL_ALGO=Ring)")
    gpus_per_thread = int(log.header.get("nGpus", 1) or 1)
    return Inference(box, reasons, gpus_per_thread, algorithms)


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
