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

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

from commsim.errors import TopologyError
from commsim.topology.elements import (
    DEVICE_KINDS,
    FORWARDING_KINDS,
    Device,
    Link,
    PhysicalLink,
    find_device,
    index_devices,
    merge_bonds,
)
from commsim.topology.linkkinds import LINK_KINDS, get_link_kind, kinds_matching
from commsim.topology.route_table import MULTIPATH_POLICIES, RouteTable, flow_hash

if TYPE_CHECKING:
    import networkx as nx

__all__ = [
    "DEVICE_KINDS",
    "FORWARDING_KINDS",
    "MULTIPATH_POLICIES",
    "Device",
    "Link",
    "PhysicalLink",
    "Topology",
    "flow_hash",
]


MAX_LINK_Bps = 1e30
"""The largest bandwidth a link may have: far past any link (a whole NVLink 5 GPU has 1.8e12 B/s), a
figure that only stands for "free" in a what-if, as large as the engine's arithmetic takes (a link of
1e300 B/s overflowed the replay's sums and ran for minutes)."""


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
        On an empty name, duplicate devices, unknown endpoints, non-positive
        bandwidths, negative latencies, or GPUs that cannot reach each other.
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
        if not isinstance(self.name, str) or not self.name:  # the YAML schema needs one to save it
            raise TopologyError(f"a topology's name must be a non-empty string, got {self.name!r}")
        if self.multipath not in MULTIPATH_POLICIES:
            raise TopologyError(
                f"topology {self.name!r}: multipath {self.multipath!r} is not one of "
                f"{', '.join(MULTIPATH_POLICIES)}"
            )
        self.devices = tuple(self.devices)
        self.physical_links = merge_bonds(self.physical_links)
        self.kind_overrides = dict(self.kind_overrides)
        self._device_by_name = index_devices(self.devices, self.name)
        self.links: list[Link] = []
        # successors and predecessors of every device: {device: {neighbour: link index}}
        self._succ: dict[str, dict[str, int]] = {d.name: {} for d in self.devices}
        self._pred: dict[str, dict[str, int]] = {d.name: {} for d in self.devices}
        for physical in self.physical_links:
            self._add_physical(physical)
        self._route_table = RouteTable(
            self.name, self._device_by_name, self.links, self._succ, self._pred, self.multipath
        )
        self._route_cache = self._route_table.cache  # the same dict: routes found so far
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
        if not bandwidth_Bps <= MAX_LINK_Bps:
            raise TopologyError(
                f"{where}: bandwidth {bandwidth_Bps!r} B/s is over {MAX_LINK_Bps:.0e} B/s, the most the "
                "engine's arithmetic takes (a free link in a what-if needs no more; an NVLink 5 GPU has "
                "1.8e12 B/s in all); check the figure and its unit"
            )
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
        return find_device(self._device_by_name, self.name, name)

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
        return self._route_table.routes(src, dst, kinds)

    def route(
        self, src: str, dst: str, kinds: Iterable[str] | None = None, flow_key: tuple[int, int] | None = None
    ) -> tuple[int, ...]:
        """One route from ``src`` to ``dst`` (link indices): the one a single flow takes.

        With ``multipath="hash"``, the route :func:`flow_hash` of ``flow_key``
        picks among :meth:`routes` (default key: the endpoints' device
        indices); with ``"spray"``, the first of :meth:`routes` (a send is
        split over all of them; see :meth:`routes`).
        """
        return self._route_table.route(src, dst, kinds, flow_key)

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
        (:func:`~commsim.topology.routing.shortest_path_dag`); the rest, and
        pairs without a route, are left to :meth:`routes` (which raises).
        """
        self._route_table.prefetch(pairs, kinds)

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
