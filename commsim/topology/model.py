"""The machine model: devices joined by full-duplex links, as a directed graph.

A :class:`Topology` holds devices (GPUs, CPUs, PCIe switches, NVSwitches,
NICs, network switches) and physical links. Every physical link becomes two
directed links, one per direction, each a capacity of its own (full
duplex). Links bonded between the same two devices (``NV2``) add up into one
link per direction with ``count`` links. The adjacency is kept in plain
dicts; :attr:`Topology.graph` builds the same machine as a
:class:`networkx.DiGraph` on first use (networkx is not imported before:
it is a tenth of a second of every command's start-up).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from commsim.errors import TopologyError, UnknownNameError
from commsim.topology.linkkinds import LINK_KINDS, get_link_kind, kinds_matching
from commsim.topology.routing import best_routes_arrays, best_routes_from, shortest_path_dag, shortest_paths
from commsim.units import format_bandwidth

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["DEVICE_KINDS", "MULTIPATH_POLICIES", "Device", "Link", "PhysicalLink", "Topology", "flow_hash"]

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

DEVICE_KINDS = ("gpu", "cpu", "pcie_switch", "nvswitch", "nic", "switch", "memory")
"""Device kinds a topology may contain."""

FORWARDING_KINDS = frozenset({"cpu", "pcie_switch", "nvswitch", "nic", "switch", "memory"})
"""Device kinds that may sit in the middle of a route (GPUs only send and receive)."""


@dataclass(frozen=True)
class Device:
    """A node of the machine graph.

    Attributes
    ----------
    name : str
        Unique name, e.g. ``"gpu0"``.
    kind : str
        One of :data:`DEVICE_KINDS`.
    box : int
        Index of the server (box) the device sits in; 0 for single-box machines.
    model : str or None
        Hardware model, e.g. ``"V100-SXM2"``.
    reduce_bandwidth_Bps : float or None
        Rate at which the device sums incoming data, bytes per second; None
        means reductions are free (the textbook's idealisation).
    serves : tuple of str
        For a NIC: the GPUs it belongs to (NCCL gives each GPU its nearest
        NIC). Routes leaving a GPU prefer its own NICs among equal choices.
    """

    name: str
    kind: str
    box: int = 0
    model: str | None = None
    reduce_bandwidth_Bps: float | None = None
    serves: tuple[str, ...] = ()


@dataclass(frozen=True)
class PhysicalLink:
    """A full-duplex cable or bundle between two devices, as written in a file.

    ``bandwidth_Bps`` and ``latency_s`` are per single link and per direction;
    None means the kind's default (topology-level override first, then the
    catalogue).
    """

    a: str
    b: str
    kind: str
    count: int = 1
    bandwidth_Bps: float | None = None
    latency_s: float | None = None


@dataclass(frozen=True)
class Link:
    """One direction of a physical link: a capacity the engine shares among flows.

    Attributes
    ----------
    index : int
        Position in :attr:`Topology.links`.
    src, dst : str
        Device names.
    kind, family : str
        Link kind and its family.
    count : int
        Number of bonded links.
    bandwidth_Bps : float
        Total capacity in this direction (per-link bandwidth times ``count``).
    latency_s : float
        Latency of one traversal.
    """

    index: int
    src: str
    dst: str
    kind: str
    family: str
    count: int
    bandwidth_Bps: float
    latency_s: float

    @property
    def name(self) -> str:
        """``"src->dst"``."""
        return f"{self.src}->{self.dst}"

    def describe(self) -> str:
        """A short human label, e.g. ``gpu0->sw0 (pcie3_x16, 16 GB/s)``."""
        bonded = f"{self.count}x " if self.count > 1 else ""
        return f"{self.name} ({bonded}{self.kind}, {format_bandwidth(self.bandwidth_Bps)})"


@dataclass(eq=False)
class Topology:
    """A machine: devices, physical links and the directed link graph.

    Parameters
    ----------
    name : str
        Name of the machine.
    devices : sequence of Device
        Devices; GPUs get ranks in the order given.
    physical_links : sequence of PhysicalLink
        Full-duplex links; several between the same pair and kind are bonded.
    kind_overrides : mapping, optional
        ``{kind or family: (bandwidth_Bps or None, latency_s or None)}``
        defaults applied to links that do not set their own figures.
    description : str
        Free text, e.g. the source of the figures.
    peer_to_peer : bool
        Whether GPUs may read and write each other's memory directly over
        PCIe/NVLink. Without it (consumer GPUs on stock drivers, some
        virtual machines) NCCL stages data through host memory.
    nccl : mapping, optional
        Calibrated parameters of the NCCL model for this machine
        (:class:`commsim.nccl.NcclParams` fields), written by ``commsim calibrate``.
    multipath : {"spray", "hash"}
        What a send does when several routes are equally good (see
        :meth:`routes`): ``"spray"`` (default) splits it evenly over all of
        them, as adaptive routing and packet spraying do (InfiniBand
        adaptive routing, NVIDIA Spectrum-X, RoCE with per-packet spraying;
        inside a box, NVSwitch planes); ``"hash"`` puts it on one route
        picked by :func:`flow_hash` of its endpoints' indices, as static
        ECMP does on Ethernet/RoCE fabrics, so flows can collide on a link.

    Raises
    ------
    TopologyError
        On duplicate devices, unknown endpoints, non-positive bandwidths,
        negative latencies, or GPUs that cannot reach each other.
    """

    name: str
    devices: Sequence[Device]
    physical_links: Sequence[PhysicalLink]
    kind_overrides: Mapping[str, tuple[float | None, float | None]] = field(default_factory=dict)
    description: str = ""
    peer_to_peer: bool = True
    nccl: Mapping[str, Any] | None = None
    multipath: str = "spray"

    def __post_init__(self) -> None:
        if self.multipath not in MULTIPATH_POLICIES:
            raise TopologyError(
                f"topology {self.name!r}: multipath {self.multipath!r} is not one of "
                f"{', '.join(MULTIPATH_POLICIES)}"
            )
        self.devices = tuple(self.devices)
        self.physical_links = _merge_bonds(self.physical_links)
        self.kind_overrides = dict(self.kind_overrides)
        self._device_by_name = _index_devices(self.devices, self.name)
        self.links: list[Link] = []
        # successors and predecessors of every device: {device: {neighbour: link index}}
        self._succ: dict[str, dict[str, int]] = {d.name: {} for d in self.devices}
        self._pred: dict[str, dict[str, int]] = {d.name: {} for d in self.devices}
        for physical in self.physical_links:
            self._add_physical(physical)
        self._kind_of = {d.name: d.kind for d in self.devices}
        self._route_cache: dict[tuple[str, str, frozenset[str] | None], tuple[tuple[int, ...], ...]] = {}
        self._device_index = {d.name: i for i, d in enumerate(self.devices)}
        self._bandwidth = [link.bandwidth_Bps for link in self.links]
        self._bandwidth_array = np.array(self._bandwidth, dtype=float)
        self._nic_serves = {d.name: d.serves for d in self.devices if d.kind == "nic" and d.serves}
        self._check_connected()

    # -- construction -------------------------------------------------
    def _add_physical(self, physical: PhysicalLink) -> None:
        for end in (physical.a, physical.b):
            if end not in self._device_by_name:
                raise TopologyError(
                    f"topology {self.name!r}: link {physical.a}-{physical.b} names unknown "
                    f"device {end!r}; devices: {', '.join(self._device_by_name)}"
                )
        if physical.a == physical.b:
            raise TopologyError(f"topology {self.name!r}: link from {physical.a!r} to itself")
        kind = get_link_kind(physical.kind)
        bandwidth_Bps, latency_s = self._figures(physical)
        for src, dst in ((physical.a, physical.b), (physical.b, physical.a)):
            link = Link(
                index=len(self.links),
                src=src,
                dst=dst,
                kind=kind.name,
                family=kind.family,
                count=physical.count,
                bandwidth_Bps=bandwidth_Bps * physical.count,
                latency_s=latency_s,
            )
            self.links.append(link)
            self._succ[src][dst] = self._pred[dst][src] = link.index

    def _figures(self, physical: PhysicalLink) -> tuple[float, float]:
        kind = LINK_KINDS[physical.kind]
        by_kind = self.kind_overrides.get(kind.name, (None, None))
        by_family = self.kind_overrides.get(kind.family, (None, None))
        bandwidth_Bps = _first(physical.bandwidth_Bps, by_kind[0], by_family[0], kind.bandwidth_Bps)
        latency_s = _first(physical.latency_s, by_kind[1], by_family[1], kind.latency_s)
        where = f"topology {self.name!r}, link {physical.a}-{physical.b} ({physical.kind})"
        if not bandwidth_Bps > 0:
            raise TopologyError(f"{where}: bandwidth must be positive, got {bandwidth_Bps!r} B/s")
        if not latency_s >= 0:
            raise TopologyError(f"{where}: latency must be zero or positive, got {latency_s!r} s")
        if physical.count < 1:
            raise TopologyError(f"{where}: count must be at least 1, got {physical.count}")
        return bandwidth_Bps, latency_s

    def _check_connected(self) -> None:
        gpus = self.gpus
        if not gpus:
            raise TopologyError(f"topology {self.name!r} has no GPU")
        reachable = {gpus[0]}
        frontier = [gpus[0]]
        while frontier:
            frontier = [n for node in frontier for n in self._succ[node] if n not in reachable]
            reachable.update(frontier)
        missing = [g for g in gpus if g not in reachable]
        if missing:
            raise TopologyError(
                f"topology {self.name!r} is disconnected: {', '.join(missing)} cannot be "
                f"reached from {gpus[0]}"
            )

    # -- queries --------------------------------------------------------
    @cached_property
    def graph(self) -> nx.DiGraph:
        """The machine as a :class:`networkx.DiGraph`: nodes carry ``device``, edges ``link`` (index).

        Built on first use; the topology itself does not need networkx.
        """
        import networkx as nx

        graph = nx.DiGraph(name=self.name)
        for device in self.devices:
            graph.add_node(device.name, device=device)
        for link in self.links:
            graph.add_edge(link.src, link.dst, link=link.index)
        return graph

    def successors(self, name: str) -> list[str]:
        """Devices that ``name`` has a link to, in the order the links were declared."""
        return list(self._succ[name])

    def has_link(self, src: str, dst: str) -> bool:
        """Whether a directed link ``src -> dst`` exists."""
        return dst in self._succ.get(src, {})

    @cached_property
    def gpus(self) -> list[str]:
        """GPU names in rank order."""
        return [d.name for d in self.devices if d.kind == "gpu"]

    def device(self, name: str) -> Device:
        """The device called ``name``; UnknownNameError lists the valid names."""
        try:
            return self._device_by_name[name]
        except KeyError:
            raise UnknownNameError(
                f"device of topology {self.name!r}", name, list(self._device_by_name)
            ) from None

    def has_device(self, name: str) -> bool:
        """Whether a device called ``name`` exists."""
        return name in self._device_by_name

    def devices_of_kind(self, kind: str) -> list[str]:
        """Names of the devices of one kind, in declaration order."""
        return [d.name for d in self.devices if d.kind == kind]

    def link(self, src: str, dst: str) -> Link:
        """The directed link from ``src`` to ``dst``.

        Raises
        ------
        TopologyError
            If the two devices are not directly linked.
        """
        index = self._succ.get(src, {}).get(dst)
        if index is None:
            self.device(src)
            self.device(dst)
            raise TopologyError(f"topology {self.name!r} has no link {src}->{dst}")
        return self.links[index]

    def links_between(self, nodes: Sequence[str]) -> tuple[int, ...]:
        """Link indices of an explicit path given as device names."""
        if len(nodes) < 2:
            raise TopologyError(f"a path needs at least two devices, got {list(nodes)}")
        return tuple(self.link(a, b).index for a, b in zip(nodes, nodes[1:]))

    @cached_property
    def boxes(self) -> dict[int, list[str]]:
        """GPU names per box, boxes in ascending order."""
        result: dict[int, list[str]] = {}
        for gpu in self.gpus:
            result.setdefault(self._device_by_name[gpu].box, []).append(gpu)
        return dict(sorted(result.items()))

    def routes(self, src: str, dst: str, kinds: Iterable[str] | None = None) -> tuple[tuple[int, ...], ...]:
        """Every equally good route from ``src`` to ``dst`` (link indices), in link-index order.

        Equally good: the fewest hops; among those, the widest bottleneck;
        among those, the ones whose NICs belong to the endpoints (if any
        do). The result depends on the machine's structure only, never on
        device names. GPUs never forward.

        Parameters
        ----------
        src, dst : str
            Device names.
        kinds : iterable of str, optional
            Allowed link kinds or families (e.g. ``["nvlink"]``); None allows all.

        Raises
        ------
        TopologyError
            If no route exists over the allowed kinds.
        """
        allowed = kinds_matching(tuple(kinds)) if kinds is not None else None
        key = (src, dst, allowed)
        cached = self._route_cache.get(key)
        if cached is None:
            cached = self._find_routes(src, dst, allowed)
            self._route_cache[key] = cached
        return cached

    def route(
        self, src: str, dst: str, kinds: Iterable[str] | None = None, flow_key: tuple[int, int] | None = None
    ) -> tuple[int, ...]:
        """One route from ``src`` to ``dst`` (link indices): the one a single flow takes.

        With ``multipath="hash"``, the route :func:`flow_hash` of ``flow_key``
        picks among :meth:`routes` (default key: the endpoints' device
        indices); with ``"spray"``, the first of :meth:`routes` (a send is
        split over all of them; see :meth:`routes`).
        """
        candidates = self.routes(src, dst, kinds)
        if len(candidates) == 1 or self.multipath == "spray":
            return candidates[0]
        a, b = flow_key if flow_key is not None else (self._device_index[src], self._device_index[dst])
        return candidates[flow_hash(a, b) % len(candidates)]

    def with_multipath(self, multipath: str) -> Topology:
        """The same machine with another multipath policy (``"spray"`` or ``"hash"``)."""
        return Topology(
            self.name,
            self.devices,
            self.physical_links,
            self.kind_overrides,
            self.description,
            self.peer_to_peer,
            self.nccl,
            multipath,
        )

    def prefetch_routes(self, pairs: Iterable[tuple[str, str]], kinds: Iterable[str] | None = None) -> None:
        """Find and cache the routes of many (src, dst) pairs at once (same routes as :meth:`routes`).

        A source with many destinations is searched once for all of them
        (:func:`~commsim.topology.routing.shortest_paths_from`); the rest, and
        pairs without a route, are left to :meth:`routes` (which raises).
        """
        allowed = kinds_matching(tuple(kinds)) if kinds is not None else None
        by_source: dict[str, set[str]] = {}
        for src, dst in pairs:
            if (src, dst, allowed) not in self._route_cache and src in self._succ and dst in self._succ:
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
                    self._route_cache[(src, dst, allowed)] = routes

    def _route_rules(
        self, allowed: frozenset[str] | None
    ) -> tuple[Callable[[str], bool], Callable[[str, str], bool]]:
        """(whether a device may forward, whether a directed link may be used) for routing."""
        kinds_of, succ, links = self._kind_of, self._succ, self.links

        def middle(node: str) -> bool:
            return kinds_of[node] in FORWARDING_KINDS

        def edge_ok(a: str, b: str) -> bool:
            return allowed is None or links[succ[a][b]].kind in allowed

        return middle, edge_ok

    def _find_routes(self, src: str, dst: str, allowed: frozenset[str] | None) -> tuple[tuple[int, ...], ...]:
        self.device(src)
        self.device(dst)
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
        return self._best_routes(src, dst, [self.links_between(p) for p in paths])

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
            device = self._device_by_name[self.links[i].dst]
            if (
                device.kind == "nic"
                and device.serves
                and src not in device.serves
                and dst not in device.serves
            ):
                return False
        return True

    # -- derived machines -------------------------------------------------
    def with_overrides(
        self, overrides: Mapping[str, tuple[float | None, float | None]], name: str | None = None
    ) -> Topology:
        """A copy whose links of the given kinds or families get new figures.

        Unlike ``kind_overrides`` at construction, these replace figures that
        links set themselves, e.g. to run the DGX-1 with NVLink at 18 GB/s.
        """
        kinds_matching(tuple(overrides))  # validates the names
        links = []
        for physical in self.physical_links:
            family = LINK_KINDS[physical.kind].family
            bandwidth_Bps, latency_s = physical.bandwidth_Bps, physical.latency_s
            for key in (family, physical.kind):  # the kind wins over its family
                if key in overrides:
                    new_bw, new_lat = overrides[key]
                    bandwidth_Bps = new_bw if new_bw is not None else bandwidth_Bps
                    latency_s = new_lat if new_lat is not None else latency_s
            links.append(replace(physical, bandwidth_Bps=bandwidth_Bps, latency_s=latency_s))
        return Topology(
            name=name or self.name,
            devices=self.devices,
            physical_links=links,
            kind_overrides=self.kind_overrides,
            description=self.description,
            peer_to_peer=self.peer_to_peer,
            nccl=self.nccl,
            multipath=self.multipath,
        )

    def scaled(
        self, factors: Mapping[str, float], latency_s: float | None = None, name: str | None = None
    ) -> Topology:
        """A copy whose link bandwidths are multiplied per family or kind.

        Parameters
        ----------
        factors : mapping
            ``{family or kind: factor}``; the kind wins over its family.
        latency_s : float, optional
            If given, every link's latency is set to it (e.g. 0 for a
            bandwidth-only replay).
        """
        links = []
        for physical in self.physical_links:
            bandwidth_Bps, link_latency_s = self._figures(physical)
            kind = LINK_KINDS[physical.kind]
            factor = factors.get(kind.name, factors.get(kind.family, 1.0))
            links.append(
                replace(
                    physical,
                    bandwidth_Bps=bandwidth_Bps * factor,
                    latency_s=link_latency_s if latency_s is None else latency_s,
                )
            )
        return Topology(
            name or self.name,
            self.devices,
            links,
            self.kind_overrides,
            self.description,
            self.peer_to_peer,
            self.nccl,
            self.multipath,
        )

    def __repr__(self) -> str:
        return (
            f"Topology({self.name!r}, {len(self.gpus)} GPUs, {len(self.devices)} devices, "
            f"{len(self.physical_links)} physical links)"
        )


def _first(*values: float | None) -> float:
    for value in values:
        if value is not None:
            return value
    raise AssertionError("the catalogue always has a value")


def _index_devices(devices: Sequence[Device], topology: str) -> dict[str, Device]:
    by_name: dict[str, Device] = {}
    for device in devices:
        if device.name in by_name:
            raise TopologyError(f"topology {topology!r}: device {device.name!r} is declared twice")
        if device.kind not in DEVICE_KINDS:
            raise TopologyError(
                f"topology {topology!r}: device {device.name!r} has unknown kind "
                f"{device.kind!r}; valid: {', '.join(DEVICE_KINDS)}"
            )
        if device.reduce_bandwidth_Bps is not None and not device.reduce_bandwidth_Bps > 0:
            raise TopologyError(
                f"topology {topology!r}: device {device.name!r} has reduce bandwidth "
                f"{device.reduce_bandwidth_Bps!r} B/s; it must be positive (omit it for free reductions)"
            )
        by_name[device.name] = device
    return by_name


def _merge_bonds(links: Iterable[PhysicalLink]) -> tuple[PhysicalLink, ...]:
    """Bond links declared more than once between the same pair of devices."""
    merged: dict[tuple[str, str], PhysicalLink] = {}
    for link in links:
        key = (min(link.a, link.b), max(link.a, link.b))
        previous = merged.get(key)
        if previous is None:
            merged[key] = link
        elif (previous.kind, previous.bandwidth_Bps, previous.latency_s) == (
            link.kind,
            link.bandwidth_Bps,
            link.latency_s,
        ):
            merged[key] = replace(previous, count=previous.count + link.count)
        else:
            raise TopologyError(
                f"links {link.a}-{link.b} are declared twice with different kinds or figures; "
                "bonded links must match (or give one link with count: N)"
            )
    return tuple(merged.values())
