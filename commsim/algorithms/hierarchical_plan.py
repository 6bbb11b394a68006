"""The sends of hierarchical all-reduce: one row per send, or one class per orbit of the boxes.

The data is cut into m x K atoms (m GPUs per box, K boxes; ``atom[s, b]``
is atom b of shard s). Inside each box a ring reduce-scatter moves a
shard's K atoms together on one path, one channel per atom; across the
boxes, for each local position, a ring all-reduce moves one atom per step;
an in-box ring all-gather then spreads each atom once the cross-box ring
has finished it.

Rotating the boxes (box k onto box k+1, atom b onto atom b+1) maps the
plan onto itself, so on a machine whose boxes are alike the sends fall
into 72 K + 40 classes instead of 128 K^2 - 16 K sends (m = 8):
:class:`HierarchicalPattern` describes them (:class:`~commsim.schedule.BoxOrbits`)
and makes the per-send columns only when something reads them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from commsim.collectives import Collective
from commsim.schedule import BoxOrbits, ScheduleBuilder

__all__ = ["HierarchicalPattern", "add_atoms", "add_hierarchical"]

IntArray = NDArray[np.int64]


def add_atoms(builder: ScheduleBuilder, nbytes: float, m: int, K: int) -> IntArray:
    """Add the m x K equal atoms of the buffer; ``atom[s, b]`` is atom b of shard s."""
    atom_nbytes = nbytes / (m * K)
    return np.array([[builder.chunk(atom_nbytes) for _ in range(K)] for _ in range(m)], dtype=np.int64)


def _stack_deps(*columns: IntArray) -> IntArray:
    return np.stack([c.reshape(-1) for c in columns], axis=1)


class _Plan:
    """Adds the three phases to a builder, one numpy block per step."""

    def __init__(
        self, builder: ScheduleBuilder, dev: IntArray, atom: IntArray, kinds: tuple[str, ...] | None
    ) -> None:
        self.builder, self.dev, self.atom, self.kinds = builder, dev, atom, kinds
        self.K, self.m = dev.shape

    def _sends(
        self,
        src: IntArray,
        dst: IntArray,
        chunk: IntArray,
        reduce: bool,
        deps: IntArray | None,
        step: int,
        channel: IntArray | int = 0,
    ) -> IntArray:
        shape = src.shape
        ops = self.builder.sends(
            src.reshape(-1),
            dst.reshape(-1),
            chunk.reshape(-1),
            reduce=reduce,
            deps=deps,
            step=step,
            kinds=self.kinds,
            channel=np.broadcast_to(channel, shape).reshape(-1),
        )
        return ops.reshape(shape)

    def in_box(self, first_step: int, allgather: bool, start: IntArray | None) -> IntArray:
        """Ring steps inside every box at once; arrays are indexed [box, position, atom].

        ``start`` holds, per [box, position, atom], the ops the first step waits for.
        """
        K, m = self.K, self.m
        k, i, b = np.meshgrid(np.arange(K), np.arange(m), np.arange(K), indexing="ij")
        src, dst = self.dev[k, i], self.dev[k, (i + 1) % m]
        prev = start
        for t in range(m - 1):
            shard = (i + 1 - t) % m if allgather else (i - t) % m
            if t == 0:
                deps = None if start is None else start.reshape(-1, start.shape[-1])
            else:
                assert prev is not None
                deps = _stack_deps(prev[k, (i - 1) % m, b], prev)
            # a shard's K atoms move together: one channel per atom, side by side
            prev = self._sends(src, dst, self.atom[shard, b], not allgather, deps, first_step + t, channel=b)
        assert prev is not None
        return prev

    def across_boxes(self, rs_last: IntArray, first_step: int) -> tuple[IntArray, IntArray]:
        """For every local index, a ring all-reduce across boxes.

        Returns the in-box reduce-scatter's last write and the cross-box
        phase's last write into every [box, position, atom]: an atom is final
        once both are done (two commuting additions may land in either order).
        """
        K, m = self.K, self.m
        i, k = np.meshgrid(np.arange(m), np.arange(K), indexing="ij")
        shard = (i + 1) % m
        src, dst = self.dev[k, i], self.dev[(k + 1) % K, i]
        # the in-box reduce-scatter's last send into (box k, position i) for atom c
        final = rs_last[:, (np.arange(m) - 1) % m, :]  # [box, position, atom]
        last_write = final.copy()
        prev: IntArray | None = None
        for t in range(2 * K - 2):
            held = (k - t) % K if t < K - 1 else (k + 1 - (t - (K - 1))) % K
            ready = final[k, i, held]
            deps = _stack_deps(ready) if prev is None else _stack_deps(prev[i, (k - 1) % K], prev, ready)
            prev = self._sends(src, dst, self.atom[shard, held], t < K - 1, deps, first_step + t)
            last_write[(k + 1) % K, i, held] = prev
        return final, last_write


def add_hierarchical(
    builder: ScheduleBuilder, dev: IntArray, atom: IntArray, kinds: tuple[str, ...] | None
) -> None:
    """Add every send of the plan: in-box reduce-scatter, cross-box rings, in-box all-gather."""
    plan = _Plan(builder, dev, atom, kinds)
    K, m = dev.shape
    rs_last = plan.in_box(0, allgather=False, start=None)
    final, last_write = plan.across_boxes(rs_last, m - 1)
    plan.in_box(m - 1 + 2 * K - 2, allgather=True, start=np.stack([final, last_write], axis=-1))


@dataclass(frozen=True, eq=False)
class HierarchicalPattern:
    """The plan's sends as classes of the box rotation; per-send columns made on read.

    ``dev[k, i]`` is the device index of position i of box k; ``in_path`` and
    ``x_path`` ([box, position]) the path spec indices of the in-box hop
    (i to i+1) and of the cross-box hop (box k to k+1), registered in the
    order :func:`add_hierarchical` registers them.
    """

    collective: Collective
    nbytes: float
    ranks: tuple[str, ...]
    dev: IntArray
    kinds: tuple[str, ...] | None
    in_path: IntArray
    x_path: IntArray

    @property
    def shape(self) -> tuple[int, int]:
        """(boxes K, positions m)."""
        K, m = self.dev.shape
        return int(K), int(m)

    @property
    def n_ops(self) -> int:
        """Sends: m (m - 1) K^2 in each in-box phase, 2 m K (K - 1) across the boxes."""
        K, m = self.shape
        return 2 * K * m * K * (m - 1) + 2 * m * K * (K - 1)

    def columns(self) -> dict[str, NDArray[Any]]:
        """Every per-send column, as adding the sends to a builder stores them."""
        builder = ScheduleBuilder(self.collective, self.nbytes, self.ranks)
        K, m = self.shape
        add_hierarchical(builder, self.dev, add_atoms(builder, self.nbytes, m, K), self.kinds)
        schedule = builder.build()
        names = ("op_src", "op_dst", "op_chunk", "op_reduce", "op_path", "op_step")
        fields = {name: getattr(schedule, name) for name in names}
        fields.update(
            dep_indptr=schedule.dep_indptr, dep_indices=schedule.dep_indices, op_channel=schedule.channels
        )
        return fields

    def _counts(self) -> tuple[int, int, int]:
        """Classes of the reduce-scatter, the cross-box rings and the all-gather."""
        K, m = self.shape
        return m * (m - 1), 2 * m * (K - 1), m * K * (m - 1)

    def orbits(self) -> BoxOrbits:
        """Classes: reduce-scatter (i, t), cross-box (i, t), all-gather (i, r, t).

        Position i's K atoms of one reduce-scatter step move together (weight
        K). Box k receives, across the boxes, atom (k + r) mod K of position
        i fully summed at cross-box step K - 2 (r = 1) or K - 1 + (K - r) mod K;
        the all-gather of that atom is class (i, r, t) in every box.
        """
        K, m = self.shape
        n_rs, n_x, n_ag = self._counts()
        i = np.arange(m)
        dep_ptr, deps = _rows_to_csr(self._class_deps())
        in_rep, x_rep = self.in_path[0], self.x_path[0]
        return BoxOrbits(
            grid=self.dev,
            path=np.concatenate(
                [np.tile(in_rep, m - 1), np.tile(x_rep, 2 * K - 2), np.tile(in_rep, (m - 1) * K)]
            ),
            nbytes=np.full(n_rs + n_x + n_ag, self.nbytes / (m * K)),
            reduce=np.concatenate(
                [np.ones(n_rs, bool), np.repeat(np.arange(2 * K - 2) < K - 1, m), np.zeros(n_ag, bool)]
            ),
            dst=np.concatenate(
                [
                    np.tile(self.dev[0, (i + 1) % m], m - 1),
                    np.tile(self.dev[1 % K, i], 2 * K - 2),
                    np.tile(self.dev[0, (i + 1) % m], (m - 1) * K),
                ]
            ),
            weight=np.concatenate([np.full(n_rs, K, np.int64), np.ones(n_x + n_ag, np.int64)]),
            dep_ptr=dep_ptr,
            deps=deps,
        )

    def _class_deps(self) -> IntArray:
        """Per class, the classes it waits for (rows padded with -1), in class order."""
        K, m = self.shape
        n_rs, n_x, _ = self._counts()
        i = np.arange(m)
        prev_i = (i - 1) % m
        rs_last = (m - 2) * m + prev_i  # the reduce-scatter's last step into position i
        t_in = np.arange(1, m - 1).reshape(-1, 1)
        rows = [np.full((m, 3), -1, np.int64)]  # reduce-scatter step 0 waits for nothing
        rows.append(_pad(np.stack([(t_in - 1) * m + prev_i, (t_in - 1) * m + i], -1)))
        rows.append(_pad(rs_last.reshape(-1, 1)))  # the cross-box rings wait for their data
        t_x = np.arange(1, 2 * K - 2).reshape(-1, 1)
        rows.append(_pad(np.stack([n_rs + (t_x - 1) * m + i, np.broadcast_to(rs_last, (2 * K - 3, m))], -1)))
        # the all-gather's first step: its data, its last cross-box write, its connection's last send
        r = np.arange(K).reshape(-1, 1)
        written = np.where(r == 1, K - 2, K - 1 + (K - r) % K)
        first = (
            np.broadcast_to(rs_last, (K, m)),
            n_rs + written * m + i,
            np.broadcast_to((m - 2) * m + i, (K, m)),
        )
        rows.append(np.stack(first, -1))
        before = n_rs + n_x + ((t_in.reshape(-1, 1, 1) - 1) * K + r) * m
        rows.append(_pad(np.stack(np.broadcast_arrays(before + prev_i, before + i), -1)))
        return np.concatenate([row.reshape(-1, 3) for row in rows])

    def op_classes(self) -> IntArray:
        """Per send, in :meth:`columns`' op order: its class in :meth:`orbits`."""
        K, m = self.shape
        n_rs, n_x, _ = self._counts()
        k, i, b = np.meshgrid(np.arange(K), np.arange(m), np.arange(K), indexing="ij")
        rs = [np.broadcast_to(t * m + i, i.shape).reshape(-1) for t in range(m - 1)]
        i_x = np.repeat(np.arange(m), K)  # the cross-box blocks are indexed [position, box]
        x = [n_rs + t * m + i_x for t in range(2 * K - 2)]
        rank = (b - k) % K
        ag = [(n_rs + n_x + (t * K + rank) * m + i).reshape(-1) for t in range(m - 1)]
        return np.concatenate(rs + x + ag).astype(np.int64)


def _pad(rows: IntArray) -> IntArray:
    """Dependency rows widened to 3 columns with -1."""
    pad = np.full((*rows.shape[:-1], 3 - rows.shape[-1]), -1, np.int64)
    return np.concatenate([rows, pad], axis=-1)


def _rows_to_csr(rows: IntArray) -> tuple[IntArray, IntArray]:
    """CSR (pointers, indices) of rows padded with -1."""
    mask = rows >= 0
    ptr = np.zeros(rows.shape[0] + 1, np.int64)
    np.cumsum(mask.sum(axis=1), out=ptr[1:])
    return ptr, rows[mask]
