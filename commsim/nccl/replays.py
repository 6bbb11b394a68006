"""The bandwidths NCCL's channels reach on one machine, replayed once and kept.

:class:`~commsim.nccl.model.NcclModel` prices its candidates from three
replays of the topology at NCCL's link efficiencies: the box's rings (or, for
grouped sends, its direct routes; packed NVLink rings where one link kind
carries them), a node's network channels across the NICs, rails and fabric,
and send/recv's crossing send. Each replay depends on the topology, the ranks
and the efficiencies of the link kinds it crosses, not on the rest of the
parameters, so it is kept per those: a calibration that varies only NVLink
efficiencies replays the network once, and :meth:`NcclModel.with_params`
shares one :class:`Replays` between parameter sets.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from commsim.collectives import Collective
from commsim.nccl.candidates import P2P_COLLECTIVES
from commsim.nccl.channels import ring_packing
from commsim.nccl.intra import direct_algbw, efficiency_factors, intra_busbw
from commsim.nccl.machine import NcclMachine, analyse
from commsim.nccl.network import crossing_send_Bps, network_Bps, node_hops, node_rings
from commsim.nccl.params import NcclParams
from commsim.topology.model import Topology

__all__ = ["Replays"]


@dataclass
class Replays:
    """The replayed bandwidths of one topology, kept per ranks, transport and link efficiencies."""

    topology: Topology
    _memo: dict[tuple[object, ...], float] = field(default_factory=dict, repr=False)
    _machines: dict[tuple[str, ...], NcclMachine] = field(default_factory=dict, repr=False)
    _kinds: list[tuple[str, str]] = field(default_factory=list, repr=False)
    _memo_packing: dict[tuple[object, ...], tuple[float, str] | None] = field(
        default_factory=dict, repr=False
    )
    _scaled: dict[tuple[tuple[str, float], ...], Topology] = field(default_factory=dict, repr=False)
    _network_cache: dict[tuple[object, ...], tuple[list[tuple[str, ...]], frozenset[str]]] = field(
        default_factory=dict, repr=False
    )

    def intra(
        self, ranks: tuple[str, ...], transport: str, collective: Collective, params: NcclParams
    ) -> float:
        """The box's ring bus bandwidth, or for grouped sends the box's algorithm bandwidth."""
        everything = self.factors(transport, params)
        network = {kind for kind, family in self._kinds if family in ("infiniband", "ethernet")}
        factors = {k: v for k, v in everything.items() if k not in network}  # the box's links only
        direct = collective in P2P_COLLECTIVES and collective is not Collective.SEND_RECV
        chain = collective in (Collective.BROADCAST, Collective.REDUCE)
        if transport == "nvlink" and not direct:
            packed = self.packing(ranks)
            if packed is not None:  # one link kind: the optimum scales with its efficiency
                total, kind = packed
                return total * factors.get(kind, 1.0)
        key = (ranks, transport, collective if direct else chain, tuple(sorted(factors.items())))
        if key not in self._memo:
            if direct:
                self._memo[key] = direct_algbw(self.effective(factors), ranks, collective)
            else:
                self._memo[key] = intra_busbw(self.effective(factors), ranks, transport, chain)
        return self._memo[key]

    def packing(self, ranks: tuple[str, ...]) -> tuple[float, str] | None:
        """NCCL's packed rings at nominal speeds: (their total rate, the one link kind they use).

        A linear programme's optimum scales with its capacities, so when every
        link the rings use is of one kind, the rings at that kind's efficiency
        reach exactly the nominal total times it; None when they use several
        kinds (then the caller solves at the efficiencies) or cannot be packed.
        """
        key = ("packing", ranks)
        if key not in self._memo_packing:
            rings = ring_packing(self.topology, ranks)
            result: tuple[float, str] | None = None
            if rings:
                kinds = self.route_kinds(
                    (a, b) for order, _ in rings for a, b in zip(order, order[1:] + order[:1])
                )
                if len(kinds) == 1:
                    result = (sum(rate for _, rate in rings), next(iter(kinds)))
            self._memo_packing[key] = result
        return self._memo_packing[key]

    def route_kinds(self, hops: Iterable[tuple[str, str]]) -> frozenset[str]:
        """The link kinds the routes of ``hops`` (source, destination) cross on the nominal machine."""
        topo = self.topology
        return frozenset(topo.links[i].kind for a, b in hops for i in topo.route(a, b))

    def factors(self, transport: str, params: NcclParams) -> dict[str, float]:
        """Link kind -> efficiency at which NCCL's channels run on this machine."""
        if not self._kinds:
            self._kinds.extend(sorted({(link.kind, link.family) for link in self.topology.links}))
        return efficiency_factors(self._kinds, transport, params)

    def effective(self, factors: dict[str, float]) -> Topology:
        """The machine with its links at ``factors`` of their bandwidth and no latency (kept per factors)."""
        key = tuple(sorted(factors.items()))
        if key not in self._scaled:
            self._scaled[key] = self.topology.scaled(factors, latency_s=0.0)
        return self._scaled[key]

    def machine(self, ranks: tuple[str, ...]) -> NcclMachine:
        """What NCCL sees on ``ranks`` (kept: it does not depend on the parameters)."""
        if ranks not in self._machines:
            self._machines[ranks] = analyse(self.topology, ranks)
        return self._machines[ranks]

    def network(self, ranks: tuple[str, ...], m: NcclMachine, params: NcclParams) -> float:
        """A node's network bandwidth, replayed at NCCL's efficiencies (NICs, rails, fabric).

        Kept per the efficiencies of the link kinds its channels' routes cross between nodes
        (so a calibration that varies only NVLink efficiencies replays it once).
        """
        rings, kinds = self.network_routes(ranks, m.transport)
        factors = {k: v for k, v in self.factors(m.transport, params).items() if k in kinds}
        key = ("network", ranks, m.transport, tuple(sorted(factors.items())))
        if key not in self._memo:
            effective = self.effective({**{k: 1.0 for k, _ in self._kinds}, **factors})
            self._memo[key] = network_Bps(effective, ranks, m.transport, rings)
        return self._memo[key]

    def crossing_send(self, ranks: tuple[str, ...], m: NcclMachine, params: NcclParams) -> float:
        """send/recv's rate of one rank's send to the next node, replayed alone at NCCL's efficiencies."""
        key = ("send", ranks, m.transport, tuple(sorted(self.factors(m.transport, params).items())))
        if key not in self._memo:
            self._memo[key] = crossing_send_Bps(self.effective(self.factors(m.transport, params)), ranks)
        return self._memo[key]

    def network_routes(
        self, ranks: tuple[str, ...], transport: str
    ) -> tuple[list[tuple[str, ...]], frozenset[str]]:
        """NCCL's channels across nodes on the nominal machine, and the link kinds their hops cross."""
        key = ("routes", ranks, transport)
        if key not in self._network_cache:
            rings = node_rings(self.topology, ranks, transport)
            self._network_cache[key] = (rings, self.route_kinds(node_hops(rings)))
        return self._network_cache[key]
