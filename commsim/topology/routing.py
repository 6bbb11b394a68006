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
the network). Both give the same set of routes for a pair.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

__all__ = ["best_routes_arrays", "best_routes_from", "shortest_path_dag", "shortest_paths"]

IntArray = NDArray[np.int64]
_SLOTS = 4  # NICs of other GPUs a route prefix may pass before best_routes_arrays gives up

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


Prefix = tuple[tuple[int, ...], float, tuple[tuple[str, ...], ...]]


def best_routes_from(
    src: str,
    targets: Sequence[str],
    pred: Mapping[str, list[tuple[str, int]]],
    bandwidth: Sequence[float],
    nic_serves: Mapping[str, tuple[str, ...]],
) -> dict[str, tuple[tuple[int, ...], ...]]:
    """The chosen routes from ``src`` to each target, read from :func:`shortest_path_dag`.

    The same choice as :meth:`commsim.topology.model.Topology.routes` makes
    among all shortest routes of a pair: the widest bottleneck, then those
    whose NICs all serve ``src`` or the target (if any), sorted. Each route
    prefix is built once, with its bottleneck and the NICs on it that do not
    serve ``src``, and shared by every target it leads to.

    Parameters
    ----------
    bandwidth : sequence of float
        Capacity of every link, by index.
    nic_serves : mapping
        For each NIC that belongs to some GPUs: those GPUs.
    """
    memo: dict[str, list[Prefix]] = {src: [((), float("inf"), ())]}

    def prefixes(node: str) -> list[Prefix]:
        found = memo.get(node)
        if found is None:
            serves = nic_serves.get(node, ())
            foreign = bool(serves) and src not in serves  # a NIC of other GPUs
            found = []
            for before, link in pred[node]:
                width = bandwidth[link]
                found += [
                    ((*head, link), low if low < width else width, (*others, serves) if foreign else others)
                    for head, low, others in prefixes(before)
                ]
            memo[node] = found
        return found

    result = {}
    for dst in targets:
        if dst not in pred:
            continue  # unreachable: left to the pair search, which raises
        last: list[tuple[float, tuple[tuple[str, ...], ...], tuple[int, ...], int]] = []
        for before, link in pred[dst]:
            width = bandwidth[link]
            last += [
                (low if low < width else width, others, head, link) for head, low, others in prefixes(before)
            ]
        widest = max(c[0] for c in last)
        best = [c for c in last if c[0] == widest]
        own = [c for c in best if all(dst in serves for serves in c[1])]
        result[dst] = tuple(sorted([(*c[2], c[3]) for c in own or best]))
    return result


def best_routes_arrays(
    src: str,
    targets: Sequence[str],
    pred: Mapping[str, list[tuple[str, int]]],
    index: Mapping[str, int],
    bandwidth: NDArray[np.float64],
    nic_serves: Mapping[str, tuple[str, ...]],
) -> dict[str, tuple[tuple[int, ...], ...]] | None:
    """:func:`best_routes_from`'s result, built one hop at a time for all routes at once in numpy.

    The route prefixes of one distance from ``src`` are rows of arrays (the
    links so far, the bottleneck, and up to four NICs on the way that do not
    serve ``src``), sorted by the device they reach; each hop of the
    predecessor table extends every prefix of its first device. Rows that
    reach a target are chosen as :func:`best_routes_from` chooses (widest
    bottleneck, then routes whose NICs all serve ``src`` or the target,
    ordered). Returns None if a prefix passes more than four such NICs (the
    caller then uses :func:`best_routes_from`).

    Parameters
    ----------
    index : mapping
        Device name to device index.
    bandwidth : float array
        Capacity of every link, by index.
    """
    wanted = [t for t in targets if t in pred and t != src]
    if not wanted:
        return {}
    # nodes that lead to a target, and their distance from src (pred is in BFS order)
    useful: set[str] = set()
    stack = list(wanted)
    while stack:
        node = stack.pop()
        if node in useful:
            continue
        useful.add(node)
        stack.extend(before for before, _ in pred[node])
    dist: dict[str, int] = {}
    layers: list[list[str]] = []
    for node, options in pred.items():
        if node not in useful:
            continue
        d = 0 if not options else dist[options[0][0]] + 1
        dist[node] = d
        if d == len(layers):
            layers.append([])
        layers[d].append(node)
    foreign = {n for n in useful if nic_serves.get(n) and src not in nic_serves[n]}
    serve_codes = np.array(
        sorted(index[n] * len(index) + index[g] for n in foreign for g in nic_serves[n] if g in index),
        np.int64,
    )
    n_dev = len(index)
    # rows of the current layer, sorted by the device they reach (at)
    at = np.array([index[src]], np.int64)
    path = np.empty((1, 0), np.int64)
    low = np.array([np.inf])
    slots = np.full((1, _SLOTS), -1, np.int64)
    names = {i: n for n, i in index.items()}
    is_target = np.zeros(n_dev, bool)
    is_target[[index[t] for t in wanted]] = True
    is_foreign_dev = np.zeros(n_dev, bool)
    if foreign:
        is_foreign_dev[[index[n] for n in foreign]] = True
    result: dict[str, tuple[tuple[int, ...], ...]] = {}
    for d in range(1, len(layers)):
        eu: list[int] = []
        ev: list[int] = []
        el: list[int] = []
        for v in layers[d]:  # the hops into this layer: (from, to, link)
            vi = index[v]
            for before, link in pred[v]:
                eu.append(index[before])
                ev.append(vi)
                el.append(link)
        e_u, e_v, e_l = np.array(eu, np.int64), np.array(ev, np.int64), np.array(el, np.int64)
        start = np.searchsorted(at, e_u, "left")
        lengths = np.searchsorted(at, e_u, "right") - start
        owner = np.repeat(np.arange(e_u.size), lengths)
        take = np.arange(owner.size) + np.repeat(start - (np.cumsum(lengths) - lengths), lengths)
        hop = e_l[owner]
        path = np.concatenate([path[take], hop[:, None]], axis=1)
        low = np.minimum(low[take], bandwidth[hop])
        slots = slots[take]
        at = e_v[owner]
        order = np.argsort(at, kind="stable")
        at, path, low, slots = at[order], path[order], low[order], slots[order]
        done = is_target[at]
        if done.any():  # a route's last device is not checked as a NIC on the way
            _choose(at[done], path[done], low[done], slots[done], serve_codes, n_dev, names, result)
        is_foreign = is_foreign_dev[at]
        if is_foreign.any():
            if not slots.shape[1]:
                return None
            free = np.argmax(slots < 0, axis=1)
            if (slots[is_foreign, free[is_foreign]] >= 0).any():
                return None
            rows = np.flatnonzero(is_foreign)
            slots[rows, free[rows]] = at[rows]
    return result


def _choose(
    node: IntArray,
    path: IntArray,
    low: NDArray[np.float64],
    slots: IntArray,
    serve_codes: IntArray,
    n_dev: int,
    names: Mapping[int, str],
    result: dict[str, tuple[tuple[int, ...], ...]],
) -> None:
    """The routes kept for the targets of some rows (sorted by target), into ``result``."""
    starts = np.flatnonzero(np.concatenate(([True], node[1:] != node[:-1])))
    group = np.cumsum(np.concatenate(([False], node[1:] != node[:-1])))
    widest = np.maximum.reduceat(low, starts)
    best = low == widest[group]
    own = np.ones(node.size, bool)
    for j in range(slots.shape[1]):
        nic = slots[:, j]
        code = nic * n_dev + node
        at = np.minimum(np.searchsorted(serve_codes, code), max(serve_codes.size - 1, 0))
        served = serve_codes[at] == code if serve_codes.size else np.zeros(node.size, bool)
        own &= (nic < 0) | served
    mine = best & own
    any_own = np.add.reduceat(mine.astype(np.int64), starts) > 0
    keep = np.where(any_own[group], mine, best)
    kept = np.flatnonzero(keep)
    keys = [path[kept, c] for c in range(path.shape[1] - 1, -1, -1)] + [group[kept]]
    kept = kept[np.lexsort(keys)]
    rows: list[tuple[int, ...]] = list(map(tuple, path[kept].tolist()))
    kept_group = group[kept]
    bounds = np.flatnonzero(np.concatenate(([True], kept_group[1:] != kept_group[:-1], [True])))
    first_nodes = node[kept[bounds[:-1]]].tolist()
    for g, (a, b) in enumerate(zip(bounds[:-1].tolist(), bounds[1:].tolist())):
        result[names[first_nodes[g]]] = tuple(rows[a:b])
