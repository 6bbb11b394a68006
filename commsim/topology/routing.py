"""Shortest routes between two devices, found by searching from both ends.

A plain breadth-first search from the source visits most of a large
cluster before it reaches a GPU in another box; searching from both ends
until the searches meet visits only the neighbourhoods of the two devices
(two boxes and the network between them). All shortest routes are then
enumerated through the meeting layer, so tie-breaking (widest bottleneck,
then a stable hash) sees every candidate, as before.

When one device needs routes to many others (all-to-all: every GPU to every
other), :func:`shortest_path_dag` searches once from the source; the routes
to every destination are read from its table of shortest-path predecessors
(:meth:`commsim.topology.model.Topology.prefetch_routes`), sharing the route
prefixes common to many destinations (the way through the source's box and
the network): :mod:`commsim.topology.source_routes` chooses them. Both give
the same set of routes for a pair.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping

__all__ = ["shortest_path_dag", "shortest_paths"]

Adjacency = Mapping[str, Mapping[str, object]]
LinkAdjacency = Mapping[str, Mapping[str, int]]


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
        # the searches meet at this level if a node of the front links to one the other
        # search reached: check that first, without expanding a hub (a switch with
        # thousands of links) whose other neighbours would be found for nothing
        meets = [
            level + other[v]
            for node in front
            if node in (src, dst) or middle(node)
            for v in (other if len(other) < len(adjacency[node]) else adjacency[node])
            if v in adjacency[node]
            and v in other
            and v not in dist
            and ok(node, v)
            and (v in (src, dst) or middle(v))
        ]
        if meets:
            return min(meets)
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


def shortest_path_dag(
    succ: LinkAdjacency,
    src: str,
    targets: Iterable[str],
    middle: Callable[[str], bool],
    edge_ok: Callable[[str, str], bool],
) -> dict[str, list[tuple[str, int]]]:
    """Shortest-path predecessors ``{node: [(predecessor, link index), ...]}`` of a search from ``src``.

    One breadth-first search from ``src``, level by level until every
    target is reached (or nothing more can be). The shortest paths from
    ``src`` to a reached target are the target's predecessors' paths, each
    extended by its link: as sets, the same paths :func:`shortest_paths`
    gives for each pair. ``src`` maps to ``[]``; unreached targets are absent.

    Parameters
    ----------
    succ : mapping
        ``{node: {successor: link index}}``.
    middle, edge_ok : callables
        As for :func:`shortest_paths`.
    """
    wanted = set(targets)
    dist: dict[str, int] = {src: 0}
    pred: dict[str, list[tuple[str, int]]] = {src: []}
    frontier, level = [src], 0
    while frontier and not wanted <= dist.keys():
        level += 1
        following = []
        for node in frontier:
            if node != src and not middle(node):
                continue
            for other, link in succ[node].items():
                seen = dist.get(other)
                if seen is None:
                    if edge_ok(node, other):
                        dist[other] = level
                        pred[other] = [(node, link)]
                        following.append(other)
                elif seen == level and edge_ok(node, other):
                    pred[other].append((node, link))
        frontier = following
    return pred
