"""What the NCCL model answers for one call: every candidate (algorithm, protocol) and the choice."""

from __future__ import annotations

from dataclasses import dataclass

from commsim.nccl.machine import NcclMachine

__all__ = ["Candidate", "NcclPrediction"]


@dataclass(frozen=True)
class Candidate:
    """One (algorithm, protocol) NCCL could use, with its predicted cost."""

    algorithm: str
    protocol: str
    latency_s: float
    algbw_Bps: float
    time_s: float
    fill_s: float = 0.0
    """Of ``time_s``, the pipeline fill beyond the latency (NVLS, NVLS-tree: :mod:`commsim.nccl.chunking`);
    priced for the chosen candidate only, as NCCL chooses without it."""
    overlap_s: float = 0.0
    """Latency left out of ``time_s`` because back-to-back calls hide it (broadcast and reduce rings:
    :mod:`commsim.nccl.overlap`); the chosen candidate only."""
    cut_s: float = 0.0
    """Of ``time_s``, the bandwidth lost to the channels NCCL leaves idle for a small ring LL call
    (:mod:`commsim.nccl.channel_cut`); the chosen candidate only, as NCCL chooses on all its channels."""
    channel_cap_s: float = 0.0
    """Of ``time_s``, what a ring across nodes loses because each of its network channels carries at
    most a measured rate (:mod:`commsim.nccl.ring_net`); the chosen candidate only, as NCCL prices its
    rings at its NICs' rate."""


@dataclass(frozen=True)
class NcclPrediction:
    """The model's answer for one size: the choice and every candidate considered.

    A candidate's ``time_s`` is the GPUs' time for the call; :attr:`time_s` is
    the call's time, the larger of that and the host's time to issue it.
    """

    machine: NcclMachine
    chosen: Candidate
    candidates: list[Candidate]
    ring_busbw_Bps: float
    host_s: float = 0.0

    @property
    def time_s(self) -> float:
        """One call's time (s): the chosen candidate's GPU time, or the host's issue time if longer."""
        return max(self.chosen.time_s, self.host_s)

    @property
    def host_bound(self) -> bool:
        """Whether the host's issue time, not the GPUs, sets the call's time."""
        return self.host_s > self.chosen.time_s
