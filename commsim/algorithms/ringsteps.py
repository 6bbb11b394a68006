"""The steps of one chunked ring, added to a schedule being built.

Shared by ``ring``, ``multi_ring`` and ``hierarchical``: ring position ``i``
sends to position ``i+1``; reduce-scatter steps 0..n-2 add, all-gather
steps n-1..2n-3 copy; each send waits for the one that brought it its data
and for the previous send on the same hop (a ring channel sends in order).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from commsim.collectives import Collective
from commsim.schedule import ScheduleBuilder

__all__ = ["add_ring", "ring_chunk_owners", "ring_step_range"]

IntArray = NDArray[np.int64]


def ring_step_range(collective: Collective, n: int) -> tuple[int, int]:
    """(first, last+1) global steps of ``collective`` on an n-ring."""
    if collective is Collective.REDUCE_SCATTER:
        return 0, n - 1
    if collective is Collective.ALL_GATHER:
        return n - 1, 2 * n - 2
    return 0, 2 * n - 2


def ring_chunk_owners(positions: IntArray) -> list[int]:
    """Owner (device index) of each ring chunk: after reduce-scatter position i holds chunk i+1."""
    n = positions.size
    return [int(positions[(c - 1) % n]) for c in range(n)]


def add_ring(
    builder: ScheduleBuilder,
    devices: Sequence[str],
    chunks: Sequence[int],
    collective: Collective,
    *,
    direct: bool = False,
    kinds: Sequence[str] | None = None,
    first_deps: IntArray | None = None,
    paths: Sequence[Sequence[str]] | None = None,
    channel: int = 0,
) -> IntArray:
    """Add the sends of one ring; return the op ids of its last step (one per position).

    Parameters
    ----------
    builder : ScheduleBuilder
    devices : sequence of str
        Devices in ring order.
    chunks : sequence of int
        ``n`` chunk ids; chunk ``c`` ends reduced at position ``c-1``.
    collective : Collective
        all_reduce, reduce_scatter or all_gather.
    direct : bool
        Send over the direct link between neighbours (explicit path), not a route.
    kinds : sequence of str, optional
        Link kinds allowed for routes (ignored when ``direct``).
    first_deps : int array, optional
        Per position, an op its first send must wait for (-1 for none).
    paths : sequence of device paths, optional
        Explicit path of every hop (position i to i+1), e.g. through host memory.
    channel : int
        The ring's channel: rings sharing a hop run side by side on different channels.
    """
    n = len(devices)
    positions = np.array([builder.device_index(d) for d in devices], dtype=np.int64)
    chunk_ids = np.asarray(chunks, dtype=np.int64)
    first, stop = ring_step_range(collective, n)
    i = np.arange(n)
    nxt = positions[(i + 1) % n]
    via: Sequence[Sequence[str]] | None = paths
    if direct:
        via = [(devices[k], devices[(k + 1) % n]) for k in range(n)]
    prev: IntArray | None = None
    for step in range(first, stop):
        held = (i - step) % n if step < n - 1 else (i + 1 - (step - (n - 1))) % n
        if prev is not None:  # the send that brought the data, and this hop's previous send (FIFO)
            deps: IntArray | None = np.stack([prev[(i - 1) % n], prev], axis=1)
        elif first_deps is not None:
            deps = first_deps.reshape(-1, 1)
        else:
            deps = None
        prev = builder.sends(
            positions,
            nxt,
            chunk_ids[held],
            reduce=step < n - 1,
            deps=deps,
            kinds=kinds,
            via=via,
            step=step,
            channel=channel,
        )
    assert prev is not None
    return prev
