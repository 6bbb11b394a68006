"""Collective operations: what each one starts from, ends with, and its busbw factor.

Conventions follow nccl-tests (SEED_FACTS.md section 6): the ``nbytes`` of a
collective is nccl-tests' "size": the per-rank buffer of all-reduce,
broadcast and reduce; the whole gathered buffer of all-gather and gather;
the whole input buffer of reduce-scatter; the per-rank send buffer of
all-to-all.
"""

from __future__ import annotations

from enum import Enum

from commsim.errors import UnknownNameError

__all__ = ["Collective", "busbw_factor", "get_collective", "needs_root"]


class Collective(str, Enum):
    """The collectives commsim knows."""

    ALL_REDUCE = "all_reduce"
    REDUCE_SCATTER = "reduce_scatter"
    ALL_GATHER = "all_gather"
    BROADCAST = "broadcast"
    REDUCE = "reduce"
    GATHER = "gather"
    SCATTER = "scatter"
    ALL_TO_ALL = "all_to_all"
    SEND_RECV = "send_recv"

    def __str__(self) -> str:
        return self.value


_ALIASES = {
    "allreduce": Collective.ALL_REDUCE,
    "reducescatter": Collective.REDUCE_SCATTER,
    "allgather": Collective.ALL_GATHER,
    "alltoall": Collective.ALL_TO_ALL,
    "sendrecv": Collective.SEND_RECV,
}


def get_collective(name: str | Collective) -> Collective:
    """The collective called ``name`` (``all_reduce``, ``allreduce``, ``all-reduce`` ...).

    Raises
    ------
    UnknownNameError
        If there is no such collective.
    """
    if isinstance(name, Collective):
        return name
    key = str(name).strip().lower().replace("-", "_")
    try:
        return Collective(key)
    except ValueError:
        pass
    if key.replace("_", "") in _ALIASES:
        return _ALIASES[key.replace("_", "")]
    raise UnknownNameError("collective", str(name), [c.value for c in Collective])


def needs_root(collective: Collective) -> bool:
    """Whether the collective has a root rank (broadcast, reduce, gather, scatter)."""
    return collective in (Collective.BROADCAST, Collective.REDUCE, Collective.GATHER, Collective.SCATTER)


def busbw_factor(collective: Collective, ranks: int) -> float:
    """nccl-tests' factor from algorithm bandwidth to bus bandwidth.

    2(n-1)/n for all-reduce; (n-1)/n for reduce-scatter, all-gather,
    all-to-all, gather and scatter; 1 for broadcast, reduce and send/recv (SEED_FACTS.md
    section 6; nccl-tests doc/PERFORMANCE.md and ``src/sendrecv.cu``, whose ``getBw`` leaves
    busbw = algbw).
    """
    n = ranks
    if collective is Collective.ALL_REDUCE:
        return 2 * (n - 1) / n
    if collective in (Collective.BROADCAST, Collective.REDUCE, Collective.SEND_RECV):
        return 1.0
    return (n - 1) / n
