"""Trees: reduce towards a root, then broadcast back, pipelined in chunks.

Shapes: ``chain`` (a line, the deepest tree), ``binary`` (heap order) and
``double_binary`` (NCCL's two complementary binary trees, each carrying half
of the data, so every rank is a leaf in one and inner node in the other;
Sanders, Speck & Träff, "Two-tree algorithms for full bandwidth broadcast,
reduction and scan", Parallel Computing 35(12), 2009).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import Field

from commsim.algorithms.base import Algorithm, Params, Problem, route_figures
from commsim.algorithms.registry import register
from commsim.collectives import Collective
from commsim.schedule import Schedule, ScheduleBuilder

__all__ = ["Tree", "add_tree", "btree_parents", "tree_height"]


def btree_parents(n: int) -> list[int]:
    """Parents of NCCL's in-order binary tree over positions 0..n-1 (root 0 -> -1)."""
    parents = [-1] * n
    for r in range(1, n):
        bit = r & -r
        up = (r ^ bit) | (bit << 1)
        parents[r] = up if up < n else r ^ bit
    return parents


def shape_parents(shape: str, n: int) -> list[list[int]]:
    """Parent arrays (positions) of the tree(s) of a shape."""
    if shape == "chain":
        return [[p - 1 for p in range(n)]]
    if shape == "binary":
        return [[(p - 1) // 2 if p else -1 for p in range(n)]]
    first = btree_parents(n)
    if n % 2 == 0:  # mirror
        second = [-1 if first[n - 1 - p] < 0 else n - 1 - first[n - 1 - p] for p in range(n)]
    else:  # shift by one
        second = [-1 if first[(p - 1) % n] < 0 else (first[(p - 1) % n] + 1) % n for p in range(n)]
    return [first, second]


def tree_height(parents: Sequence[int]) -> int:
    """Edges on the longest root-to-leaf path."""

    def depth(p: int) -> int:
        d = 0
        while parents[p] >= 0:
            p, d = parents[p], d + 1
        return d

    return max(depth(p) for p in range(len(parents)))


def _post_order(parents: Sequence[int]) -> list[int]:
    children: dict[int, list[int]] = {p: [] for p in range(len(parents))}
    for p, up in enumerate(parents):
        if up >= 0:
            children[up].append(p)
    root = parents.index(-1)
    order: list[int] = []
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
        else:
            stack.append((node, True))
            stack.extend((c, False) for c in reversed(children[node]))
    return order


def add_tree(
    builder: ScheduleBuilder,
    devices: Sequence[str],
    parents: Sequence[int],
    chunks: Sequence[int],
    collective: Collective,
    *,
    direct: bool = False,
    kinds: Sequence[str] | None = None,
    channel: int = 0,
) -> None:
    """Add a pipelined reduce (up) and/or broadcast (down) along one tree.

    ``devices[p]`` sits at position ``p``; ``parents[p]`` is its parent
    position (-1 for the root). All-reduce does both phases, reduce only the
    first, broadcast only the second. Sends on one edge keep chunk order.
    The tree's sends use ``channel``; trees sharing an edge run side by side
    on different channels (NCCL gives each tree its own channels).
    """
    if not chunks:
        return
    up = collective in (Collective.ALL_REDUCE, Collective.REDUCE)
    down = collective in (Collective.ALL_REDUCE, Collective.BROADCAST)
    template = _chunk_template(parents, up, down)
    per_chunk = len(template)
    if not per_chunk:
        return
    base = builder.n_ops
    src = np.array([builder.device_index(devices[t[0]]) for t in template], np.int64)
    dst = np.array([builder.device_index(devices[t[1]]) for t in template], np.int64)
    via = None
    if direct:
        via = [(devices[t[0]], devices[t[1]]) for t in template] * len(chunks)
    else:
        for s, d in zip(src.tolist(), dst.tolist()):  # paths in the order one-by-one sends add them
            builder.route_indices(np.array([s]), np.array([d]), kinds)
    # chunk q's send j: op base + q * per_chunk + j; it waits for its sends of the same
    # chunk, then (q > 0) for the send on the same edge of chunk q - 1 (edges keep chunk order)
    width = max(len(t[4]) for t in template) + 1
    rel = np.full((per_chunk, width), -1, np.int64)
    for j, t in enumerate(template):
        rel[j, : len(t[4])] = t[4]
    q = np.arange(len(chunks), dtype=np.int64).reshape(-1, 1, 1)
    deps = np.where(rel >= 0, base + q * per_chunk + rel, -1)
    own = np.argmax(rel < 0, axis=1)  # the first free column of every row
    rows = np.arange(per_chunk)
    deps[1:, rows, own] = base + (q[1:, :, 0] - 1) * per_chunk + rows
    builder.sends(
        np.tile(src, len(chunks)),
        np.tile(dst, len(chunks)),
        np.repeat(np.asarray(chunks, np.int64), per_chunk),
        reduce=np.tile([t[2] for t in template], len(chunks)),
        deps=deps.reshape(-1, width),
        kinds=kinds,
        via=via,
        step=np.tile([t[3] for t in template], len(chunks)),
        channel=channel,
    )


def _chunk_template(
    parents: Sequence[int], up: bool, down: bool
) -> list[tuple[int, int, bool, int, list[int]]]:
    """One chunk's sends in order: (src position, dst position, reduce, step, deps as send indices).

    Reduce: every non-root position sends to its parent in post-order, after
    its children's sends. Broadcast: from the root down (reverse post-order),
    each position sends to its children once it has the chunk (the root once
    its children's reductions arrived).
    """
    order = _post_order(parents)
    children: dict[int, list[int]] = {p: [] for p in range(len(parents))}
    for c, p in enumerate(parents):  # children in ascending position
        if p >= 0:
            children[p].append(c)
    template: list[tuple[int, int, bool, int, list[int]]] = []
    up_send: dict[int, int] = {}
    if up:
        for node in order:
            if parents[node] >= 0:
                up_send[node] = len(template)
                template.append((node, parents[node], True, 0, [up_send[c] for c in children[node]]))
    if down:
        received: dict[int, list[int]] = {}
        for node in reversed(order):
            if parents[node] < 0:
                deps = [up_send[c] for c in children[node]] if up else []
            else:
                deps = received[node]
            for child in children[node]:
                received[child] = [len(template)]
                template.append((node, child, False, 1, list(deps)))
    return template


class TreeParams(Params):
    """Tree shape and pipelining."""

    shape: Literal["chain", "binary", "double_binary"] = Field("double_binary", description="tree shape")
    chunks: int = Field(8, ge=1, le=1024, description="pieces each tree's data is cut into and pipelined")


@register
class Tree(Algorithm):
    """Reduce to the root and broadcast back along a spanning tree of the ranks.

    References
    ----------
    Sanders, Speck & Träff 2009 (two-tree algorithms, used by NCCL);
    SEED_FACTS.md section 4 (tree all-reduce).
    """

    name = "tree"
    summary = "reduce up a tree then broadcast down, pipelined (chain, binary, double binary)"
    reference = "Sanders, Speck & Träff 2009; SEED_FACTS.md section 4"
    collectives = frozenset({Collective.ALL_REDUCE, Collective.REDUCE, Collective.BROADCAST})
    Params = TreeParams

    def _positions(self, problem: Problem) -> list[str]:
        ranks = list(problem.ranks)
        return ranks[problem.root :] + ranks[: problem.root]

    def plan(self, problem: Problem) -> Schedule:
        self.check(problem)
        assert isinstance(self.params, TreeParams)
        devices = self._positions(problem)
        trees = shape_parents(self.params.shape, problem.n)
        if problem.collective is not Collective.ALL_REDUCE:
            trees = trees[:1]  # a rooted collective needs every tree rooted at its root
        builder = ScheduleBuilder(problem.collective, problem.nbytes, problem.ranks, root=problem.root)
        for channel, parents in enumerate(trees):
            chunks = builder.split(problem.nbytes / len(trees), self.params.chunks)
            add_tree(
                builder, devices, parents, chunks, problem.collective, kinds=problem.kinds, channel=channel
            )
        return builder.build()

    def analytic_time(self, problem: Problem) -> float | None:
        """Chain only: (phases x (n-1) + chunks - 1) x (alpha + g / (chunks x beta)).

        Exact on machines where each chain hop has its own links in each
        direction (e.g. a ring topology); None for other shapes.
        """
        assert isinstance(self.params, TreeParams)
        if self.params.shape != "chain":
            return None
        devices = self._positions(problem)
        hops = [route_figures(problem.topology, a, b, problem.kinds) for a, b in zip(devices, devices[1:])]
        hops += [route_figures(problem.topology, b, a, problem.kinds) for a, b in zip(devices, devices[1:])]
        latency, bandwidth = max(h[0] for h in hops), min(h[1] for h in hops)
        phases = 2 if problem.collective is Collective.ALL_REDUCE else 1
        pieces = self.params.chunks
        return (phases * (problem.n - 1) + pieces - 1) * (latency + problem.nbytes / pieces / bandwidth)
