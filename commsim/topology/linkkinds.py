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

The kinds inside a box are listed here; those between hosts are
:mod:`commsim.topology.linkkinds_network`'s, and the entry itself
(:class:`LinkKind`, :data:`TRANSPORTS`) :mod:`commsim.topology.linkkinds_record`'s
(re-exported here).
"""

from __future__ import annotations

from commsim.errors import UnknownNameError
from commsim.topology.linkkinds_network import ETHERNET_KINDS, INFINIBAND_KINDS, OTHER_NETWORK_KINDS
from commsim.topology.linkkinds_record import TRANSPORTS, LinkKind

__all__ = ["FAMILIES", "LINK_KINDS", "TRANSPORTS", "LinkKind", "get_link_kind", "kinds_matching"]

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


_NVLINK_SOURCE = "NVIDIA {gpu} datasheet: {per_gpu} per GPU over {links} links"
_GPU_KINDS = [
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
]
"""GPU fabrics: NVLink by generation, AMD xGMI between GPUs, NVLink-C2C."""

_HOST_KINDS = [
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
"""The host side: links between CPU sockets, and host memory."""

LINK_KINDS: dict[str, LinkKind] = {
    kind.name: kind
    for kind in _pcie_kinds()
    + ETHERNET_KINDS
    + _GPU_KINDS
    + INFINIBAND_KINDS
    + _HOST_KINDS
    + OTHER_NETWORK_KINDS
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
