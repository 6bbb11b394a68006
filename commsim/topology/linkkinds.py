"""Catalogue of link kinds with default bandwidth and latency.

Every figure is per direction, per single link (a bonded ``NV2`` pair is two
links; a topology multiplies by ``count``). Bandwidths are nominal
(datasheet) rates; real effective rates are lower and are what calibration
fits. Latencies are per link traversal (per hop) and are rough defaults,
meant to be calibrated; each entry names its source.

Families group kinds for routing rules and overrides: ``pcie``, ``nvlink``,
``ethernet``, ``infiniband``, ``inter_socket`` and ``host_memory``.

NVSwitch ports need no kind of their own: a GPU's port on an NVSwitch is a
bundle of ordinary NVLink links (``nvlink3`` x 12 on A100, ``nvlink4`` x 18
on H100), written with ``count``.
"""

from __future__ import annotations

from dataclasses import dataclass

from commsim.errors import UnknownNameError

__all__ = ["FAMILIES", "LINK_KINDS", "LinkKind", "get_link_kind", "kinds_matching"]


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
    """

    name: str
    family: str
    bandwidth_Bps: float
    latency_s: float
    source: str


_PCIE_LANE_Bps = {
    # transfer rate per lane after line coding: 8 GT/s x 128/130 / 8 bits, etc.
    3: 8e9 * 128 / 130 / 8,
    4: 16e9 * 128 / 130 / 8,
    5: 32e9 * 128 / 130 / 8,
}
_PCIE_SOURCE = "PCI-SIG base spec: {gt} GT/s per lane, 128b/130b coding; latency per hop is a rough default"
_PCIE_LATENCY_s = 0.5e-6


def _pcie_kinds() -> list[LinkKind]:
    kinds = []
    for gen, per_lane in _PCIE_LANE_Bps.items():
        for lanes in (1, 2, 4, 8, 16):
            gts = {3: 8, 4: 16, 5: 32}[gen]
            kinds.append(
                LinkKind(
                    name=f"pcie{gen}_x{lanes}",
                    family="pcie",
                    bandwidth_Bps=per_lane * lanes,
                    latency_s=_PCIE_LATENCY_s,
                    source=_PCIE_SOURCE.format(gt=gts),
                )
            )
    return kinds


def _ethernet_kinds() -> list[LinkKind]:
    return [
        LinkKind(
            name=f"eth_{gbit}g",
            family="ethernet",
            bandwidth_Bps=gbit * 1e9 / 8,
            latency_s=5e-6,
            source=f"IEEE 802.3 line rate {gbit} Gbit/s; 5 us per hop is a RoCE/TCP ballpark",
        )
        for gbit in (1, 10, 25, 40, 100, 200, 400)
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
        "ib_edr",
        "infiniband",
        100e9 / 8,
        1e-6,
        "InfiniBand EDR 4x: 100 Gbit/s; ~1 us per hop (switch + cable)",
    ),
    LinkKind(
        "ib_hdr",
        "infiniband",
        200e9 / 8,
        1e-6,
        "InfiniBand HDR 4x: 200 Gbit/s; ~1 us per hop (switch + cable)",
    ),
    LinkKind(
        "ib_ndr",
        "infiniband",
        400e9 / 8,
        1e-6,
        "InfiniBand NDR 4x: 400 Gbit/s; ~1 us per hop (switch + cable)",
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
    kind.name: kind for kind in _pcie_kinds() + _ethernet_kinds() + _OTHER_KINDS
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
