"""Latency that back-to-back rooted calls hide: broadcast and reduce on NCCL's ring (a chain).

nccl-tests times many calls issued back to back and reports the mean. In
an all-reduce, all-gather or reduce-scatter ring every rank works at every
step of a call, so a call ends before the next can start anywhere. NCCL's
broadcast and reduce run the ring as a chain from (to) the root: a rank is
busy only while the data passes it, and its next call's kernel starts as
soon as it has forwarded this one's. So the calls pipeline along the chain,
and in steady state a call costs each rank its own pass (NCCL's per-call
``baseLat`` plus size / bandwidth), not the chain's ``n - 1`` hops of
``hwLat``, which only delay when the first result appears.

The chosen call is charged without the hops; NCCL chooses by its own
estimate, with them (as for the NVLS fill, :mod:`commsim.nccl.chunking`).
Nothing is fitted. Evidence: NCCL 2.8.4 broadcast on 4 nodes x 8 A100 and
4 x 4 V100 (32 and 16 ranks) measures 7.6 us and 8.2 us per call from 8 B
to 1 KiB, less than NCCL's own ring/LL ``baseLat`` plus one network hop;
the model with every hop said 53 us (public logs, the abci2.0benchmark
repository's bcast results).
"""

from __future__ import annotations

from commsim.collectives import Collective
from commsim.nccl.tuning import TuningTable

__all__ = ["ROOTED_CHAINS", "overlapped_s"]

ROOTED_CHAINS = (Collective.BROADCAST, Collective.REDUCE)
"""Collectives NCCL runs as a chain along its ring, whose calls pipeline back to back."""


def overlapped_s(
    table: TuningTable,
    collective: Collective,
    algorithm: str,
    protocol: str,
    latency_s: float,
    scale: float = 1.0,
) -> float:
    """Of a chosen call's ``latency_s`` (NCCL's tables, scaled), what back-to-back calls hide (s).

    Parameters
    ----------
    table : TuningTable
        The NCCL release's tables (its ring ``baseLat`` per protocol).
    collective : Collective
    algorithm, protocol : str
        The chosen candidate.
    latency_s : float
        The candidate's latency as priced (NCCL's tables times ``scale``).
    scale : float
        The latency scale applied (``NcclParams.latency_scale``): the call keeps ``scale x baseLat``.

    Returns
    -------
    float
        ``latency_s - scale x baseLat`` for a broadcast or reduce ring call, else 0.
    """
    if collective not in ROOTED_CHAINS or algorithm != "ring":
        return 0.0
    return max(0.0, latency_s - scale * table.base_latency_s["ring"][protocol])
