"""NCCL's choice of algorithm and protocol, and the time it takes.

For every candidate (algorithm, protocol) the time is

    launch + latency_scale x latency + size / algbw

with the latency from NCCL's own tables of the release in use
(:mod:`commsim.nccl.tuning`) and the bandwidth from the machine
(:mod:`commsim.nccl.intra` replays NCCL's channels in a box; the network
part is the used NICs at their transport's efficiency). NCCL runs the
candidate with the smallest predicted time, and so does this model.

:class:`NcclModel` holds what the model needs for one machine and release:
``NcclModel.of(topology, params, version)`` once, then ``predict`` for every
size. Each model keeps the box bandwidths it has replayed, so a validation of
thirty sizes replays the box once; :meth:`NcclModel.with_params` shares them
between parameter sets (a calibration tries many).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from commsim.algorithms.base import Problem
from commsim.collectives import Collective
from commsim.errors import AlgorithmError
from commsim.nccl import candidates as cand
from commsim.nccl.candidates import P2P_COLLECTIVES, Bandwidths
from commsim.nccl.intra import direct_algbw, efficiency_factors, host_path, intra_busbw, ring_schedule
from commsim.nccl.machine import NcclMachine, analyse
from commsim.nccl.network import network_Bps
from commsim.nccl.params import NcclParams
from commsim.nccl.tuning import TuningTable, parse_version, table_for
from commsim.topology.linkkinds import LINK_KINDS
from commsim.topology.model import Topology

__all__ = [
    "P2P_COLLECTIVES",
    "Candidate",
    "NcclModel",
    "NcclPrediction",
    "host_path",
    "predict",
    "ring_schedule",
]


@dataclass(frozen=True)
class Candidate:
    """One (algorithm, protocol) NCCL could use, with its predicted cost."""

    algorithm: str
    protocol: str
    latency_s: float
    algbw_Bps: float
    time_s: float


@dataclass(frozen=True)
class NcclPrediction:
    """The model's answer for one size: the choice and every candidate considered."""

    machine: NcclMachine
    chosen: Candidate
    candidates: list[Candidate]
    ring_busbw_Bps: float


_Memo = dict[tuple[object, ...], float]


@dataclass
class NcclModel:
    """The NCCL model of one machine, parameter set and NCCL release.

    Parameters
    ----------
    topology : Topology
    params : NcclParams
        Physical parameters (defaults documented in :mod:`commsim.nccl.params`).
    version : str or None
        NCCL release (``"2.22.3"``); None for the newest modelled.
    """

    topology: Topology
    params: NcclParams
    version: str | None = None
    _memo: _Memo = field(default_factory=dict, repr=False)

    @classmethod
    def of(
        cls, topology: Topology, params: NcclParams | None = None, version: str | None = None
    ) -> NcclModel:
        """The model for ``topology`` (its calibrated ``nccl:`` parameters when ``params`` is None)."""
        return cls(topology, params or NcclParams.of(topology), version)

    def with_params(self, params: NcclParams) -> NcclModel:
        """The same machine and release with other parameters (replayed bandwidths are shared)."""
        return NcclModel(self.topology, params, self.version, self._memo)

    @property
    def table(self) -> TuningTable:
        """NCCL's cost table of this release."""
        return table_for(self.version)

    def _intra(self, ranks: tuple[str, ...], transport: str, collective: Collective) -> float:
        """The box's ring bus bandwidth, or for grouped sends the box's algorithm bandwidth."""
        factors = efficiency_factors(self.topology, transport, self.params)
        direct = collective in P2P_COLLECTIVES and collective is not Collective.SEND_RECV
        chain = collective in (Collective.BROADCAST, Collective.REDUCE)
        key = (ranks, transport, collective if direct else chain, tuple(sorted(factors.items())))
        if key not in self._memo:
            if direct:
                effective = self.topology.scaled(factors, latency_s=0.0)
                self._memo[key] = direct_algbw(effective, ranks, collective)
            else:
                self._memo[key] = intra_busbw(self.topology, ranks, transport, factors, chain)
        return self._memo[key]

    def _factors(self, transport: str) -> dict[str, float]:
        """Link kind -> efficiency: NCCL's figure for every kind in the box, the transport's for NICs."""
        factors = efficiency_factors(self.topology, transport, self.params)
        for link in self.topology.links:
            if link.family in ("infiniband", "ethernet"):
                kind = LINK_KINDS.get(link.kind)
                transport_name = kind.transport if kind is not None else None
                factors[link.kind] = self.params.network_efficiency(link.kind, transport_name, link.family)
        return factors

    def _network(self, ranks: tuple[str, ...], m: NcclMachine) -> float:
        """A node's network bandwidth, replayed at NCCL's efficiencies (NICs, rails, fabric)."""
        factors = self._factors(m.transport)
        key = ("network", ranks, m.transport, tuple(sorted(factors.items())))
        if key not in self._memo:
            effective = self.topology.scaled(factors, latency_s=0.0)
            self._memo[key] = network_Bps(effective, ranks, m.transport)
        return self._memo[key]

    def bandwidths(self, ranks: tuple[str, ...], collective: Collective) -> tuple[NcclMachine, Bandwidths]:
        """What NCCL sees on ``ranks`` and the bandwidths and latencies the candidates are priced from."""
        topo, params = self.topology, self.params
        m = analyse(topo, ranks)
        net_Bps = self._network(ranks, m) if m.nodes > 1 else math.inf
        intra = math.inf
        if m.per_node > 1:
            box = topo.device(ranks[0]).box
            first_box = tuple(r for r in ranks if topo.device(r).box == box)
            intra = self._intra(first_box, m.transport, collective)
        port = _nvlink_port_Bps(topo, ranks[0]) * params.nvls_efficiency
        net_lat = _net_route_latency(topo, m, ranks, params)
        return m, Bandwidths(intra, net_Bps, net_lat, port, parse_version(self.version))

    def predict(
        self,
        problem: Problem,
        gpus_per_thread: int = 1,
        algorithms: tuple[str, ...] | None = None,
        protocols: tuple[str, ...] | None = None,
    ) -> NcclPrediction:
        """NCCL's choice and time for ``problem`` (on this model's topology).

        Parameters
        ----------
        problem : Problem
        gpus_per_thread : int
            GPUs one host thread drives (nccl-tests ``-g``); each adds ``launch_s``.
        algorithms, protocols : tuple of str, optional
            Restrict the choice, as ``NCCL_ALGO`` / ``NCCL_PROTO`` do.
        """
        m, bw = self.bandwidths(problem.ranks, problem.collective)
        raw = self._raw(problem, m, bw)
        params = self.params
        launch = params.launch_s * gpus_per_thread if problem.n > 1 else 0.0  # one_rank_s is the whole cost
        candidates = [
            Candidate(a, p, lat, rate, launch + params.latency_scale * lat + problem.nbytes / rate)
            for a, p, lat, rate in raw
            if (algorithms is None or a in algorithms) and (protocols is None or p in protocols)
        ]
        if not candidates:
            available = sorted({f"{a}/{p}" for a, p, _, _ in raw})
            raise AlgorithmError(
                f"no NCCL algorithm among {list(algorithms or [])} with protocols {list(protocols or [])} "
                f"applies to {problem.collective} on {m.describe()} (NCCL {self.table.name} tables); "
                f"available here: {', '.join(available)} (NVLS needs an NVSwitch box with Hopper or newer "
                "GPUs and NCCL 2.17+; LL128 needs NVLink and NCCL 2.5+; PAT one GPU per node and NCCL 2.23+)"
            )
        chosen = min(candidates, key=lambda c: (c.time_s, c.algorithm, c.protocol))
        return NcclPrediction(m, chosen, candidates, bw.busbw_Bps)

    def _raw(self, problem: Problem, m: NcclMachine, bw: Bandwidths) -> list[cand.Raw]:
        table, n, coll = self.table, problem.n, problem.collective
        if n == 1:
            return _one_rank(problem, self.params)
        if coll in P2P_COLLECTIVES:
            return cand.p2p(coll, n, m, bw, table)
        raw = cand.ring(coll, n, m, bw, table, problem.nbytes)
        if coll in (Collective.ALL_GATHER, Collective.REDUCE_SCATTER):
            raw += cand.pat(n, m, bw, table)
        if coll is Collective.ALL_REDUCE:
            raw += cand.tree(n, m, bw, table, problem.nbytes)
            if m.nvls:
                raw += cand.nvls(m, bw, table)
        return raw


def predict(
    problem: Problem,
    params: NcclParams | None = None,
    gpus_per_thread: int = 1,
    algorithms: tuple[str, ...] | None = None,
    protocols: tuple[str, ...] | None = None,
    version: str | None = None,
) -> NcclPrediction:
    """NCCL's choice and time for ``problem``: ``NcclModel.of(...).predict(...)`` for one call.

    Builds a fresh model (and replays the box) on every call; to predict many
    sizes of one machine keep an :class:`NcclModel`.
    """
    model = NcclModel(problem.topology, params or NcclParams(), version)
    return model.predict(problem, gpus_per_thread, algorithms, protocols)


def _nvlink_port_Bps(topology: Topology, gpu: str) -> float:
    return sum(l.bandwidth_Bps for l in topology.links if l.src == gpu and l.family == "nvlink")


def _net_route_latency(
    topology: Topology, machine: NcclMachine, ranks: tuple[str, ...], params: NcclParams
) -> float:
    """Latency of one network hop between the first two boxes: its links, plus its transport's overhead.

    The transport's overhead (``NcclParams.transport_latency_s``: the socket
    transport's and the EFA provider's cost per message beyond the wire) comes
    from the kind of the route's network links.
    """
    if machine.nodes < 2:
        return 0.0
    first = ranks[0]
    other = next(r for r in ranks if topology.device(r).box != topology.device(first).box)
    route = [topology.links[i] for i in topology.route(first, other)]
    network = [link for link in route if link.family in ("infiniband", "ethernet")]
    transports = {LINK_KINDS[link.kind].transport for link in network} - {None}
    overhead = max((params.transport_latency(t) for t in transports if t is not None), default=0.0)
    return sum(link.latency_s for link in network) + overhead


def _one_rank(problem: Problem, params: NcclParams) -> list[cand.Raw]:
    """One rank: NCCL copies the send buffer into the receive buffer on the GPU (out of place).

    The time is a fixed cost (``params.one_rank_s``) plus the bytes over the
    GPU's device-to-device copy rate (``local_copy_efficiency`` x memory bandwidth).
    """
    memory_Bps = _memory_Bps(problem.topology.device(problem.ranks[0]).model)
    return [("local_copy", "Simple", params.one_rank_s, params.local_copy_efficiency * memory_Bps)]


def _memory_Bps(model: str | None) -> float:
    """The GPU's memory bandwidth from the catalogue (the H100 SXM's 3.35 TB/s when unknown: validate
    reports that as an assumption)."""
    from commsim.hardware import find_gpu

    spec = find_gpu(model).spec if model else None
    value = spec.memory_Bps if spec is not None else None
    return float(value) if value else 3.35e12
