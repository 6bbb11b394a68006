"""The pipeline fill of NCCL's NVLS and NVLS-tree all-reduce: chunks, as NCCL cuts them, through stages.

NCCL's cost model (``latency + size / bandwidth``) has no pipeline: its
latency tables price one small chunk through every hop. NVLS and NVLS-tree
move the buffer as a stream of chunks through a chain of stages (the
switch's reduction, then its broadcast; across nodes, the network tree's
levels up and down in between), so a call takes ``(chunks + D - 1)`` chunk
times, ``D - 1`` of them beyond ``size / bandwidth``. Where that fill
exceeds the table's latency (a few hundred KiB per chunk and stream at
large sizes), the call is slower than NCCL's estimate by the difference.

Every constant is NCCL's own (``src/enqueue.cc`` ``calcCollChunking``, 2.19
to 2.28; ``src/transport/nvls.cc``):

- chunk: NVLS at most 128 KiB (``NCCL_NVLS_CHUNKSIZE``), down to 64, 32 and
  16 KiB when the buffer is under 64, 8 and 2 x (concurrent operations x
  chunk); NVLS-tree from 128 KiB (64 KiB from 4 nodes on, 2.19.3+: the model
  reads a release as major.minor, so from 2.19), down to
  256, 128, 64 and 32 KiB under 32, 16, 4 and 1 x (operations x chunk);
- concurrent operations: NVLS channels x NVLS heads (one head per GPU of a
  node); NVLS channels 16 (``NVLS_NCHANNELS``), from 2.27 24 for Blackwell
  in one NVLink domain and 32 across nodes;
- stages beyond the first: NVLS 1 (reduce, then broadcast), across nodes
  (with CollNet) 3 (the network switch's reduction up and its result down
  between them), NVLS-tree ``1 + 2 log2(nodes)`` (the network tree's levels
  up and down between them).

A stream's chunk time is ``streams x chunk / algbw`` (the candidate's
algorithm bandwidth shared by every stream), and never more than the whole
call's ``size / algbw`` (a buffer smaller than one round gives each stream
one chunk). Ring and tree calls get no term here: in NCCL's ring every rank
sends at step 0, so there is no fill, and the tree's mid sizes are NCCL's own
``treeCorrectionFactor``. The development logs' NVLS-tree runs (2 to 10
nodes of H100) and the GB200 NVL72 rack measure 140-600 us more than
``latency + size / bandwidth`` at 64 MiB to 1 GiB; this fill gives most of it
with nothing fitted (docs/validation.md).
"""

from __future__ import annotations

import math

from commsim.nccl.machine import NcclMachine
from commsim.nccl.tuning_table import since

__all__ = ["NVLS_CHUNK_BYTES", "fill_s", "nvls_channels"]

NVLS_CHUNK_BYTES = 128 * 1024
"""``NCCL_NVLS_CHUNKSIZE``: the largest NVLS and NVLS-tree chunk (src/transport/nvls.cc)."""

_KiB = 1024


def nvls_channels(machine: NcclMachine, version: tuple[int, int] | None) -> int:
    """NCCL's NVLS channels: 16, and from 2.27 on Blackwell 24 in one NVLink domain, 32 across nodes."""
    if machine.arch == "blackwell" and since(version, (2, 27)):
        return 24 if machine.nodes == 1 else 32
    return 16


def _nvls_chunk(nbytes: float, operations: int) -> float:
    chunk = float(NVLS_CHUNK_BYTES)
    for times, smaller in ((64, 64 * _KiB), (8, 32 * _KiB), (2, 16 * _KiB)):
        if nbytes < times * operations * chunk and chunk > smaller:
            chunk = smaller
    return chunk


def _nvls_tree_chunk(nbytes: float, operations: int, nodes: int, version: tuple[int, int] | None) -> float:
    chunk = float(NVLS_CHUNK_BYTES)
    if nodes >= 4 and since(version, (2, 19)):
        chunk = 64 * _KiB
    for times, smaller in ((32, 256 * _KiB), (16, 128 * _KiB), (4, 64 * _KiB), (1, 32 * _KiB)):
        if nbytes < times * operations * chunk and chunk > smaller:
            chunk = smaller
    return chunk


def fill_s(
    algorithm: str,
    machine: NcclMachine,
    nbytes: float,
    algbw_Bps: float,
    latency_s: float,
    version: tuple[int, int] | None,
) -> float:
    """Time (s) the pipeline's fill adds to a call beyond its ``latency_s`` (0 for ring, tree, p2p).

    Parameters
    ----------
    algorithm : str
        The chosen candidate's algorithm.
    machine : NcclMachine
    nbytes : float
        The call's size (bytes).
    algbw_Bps : float
        The candidate's algorithm bandwidth (B/s).
    latency_s : float
        The candidate's latency as priced (NCCL's tables, scaled): the fill counts only beyond it.
    version : tuple of int or None
        NCCL release (major, minor); None for the newest.
    """
    if algorithm not in ("nvls", "nvls_tree") or nbytes <= 0 or not math.isfinite(algbw_Bps):
        return 0.0
    streams = nvls_channels(machine, version) * machine.per_node
    if algorithm == "nvls":  # across nodes (CollNet's NVLS): up to the network switch and back between
        chunk, stages = _nvls_chunk(nbytes, streams), (1.0 if machine.nodes == 1 else 3.0)
    else:
        chunk = _nvls_tree_chunk(nbytes, streams, machine.nodes, version)
        stages = 1.0 + 2.0 * math.log2(machine.nodes)
    chunk_time = min(streams * chunk, nbytes) / algbw_Bps
    return max(0.0, stages * chunk_time - latency_s)
