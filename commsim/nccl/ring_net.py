"""What a ring channel's network connection carries: at most a measured rate per direction.

NCCL prices a ring across nodes at its NICs' bandwidth (``nChannels x
bwInter``, ``src/graph/tuning.cc``), and so does the model (the used NICs at
their efficiency). Runs on 400 Gb/s InfiniBand (NDR) NICs with NCCL's usual
two ring channels per NIC measure less: each channel's crossing carries about
19.6 GB/s per direction, 0.78 of half the NIC's line rate, where 0.90 of it
(the InfiniBand efficiency every other use of those NICs reaches) is 22.5.
The same NICs carry more where more channels share them (one GPU per node:
four channels per NIC), with point-to-point sends (all-to-all, whose
channels are NCCL's p2p ones), and under NVLS-tree (whose network share is
not what binds), so the limit is the ring channel's, not the NIC's. What
sets it is not established (one queue pair per connection by default,
``NCCL_IB_QPS_PER_CONNECTION``; the proxy thread that drives each channel's
sends; the NIC's reads of GPU memory); the figure is measured, not derived.

The chosen ring call (Simple or LL128; LL has NCCL's own ``llMaxBw``
ceiling) across nodes is priced at ``min(its bus bandwidth, channels x rate
x payload)`` (LL128 sends 128 bytes per 120 of data) with NCCL's channel count
(:func:`commsim.nccl.channel_cut.nccl_channels`, or the one the log prints).
NCCL chooses without it, as it prices every candidate at its NICs' rate.
AMD GPUs are left out: RCCL runs more channels per NIC and its 400 Gb/s runs
reach 0.85-0.96 of line rate (tests/data/outside 25, 30, 127, 246, 280).

The rate per NIC kind is :data:`commsim.nccl.params.DEFAULT_RING_CHANNEL_NET_Bps`
(its derivation there); ``NcclParams.ring_channel_net_Bps`` overrides it.
"""

from __future__ import annotations

from commsim.collectives import Collective
from commsim.nccl import rccl
from commsim.nccl.candidates import ring_steps
from commsim.nccl.machine import NcclMachine

__all__ = ["LL128_PAYLOAD", "PROTOCOLS", "applies", "ring_channel_cap_s"]

PROTOCOLS = ("Simple", "LL128")
"""The ring protocols a channel's rate limits (LL has NCCL's own ``llMaxBw``)."""

LL128_PAYLOAD = 120 / 128
"""Of the bytes an LL128 channel sends, the share that is data (each 128-byte line carries 8 flag bytes)."""


def applies(m: NcclMachine) -> bool:
    """Whether rings on ``m`` cross nodes of NVIDIA GPUs, the runs a channel's rate is measured on and
    priced for (RCCL runs more channels per NIC)."""
    return m.nodes > 1 and not rccl.is_amd(m.arch)


def ring_channel_cap_s(
    nbytes: float,
    algbw_Bps: float,
    protocol: str,
    collective: Collective,
    n: int,
    channels: int,
    rate_Bps: float,
) -> float:
    """Time (s) a ring call across nodes adds because each network channel carries at most ``rate_Bps``.

    Parameters
    ----------
    nbytes : float
        The call's size (bytes).
    algbw_Bps : float
        The call's algorithm bandwidth as priced (B/s).
    protocol : str
        ``"Simple"`` or ``"LL128"`` (others add nothing).
    collective : Collective
    n : int
        Ranks.
    channels : int
        NCCL's ring channels; each crosses every node boundary once per direction.
    rate_Bps : float
        The most one channel's network connection carries per direction (B/s).

    Returns
    -------
    float
        ``nbytes / capped algbw - nbytes / algbw`` where the channels' total is below the call's bus
        bandwidth, else 0.
    """
    if protocol not in PROTOCOLS or nbytes <= 0 or n < 2:
        return 0.0
    per_rank = n / ring_steps(collective, n)  # algbw = busbw x n / steps (NCCL's ring)
    busbw = algbw_Bps / per_rank
    ceiling = channels * rate_Bps * (LL128_PAYLOAD if protocol == "LL128" else 1.0)
    if ceiling >= busbw:
        return 0.0
    return nbytes / (ceiling * per_rank) - nbytes / algbw_Bps
