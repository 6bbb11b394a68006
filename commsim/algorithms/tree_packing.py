"""Blink-style packing of spanning trees over every direct link.

Rings leave links idle that do not fit a Hamiltonian cycle; packing
spanning trees can use all of them (SEED_FACTS.md section 4; Wang et al.,
"Blink: Fast and generic collectives for distributed ML", MLSys 2020).
Links are cut into units of the slowest allowed link's bandwidth (a bonded
NV2 pair is two units); we look for as many edge-disjoint spanning trees of
that unit multigraph as possible, each carrying an equal share of the data
as a pipelined reduce-to-root + broadcast, each rooted at a different GPU
where possible.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from pydantic import Field

from commsim.algorithms.base import Algorithm, NotApplicableError, Params, Problem
from commsim.algorithms.multi_ring import direct_capacities
from commsim.algorithms.registry import register
from commsim.algorithms.tree import add_tree, tree_height
from commsim.collectives import Collective
from commsim.schedule import Schedule, ScheduleBuilder

__all__ = ["TreePacking", "pack_spanning_trees"]

Edge = tuple[Any, Any]
"""An undirected edge: two rank indices (while packing) or two device names."""


def _units(capacity: dict[frozenset[int], float]) -> tuple[list[Edge], float]:
    unit = min(capacity.values())
    edges: list[Edge] = []
    for pair, bandwidth in sorted(capacity.items(), key=lambda kv: sorted(kv[0])):
        a, b = sorted(pair)
        edges.extend([(a, b)] * max(1, round(bandwidth / unit)))
    return edges, unit


def _one_tree(nodes: Sequence[Any], edges: list[Edge], rng: random.Random) -> list[Edge] | None:
    """A random spanning tree of the remaining unit edges (Kruskal, random order)."""
    order = edges[:]
    rng.shuffle(order)
    parent = {v: v for v in nodes}

    def find(v: Any) -> Any:
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    tree = []
    for a, b in order:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[ra] = rb
            tree.append((a, b))
    return tree if len(tree) == len(nodes) - 1 else None


def pack_spanning_trees(
    nodes: Sequence[Any], edges: list[Edge], attempts: int = 400, seed: int = 0
) -> list[list[Edge]]:
    """As many edge-disjoint spanning trees of a multigraph as randomised search finds.

    The upper bound is ``min(len(edges) // (n-1), min degree)``; the search
    tries that many first, then fewer. Deterministic for a given ``seed``
    and the given order of ``edges`` (never dependent on what the nodes are called).
    """
    degree = {v: 0 for v in nodes}
    for a, b in edges:
        degree[a] += 1
        degree[b] += 1
    bound = min(len(edges) // (len(nodes) - 1), min(degree.values()))
    rng = random.Random(seed)
    for count in range(bound, 0, -1):
        for _ in range(attempts):
            remaining, trees = edges[:], []
            for _ in range(count):
                tree = _one_tree(nodes, remaining, rng)
                if tree is None:
                    break
                trees.append(tree)
                for edge in tree:
                    remaining.remove(edge)
            if len(trees) == count:
                return trees
    return []


def _rooted(tree: list[Edge], nodes: Sequence[str], taken: set[str]) -> tuple[list[str], list[int]]:
    """Root the tree at its most central free node; return (devices, parents)."""
    import networkx as nx  # only this planner needs it: kept off every command's start-up

    graph = nx.Graph(tree)
    eccentricity = nx.eccentricity(graph)
    root = min(nodes, key=lambda v: (v in taken, eccentricity[v], nodes.index(v)))
    taken.add(root)
    order = [root, *[v for v in nodes if v != root]]
    preds = dict(nx.bfs_predecessors(graph, root))
    parents = [-1 if v == root else order.index(preds[v]) for v in order]
    return order, parents


class TreePackingParams(Params):
    """Link kinds and pipelining."""

    kinds: list[str] = Field(["nvlink"], description="link kinds or families the trees may use")
    chunks: int = Field(8, ge=1, le=1024, description="pieces each tree's share is cut into and pipelined")


@register
class TreePacking(Algorithm):
    """Edge-disjoint spanning trees over all direct links, each a share of the data.

    References
    ----------
    Wang et al., Blink, MLSys 2020; SEED_FACTS.md section 4 (three trees on
    four DGX-1 GPUs: g / (3 BW) against the two rings' g / (2 BW)).
    """

    name = "tree_packing"
    summary = "Blink-style packing of spanning trees that keeps every direct link busy"
    reference = "Wang et al., Blink, MLSys 2020; SEED_FACTS.md section 4"
    collectives = frozenset({Collective.ALL_REDUCE, Collective.REDUCE, Collective.BROADCAST})
    Params = TreePackingParams

    def trees(self, problem: Problem) -> tuple[list[tuple[list[str], list[int]]], float]:
        """The rooted trees (devices, parents) and the bandwidth of one tree."""
        assert isinstance(self.params, TreePackingParams)
        ranks = list(problem.ranks)
        index = {rank: i for i, rank in enumerate(ranks)}
        # pack in rank-index space: the trees depend on the machine's structure and the
        # rank order, never on device names (an automorphic rank order gives the same trees)
        capacity = {
            frozenset(index[d] for d in pair): bandwidth
            for pair, bandwidth in direct_capacities(problem.topology, ranks, self.params.kinds).items()
        }
        if not capacity:
            raise NotApplicableError(
                f"no direct {'/'.join(self.params.kinds)} links between the ranks of "
                f"topology {problem.topology.name!r}; allowed kinds: {self.params.kinds}"
            )
        edges, unit = _units(capacity)
        found = [
            [(ranks[a], ranks[b]) for a, b in tree]
            for tree in pack_spanning_trees(list(range(len(ranks))), edges)
        ]
        if not found:
            raise NotApplicableError(
                f"the direct {'/'.join(self.params.kinds)} links of topology "
                f"{problem.topology.name!r} do not connect all {problem.n} ranks"
            )
        taken: set[str] = set()
        rooted = []
        for tree in found:
            if problem.collective is Collective.ALL_REDUCE:
                rooted.append(_rooted(tree, list(problem.ranks), taken))
            else:  # rooted collectives: every tree at the collective's root
                others = set(problem.ranks) - {problem.ranks[problem.root]}
                rooted.append(_rooted(tree, list(problem.ranks), others))
        return rooted, unit

    def plan(self, problem: Problem) -> Schedule:
        self.check(problem)
        assert isinstance(self.params, TreePackingParams)
        trees, _ = self.trees(problem)
        builder = ScheduleBuilder(problem.collective, problem.nbytes, problem.ranks, root=problem.root)
        for channel, (devices, parents) in enumerate(trees):  # a channel per tree
            chunks = builder.split(problem.nbytes / len(trees), self.params.chunks)
            add_tree(builder, devices, parents, chunks, problem.collective, direct=True, channel=channel)
        return builder.build()

    def analytic_time(self, problem: Problem) -> float | None:
        """max over trees of (phases x height + chunks - 1) x (alpha + g / (k x chunks x unit)).

        Exact when links of one unit each carry one tree and latencies are
        equal (e.g. SEED_FACTS section 4's four DGX-1 GPUs).
        """
        assert isinstance(self.params, TreePackingParams)
        trees, unit = self.trees(problem)
        phases = 2 if problem.collective is Collective.ALL_REDUCE else 1
        latency = max(link.latency_s for link in problem.topology.links)
        pieces = self.params.chunks
        per_chunk = latency + problem.nbytes / len(trees) / pieces / unit
        return max((phases * tree_height(parents) + pieces - 1) * per_chunk for _, parents in trees)
