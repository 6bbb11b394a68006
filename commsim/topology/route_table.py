"""The routes a machine's sends take: the best of the shortest, chosen and cached per machine.

:mod:`commsim.topology.routing` searches the link graph (shortest paths,
GPUs never forwarding); this module decides among the routes it finds (the
widest bottleneck, then the endpoints' own NICs), applies the multipath
policy (:data:`MULTIPATH_POLICIES`, :func:`flow_hash`) and keeps every
answer in a :class:`RouteTable`, one per :class:`~commsim.topology.model.Topology`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from commsim.errors import TopologyError
from commsim.topology.elements import FORWARDING_KINDS, Device, Link, find_device
from commsim.topology.linkkinds import kinds_matching
from commsim.topology.routing import shortest_path_dag, shortest_paths
from commsim.topology.source_routes import best_routes_arrays, best_routes_from

__all__ = ["MULTIPATH_POLICIES", "RouteTable", "flow_hash"]

MULTIPATH_POLICIES = ("spray", "hash")
"""How a send uses several equal-cost routes: ``spray`` splits it evenly over all of them
(adaptive routing, packet spraying); ``hash`` puts it on one, picked by a hash of its
endpoints' indices (static ECMP)."""


def flow_hash(a: int, b: int) -> int:
    """A deterministic 64-bit mix of two indices (splitmix64 of ``a * 2**32 + b``).

    Static ECMP hashes a flow's header fields; here the fields are the
    endpoints' rank (or device) indices, so the choice never depends on names.
    """
    mask = (1 << 64) - 1
    z = ((a << 32) + b + 0x9E3779B97F4A7C15) & mask
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    return z ^ (z >> 31)


_MANY_TARGETS = 8
"""A source with at least this many uncached destinations in :meth:`Topology.prefetch_routes`
is searched once for all of them."""


class RouteTable:
    """The routes of one machine, found on first use and kept.

    :class:`~commsim.topology.model.Topology` answers ``routes``, ``route``
    and ``prefetch_routes`` through its table; see those methods.

    Parameters
    ----------
    name : str
        The machine's name, for messages.
    devices : mapping
        Devices by name, in declaration order.
    links : list of Link
        Directed links; ``links[i].index == i``.
    succ, pred : mapping
        ``{device: {neighbour: link index}}`` out of and into every device.
    multipath : {"spray", "hash"}
        The machine's multipath policy.
    """

    def __init__(
        self,
        name: str,
        devices: Mapping[str, Device],
        links: list[Link],
        succ: Mapping[str, Mapping[str, int]],
        pred: Mapping[str, Mapping[str, int]],
        multipath: str,
    ) -> None:
        self.name, self.multipath = name, multipath
        self._devices, self._links, self._succ, self._pred = devices, links, succ, pred
        # (src, dst, allowed kinds) -> routes; read by tests as Topology._route_cache
        self.cache: dict[tuple[str, str, frozenset[str] | None], tuple[tuple[int, ...], ...]] = {}
        self._kind_of = {d.name: d.kind for d in devices.values()}
        self._device_index = {name: i for i, name in enumerate(devices)}
        self._bandwidth = [link.bandwidth_Bps for link in links]
        self._bandwidth_array = np.array(self._bandwidth, dtype=float)
        self._nic_serves = {d.name: d.serves for d in devices.values() if d.kind == "nic" and d.serves}

    def routes(self, src: str, dst: str, kinds: Iterable[str] | None = None) -> tuple[tuple[int, ...], ...]:
        """Every equally good route (see :meth:`Topology.routes <commsim.topology.model.Topology.routes>`)."""
        allowed = kinds_matching(tuple(kinds)) if kinds is not None else None
        key = (src, dst, allowed)
        cached = self.cache.get(key)
        if cached is None:
            cached = self._find_routes(src, dst, allowed)
            self.cache[key] = cached
        return cached

    def route(
        self, src: str, dst: str, kinds: Iterable[str] | None = None, flow_key: tuple[int, int] | None = None
    ) -> tuple[int, ...]:
        """The route of one flow (see :meth:`Topology.route <commsim.topology.model.Topology.route>`)."""
        candidates = self.routes(src, dst, kinds)
        if len(candidates) == 1 or self.multipath == "spray":
            return candidates[0]
        a, b = flow_key if flow_key is not None else (self._device_index[src], self._device_index[dst])
        return candidates[flow_hash(a, b) % len(candidates)]

    def prefetch(self, pairs: Iterable[tuple[str, str]], kinds: Iterable[str] | None = None) -> None:
        """Cache many pairs' routes at once (see :meth:`Topology.prefetch_routes
        <commsim.topology.model.Topology.prefetch_routes>`)."""
        allowed = kinds_matching(tuple(kinds)) if kinds is not None else None
        by_source: dict[str, set[str]] = {}
        for src, dst in pairs:
            if (src, dst, allowed) not in self.cache and src in self._succ and dst in self._succ:
                by_source.setdefault(src, set()).add(dst)
        middle, edge_ok = self._route_rules(allowed)
        for src, targets in by_source.items():
            if len(targets) >= _MANY_TARGETS:
                pred = shortest_path_dag(self._succ, src, targets, middle, edge_ok)
                ordered = sorted(targets - {src})
                arrays = best_routes_arrays(
                    src, ordered, pred, self._device_index, self._bandwidth_array, self._nic_serves
                )
                found = (  # None: routes through many NICs of other GPUs
                    arrays
                    if arrays is not None
                    else best_routes_from(src, ordered, pred, self._bandwidth, self._nic_serves)
                )
                for dst, routes in found.items():
                    self.cache[(src, dst, allowed)] = routes

    def _route_rules(
        self, allowed: frozenset[str] | None
    ) -> tuple[Callable[[str], bool], Callable[[str, str], bool]]:
        """(whether a device may forward, whether a directed link may be used) for routing."""
        kinds_of, succ, links = self._kind_of, self._succ, self._links

        def middle(node: str) -> bool:
            return kinds_of[node] in FORWARDING_KINDS

        def edge_ok(a: str, b: str) -> bool:
            return allowed is None or links[succ[a][b]].kind in allowed

        return middle, edge_ok

    def _find_routes(self, src: str, dst: str, allowed: frozenset[str] | None) -> tuple[tuple[int, ...], ...]:
        """The best routes from ``src`` to ``dst`` over the allowed kinds, searched (not cached)."""
        find_device(self._devices, self.name, src)
        find_device(self._devices, self.name, dst)
        if src == dst:
            raise TopologyError(f"no route from {src!r} to itself")
        middle, edge_ok = self._route_rules(allowed)
        paths = shortest_paths(self._succ, self._pred, src, dst, middle, edge_ok)
        if not paths:
            over = (
                "any link (routes may pass switches, CPUs and NICs, never another GPU)"
                if allowed is None
                else f"link kinds {', '.join(sorted(allowed))}"
            )
            raise TopologyError(f"topology {self.name!r} has no route from {src} to {dst} over {over}")
        return self._best_routes(src, dst, [self._path_links(p) for p in paths])

    def _path_links(self, path: Sequence[str]) -> tuple[int, ...]:
        """Link indices of a path of device names (every hop a link of the machine)."""
        succ = self._succ
        return tuple(succ[a][b] for a, b in zip(path, path[1:]))

    def _best_routes(
        self, src: str, dst: str, routes: Sequence[tuple[int, ...]]
    ) -> tuple[tuple[int, ...], ...]:
        """Of the shortest routes: the widest bottleneck, then those through the endpoints' own NICs."""
        bandwidth = self._bandwidth
        bottleneck = [min(map(bandwidth.__getitem__, r)) for r in routes]
        widest = max(bottleneck)
        best = sorted(r for r, b in zip(routes, bottleneck) if b == widest)
        own = [r for r in best if self._own_nics(r, src, dst)]
        return tuple(own or best)

    def _own_nics(self, route: tuple[int, ...], src: str, dst: str) -> bool:
        """Whether every NIC the route passes belongs to (or is shared by) its endpoints."""
        for i in route[:-1]:
            device = self._devices[self._links[i].dst]
            if (
                device.kind == "nic"
                and device.serves
                and src not in device.serves
                and dst not in device.serves
            ):
                return False
        return True
