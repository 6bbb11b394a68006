"""The channels a ring LL call runs on: NCCL cuts them for buffers under a few hundred KiB per rank.

NCCL prices every candidate on all of its channels (``comm->nChannels``) and
then launches fewer when the buffer is small: ``topoGetAlgoInfo`` in
``src/enqueue.cc`` (2.4 to 2.28, unchanged in this respect; once one channel
is left NCCL also halves the threads, not modelled here) lowers the count
while ``nBytes < channels x threads x threadThreshold``. ``threadThreshold``
is ``NCCL_LL_THREAD_THRESHOLD`` (8 bytes per thread) for LL, and ring LL's is
multiplied by the rank count (``src/graph/tuning.cc``:
``threadThresholds[RING][LL] *= nRanks``); an LL channel runs
``NCCL_LL_MAX_NTHREADS`` (512) threads. So a ring LL call keeps one channel
per ``4 KiB x ranks`` of buffer: 64 ranks run 4 channels at 1 MiB where
NCCL's cost model (and a model that prices its choice) counts all 32. NCCL's
own ring LL bandwidth is ``min(llMaxBw, channels x per-channel bandwidth x
LL factor)`` (``tuning.cc``); on the channels it launches that is
``min(llMaxBw, used x per-channel x LL factor)``, so the call slows only
where the channels it runs carry less than the ceiling it was priced at.

Only ring LL is cut here. The other thresholds (LL128 8 bytes x 640 threads,
Simple 64 bytes x 512, tree LL 8 bytes x 512) cut channels only below 5 to
32 KiB per channel, sizes whose time NCCL's latency tables (set to measured
whole calls) already hold; pricing those cuts too made the development logs'
latency-bound sizes worse (median 10.1 % -> 11.0 %; the 2-node H100 tree LL
run from -2 % to +28 % at 4 KiB). Ring LL's alone leaves the development
logs' medians as they were and moves the outside logs' from 25.1 % to 24.2 %
(all sizes) and 23.6 % to 22.5 % (< 64 KiB); the A100 NVSwitch box's 16 to
256 KiB sizes go from -27..-49 % to -7..-22 % (docs/validation.md). Scaling
the capped bandwidth instead (each used channel at ``llMaxBw / channels``)
overshot 16- and 32-rank all-gathers across nodes by +80 to +280 % at
64-512 KiB: a channel alone runs faster than its share of the ceiling.

NCCL's channel count (``comm->nChannels``) is twice the channels its ring
search finds (``ncclTopoPostset`` in ``src/graph/connect.cc`` duplicates
them), up to 32 (``MAXCHANNELS`` / 2 found, doubled). The search
(``src/graph/search.cc``) is not replayed; its result follows from two of its
rules:

- across nodes, one channel per NIC that serves the node's ranks, at the
  fastest of the search's speeds the NIC carries (``speedArrayInter``: 48
  GB/s for a 400 Gb/s NIC, 24 for NDR200), split in two at half the speed
  where that is 25 GB/s or more (``ncclTopoDupChannels``), except, on GPUs
  newer than compute capability 8.0, under 50 GB/s with more than 4 found;
  on Hopper, doubled once more when the channels stay above 45 GB/s and
  fewer than 16 (``ncclTopoPostset``). Two hosts of one GPU and one HDR NIC:
  2 channels; AWS p4d (4 NICs of 100 Gb/s for 8 GPUs): 8; four H100 and four
  NDR200 NICs: 8; four H100 and one 400 Gb/s NIC: 4, as those logs print;
  eight H100 and eight 400 Gb/s NICs: 16 (NCCL issue 1041 reports 8 found).
  Ampere of compute capability 8.6 (A10, RTX 30) is not told from 8.0 here.
- in one box, one channel per NVLink a GPU has to the other ranks and its
  NVSwitches (25 GB/s each as rated; NCCL counts one at 20 to 20.6 GB/s,
  ``SM80_NVLINK_BW``, ``SM90_NVLINK_BW`` in ``src/graph/topo.h``, and finds
  channels of about that speed), at least one, at most 16 found: A100
  NVSwitch boxes (12 links) 24 channels, H100 (18) 32, PCIe boxes 2, as
  those logs print. The count follows the links as rated, not the
  efficiency a calibration fits: NCCL's search does not measure them.

AMD GPUs are not cut: RCCL sets its own channel counts (far more channels on
MI300X) that these rules do not give.
"""

from __future__ import annotations

import math

from commsim.nccl.machine import NcclMachine
from commsim.nccl.rccl import is_amd

__all__ = [
    "LL_THREADS",
    "LL_THREAD_THRESHOLD_BYTES",
    "bounded_channels",
    "cut_s",
    "nccl_channels",
    "ring_ll_bytes_per_channel",
    "ring_ll_channels",
]

LL_THREAD_THRESHOLD_BYTES = 8
"""``NCCL_LL_THREAD_THRESHOLD``: bytes per LL thread before NCCL adds a channel (``src/include/device.h``)."""
LL_THREADS = 512
"""``NCCL_LL_MAX_NTHREADS``: threads of one LL channel."""
MAX_FOUND = 16
"""Channels NCCL's search finds at most (``MAXCHANNELS`` / 2, ``MAXCHANNELS`` 32 through the 2.2x
releases); ``ncclTopoPostset`` doubles them. NCCL 2.28 raised ``MAXCHANNELS`` to 64 (its one-GPU
log prints 64 channels); that is not followed here."""
CHANNEL_SPLIT_Bps = 25e9
"""A found channel this fast or faster is split in two at half the speed (``ncclTopoDupChannels``,
``src/graph/search.cc``), unless the GPUs are newer than compute capability 8.0, the channel is
under 50 GB/s and more than 4 were found."""
NET_SPEEDS_Bps = tuple(
    s * 1e9 for s in (48, 30, 28, 24, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3, 2.4, 1.2, 0.24, 0.12)
)
"""``speedArrayInter`` (``src/graph/search.cc``): the per-channel speeds the search tries across nodes,
fastest first; a NIC's channel runs at the fastest one its NIC carries (NDR200, 25 GB/s: 24)."""
HOPPER_NET_SPEEDS_Bps = tuple(
    s * 1e9 for s in (48, 45, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12)
)
"""``sm90SpeedArrayInter``: the same for Hopper and newer."""
NVLINK_Bps = 25e9
"""One NVLink 2-4 link's rate per direction as rated (NCCL's own figure for it, 20-20.6 GB/s in
``src/graph/topo.h``, is the same 0.8 of it for every generation): one found channel per link's worth."""


def nccl_channels(machine: NcclMachine) -> int:
    """NCCL's channel count (``comm->nChannels``) for ``machine`` (see the module's rules)."""
    if machine.nodes == 1:
        return 2 * min(MAX_FOUND, max(1, math.floor(machine.fabric_Bps / NVLINK_Bps)))
    nics = max(machine.nics, 1)
    speeds = HOPPER_NET_SPEEDS_Bps if machine.arch in ("hopper", "blackwell") else NET_SPEEDS_Bps
    speed = next((s for s in speeds if s <= machine.nic_Bps / nics), speeds[-1])
    found = nics
    newer = machine.arch in ("ada", "hopper", "blackwell")  # compute capability above 8.0
    if speed >= CHANNEL_SPLIT_Bps and not (newer and speed < 50e9 and found > 4):
        found, speed = 2 * found, speed / 2  # ncclTopoDupChannels
    channels = 2 * min(MAX_FOUND, found)
    if machine.arch in ("hopper", "blackwell") and speed > 45e9 and channels < 16:
        channels *= 2  # ncclTopoPostset: Hopper across nodes with fast channels
    return min(channels, 2 * MAX_FOUND)


def bounded_channels(machine: NcclMachine, limits: tuple[int | None, int | None]) -> int:
    """:func:`nccl_channels` within ``NCCL_MIN_NCHANNELS`` and ``NCCL_MAX_NCHANNELS`` (``limits``, None
    where unset): NCCL's ``ncclTopoPostset`` keeps at most the maximum, then copies channels up to the
    minimum, never past ``MAXCHANNELS`` (32 here)."""
    low, high = limits
    channels = nccl_channels(machine)
    if high is not None:
        channels = min(channels, high)
    if low is not None:
        channels = max(channels, min(low, 2 * MAX_FOUND))
    return channels


def ring_ll_bytes_per_channel(ranks: int) -> int:
    """The buffer a ring LL call needs per channel NCCL launches: 512 threads x 8 bytes x ``ranks``."""
    return LL_THREADS * LL_THREAD_THRESHOLD_BYTES * ranks


def ring_ll_channels(nbytes: float, ranks: int, channels: int) -> int:
    """The channels NCCL launches for a ring LL call of ``nbytes`` among ``ranks`` out of ``channels``:
    one fewer while ``nbytes < channels x 512 threads x 8 bytes x ranks``, at least one."""
    per_channel = ring_ll_bytes_per_channel(ranks)
    return max(1, min(channels, math.floor(nbytes / per_channel)))  # NCCL's loop, in closed form


def cut_s(
    nbytes: float,
    algbw_Bps: float,
    spread_algbw_Bps: float,
    ranks: int,
    machine: NcclMachine,
    channels: int | None = None,
) -> float:
    """Time (s) a ring LL call loses to the channels NCCL leaves idle (0 on AMD GPUs).

    NCCL's ring LL bandwidth is ``min(llMaxBw, channels x per-channel)``; on
    ``used`` channels it is ``min(llMaxBw, used x per-channel)``, so the call
    slows only when the channels it launches carry less than the ceiling.

    Parameters
    ----------
    nbytes : float
        The call's buffer (NCCL's ``nBytes``: the whole gathered or scattered buffer).
    algbw_Bps : float
        The candidate's algorithm bandwidth as priced (all channels, under ``llMaxBw``).
    spread_algbw_Bps : float
        The same before ``llMaxBw``: what all of NCCL's channels carry together.
    ranks : int
    machine : NcclMachine
    channels : int or None
        NCCL's channel count as the log prints it; None: :func:`nccl_channels`.
    """
    if nbytes <= 0 or ranks < 2 or is_amd(machine.arch) or not math.isfinite(algbw_Bps):
        return 0.0
    channels = channels or nccl_channels(machine)
    used = ring_ll_channels(nbytes, ranks, channels)
    rate = min(algbw_Bps, spread_algbw_Bps * used / channels)
    return nbytes / rate - nbytes / algbw_Bps
