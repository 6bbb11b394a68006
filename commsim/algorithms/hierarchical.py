"""Hierarchical all-reduce for multi-box clusters.

Inside each box a ring reduce-scatter leaves local rank i with shard i+1
summed over the box; then, for each local index i, a ring all-reduce across
the boxes (over the NICs) sums that shard over the whole cluster; finally a
ring all-gather inside each box spreads the shards (SEED_FACTS.md section 5:
the cross-machine fabric is the slow part, so only 1/m of the data per GPU
crosses it; as in Horovod's hierarchical all-reduce and NCCL's multi-node
rings). Box membership comes from the topology's devices (``box``).

The data is cut into m x K atoms (m GPUs per box, K boxes); the in-box
phases move a shard's K atoms together on one path, the cross-box rings
move one atom per step.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from commsim.algorithms.base import Algorithm, NoParams, NotApplicableError, Problem
from commsim.algorithms.common import phase_time
from commsim.algorithms.registry import register
from commsim.collectives import Collective
from commsim.schedule import Schedule, ScheduleBuilder

__all__ = ["Hierarchical", "box_grid"]

IntArray = NDArray[np.int64]


def box_grid(problem: Problem) -> list[list[str]]:
    """Ranks grouped by box: ``grid[k][i]`` is local rank i of box k.

    Raises
    ------
    AlgorithmError
        If boxes hold different numbers of ranks.
    """
    boxes: dict[int, list[str]] = {}
    for rank in problem.ranks:
        boxes.setdefault(problem.topology.device(rank).box, []).append(rank)
    sizes = {len(v) for v in boxes.values()}
    if len(sizes) != 1:
        counts = ", ".join(f"box {k}: {len(v)}" for k, v in sorted(boxes.items()))
        raise NotApplicableError(f"it needs the same number of ranks in every box; got {counts}")
    return [boxes[k] for k in sorted(boxes)]


def _stack_deps(*columns: IntArray) -> IntArray:
    return np.stack([c.reshape(-1) for c in columns], axis=1)


class _Plan:
    """Builds the three phases with numpy-vectorised steps."""

    def __init__(self, problem: Problem, grid: list[list[str]]) -> None:
        self.problem = problem
        self.K, self.m = len(grid), len(grid[0])
        self.builder = ScheduleBuilder(problem.collective, problem.nbytes, problem.ranks)
        self.dev = np.array([[self.builder.device_index(r) for r in box] for box in grid], dtype=np.int64)
        atom_nbytes = problem.nbytes / (self.m * self.K)
        self.atom = np.array(
            [[self.builder.chunk(atom_nbytes) for _ in range(self.K)] for _ in range(self.m)], dtype=np.int64
        )

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
            kinds=self.problem.kinds,
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


@register
class Hierarchical(Algorithm):
    """In-box reduce-scatter, cross-box ring all-reduce per local rank, in-box all-gather.

    References
    ----------
    SEED_FACTS.md section 5; Sergeev & Del Balso, "Horovod", 2018
    (hierarchical all-reduce); NCCL multi-node rings.
    """

    name = "hierarchical"
    summary = "in-box reduce-scatter, cross-box all-reduce over the NICs, in-box all-gather"
    reference = "SEED_FACTS.md section 5; Horovod hierarchical all-reduce"
    collectives = frozenset({Collective.ALL_REDUCE})
    Params = NoParams

    def plan(self, problem: Problem) -> Schedule:
        self.check(problem)
        grid = box_grid(problem)
        if len(grid) == 1 or len(grid[0]) == 1:
            from commsim.algorithms.ring import Ring

            return Ring().plan(problem)
        plan = _Plan(problem, grid)
        rs_last = plan.in_box(0, allgather=False, start=None)
        final, last_write = plan.across_boxes(rs_last, plan.m - 1)
        plan.in_box(plan.m - 1 + 2 * plan.K - 2, allgather=True, start=np.stack([final, last_write], axis=-1))
        return plan.builder.build()

    def analytic_time(self, problem: Problem) -> float | None:
        """(m-1) in-box steps, 2(K-1) cross-box steps, (m-1) in-box steps, each a phase_time.

        A barrier model (every step waits for the slowest send of the step
        before): an upper bound on the replay, which lets boxes and phases
        overlap.
        """
        grid = box_grid(problem)
        K, m = len(grid), len(grid[0])
        if K == 1 or m == 1:
            from commsim.algorithms.ring import Ring

            return Ring().analytic_time(problem)
        topo, kinds, g = problem.topology, problem.kinds, problem.nbytes
        intra = phase_time(topo, ((box[p], box[(p + 1) % m], g / m) for box in grid for p in range(m)), kinds)
        inter = phase_time(
            topo, ((grid[k][p], grid[(k + 1) % K][p], g / (m * K)) for k in range(K) for p in range(m)), kinds
        )
        return 2 * (m - 1) * intra + 2 * (K - 1) * inter
