"""Shortest routes between two devices, found by searching from both ends.

A plain breadth-first search from the source visits most of a large
cluster before it reaches a GPU in another box; searching from both ends
until the searches meet visits only the neighbourhoods of the two devices
(two boxes and the network between them). All shortest routes are then
enumerated through the meeting layer, so tie-breaking (widest bottleneck,
then a stable hash) sees every candidate, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

__all__ = ["shortest_paths"]

Adjacency = Mapping[str, Mapping[str, object]]


def _ball(
    adjacency: Adjacency,
    start: str,
    radius: int,
    passes: Callable[[str], bool],
    edge_ok: Callable[[str, str], bool],
) -> tuple[dict[str, int], dict[str, list[str]]]:
    """Distances and shortest-path predecessors of every node within ``radius`` of ``start``."""
    dist: dict[str, int] = {start: 0}
    prev: dict[str, list[str]] = {start: []}
    frontier = [start]
    for level in range(1, radius + 1):
        following = []
        for node in frontier:
            if not passes(node):
                continue
            for other in adjacency[node]:
                if not edge_ok(node, other):
                    continue
                if other not in dist:
                    dist[other] = level
                    prev[other] = [node]
                    following.append(other)
                elif dist[other] == level:
                    prev[other].append(node)
        frontier = following
    return dist, prev


def _walks(prev: Mapping[str, list[str]], node: str) -> Iterator[list[str]]:
    if not prev[node]:
        yield [node]
        return
    for before in prev[node]:
        for walk in _walks(prev, before):
            yield [*walk, node]


def _distance(
    succ: Adjacency,
    pred: Adjacency,
    src: str,
    dst: str,
    middle: Callable[[str], bool],
    forward_ok: Callable[[str, str], bool],
    backward_ok: Callable[[str, str], bool],
    limit: int,
) -> int | None:
    """Hop count of the shortest route, growing the smaller search one level at a time."""
    f_dist, f_front = {src: 0}, [src]
    b_dist, b_front = {dst: 0}, [dst]
    f_level = b_level = 0
    while f_front and b_front and f_level + b_level <= limit:
        forward = len(f_front) <= len(b_front)
        front, dist, adjacency, ok, other = (
            (f_front, f_dist, succ, forward_ok, b_dist)
            if forward
            else (b_front, b_dist, pred, backward_ok, f_dist)
        )
        level = (f_level if forward else b_level) + 1
        following = []
        for node in front:
            if node not in (src, dst) and not middle(node):
                continue
            for nxt in adjacency[node]:
                if nxt not in dist and ok(node, nxt):
                    dist[nxt] = level
                    following.append(nxt)
        best = [level + other[v] for v in following if v in other and (v in (src, dst) or middle(v))]
        if best:
            return min(best)
        if forward:
            f_front, f_level = following, level
        else:
            b_front, b_level = following, level
    return None


def shortest_paths(
    succ: Adjacency,
    pred: Adjacency,
    src: str,
    dst: str,
    middle: Callable[[str], bool],
    edge_ok: Callable[[str, str], bool],
) -> list[list[str]]:
    """Every shortest path from ``src`` to ``dst`` (lists of device names).

    Parameters
    ----------
    succ, pred : mappings
        Successors and predecessors of every node (networkx ``_succ``/``_pred``).
    middle : callable
        Whether a node may sit inside a path (endpoints always may end it).
    edge_ok : callable
        Whether the directed edge ``(a, b)`` may be used.
    """
    distance = _distance(succ, pred, src, dst, middle, edge_ok, lambda a, b: edge_ok(b, a), len(succ))
    if distance is None:
        return []
    ahead = (distance + 1) // 2
    f_dist, f_prev = _ball(succ, src, ahead, lambda n: n == src or middle(n), edge_ok)
    b_dist, b_prev = _ball(
        pred, dst, distance - ahead, lambda n: n == dst or middle(n), lambda a, b: edge_ok(b, a)
    )
    paths = []
    for node, d in f_dist.items():
        if d != ahead or b_dist.get(node) != distance - ahead:
            continue
        if node not in (src, dst) and not middle(node):
            continue
        for head in _walks(f_prev, node):
            for tail in _walks(b_prev, node):
                paths.append(head + tail[::-1][1:])
    return paths
