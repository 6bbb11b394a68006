"""The network link kinds of the catalogue: between hosts, each naming the NCCL transport over it.

Ethernet by line rate (``eth_*``, ``tcp_*``: NCCL's socket transport;
``roce_*``: RDMA over Converged Ethernet), InfiniBand (``ib_*``), AWS EFA
(``efa_v1`` to ``efa_v4``), Google Cloud's GPUDirect-TCPX/TCPXO and HPE
Slingshot. :mod:`commsim.topology.linkkinds` joins them with the kinds
inside a box into :data:`~commsim.topology.linkkinds.LINK_KINDS`.
"""

from __future__ import annotations

from commsim.topology.linkkinds_record import LinkKind

__all__ = ["INFINIBAND_KINDS", "OTHER_NETWORK_KINDS", "ethernet_kinds", "roce_kinds", "tcp_kinds"]

_ETHERNET_GBIT = (1, 10, 25, 40, 100, 200, 400)


def ethernet_kinds() -> list[LinkKind]:
    """Ethernet by IEEE 802.3 line rate, driven by NCCL's socket transport (the plain ``eth_*`` names)."""
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


def tcp_kinds() -> list[LinkKind]:
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


def roce_kinds() -> list[LinkKind]:
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
OTHER_NETWORK_KINDS = [
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
"""InfiniBand XDR, AWS EFA, Google Cloud's GPUDirect-TCPXO/TCPX, HPE Slingshot (last in the catalogue)."""

INFINIBAND_KINDS = [
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
]
"""InfiniBand EDR to NDR (XDR is among :data:`OTHER_NETWORK_KINDS`, added later to the catalogue)."""
