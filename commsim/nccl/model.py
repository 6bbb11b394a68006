"""NCCL's choice of algorithm and protocol, and the time it takes.

For every candidate (algorithm, protocol) the GPUs' time for one call is

    kernel + latency_scale x latency + size / algbw

(plus, for the chosen NVLS or NVLS-tree candidate, the pipeline fill beyond
that latency: :mod:`commsim.nccl.chunking`; for a chosen ring LL call, the
bandwidth of the channels NCCL leaves idle: :mod:`commsim.nccl.channel_cut`)
with the latency from NCCL's own tables of the release in use
(:mod:`commsim.nccl.tuning`), ``kernel`` the fixed cost of starting and
ending one kernel on the GPU, and the bandwidth from the machine
(:mod:`commsim.nccl.intra` replays NCCL's channels in a box; the network
part is the used NICs at their transport's efficiency). NCCL runs the
candidate with the smallest predicted time, and so does this model.

The host issues calls while the GPUs run earlier ones: nccl-tests enqueues
its timed iterations back to back and synchronises once at the end, so one
call takes the larger of the GPUs' time and the host's time to issue it
(``launch_s`` per GPU the issuing thread drives: ``-g 8`` in one process
issues eight launches per call). Summing the two instead charges a
single-process 8-GPU run 25 us it does not spend at sizes where the GPUs
are the bottleneck, and misses host-bound small sizes by up to a third.

:class:`NcclModel` holds what the model needs for one machine and release:
``NcclModel.of(topology, params, version)`` once, then ``predict`` for every
size. Each model keeps the box bandwidths it has replayed (:mod:`commsim.nccl.replays`), so a validation of
thirty sizes replays the box once; :meth:`NcclModel.with_params` shares them
between parameter sets (a calibration tries many).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from commsim.algorithms.base import Problem
from commsim.collectives import Collective
from commsim.errors import AlgorithmError, UnknownNameError
from commsim.nccl import candidates as cand
from commsim.nccl import rccl, ring_net
from commsim.nccl.candidates import P2P_COLLECTIVES, Bandwidths
from commsim.nccl.channel_cut import bounded_channels, cut_s
from commsim.nccl.chunking import fill_s
from commsim.nccl.costs import NVLS_GENERATION, net_route_latency, nvlink_port_Bps, one_rank
from commsim.nccl.intra import host_path, ring_schedule
from commsim.nccl.machine import NcclMachine
from commsim.nccl.overlap import overlapped_s
from commsim.nccl.params import NcclParams
from commsim.nccl.prediction import Candidate, NcclPrediction
from commsim.nccl.rccl_tables import RcclTable, rccl_table_for
from commsim.nccl.replays import Replays
from commsim.nccl.restrict import allowed, none_allowed
from commsim.nccl.tuning import TuningTable, parse_version, table_for
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


AMD_TABLES = ("nccl", "rccl")
"""Cost tables an AMD GPU can be priced with (:class:`NcclModel` ``amd_tables``)."""


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
    amd_tables : {"nccl", "rccl"}
        The cost tables an AMD GPU is priced with: ``"nccl"`` (the default),
        NVIDIA's of the same release number; ``"rccl"``, RCCL's own
        (:mod:`commsim.nccl.rccl`). RCCL's tables choose its algorithm and
        protocol but misprice the time of measured AMD runs (``docs/architecture.md``);
        RCCL's availability rules (:func:`commsim.nccl.rccl.rules`) apply either way.
    net_protocol : str or None
        The network plugin's protocol where it has several (aws-ofi-nccl over EFA: ``"sendrecv"``
        or ``"rdma"``, :mod:`commsim.calibrate.infer_ofi`); it picks the transport's per-step
        overhead (:meth:`NcclParams.transport_latency`). None: the transport's default figure.
    collnet : bool
        The run enables CollNet (``NCCL_COLLNET_ENABLE=1`` with a SHARP plugin: the network switch
        reduces); NCCL does not by default. Adds CollNet Direct and Chain, and NVLS across nodes on
        NVLink SHARP machines, to all-reduce's candidates (:func:`commsim.nccl.candidates.collnet`).
    channels : int or None
        NCCL's channel count as a log prints it (``N coll channels``); None: from NCCL's search rules
        (:func:`commsim.nccl.channel_cut.nccl_channels`). A small ring LL call runs a share of them.
    channel_limits : (int or None, int or None)
        ``NCCL_MIN_NCHANNELS`` and ``NCCL_MAX_NCHANNELS`` as the run sets them: they bound the count
        NCCL's rules give (not one a log prints, which already holds them).
    """

    topology: Topology
    params: NcclParams
    version: str | None = None
    amd_tables: str = "nccl"
    net_protocol: str | None = None
    collnet: bool = False
    channels: int | None = None
    channel_limits: tuple[int | None, int | None] = (None, None)
    _replays: Replays | None = field(default=None, repr=False)
    _priced: dict[tuple[object, ...], tuple[NcclMachine, Bandwidths]] = field(
        default_factory=dict, repr=False
    )
    _raws: dict[tuple[object, ...], list[cand.Raw]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.amd_tables not in AMD_TABLES:
            raise UnknownNameError("AMD cost table", self.amd_tables, AMD_TABLES)
        if self._replays is None or self._replays.topology is not self.topology:
            self._replays = Replays(self.topology)  # replace(model, topology=...) replays anew

    @property
    def replays(self) -> Replays:
        """The machine's replayed bandwidths (shared by :meth:`with_params`)."""
        if self._replays is None:
            self._replays = Replays(self.topology)
        return self._replays

    @classmethod
    def of(
        cls,
        topology: Topology,
        params: NcclParams | None = None,
        version: str | None = None,
        amd_tables: str = "nccl",
        collnet: bool = False,
    ) -> NcclModel:
        """The model for ``topology`` (its calibrated ``nccl:`` parameters when ``params`` is None)."""
        return cls(topology, params or NcclParams.of(topology), version, amd_tables, collnet=collnet)

    def _rccl(self, m: NcclMachine) -> bool:
        """Whether this machine is priced with RCCL's tables (an AMD GPU, and ``amd_tables="rccl"``)."""
        return self.amd_tables == "rccl" and rccl.is_amd(m.arch)

    def with_params(self, params: NcclParams) -> NcclModel:
        """The same machine and release with other parameters (replayed bandwidths are shared)."""
        return replace(self, params=params, _priced={}, _raws={})

    @property
    def table(self) -> TuningTable:
        """NCCL's cost table of this release."""
        return table_for(self.version)

    @property
    def rccl_table(self) -> RcclTable:
        """RCCL's cost table of this release (AMD GPUs: :mod:`commsim.nccl.rccl`)."""
        return rccl_table_for(self.version)

    def machine(self, ranks: tuple[str, ...]) -> NcclMachine:
        """What NCCL sees on ``ranks`` (kept: it does not depend on the parameters)."""
        return self.replays.machine(ranks)

    def bandwidths(self, ranks: tuple[str, ...], collective: Collective) -> tuple[NcclMachine, Bandwidths]:
        """What NCCL sees on ``ranks`` and the bandwidths and latencies the candidates are priced from.

        Kept per (ranks, collective) for this parameter set: every size of a log reuses them.
        """
        key = (ranks, collective)
        if key not in self._priced:
            self._priced[key] = self._bandwidths(ranks, collective)
        return self._priced[key]

    def _bandwidths(self, ranks: tuple[str, ...], collective: Collective) -> tuple[NcclMachine, Bandwidths]:
        topo, params = self.topology, self.params
        m = self.machine(ranks)
        net_Bps = self.replays.network(ranks, m, params) if m.nodes > 1 else math.inf
        intra = math.inf
        if m.per_node > 1:
            box = topo.device(ranks[0]).box
            first_box = tuple(r for r in ranks if topo.device(r).box == box)
            intra = self.replays.intra(first_box, m.transport, collective, params)
        port = nvlink_port_Bps(topo, ranks[0]) * params.nvls_efficiency * NVLS_GENERATION.get(m.arch, 1.0)
        net_lat = net_route_latency(topo, m, ranks, params, self.net_protocol)
        send = (
            self.replays.crossing_send(ranks, m, params)
            if collective is Collective.SEND_RECV and m.nodes > 1
            else None
        )
        return m, Bandwidths(intra, net_Bps, net_lat, port, parse_version(self.version), send)

    def predict(
        self,
        problem: Problem,
        gpus_per_thread: int = 1,
        algorithms: tuple[str, ...] | None = None,
        protocols: tuple[str, ...] | None = None,
        *,
        cuda_graph: bool = False,
    ) -> NcclPrediction:
        """NCCL's choice and time for ``problem`` (on this model's topology).

        Parameters
        ----------
        problem : Problem
        gpus_per_thread : int
            GPUs one host thread drives (nccl-tests ``-g``); each adds ``launch_s``.
        algorithms, protocols : tuple of str, optional
            Restrict the choice, as ``NCCL_ALGO`` / ``NCCL_PROTO`` do.
        cuda_graph : bool
            The calls are replayed from a CUDA graph (nccl-tests ``-G``): the
            host issues no launch per call, so the call takes the GPUs' time.
        """
        m, bw = self.bandwidths(problem.ranks, problem.collective)
        raw = self._sized(self._base(problem, m, bw), problem.collective, m, problem.n, problem.nbytes)
        params = self.params
        host = _host_s(params, problem.n, gpus_per_thread, cuda_graph)
        scale, fixed = _latency_scale(params, problem.n), _kernel_s(params, problem.n)
        candidates = [
            Candidate(a, p, lat, rate, fixed + scale * lat + problem.nbytes / rate)
            for a, p, lat, rate in allowed(raw, algorithms, protocols)
        ]
        if not candidates:
            tables = (self.table.name, self.rccl_table)
            raise AlgorithmError(
                none_allowed(problem.collective, raw, algorithms, protocols, tables, m, self.collnet)
            )
        best = min(candidates, key=lambda c: (c.time_s, c.algorithm, c.protocol))
        fill = fill_s(best.algorithm, m, problem.nbytes, best.algbw_Bps, scale * best.latency_s, bw.version)
        hidden = overlapped_s(
            self.table, problem.collective, best.algorithm, best.protocol, scale * best.latency_s, scale
        )
        cut = self._cut_s(best.algorithm, best.protocol, problem.nbytes, best.algbw_Bps, problem, m, bw)
        cap = self._channel_cap_s(best.algorithm, best.protocol, problem.nbytes, best.algbw_Bps, problem, m)
        chosen = replace(
            best,
            time_s=best.time_s + fill + cut + cap - hidden,
            fill_s=fill,
            overlap_s=hidden,
            cut_s=cut,
            channel_cap_s=cap,
        )
        candidates = [chosen if c is best else c for c in candidates]
        return NcclPrediction(m, chosen, candidates, bw.busbw_Bps, host)

    def times(
        self,
        problem: Problem,
        sizes: Sequence[float],
        gpus_per_thread: int = 1,
        algorithms: tuple[str, ...] | None = None,
        protocols: tuple[str, ...] | None = None,
        *,
        cuda_graph: bool = False,
    ) -> list[float]:
        """The chosen candidate's time (s) for each of ``sizes`` (``problem.nbytes`` is ignored).

        The same as :meth:`predict` size by size, without building every candidate: a calibration
        asks for thousands of predictions per log.
        """
        m, bw = self.bandwidths(problem.ranks, problem.collective)
        base = allowed(self._base(problem, m, bw), algorithms, protocols)
        if not base:
            self.predict(problem, gpus_per_thread, algorithms, protocols)  # raises, naming what applies
        params, n, coll = self.params, problem.n, problem.collective
        host, scale = _host_s(params, n, gpus_per_thread, cuda_graph), _latency_scale(params, n)
        fixed = _kernel_s(params, n)
        out = []
        for size in sizes:
            time, algorithm, proto, lat, rate = min(
                (fixed + scale * lat + size / rate, a, p, lat, rate)
                for a, p, lat, rate in self._sized(base, coll, m, n, size)
            )
            fill = fill_s(algorithm, m, size, rate, scale * lat, bw.version)
            cut = self._cut_s(algorithm, proto, size, rate, problem, m, bw)
            cap = self._channel_cap_s(algorithm, proto, size, rate, problem, m)
            hidden = overlapped_s(self.table, coll, algorithm, proto, scale * lat, scale)
            out.append(max(host, time + fill + cut + cap - hidden))  # as predict sums them
        return out

    def _cut_s(
        self,
        algorithm: str,
        protocol: str,
        nbytes: float,
        algbw_Bps: float,
        problem: Problem,
        m: NcclMachine,
        bw: Bandwidths,
    ) -> float:
        """The chosen candidate's time lost to the channels NCCL leaves idle (ring LL only:
        :mod:`commsim.nccl.channel_cut`)."""
        if algorithm != "ring" or protocol != "LL":
            return 0.0
        n, coll = problem.n, problem.collective
        spread = cand.ring_ll_spread_Bps(coll, m, bw, self.table) * n / cand.ring_steps(coll, n)
        channels = self.channel_count(m)
        return cut_s(nbytes, algbw_Bps, spread, n, m, channels)

    def channel_count(self, m: NcclMachine) -> int:
        """NCCL's channel count: the log's, else its rules' within the run's limits."""
        return self.channels or bounded_channels(m, self.channel_limits)

    def _channel_cap_s(
        self, algorithm: str, protocol: str, nbytes: float, algbw_Bps: float, problem: Problem, m: NcclMachine
    ) -> float:
        """The chosen ring's time lost to its network channels' rate (:mod:`commsim.nccl.ring_net`):
        across nodes, NVIDIA GPUs, NICs of a kind with a known rate only."""
        if algorithm != "ring" or not ring_net.applies(m):
            return 0.0
        rate = self.params.ring_channel_net(m.net_kind)
        if rate is None:
            return 0.0
        return ring_net.ring_channel_cap_s(
            nbytes, algbw_Bps, protocol, problem.collective, problem.n, self.channel_count(m), rate
        )

    def _base(self, problem: Problem, m: NcclMachine, bw: Bandwidths) -> list[cand.Raw]:
        """Every candidate before its size adjustments (kept per ranks and collective)."""
        key = (problem.ranks, problem.collective)
        if key not in self._raws:
            self._raws[key] = self._raw(problem, m, bw)
        return self._raws[key]

    def _sized(
        self, raw: list[cand.Raw], collective: Collective, m: NcclMachine, n: int, nbytes: float
    ) -> list[cand.Raw]:
        """NCCL's size-dependent terms: the ring plateau's latency, the tree's size correction."""
        if self._rccl(m):
            return rccl.sized(raw, m, nbytes, self.rccl_table)
        table = self.table
        out = []
        for a, p, lat, rate in raw:
            if a == "ring" and cand.plateau_applies(collective, m, n, p, nbytes):
                lat *= cand.plateau(table, m)
            elif a == "tree":
                rate *= table.correction(p, nbytes)
            out.append((a, p, lat, rate))
        return out

    def _raw(self, problem: Problem, m: NcclMachine, bw: Bandwidths) -> list[cand.Raw]:
        table, n, coll = self.table, problem.n, problem.collective
        if n == 1:
            return one_rank(problem, self.params)
        if coll in P2P_COLLECTIVES:
            return cand.p2p(coll, n, m, bw, table)
        if self._rccl(m):  # RCCL: ring, and tree for all-reduce (no NVLS; PAT off by default)
            extra = rccl.tree(m, bw, self.rccl_table) if coll is Collective.ALL_REDUCE else []
            return rccl.ring(coll, n, m, bw, self.rccl_table) + extra
        raw = cand.ring(coll, n, m, bw, table)
        if coll in (Collective.ALL_GATHER, Collective.REDUCE_SCATTER):
            raw += cand.pat(n, m, bw, table)
        if coll is Collective.ALL_REDUCE:
            raw += cand.tree(n, m, bw, table)
            if m.nvls:
                raw += cand.nvls(m, bw, table)
            if self.collnet:
                raw += cand.collnet(m, bw, table)
        return rccl.rules(raw, m, self.rccl_table) if rccl.is_amd(m.arch) else raw


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


def _host_s(params: NcclParams, n: int, gpus_per_thread: int, cuda_graph: bool = False) -> float:
    """The host's time to issue one call: ``launch_s`` per GPU the thread drives, or a one-rank call's;
    none for calls replayed from a CUDA graph."""
    if cuda_graph:
        return 0.0
    return params.launch_s * gpus_per_thread if n > 1 else params.one_rank_s


def _latency_scale(params: NcclParams, n: int) -> float:
    """``latency_scale`` scales NCCL's tables; a one-rank call has none (its latency is 0)."""
    return params.latency_scale if n > 1 else 1.0


def _kernel_s(params: NcclParams, n: int) -> float:
    """The GPUs' fixed cost of a call beyond its latency: ``kernel_s`` for a one-rank copy, which has no
    NCCL latency; none for more ranks, whose kernel start and end are in NCCL's ``baseLat`` (NVIDIA sets
    the table to whole calls' measured times, so a kernel cost added to it would count them twice)."""
    return params.kernel_s if n == 1 else 0.0
