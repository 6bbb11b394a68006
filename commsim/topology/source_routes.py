"""The best routes from one source to many destinations, read from one search's predecessor table.

:func:`commsim.topology.routing.shortest_path_dag` searches once from the
source; here every destination's routes are chosen among the shortest as
:class:`~commsim.topology.route_table.RouteTable` chooses for a pair (the
widest bottleneck, then those whose NICs all serve an endpoint, sorted),
building each route prefix once and sharing it: :func:`best_routes_arrays`
one hop at a time for all prefixes at once in numpy, :func:`best_routes_from`
in Python when a prefix passes more NICs of other GPUs than the arrays track.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

__all__ = ["best_routes_arrays", "best_routes_from"]

IntArray = NDArray[np.int64]
_SLOTS = 4  # NICs of other GPUs a route prefix may pass before best_routes_arrays gives up

Prefix = tuple[tuple[int, ...], float, tuple[tuple[str, ...], ...]]


def best_routes_from(
    src: str,
    targets: Sequence[str],
    pred: Mapping[str, list[tuple[str, int]]],
    bandwidth: Sequence[float],
    nic_serves: Mapping[str, tuple[str, ...]],
) -> dict[str, tuple[tuple[int, ...], ...]]:
    """The chosen routes from ``src`` to each target, read from the predecessors ``pred`` of one search.

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
