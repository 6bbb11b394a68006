"""One entry of the link-kind catalogue (:class:`LinkKind`) and the NCCL transports a network kind names.

The catalogue itself, and the lookups by kind or family, are
:mod:`commsim.topology.linkkinds`' (which re-exports both names).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TRANSPORTS", "LinkKind"]

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
