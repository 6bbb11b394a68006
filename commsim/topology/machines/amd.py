"""AMD Instinct 8-GPU OAM boards: every GPU joined to every other by Infinity Fabric (xGMI)."""

from __future__ import annotations

from commsim.errors import TopologyError
from commsim.topology.linkkinds import LINK_KINDS
from commsim.topology.machines.parts import Host, Parts, add_host, check_bandwidth, check_whole
from commsim.topology.model import Topology

__all__ = ["XGMI_LINKS_PER_GPU", "xgmi_box"]

XGMI_LINKS_PER_GPU = 7
"""Infinity Fabric links an MI300X/MI325X/MI355X has for its peers (the eighth x16 is the host PCIe)."""


def xgmi_box(
    gpus: int = 8,
    links_per_peer: int = 1,
    link_bandwidth: str | float | None = None,
    pcie: str = "pcie5_x16",
    sockets: int = 2,
    nics: int = 8,
    nic: str = "roce_400g",
    inter_socket: str = "xgmi",
    gpus_per_switch: int = 1,
    gpu_model: str | None = "MI300X",
) -> Topology:
    """An AMD 8-GPU OAM board (MI300X, MI325X, MI355X): a full mesh of ``xgmi_gpu`` links.

    Wiring: every pair of GPUs is joined by ``links_per_peer`` ``xgmi_gpu``
    links (no switch: an 8-GPU board uses 7 links per GPU, one to each
    peer, 7 x 64 = 448 GB/s per direction per GPU). Host side as
    :func:`~commsim.topology.machines.nvidia.nvswitch_box`: each GPU on a
    PCIe switch with its NIC (one 400G NIC per GPU), GPUs split over two
    EPYC sockets.

    Parameters
    ----------
    gpus : int
        GPUs, at least 2.
    links_per_peer : int
        xGMI links between each pair; ``links_per_peer * (gpus - 1)`` may not exceed 7.
    link_bandwidth : str or float, optional
        Per link and direction; default 64 GB/s (MI300X, MI325X). MI355X:
        ``"76.8 GB/s"`` (153.6 GB/s bidirectional per link).
    pcie, sockets, nics, nic, inter_socket, gpus_per_switch
        As for :func:`~commsim.topology.machines.nvidia.nvswitch_box`.
    gpu_model : str, optional
        ``Device.model`` of the GPUs.

    Returns
    -------
    Topology
        Named ``xgmi_box_{gpus}x{gpu_model}`` (``xgmi_box_{gpus}`` without a model).

    Raises
    ------
    TopologyError
        On more xGMI links than a GPU has, counts out of range, or kinds of the wrong family.

    References
    ----------
    AMD Instinct MI300X data sheet and AMD CDNA 3 architecture white paper
    (7 Infinity Fabric links per GPU at 128 GB/s bidirectional, 896 GB/s
    aggregate, fully connected 8-GPU platform; PCIe Gen5 x16 host link);
    AMD Instinct MI355X data sheet (153.6 GB/s per link).

    Examples
    --------
    >>> box = xgmi_box()
    >>> sum(box.link("gpu0", peer).bandwidth_Bps for peer in box.gpus[1:]) / 1e9
    448.0
    """
    builder = "xgmi_box"
    gpus = check_whole(gpus, 2, "gpus", builder)
    links_per_peer = check_whole(links_per_peer, 1, "links_per_peer", builder)
    if links_per_peer * (gpus - 1) > XGMI_LINKS_PER_GPU:
        raise TopologyError(
            f"builder {builder!r}: {links_per_peer} link(s) to each of {gpus - 1} peers is "
            f"{links_per_peer * (gpus - 1)} xGMI links per GPU; an MI300-class GPU has {XGMI_LINKS_PER_GPU}"
        )
    bandwidth_Bps = check_bandwidth(link_bandwidth, "link_bandwidth", builder)
    host = Host(pcie, sockets, inter_socket, gpus_per_switch, nics, nic).checked(gpus, builder)
    parts = Parts()
    names = [parts.add(f"gpu{i}", "gpu", model=gpu_model) for i in range(gpus)]
    for a in range(gpus):
        for b in range(a + 1, gpus):
            parts.link(names[a], names[b], "xgmi_gpu", links_per_peer, bandwidth_Bps)
    add_host(parts, names, host)
    peer_GBps = links_per_peer * (bandwidth_Bps or LINK_KINDS["xgmi_gpu"].bandwidth_Bps) / 1e9
    return parts.topology(
        f"xgmi_box_{gpus}" + (f"x{gpu_model}" if gpu_model else ""),
        f"{gpus} {gpu_model or 'AMD'} GPUs in a full xGMI mesh, {links_per_peer} x xgmi_gpu per pair "
        f"({peer_GBps:g} GB/s per direction); {sockets} socket(s), {pcie} switch per "
        f"{gpus_per_switch} GPU(s), {nics} {nic} NIC(s). Datasheet defaults; calibrate.",
    )
