"""PCIe servers: GPUs on PCIe only, or NVLink-bridged in pairs with the rest over PCIe."""

from __future__ import annotations

from commsim.errors import TopologyError
from commsim.topology.linkkinds import LINK_KINDS
from commsim.topology.machines.parts import Host, Parts, add_host, check_bandwidth, check_kind, check_whole
from commsim.topology.model import Topology

__all__ = ["bridged_pairs_box", "pcie_box"]


def _host_text(host: Host) -> str:
    attach = (
        "each GPU on a CPU root port"
        if host.gpus_per_switch is None
        else f"PCIe switches of {host.gpus_per_switch} GPU(s)"
    )
    sockets = f"{host.sockets} socket(s) ({host.inter_socket})"
    return f"{host.pcie}, {attach}, {sockets}, {host.nics} {host.nic} NIC(s)"


def pcie_box(
    gpus: int = 4,
    pcie: str = "pcie4_x16",
    sockets: int = 1,
    gpus_per_switch: int | None = None,
    p2p: bool = True,
    nics: int = 0,
    nic: str = "roce_100g",
    inter_socket: str = "upi",
    gpu_model: str | None = None,
) -> Topology:
    """A PCIe server: GPUs talk over PCIe only, with or without peer-to-peer.

    Wiring: GPUs split over ``sockets`` CPUs in contiguous blocks; each GPU
    on a root port of its CPU (``gpus_per_switch=None``: GPU pairs on one
    socket meet at the CPU, ``PHB`` in ``nvidia-smi topo -m``; across
    sockets they cross the inter-socket link, ``SYS``) or on PCIe switches
    of ``gpus_per_switch`` GPUs with one ``pcie`` uplink each (``PIX``
    inside a switch; the uplink is shared by the switch's GPUs). NICs as in
    :func:`~commsim.topology.machines.parts.place_nics`.

    Parameters
    ----------
    gpus : int
        GPUs, at least 2.
    pcie : str
        PCIe kind of every link.
    sockets : int
        CPUs, 1 or more (at most ``gpus``).
    gpus_per_switch : int, optional
        None: no PCIe switches; k: switches of k GPUs.
    p2p : bool
        Whether GPUs may access each other's memory over PCIe
        (``Topology.peer_to_peer``). False models consumer GPUs on stock
        drivers and many VMs: NCCL then stages every transfer through host
        memory (its SHM transport).
    nics : int
        NICs, 0 or more.
    nic : str
        Network kind the NICs are for.
    inter_socket : str
        Kind of the CPU-to-CPU links.
    gpu_model : str, optional
        ``Device.model`` of the GPUs (None: unknown).

    Returns
    -------
    Topology
        Named ``pcie_box_{gpus}x{pcie}``.

    Raises
    ------
    TopologyError
        On counts out of range or kinds of the wrong family.

    References
    ----------
    NVIDIA NCCL documentation, "Troubleshooting" (PCI peer-to-peer, ACS and
    IOMMU; NCCL_P2P_DISABLE); ``nvidia-smi topo -m`` legend (PIX, PXB, PHB,
    NODE, SYS); PCI-SIG base specifications for the link rates.

    Examples
    --------
    >>> box = pcie_box(gpus=8, sockets=2, gpus_per_switch=4, p2p=False)
    >>> box.peer_to_peer, box.devices_of_kind("pcie_switch")
    (False, ['pcie_switch0', 'pcie_switch1'])
    """
    builder = "pcie_box"
    gpus = check_whole(gpus, 2, "gpus", builder)
    host = Host(pcie, sockets, inter_socket, gpus_per_switch, nics, nic).checked(gpus, builder)
    parts = Parts()
    names = [parts.add(f"gpu{i}", "gpu", model=gpu_model) for i in range(gpus)]
    add_host(parts, names, host)
    return parts.topology(
        f"pcie_box_{gpus}x{pcie}",
        f"{gpus} GPUs on PCIe only ({'with' if p2p else 'without'} peer-to-peer): {_host_text(host)}. "
        "Datasheet defaults; calibrate.",
        peer_to_peer=p2p,
    )


def bridged_pairs_box(
    gpus: int = 4,
    fabric: str = "nvlink3",
    links: int = 4,
    link_bandwidth: str | float | None = None,
    pcie: str = "pcie4_x16",
    sockets: int = 1,
    gpus_per_switch: int | None = None,
    p2p: bool = True,
    nics: int = 0,
    nic: str = "roce_100g",
    inter_socket: str = "upi",
    gpu_model: str | None = None,
) -> Topology:
    """A PCIe server whose GPUs are NVLink-bridged in pairs (0-1, 2-3, ...), the rest over PCIe.

    Wiring: as :func:`pcie_box`, plus a bundle of ``links`` ``fabric``
    links between GPUs 2k and 2k+1 (the bridge). NCCL mixes the two there:
    NVLink hops inside a pair, PCIe (or SHM) hops between pairs.

    Parameters
    ----------
    gpus : int
        GPUs, an even number of at least 2.
    fabric : str
        NVLink kind of the bridges.
    links : int
        NVLink links per bridged pair: 4 per A100 PCIe bridge (one bridge:
        100 GB/s per direction), 12 with all three bridges (600 GB/s
        bidirectional); H100 PCIe/NVL: ``nvlink4`` x 12 (three bridges).
    link_bandwidth : str or float, optional
        Per NVLink link and direction (e.g. ``"14.0625 GB/s"`` for the
        GA102 bridges of RTX 3090/A6000, 4 links).
    pcie, sockets, gpus_per_switch, p2p, nics, nic, inter_socket, gpu_model
        As for :func:`pcie_box`.

    Returns
    -------
    Topology
        Named ``bridged_pairs_box_{gpus}x{fabric}``.

    Raises
    ------
    TopologyError
        On an odd GPU count, counts out of range or kinds of the wrong family.

    References
    ----------
    NVIDIA A100 PCIe product brief (NVLink bridge for 2 GPUs: 600 GB/s with
    three bridges); NVIDIA H100 NVL product brief (600 GB/s bridge); NVIDIA
    Ampere GA102 GPU architecture white paper (four x4 NVLink links at
    14.0625 GB/s per direction).

    Examples
    --------
    >>> box = bridged_pairs_box(links=12)
    >>> box.link("gpu2", "gpu3").bandwidth_Bps / 1e9, box.has_device("pcie_switch0")
    (300.0, False)
    """
    builder = "bridged_pairs_box"
    gpus = check_whole(gpus, 2, "gpus", builder)
    if gpus % 2:
        raise TopologyError(f"builder {builder!r} bridges GPUs in pairs; give an even gpus, got {gpus}")
    check_kind(fabric, ("nvlink",), "fabric", builder)
    links = check_whole(links, 1, "links", builder)
    bandwidth_Bps = check_bandwidth(link_bandwidth, "link_bandwidth", builder)
    host = Host(pcie, sockets, inter_socket, gpus_per_switch, nics, nic).checked(gpus, builder)
    parts = Parts()
    names = [parts.add(f"gpu{i}", "gpu", model=gpu_model) for i in range(gpus)]
    for a in range(0, gpus, 2):
        parts.link(names[a], names[a + 1], fabric, links, bandwidth_Bps)
    add_host(parts, names, host)
    pair_GBps = links * (bandwidth_Bps or LINK_KINDS[fabric].bandwidth_Bps) / 1e9
    return parts.topology(
        f"bridged_pairs_box_{gpus}x{fabric}",
        f"{gpus} PCIe GPUs bridged in pairs by {links} x {fabric} ({pair_GBps:g} GB/s per direction), "
        f"the rest over PCIe ({'with' if p2p else 'without'} peer-to-peer): {_host_text(host)}. "
        "Datasheet defaults; calibrate.",
        peer_to_peer=p2p,
    )
