"""The network link kinds of the catalogue: between hosts, each naming the NCCL transport over it.

Ethernet by line rate (``eth_*``, ``tcp_*``: NCCL's socket transport;
``roce_*``: RDMA over Converged Ethernet), InfiniBand (``ib_*``), AWS EFA
(``efa_v1`` to ``efa_v4``), Google Cloud's GPUDirect-TCPX/TCPXO and HPE
Slingshot. :mod:`commsim.topology.linkkinds` joins them with the kinds
inside a box into :data:`~commsim.topology.linkkinds.LINK_KINDS`.
"""

from __future__ import annotations

from commsim.topology.linkkinds_record import LinkKind

__all__ = ["ETHERNET_KINDS", "INFINIBAND_KINDS", "OTHER_NETWORK_KINDS"]

_LINE_RATE = "IEEE 802.3 line rate {gbit} Gbit/s"
_ETHERNET_GBIT = (1, 10, 25, 40, 100, 200, 400)


def _by_line_rate(
    prefix: str, gbits: tuple[int, ...], latency_s: float, transport: str, about: str
) -> list[LinkKind]:
    """Ethernet kinds ``{prefix}_{gbit}g``, one per line rate; ``about`` follows the rate in the source."""
    return [
        LinkKind(
            name=f"{prefix}_{gbit}g",
            family="ethernet",
            bandwidth_Bps=gbit * 1e9 / 8,
            latency_s=latency_s,
            source=_LINE_RATE.format(gbit=gbit) + about,
            transport=transport,
        )
        for gbit in gbits
    ]


ETHERNET_KINDS = (
    # the plain eth_* names: Ethernet driven by NCCL's socket transport
    _by_line_rate("eth", _ETHERNET_GBIT, 5e-6, "socket", "; 5 us per hop is a RoCE/TCP ballpark")
    # NCCL's socket transport (NET/Socket) over plain Ethernet
    + _by_line_rate(
        "tcp",
        _ETHERNET_GBIT,
        2e-6,
        "socket",
        ", driven by NCCL's TCP socket transport "
        "(NCCL_IB_DISABLE=1 or no RDMA NIC); 2 us per hop (NIC + switch + cable, as for RoCE "
        "on the same Ethernet) is a rough default; the kernel stack's and a virtualised "
        "network's cost is the transport's, not the link's; calibrate",
    )
    # RDMA over Converged Ethernet (RoCE v2), NCCL's NET/IB transport on Ethernet NICs
    + _by_line_rate(
        "roce",
        (10, 25, 40, 50, 100, 200, 400, 800),
        2e-6,
        "roce",
        " (e.g. NVIDIA ConnectX / Broadcom Thor NICs in RoCE v2 "
        "mode); 2 us per hop (NIC + cut-through switch + cable) is a rough default, calibrate",
    )
)
"""Ethernet by line rate: ``eth_*`` and ``tcp_*`` (NCCL's socket transport), ``roce_*`` (RoCE v2)."""


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
