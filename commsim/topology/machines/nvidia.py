"""NVIDIA NVLink machine classes: NVSwitch baseboards, 4-GPU NVLink meshes, NVL72 racks."""

from __future__ import annotations

from commsim.errors import TopologyError
from commsim.topology.linkkinds import LINK_KINDS
from commsim.topology.machines.parts import (
    NETWORK_FAMILIES,
    Group,
    Host,
    Parts,
    add_host,
    check_bandwidth,
    check_kind,
    check_whole,
    default_model,
    place_nics,
)
from commsim.topology.model import Topology

__all__ = ["nvl72_rack", "nvlink_mesh_box", "nvswitch_box"]

GPU_BY_FABRIC = {
    "nvlink2": "V100-SXM2-32GB",
    "nvlink3": "A100-SXM4-80GB",
    "nvlink4": "H100-SXM5-80GB",
    "nvlink5": "B200",
}
"""The GPU a fabric implies when no ``gpu_model`` is given."""


def _gpus(parts: Parts, gpus: int, model: str | None) -> list[str]:
    return [parts.add(f"gpu{i}", "gpu", model=model) for i in range(gpus)]


def _per_link(fabric: str, bandwidth_Bps: float | None) -> float:
    return bandwidth_Bps if bandwidth_Bps is not None else LINK_KINDS[fabric].bandwidth_Bps


def nvswitch_box(
    gpus: int = 8,
    fabric: str = "nvlink4",
    links: int = 18,
    link_bandwidth: str | float | None = None,
    pcie: str = "pcie5_x16",
    sockets: int = 2,
    nics: int = 8,
    nic: str = "ib_ndr",
    inter_socket: str = "upi2",
    gpus_per_switch: int = 1,
    gpu_model: str | None = None,
) -> Topology:
    """An NVSwitch baseboard (HGX/DGX A100, H100, H200, B200): every GPU on one NVLink switch.

    Wiring: the baseboard's NVSwitch chips are one device ``nvswitch0``;
    each GPU joins it by a bundle of ``links`` ``fabric`` links (a GPU's
    NVSwitch port). Host side (see :mod:`~commsim.topology.machines.parts`):
    GPUs split over ``sockets`` CPUs (0-3 on CPU 0, 4-7 on CPU 1), PCIe
    switches of ``gpus_per_switch`` GPUs (1: the switch inside each
    ConnectX-7 of a DGX H100; 2: the four PCIe switches of a DGX A100), and
    ``nics`` NICs spread over the switches, each serving the GPUs closest to
    it. ``nics`` may be 0, fewer or more than the GPUs (AWS p5: 32 EFA).

    Parameters
    ----------
    gpus : int
        GPUs on the switch, at least 2.
    fabric : str
        NVLink kind: ``nvlink3`` (A100: 12 links), ``nvlink4`` (H100/H200:
        18 links), ``nvlink5`` (B200: 18 links).
    links : int
        NVLink links per GPU, at least 1.
    link_bandwidth : str or float, optional
        Per NVLink link and direction; the kind's default when omitted.
    pcie : str
        PCIe kind of every host link.
    sockets : int
        CPUs, at least 1 and at most ``gpus``.
    nics : int
        NICs, 0 or more.
    nic : str
        Network kind the NICs are for (a ``cluster`` built from this box uses it).
    inter_socket : str
        Kind of the CPU-to-CPU links.
    gpus_per_switch : int
        GPUs per PCIe switch, at least 1.
    gpu_model : str, optional
        ``Device.model`` of the GPUs; default the fabric's GPU (``nvlink4``: H100-SXM5-80GB).

    Returns
    -------
    Topology
        Named ``nvswitch_box_{gpus}x{fabric}``.

    Raises
    ------
    TopologyError
        On a count out of range or a kind of the wrong family.
    UnknownNameError
        On an unknown link kind.

    References
    ----------
    NVIDIA DGX H100 User Guide, "Hardware Overview" (8 H100 SXM5, 4 NVSwitch,
    2 Xeon 8480C, 8 ConnectX-7 NDR, one per GPU); NVIDIA H100 Tensor Core GPU
    Architecture white paper (18 NVLink 4 links, 900 GB/s bidirectional per
    GPU); NVIDIA DGX A100 User Guide (12 NVLink 3 links per GPU, 6 NVSwitch,
    4 PCIe switches of 2 GPUs and 2 NICs); NVIDIA DGX B200 / Blackwell
    datasheets (18 NVLink 5 links, 1.8 TB/s bidirectional per GPU).

    Examples
    --------
    >>> box = nvswitch_box(fabric="nvlink5", gpu_model="B200")
    >>> box.link("gpu0", "nvswitch0").bandwidth_Bps / 1e9
    900.0
    """
    builder = "nvswitch_box"
    gpus = check_whole(gpus, 2, "gpus", builder)
    check_kind(fabric, ("nvlink",), "fabric", builder)
    links = check_whole(links, 1, "links", builder)
    bandwidth_Bps = check_bandwidth(link_bandwidth, "link_bandwidth", builder)
    host = Host(pcie, sockets, inter_socket, gpus_per_switch, nics, nic).checked(gpus, builder)
    parts = Parts()
    parts.add("nvswitch0", "nvswitch", model=f"NVSwitch for {fabric} (all chips as one)")
    names = _gpus(parts, gpus, default_model(gpu_model, GPU_BY_FABRIC, fabric))
    for gpu in names:
        parts.link(gpu, "nvswitch0", fabric, links, bandwidth_Bps)
    add_host(parts, names, host)
    port_GBps = links * _per_link(fabric, bandwidth_Bps) / 1e9
    return parts.topology(
        f"nvswitch_box_{gpus}x{fabric}",
        f"{gpus} GPUs on one NVSwitch, each a port of {links} x {fabric} ({port_GBps:g} GB/s per "
        f"direction); {sockets} socket(s), PCIe {pcie} switches of {gpus_per_switch} GPU(s), "
        f"{nics} {nic} NIC(s). Datasheet defaults; calibrate.",
    )


def nvlink_mesh_box(
    gpus: int = 4,
    fabric: str = "nvlink4",
    links: int = 18,
    link_bandwidth: str | float | None = None,
    pcie: str = "pcie5_x16",
    sockets: int = 2,
    nics: int = 4,
    nic: str = "ib_ndr",
    inter_socket: str = "upi2",
    gpus_per_switch: int = 1,
    gpu_model: str | None = None,
) -> Topology:
    """A 4-GPU NVLink board without NVSwitch: every pair of GPUs joined directly.

    Wiring: each GPU's ``links`` links are split evenly over its ``gpus - 1``
    peers, so every pair is a bundle of ``links // (gpus - 1)`` ``fabric``
    links: HGX A100 4-GPU, 12 NVLink 3 links = 4 per pair (100 GB/s per
    direction per pair); HGX H100 4-GPU, 18 NVLink 4 links = 6 per pair
    (150 GB/s per direction per pair). On an even number of GPUs with one
    link per peer and a spare (``links == gpus``), the spares double the
    pairs ``(i, gpus - 1 - i)``: the 4-GPU P100 SXM2 board (4 NVLink 1
    links: one to each peer, the fourth to one of them;
    Dell PowerEdge C4130 configuration K: two links between GPU0 and GPU3,
    one between GPU0 and GPU1 and between GPU0 and GPU2). Host side as
    :func:`nvswitch_box`.

    Parameters
    ----------
    gpus : int
        GPUs, at least 2 (boards ship with 4).
    links : int
        NVLink links per GPU: a multiple of the ``gpus - 1`` peers or, on
        an even number of GPUs, ``gpus`` (one per peer and a spare).
    fabric, link_bandwidth, pcie, sockets, nics, nic, inter_socket, gpus_per_switch, gpu_model
        As for :func:`nvswitch_box`.

    Returns
    -------
    Topology
        Named ``nvlink_mesh_box_{gpus}x{fabric}``.

    Raises
    ------
    TopologyError
        If ``links`` does not split evenly over the peers, or as :func:`nvswitch_box`.

    References
    ----------
    NVIDIA HGX A100 and HGX H100 platform briefs (4-GPU boards: GPUs fully
    connected by NVLink, no NVSwitch); NVIDIA A100 and H100 white papers for
    the links per GPU (12 and 18); Dell EMC, "Deep Learning Performance with
    P100 and V100 GPUs" (PowerEdge C4130 configuration K, 4 P100-SXM2:
    p2pBandwidthLatencyTest 36.4 GB/s GPU0 to GPU3, 18.3 GB/s to GPU1 and GPU2).

    Examples
    --------
    >>> box = nvlink_mesh_box()
    >>> box.link("gpu0", "gpu3").count, box.link("gpu0", "gpu3").bandwidth_Bps / 1e9
    (6, 150.0)
    >>> p100 = nvlink_mesh_box(fabric="nvlink1", links=4, pcie="pcie3_x16")
    >>> p100.link("gpu0", "gpu3").count, p100.link("gpu0", "gpu1").count
    (2, 1)
    """
    builder = "nvlink_mesh_box"
    gpus = check_whole(gpus, 2, "gpus", builder)
    check_kind(fabric, ("nvlink",), "fabric", builder)
    links = check_whole(links, 1, "links", builder)
    spare = 1 if links == gpus > 2 and gpus % 2 == 0 else 0
    if (links - spare) % (gpus - 1):
        raise TopologyError(
            f"builder {builder!r}: {links} links per GPU do not split evenly over {gpus - 1} peers; give "
            f"links a multiple of {gpus - 1} (HGX A100 4-GPU: 12, HGX H100 4-GPU: 18) or, on an even "
            f"number of GPUs, one per peer and a spare ({gpus}: P100 4-GPU), or the machine's "
            "nvidia-smi topo -m file as --topology"
        )
    bandwidth_Bps = check_bandwidth(link_bandwidth, "link_bandwidth", builder)
    host = Host(pcie, sockets, inter_socket, gpus_per_switch, nics, nic).checked(gpus, builder)
    parts = Parts()
    names = _gpus(parts, gpus, default_model(gpu_model, GPU_BY_FABRIC, fabric))
    per_pair = (links - spare) // (gpus - 1)
    for a in range(gpus):
        for b in range(a + 1, gpus):
            parts.link(
                names[a], names[b], fabric, per_pair + (spare if a + b == gpus - 1 else 0), bandwidth_Bps
            )
    add_host(parts, names, host)
    pair_GBps = per_pair * _per_link(fabric, bandwidth_Bps) / 1e9
    doubled = ""
    if spare:
        pairs = " and ".join(f"gpu{a}-gpu{gpus - 1 - a}" for a in range(gpus // 2))
        doubled = f", {pairs} by {per_pair + 1} (each GPU's spare link)"
    return parts.topology(
        f"nvlink_mesh_box_{gpus}x{fabric}",
        f"{gpus} GPUs, every pair joined by {per_pair} x {fabric} ({pair_GBps:g} GB/s per direction)"
        f"{doubled}, no NVSwitch; {sockets} socket(s), {pcie} PCIe, {nics} {nic} NIC(s). Datasheet "
        "defaults; calibrate.",
    )


def nvl72_rack(
    gpus: int = 72,
    gpus_per_tray: int = 4,
    fabric: str = "nvlink5",
    links: int = 18,
    link_bandwidth: str | float | None = None,
    cpus_per_tray: int = 2,
    c2c: str = "nvlink_c2c",
    nics_per_tray: int = 4,
    nic: str = "ib_xdr",
    pcie: str = "pcie6_x16",
    gpu_model: str | None = None,
) -> Topology:
    """A GB200/GB300 NVL72 rack: all GPUs on one NVLink switch domain, modelled as one box.

    Wiring: the rack's 9 NVLink switch trays (18 NVSwitch chips) are one
    device ``nvswitch0``; each GPU joins it by ``links`` ``fabric`` links
    (18 x NVLink 5 = 900 GB/s per direction). Per compute tray of
    ``gpus_per_tray`` GPUs: ``cpus_per_tray`` Grace CPUs (``cpu{k}``), each
    joined to its GPUs by NVLink-C2C (a GB200 superchip is 1 Grace + 2
    B200; its 900 GB/s bidirectional C2C is split evenly over the Grace's
    GPUs, so each GPU-Grace link gets ``c2c`` bandwidth / GPUs per Grace);
    one PCIe switch per GPU (the switch in its ConnectX) joining the GPU,
    its Grace and the tray's NICs, ``nics_per_tray`` of them spread as in
    :func:`~commsim.topology.machines.parts.place_nics`. Grace CPUs of a
    rack are not linked to each other (no route needs it: GPUs meet on
    the NVLink switch).

    The whole rack is ONE box (every device ``box = 0``): NCCL treats an
    NVLink domain (a multi-node NVLink "clique", NCCL 2.18+ MNNVL) as one
    node for its algorithm and protocol choice, so the rack's 72 GPUs are
    intra-node peers. ``cluster(nvl72_rack(), nodes=K)`` joins K racks.

    Parameters
    ----------
    gpus : int
        GPUs in the rack, a multiple of ``gpus_per_tray`` (72 for NVL72, 36 for NVL36).
    gpus_per_tray : int
        GPUs per compute tray, a multiple of ``cpus_per_tray``.
    fabric, links, link_bandwidth
        The NVLink port of each GPU, as for :func:`nvswitch_box`.
    cpus_per_tray : int
        Grace CPUs per compute tray (2 in GB200/GB300 NVL72 trays).
    c2c : str
        Kind of the Grace-GPU link (family ``chip_to_chip``).
    nics_per_tray : int
        NICs per compute tray (4 ConnectX-7/8 for the compute network).
    nic : str
        Network kind of the NICs (``ib_xdr`` for ConnectX-8 on GB300; ``ib_ndr`` for GB200's ConnectX-7).
    pcie : str
        PCIe kind of the GPU, Grace and NIC links to the per-GPU switch.
    gpu_model : str, optional
        Default ``"B200"`` for ``nvlink5``.

    Returns
    -------
    Topology
        Named ``nvl{gpus}_rack``.

    Raises
    ------
    TopologyError
        On counts that do not divide, or kinds of the wrong family.

    References
    ----------
    NVIDIA GB200 NVL72 product page and datasheet (72 Blackwell GPUs, 36
    Grace CPUs, 18 compute trays, 9 NVLink switch trays; 130 TB/s of NVLink
    bandwidth = 72 x 1.8 TB/s; NVLink-C2C 900 GB/s bidirectional per
    superchip); NVIDIA Grace Hopper Superchip architecture white paper
    (NVLink-C2C); NCCL 2.18 release notes (multi-node NVLink).

    Examples
    --------
    >>> rack = nvl72_rack()
    >>> len(rack.gpus), len(rack.devices_of_kind("cpu")), list(rack.boxes)
    (72, 36, [0])
    """
    builder = "nvl72_rack"
    gpus_per_tray = check_whole(gpus_per_tray, 1, "gpus_per_tray", builder)
    cpus_per_tray = check_whole(cpus_per_tray, 1, "cpus_per_tray", builder)
    gpus = check_whole(gpus, gpus_per_tray, "gpus", builder)
    if gpus % gpus_per_tray or gpus_per_tray % cpus_per_tray:
        raise TopologyError(
            f"builder {builder!r}: gpus ({gpus}) must be a multiple of gpus_per_tray ({gpus_per_tray}), "
            f"and gpus_per_tray a multiple of cpus_per_tray ({cpus_per_tray})"
        )
    check_kind(fabric, ("nvlink",), "fabric", builder)
    links = check_whole(links, 1, "links", builder)
    check_kind(c2c, ("chip_to_chip",), "c2c", builder)
    nics_per_tray = check_whole(nics_per_tray, 0, "nics_per_tray", builder)
    check_kind(nic, NETWORK_FAMILIES, "nic", builder)
    check_kind(pcie, ("pcie",), "pcie", builder)
    bandwidth_Bps = check_bandwidth(link_bandwidth, "link_bandwidth", builder)
    parts = Parts()
    parts.add("nvswitch0", "nvswitch", model="NVLink switch trays (all chips as one)")
    names = _gpus(parts, gpus, default_model(gpu_model, GPU_BY_FABRIC, fabric))
    for gpu in names:
        parts.link(gpu, "nvswitch0", fabric, links, bandwidth_Bps)
    for tray in range(gpus // gpus_per_tray):
        members = names[tray * gpus_per_tray : (tray + 1) * gpus_per_tray]
        groups = _tray(parts, tray, members, cpus_per_tray, c2c, pcie)
        place_nics(parts, groups, nics_per_tray, nic, pcie, first=tray * nics_per_tray)
    port_GBps = links * _per_link(fabric, bandwidth_Bps) / 1e9
    return parts.topology(
        f"nvl{gpus}_rack",
        f"NVLink rack: {gpus} GPUs on one NVLink switch domain (one box, as NCCL sees it), each a port "
        f"of {links} x {fabric} ({port_GBps:g} GB/s per direction); {gpus // gpus_per_tray} trays of "
        f"{gpus_per_tray} GPUs, {cpus_per_tray} Grace CPU(s) on {c2c} and {nics_per_tray} {nic} NIC(s) "
        "each. Datasheet defaults; calibrate.",
    )


def _tray(parts: Parts, tray: int, gpus: list[str], cpus: int, c2c: str, pcie: str) -> list[Group]:
    """One compute tray's Grace CPUs, their C2C links, and one PCIe switch per GPU (the groups)."""
    per_cpu = len(gpus) // cpus
    c2c_Bps = LINK_KINDS[c2c].bandwidth_Bps / per_cpu
    groups = []
    for k in range(cpus):
        cpu = parts.add(f"cpu{tray * cpus + k}", "cpu", model="Grace")
        for gpu in gpus[k * per_cpu : (k + 1) * per_cpu]:
            parts.link(gpu, cpu, c2c, 1, c2c_Bps)
            switch = parts.add(f"pcie_switch{gpu[3:]}", "pcie_switch")
            parts.link(switch, cpu, pcie)
            parts.link(gpu, switch, pcie)
            groups.append(Group(switch, (gpu,)))
    return groups
