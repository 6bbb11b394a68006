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
move one atom per step (:mod:`commsim.algorithms.hierarchical_plan`). The
plan is m (m - 1) K^2 sends per in-box phase, 2 m K (K - 1) across the
boxes, but rotating the boxes maps it onto itself: it is stored as
m (m - 1) (K + 1) + 2 m (K - 1) classes of sends (:func:`plan_compact`;
36,904 for the 33.5 million sends on 512 8-GPU boxes), which the engine
replays as flow groups on a machine whose boxes are alike, and as sends
otherwise. :func:`plan_per_send` stores every send.
"""

from __future__ import annotations

import numpy as np

from commsim.algorithms.base import Algorithm, NoParams, NotApplicableError, Problem
from commsim.algorithms.common import phase_time
from commsim.algorithms.hierarchical_plan import HierarchicalPattern, add_atoms, add_hierarchical
from commsim.algorithms.registry import register
from commsim.collectives import Collective
from commsim.schedule import Schedule, ScheduleBuilder, pattern_schedule

__all__ = ["Hierarchical", "box_grid", "plan_compact", "plan_per_send"]


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


def plan_per_send(problem: Problem, grid: list[list[str]]) -> Schedule:
    """The plan with one row per send (any machine; the reference for the compact plan)."""
    builder = ScheduleBuilder(problem.collective, problem.nbytes, problem.ranks)
    dev = np.array([[builder.device_index(r) for r in box] for box in grid], dtype=np.int64)
    K, m = dev.shape
    add_hierarchical(builder, dev, add_atoms(builder, problem.nbytes, m, K), _kinds(problem))
    return builder.build()


def plan_compact(problem: Problem, grid: list[list[str]]) -> Schedule:
    """The plan as a :class:`HierarchicalPattern`: classes of the box rotation, sends made on read.

    Same chunks, path specs and (when read) per-send columns as
    :func:`plan_per_send`. The engine replays the classes when the machine
    and its routes are symmetric under the rotation of the boxes
    (:mod:`commsim.engine.orbits`), else the sends.
    """
    builder = ScheduleBuilder(problem.collective, problem.nbytes, problem.ranks)
    dev = np.array([[builder.device_index(r) for r in box] for box in grid], dtype=np.int64)
    K, m = dev.shape
    add_atoms(builder, problem.nbytes, m, K)
    kinds = _kinds(problem)
    # path specs registered as add_hierarchical's first in-box and first cross-box steps do
    in_path = builder.route_indices(dev.reshape(-1), dev[:, (np.arange(m) + 1) % m].reshape(-1), kinds)
    x_src, x_dst = dev.T.reshape(-1), dev[(np.arange(K) + 1) % K].T.reshape(-1)
    x_path = builder.route_indices(x_src, x_dst, kinds)
    pattern = HierarchicalPattern(
        problem.collective,
        float(problem.nbytes),
        tuple(problem.ranks),
        dev,
        kinds,
        in_path.reshape(K, m),
        x_path.reshape(m, K).T.copy(),
    )
    return pattern_schedule(builder, pattern)


def _kinds(problem: Problem) -> tuple[str, ...] | None:
    return tuple(problem.kinds) if problem.kinds is not None else None


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
        return plan_compact(problem, grid)

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
