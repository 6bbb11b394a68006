"""Catalogue of link kinds with default bandwidth and latency.

Every figure is per direction, per single link (a bonded ``NV2`` pair is two
links; a topology multiplies by ``count``). Bandwidths are nominal
(datasheet) rates; real effective rates are lower and are what calibration
fits. Latencies are per link traversal (per hop) and are rough defaults,
meant to be calibrated; each entry names its source.

Families group kinds for routing rules and overrides: ``pcie``, ``nvlink``,
``xgmi`` (AMD Infinity Fabric between GPUs), ``chip_to_chip`` (NVLink-C2C
between a Grace CPU and its GPUs), ``ethernet``, ``infiniband``,
``inter_socket`` and ``host_memory``. Network kinds also name the NCCL
``transport`` that drives them (``"ib"``, ``"roce"``, ``"efa"``, ``"socket"``,
``"tcpxo"``, ``"tcpx"``, ``"slingshot"``).

Name clash: ``xgmi`` is both a kind (the EPYC inter-socket link, family
``inter_socket``) and a family (``xgmi_gpu``, the GPU fabric).
:func:`kinds_matching` reads a name as a kind first, so a routing
restriction ``["xgmi"]`` means the EPYC link; name ``xgmi_gpu`` for the GPU
fabric.

NVSwitch ports need no kind of their own: a GPU's port on an NVSwitch is a
bundle of ordinary NVLink links (``nvlink3`` x 12 on A100, ``nvlink4`` x 18
on H100), written with ``count``.
"""

from __future__ import annotations

from dataclasses import dataclass

from commsim.errors import UnknownNameError

__all__ = ["FAMILIES", "LINK_KINDS", "TRANSPORTS", "LinkKind", "get_link_kind", "kinds_matching"]

TRANSPORTS = ("ib", "roce", "efa", "socket", "tcpxo", "tcpx", "slingshot")
"""NCCL network transports a network link kind may name (``LinkKind.transport``)."""


@dataclass(frozen=True)
class LinkKind:
    """A kind of physical link and its datasheet figures.

    Attributes
    ----------
    name : str
        Catalogue name, e.g. ``"pcie3_x16"``.
    family : str
        Family, e.g. ``"pcie"``; used by routing restrictions and overrides.
    bandwidth_Bps : float
        Default bandwidth of one link, per direction, in bytes per second.
    latency_s : float
        Default latency of one traversal, in seconds.
    source : str
        Where the figures come from.
    transport : str or None
        For network kinds, the NCCL transport over them (one of
        :data:`TRANSPORTS`: ``"ib"`` InfiniBand verbs, ``"roce"`` verbs over
        Ethernet, ``"efa"`` AWS libfabric/SRD, ``"socket"`` NCCL's TCP socket
        transport, ``"tcpxo"``/``"tcpx"`` GCP GPUDirect-TCPXO/TCPX plugins,
        ``"slingshot"`` HPE libfabric/CXI); None for links inside a box.
    """

    name: str
    family: str
    bandwidth_Bps: float
    latency_s: float
    source: str
    transport: str | None = None


_PCIE_GENERATIONS = {
    # generation: (GT/s per lane, (useful, sent) bits or bytes of the line code, how)
    3: (8, (128, 130), "128b/130b coding"),
    4: (16, (128, 130), "128b/130b coding"),
    5: (32, (128, 130), "128b/130b coding"),
    # PAM4 flit mode: of each 256-byte flit, 8 B CRC and 6 B FEC carry no packets
    6: (64, (242, 256), "PAM4 flit mode, 242 of every 256 flit bytes carry TLPs/DLLPs (8 B CRC + 6 B FEC)"),
}
_PCIE_SOURCE = "PCI-SIG base spec {gen}.0: {gt} GT/s per lane, {how}; latency per hop is a rough default"
_PCIE_LATENCY_s = 0.5e-6


def _pcie_kinds() -> list[LinkKind]:
    kinds = []
    for gen, (gts, (useful, sent), how) in _PCIE_GENERATIONS.items():
        per_lane_Bps = gts * 1e9 * useful / sent / 8
        for lanes in (1, 2, 4, 8, 16):
            kinds.append(
                LinkKind(
                    name=f"pcie{gen}_x{lanes}",
                    family="pcie",
                    bandwidth_Bps=per_lane_Bps * lanes,
                    latency_s=_PCIE_LATENCY_s,
                    source=_PCIE_SOURCE.format(gen=gen, gt=gts, how=how),
                )
            )
    return kinds


_ETHERNET_GBIT = (1, 10, 25, 40, 100, 200, 400)


def _ethernet_kinds() -> list[LinkKind]:
    return [
        LinkKind(
            name=f"eth_{gbit}g",
            family="ethernet",
            bandwidth_Bps=gbit * 1e9 / 8,
            latency_s=5e-6,
            source=f"IEEE 802.3 line rate {gbit} Gbit/s; 5 us per hop is a RoCE/TCP ballpark",
            transport="socket",
        )
        for gbit in _ETHERNET_GBIT
    ]


def _tcp_kinds() -> list[LinkKind]:
    """NCCL's socket transport (``NET/Socket``) over plain Ethernet, by line rate."""
    return [
        LinkKind(
            name=f"tcp_{gbit}g",
            family="ethernet",
            bandwidth_Bps=gbit * 1e9 / 8,
            latency_s=2e-6,
            source=(
                f"IEEE 802.3 line rate {gbit} Gbit/s, driven by NCCL's TCP socket transport "
                "(NCCL_IB_DISABLE=1 or no RDMA NIC); 2 us per hop (NIC + switch + cable, as for RoCE "
                "on the same Ethernet) is a rough default; the kernel stack's and a virtualised "
                "network's cost is the transport's, not the link's; calibrate"
            ),
            transport="socket",
        )
        for gbit in _ETHERNET_GBIT
    ]


def _roce_kinds() -> list[LinkKind]:
    """RDMA over Converged Ethernet (RoCE v2), NCCL's ``NET/IB`` transport on Ethernet NICs."""
    return [
        LinkKind(
            name=f"roce_{gbit}g",
            family="ethernet",
            bandwidth_Bps=gbit * 1e9 / 8,
            latency_s=2e-6,
            source=(
                f"IEEE 802.3 line rate {gbit} Gbit/s (e.g. NVIDIA ConnectX / Broadcom Thor NICs in RoCE v2 "
                "mode); 2 us per hop (NIC + cut-through switch + cable) is a rough default, calibrate"
            ),
            transport="roce",
        )
        for gbit in (10, 25, 40, 50, 100, 200, 400, 800)
    ]


_EFA_SOURCE = (
    "AWS EC2 accelerated computing instance specifications (EFA network cards): {detail}; "
    "10 us per hop (SRD through the AWS fabric) is a rough default, calibrate"
)
_NETWORK_KINDS = [
    LinkKind(
        "ib_xdr",
        "infiniband",
        800e9 / 8,
        1e-6,
        "InfiniBand XDR 4x: 800 Gbit/s (NVIDIA ConnectX-8 SuperNIC, Quantum-X800); ~1 us per hop "
        "(switch + cable), rough default",
        "ib",
    ),
    LinkKind(
        "efa_v1",
        "ethernet",
        100e9 / 8,
        10e-6,
        _EFA_SOURCE.format(detail="p3dn.24xlarge, 1 EFA at 100 Gbit/s (first-generation EFA)"),
        "efa",
    ),
    LinkKind(
        "efa_v2",
        "ethernet",
        100e9 / 8,
        10e-6,
        _EFA_SOURCE.format(
            detail="100 Gbit/s per EFA network card; p4d.24xlarge 4 x 100 = 400 Gbit/s, "
            "p5.48xlarge 32 x 100 = 3200 Gbit/s (EFAv2)"
        ),
        "efa",
    ),
    LinkKind(
        "efa_v3",
        "ethernet",
        200e9 / 8,
        10e-6,
        _EFA_SOURCE.format(detail="p5en.48xlarge, 16 x 200 = 3200 Gbit/s (EFAv3)"),
        "efa",
    ),
    LinkKind(
        "efa_v4",
        "ethernet",
        400e9 / 8,
        10e-6,
        _EFA_SOURCE.format(detail="p6-b200.48xlarge, 8 x 400 = 3200 Gbit/s (EFAv4)"),
        "efa",
    ),
    LinkKind(
        "tcpxo_200g",
        "ethernet",
        200e9 / 8,
        10e-6,
        "Google Cloud a3-megagpu-8g (A3 Mega): 8 GPU NICs x 200 Gbit/s = 1600 Gbit/s with "
        "GPUDirect-TCPXO (GPU memory to NIC, offloaded TCP; NCCL net plugin); 10 us per hop is a "
        "rough default, calibrate",
        "tcpxo",
    ),
    LinkKind(
        "tcpx_200g",
        "ethernet",
        200e9 / 8,
        15e-6,
        "Google Cloud a3-highgpu-8g (A3 High): 4 GPU NICs x 200 Gbit/s = 800 Gbit/s with "
        "GPUDirect-TCPX (GPU memory to NIC over TCP; NCCL net plugin); 15 us per hop is a rough "
        "default, calibrate",
        "tcpx",
    ),
    LinkKind(
        "slingshot_200g",
        "ethernet",
        200e9 / 8,
        1e-6,
        "HPE Slingshot 11: Cassini NIC and Rosetta switch ports at 200 Gbit/s (ALCF Aurora "
        "interconnect page; De Sensi et al., 'An In-Depth Analysis of the Slingshot Interconnect', "
        "SC20); ~1 us per hop (NIC + switch + cable) is a rough default, calibrate",
        "slingshot",
    ),
]


_NVLINK_SOURCE = "NVIDIA {gpu} datasheet: {per_gpu} per GPU over {links} links"
_OTHER_KINDS = [
    LinkKind(
        "nvlink1",
        "nvlink",
        20e9,
        0.5e-6,
        _NVLINK_SOURCE.format(gpu="P100", per_gpu="160 GB/s bidirectional", links=4),
    ),
    LinkKind(
        "nvlink2",
        "nvlink",
        25e9,
        0.5e-6,
        _NVLINK_SOURCE.format(gpu="V100", per_gpu="300 GB/s bidirectional", links=6),
    ),
    LinkKind(
        "nvlink3",
        "nvlink",
        25e9,
        0.5e-6,
        _NVLINK_SOURCE.format(gpu="A100", per_gpu="600 GB/s bidirectional", links=12),
    ),
    LinkKind(
        "nvlink4",
        "nvlink",
        25e9,
        0.5e-6,
        _NVLINK_SOURCE.format(gpu="H100", per_gpu="900 GB/s bidirectional", links=18),
    ),
    LinkKind(
        "nvlink5",
        "nvlink",
        50e9,
        0.5e-6,
        _NVLINK_SOURCE.format(gpu="B200/GB200 (Blackwell)", per_gpu="1.8 TB/s bidirectional", links=18)
        + " (NVLink 5: 100 GB/s bidirectional per link)",
    ),
    LinkKind(
        "xgmi_gpu",
        "xgmi",
        64e9,
        0.5e-6,
        "AMD Instinct MI300X/MI325X datasheets and CDNA 3 white paper: 7 AMD Infinity Fabric (xGMI) "
        "links per GPU, x16 at 32 Gbit/s per lane = 128 GB/s bidirectional (64 GB/s per direction) "
        "per link, one link to each of the 7 peers of an 8-GPU OAM board (896 GB/s aggregate); "
        "MI355X runs 153.6 GB/s bidirectional per link (set link_bandwidth); latency per hop is a "
        "rough default, calibrate",
    ),
    LinkKind(
        "nvlink_c2c",
        "chip_to_chip",
        450e9,
        0.5e-6,
        "NVIDIA Grace Hopper Superchip architecture white paper: NVLink-C2C, 900 GB/s bidirectional "
        "(450 GB/s per direction) between the Grace CPU and its GPU; in a GB200 superchip the same "
        "900 GB/s joins one Grace to two B200 GPUs; latency per hop is a rough default, calibrate",
    ),
    LinkKind(
        "ib_edr",
        "infiniband",
        100e9 / 8,
        1e-6,
        "InfiniBand EDR 4x: 100 Gbit/s; ~1 us per hop (switch + cable)",
        "ib",
    ),
    LinkKind(
        "ib_hdr",
        "infiniband",
        200e9 / 8,
        1e-6,
        "InfiniBand HDR 4x: 200 Gbit/s; ~1 us per hop (switch + cable)",
        "ib",
    ),
    LinkKind(
        "ib_ndr200",
        "infiniband",
        200e9 / 8,
        1e-6,
        "InfiniBand NDR200 (NDR signalling on 2 lanes, a ConnectX-7 port set to 200 Gbit/s): "
        "200 Gbit/s; ~1 us per hop (switch + cable)",
        "ib",
    ),
    LinkKind(
        "ib_ndr",
        "infiniband",
        400e9 / 8,
        1e-6,
        "InfiniBand NDR 4x: 400 Gbit/s; ~1 us per hop (switch + cable)",
        "ib",
    ),
    LinkKind(
        "qpi",
        "inter_socket",
        19.2e9,
        1e-6,
        "Intel QPI at 9.6 GT/s: 19.2 GB/s per direction per link (Broadwell-EP, DGX-1)",
    ),
    LinkKind(
        "upi",
        "inter_socket",
        20.8e9,
        1e-6,
        "Intel UPI at 10.4 GT/s: 20.8 GB/s per direction per link (Skylake-SP and later)",
    ),
    LinkKind(
        "upi2",
        "inter_socket",
        32e9,
        1e-6,
        "Intel UPI 2.0 at 16 GT/s: 32 GB/s per direction per link (4th Gen Xeon Scalable "
        "'Sapphire Rapids', e.g. Xeon Platinum 8480C of DGX H100: 4 links; Intel ARK)",
    ),
    LinkKind(
        "xgmi",
        "inter_socket",
        36e9,
        1e-6,
        "AMD Infinity Fabric socket-to-socket link (xGMI-2) of EPYC 7002 'Rome': x16 at "
        "18 GT/s = 36 GB/s per direction per link, raw (up to 4 links in a 2P system; AMD EPYC 7002 "
        "platform brief)",
    ),
    LinkKind(
        "host_memory",
        "host_memory",
        50e9,
        0.2e-6,
        "a DDR4/DDR5 socket's usable copy bandwidth, order of magnitude; calibrate it",
    ),
]

LINK_KINDS: dict[str, LinkKind] = {
    kind.name: kind
    for kind in _pcie_kinds()
    + _ethernet_kinds()
    + _tcp_kinds()
    + _roce_kinds()
    + _OTHER_KINDS
    + _NETWORK_KINDS
}
"""Every known link kind by name."""

FAMILIES: frozenset[str] = frozenset(kind.family for kind in LINK_KINDS.values())
"""Every link family."""


def get_link_kind(name: str) -> LinkKind:
    """Return the catalogue entry for ``name``.

    Raises
    ------
    UnknownNameError
        If there is no such kind; the message lists the valid ones.
    """
    try:
        return LINK_KINDS[name]
    except KeyError:
        raise UnknownNameError("link kind", name, list(LINK_KINDS)) from None


def kinds_matching(names: list[str] | tuple[str, ...] | frozenset[str]) -> frozenset[str]:
    """Expand a mix of kind and family names into a set of kind names.

    Raises
    ------
    UnknownNameError
        If a name is neither a kind nor a family.
    """
    result: set[str] = set()
    for name in names:
        if name in LINK_KINDS:
            result.add(name)
        elif name in FAMILIES:
            result.update(k.name for k in LINK_KINDS.values() if k.family == name)
        else:
            raise UnknownNameError("link kind or family", name, list(LINK_KINDS) + sorted(FAMILIES))
    return frozenset(result)
