"""NCCL as an algorithm: the channels it would run, and the time its model predicts.

``plan`` returns the schedule of the algorithm NCCL would choose for the
size (its rings over NVLink, the NVSwitch, PCIe or host memory; its double
binary tree; hierarchical rings across nodes), so the replay shows which
links carry what. ``analytic_time`` is NCCL's own cost: the time the
validation against nccl-tests uses, with protocol overheads and latencies
that an ideal replay leaves out.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from commsim.algorithms.base import Algorithm, Params, Problem
from commsim.algorithms.direct import Direct
from commsim.algorithms.hierarchical import Hierarchical
from commsim.algorithms.multi_ring import MultiRing
from commsim.algorithms.registry import register
from commsim.algorithms.ring import Ring
from commsim.algorithms.tree import Tree
from commsim.collectives import Collective
from commsim.errors import AlgorithmError
from commsim.nccl.channel_cut import nccl_channels, ring_ll_bytes_per_channel, ring_ll_channels
from commsim.nccl.channels import ring_packing
from commsim.nccl.intra import chain_schedule, packed_rings
from commsim.nccl.model import P2P_COLLECTIVES, NcclModel, NcclPrediction, ring_schedule
from commsim.nccl.network import MAX_CHANNEL_RANKS, node_rings, node_trees
from commsim.nccl.params import NcclParams
from commsim.nccl.tuning_table import release_problem, version_note
from commsim.schedule import Schedule
from commsim.topology.model import Topology
from commsim.units import format_bandwidth, format_size, format_time

__all__ = ["Nccl"]


NcclAlgorithmName = Literal["ring", "tree", "nvls", "nvls_tree", "collnet_direct", "collnet_chain"]


class NcclAlgorithmParams(Params):
    """How NCCL is run (nccl-tests' ``-g``) and what it may choose."""

    gpus_per_thread: int = Field(1, ge=1, description="GPUs one host thread drives (nccl-tests -g)")
    cuda_graph: bool = Field(
        False, description="calls replayed from a CUDA graph (nccl-tests -G): no host issue time per call"
    )
    algorithms: list[NcclAlgorithmName] | None = Field(None, description="allowed algorithms, like NCCL_ALGO")
    collnet: bool = Field(
        False,
        description="the run enables CollNet, the network switch's reduction (NCCL_COLLNET_ENABLE=1 with a "
        "SHARP plugin; NCCL's default is off)",
    )
    protocols: list[Literal["LL", "LL128", "Simple"]] | None = Field(
        None, description="allowed protocols, like NCCL_PROTO (any case)"
    )
    nccl_version: str | None = Field(
        None,
        pattern=r"^\s*\d+\.\d+(\.\d+)?(\+[\w.]+)?\s*$",
        description="NCCL release whose tables apply (newest if unset)",
    )

    @field_validator("protocols", mode="before")
    @classmethod
    def _protocol_case(cls, value: Any) -> Any:
        """Protocols in any case, as validate --proto takes them: ``simple`` is ``Simple``."""
        if isinstance(value, list):
            names = {p.lower(): p for p in ("LL", "LL128", "Simple")}
            return [names.get(v.lower(), v) if isinstance(v, str) else v for v in value]
        return value

    @field_validator("nccl_version", mode="before")
    @classmethod
    def _release(cls, value: Any) -> Any:
        """A version is text: unquoted, YAML and --param read 2.21 as a number (and 2.10 as 2.1)."""
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            raise ValueError(
                f"got the number {value}: quote the version as NCCL numbers it so it is read as text, "
                "e.g. nccl_version: '2.21' in YAML, --param \"nccl_version='2.21'\" on the command line "
                f"(unquoted, 2.10 reads as 2.1: {value} may not be the release meant)"
            )
        if isinstance(value, str) and (problem := release_problem(value)):
            raise ValueError(problem)
        return value


@register
class Nccl(Algorithm):
    """A model of NCCL: channel search on the topology, protocols, size-based choice.

    References
    ----------
    NCCL ``src/graph/tuning.cc`` (latencies, protocol factors) and
    ``src/graph/search.cc`` (rings over NVLink, PCIe, host memory, NICs).
    """

    name = "nccl"
    summary = "NCCL's choice of ring/tree/NVLS and LL/LL128/Simple by its cost model"
    reference = "NCCL src/graph/tuning.cc and search.cc"
    collectives = frozenset(
        {
            Collective.ALL_REDUCE,
            Collective.REDUCE_SCATTER,
            Collective.ALL_GATHER,
            Collective.BROADCAST,
            Collective.REDUCE,
            Collective.ALL_TO_ALL,
            Collective.GATHER,
            Collective.SCATTER,
        }
    )
    Params = NcclAlgorithmParams
    time_from_model = True

    def model(self, topology: Topology) -> NcclModel:
        """The NCCL model of ``topology`` (kept for the last topology asked, so plan and time share it)."""
        assert isinstance(self.params, NcclAlgorithmParams)
        kept = getattr(self, "_model", None)
        if kept is None or kept.topology is not topology:
            kept = NcclModel.of(topology, version=self.params.nccl_version, collnet=self.params.collnet)
            self._model = kept
        return kept

    def predict(self, problem: Problem) -> NcclPrediction:
        """The model's choice and every candidate for ``problem``."""
        assert isinstance(self.params, NcclAlgorithmParams)
        algorithms = tuple(self.params.algorithms) if self.params.algorithms else None
        protocols = tuple(self.params.protocols) if self.params.protocols else None
        return self.model(problem.topology).predict(
            problem, self.params.gpus_per_thread, algorithms, protocols, cuda_graph=self.params.cuda_graph
        )

    def plan(self, problem: Problem) -> Schedule:
        self.check(problem)
        prediction = self.predict(problem)
        machine, chosen = prediction.machine, prediction.chosen.algorithm
        single = machine.nodes == 1
        if problem.collective is Collective.ALL_REDUCE:
            if chosen == "tree":
                if not single and machine.per_node * problem.n <= MAX_CHANNEL_RANKS:
                    return node_trees(problem.topology, problem.ranks, machine.transport, problem.nbytes)
                return Tree({"shape": "double_binary"}).plan(problem)
            if chosen == "nvls" and single:
                return _as_direct(problem, "replays NVLS in one NVSwitch box as direct's two-shot all-reduce")
            if chosen.startswith("collnet") or chosen == "nvls":  # across nodes only with CollNet: the
                return Hierarchical().plan(problem)  # switch reduces, which no schedule can; the nearest plan
            if not single:
                return _node_rings(problem, machine.transport) or Hierarchical().plan(problem)
            return ring_schedule(problem.topology, problem.ranks, machine.transport, problem.nbytes, False)
        if problem.collective in P2P_COLLECTIVES:
            return _as_direct(problem, f"replays {problem.collective} as direct's grouped sends to each peer")
        if problem.collective in (Collective.BROADCAST, Collective.REDUCE):
            if single:
                topo, coll = problem.topology, problem.collective
                return chain_schedule(
                    topo, problem.ranks, machine.transport, problem.nbytes, coll, problem.root
                )
            return Tree({"shape": "chain"}).plan(problem)
        if not single:
            return _node_rings(problem, machine.transport) or Ring().plan(problem)
        if machine.transport == "nvlink":
            rings = ring_packing(problem.topology, problem.ranks)
            if rings is not None:
                return packed_rings(problem.ranks, rings, problem.nbytes, problem.collective)
            return MultiRing().plan(problem)
        return Ring().plan(problem)

    def analytic_time(self, problem: Problem) -> float | None:
        """NCCL's predicted time: its choice's GPU time, or the host's issue time if longer."""
        return self.predict(problem).time_s

    def explain(self, problem: Problem) -> str:
        """The machine as NCCL sees it, every candidate, and the choice."""
        prediction = self.predict(problem)
        assert isinstance(self.params, NcclAlgorithmParams)
        params = NcclParams.of(problem.topology)
        era = self.model(problem.topology).table.name
        given = self.params.nccl_version
        version = f"{given}, tables of its {era} era" if given else f"newest, tables of the {era} era"
        if note := version_note(given):
            version += f"; {note}"
        host = (
            "none: the calls are replayed from a CUDA graph"
            if self.params.cuda_graph
            else f"{format_time(prediction.host_s)} ({format_time(params.launch_s)} per GPU, "
            f"{self.params.gpus_per_thread} GPU(s) per host thread)"
        )
        lines = [
            f"NCCL model (NCCL {version}): {prediction.machine.describe()}; ring bus bandwidth "
            f"{format_bandwidth(prediction.ring_busbw_Bps)}; time = the larger of the host's issue time "
            f"{host} and the GPUs' time = {params.latency_scale:g} x latency + size / algbw"
        ]
        for c in sorted(prediction.candidates, key=lambda c: c.time_s):
            mark = "->" if c == prediction.chosen else "  "
            lines.append(
                f" {mark} {c.algorithm:9s} {c.protocol:6s} latency {format_time(c.latency_s):>9s}  "
                f"algbw {format_bandwidth(c.algbw_Bps):>11s}  time {format_time(c.time_s)}"
            )
        if prediction.chosen.fill_s > 0:
            lines.append(
                f"    pipeline fill: the chosen {prediction.chosen.algorithm} call streams its chunks "
                f"through its stages, {format_time(prediction.chosen.fill_s)} beyond its latency (included "
                "in its time; NCCL chooses without it)"
            )
        if (cut := prediction.chosen.cut_s) > 0:
            channels = nccl_channels(prediction.machine)
            used = ring_ll_channels(problem.nbytes, problem.n, channels)
            per_channel = format_size(ring_ll_bytes_per_channel(problem.n))
            lines.append(
                f"    idle channels: NCCL runs this ring LL call on {used} of its {channels} channels "
                f"(one per {per_channel} of buffer: 512 threads x 8 B x {problem.n} ranks), "
                f"{format_time(cut)} more than on all of them (included in its time; NCCL chooses "
                "on all of them)"
            )
        if (cap := prediction.chosen.channel_cap_s) > 0:
            m, model = prediction.machine, self.model(problem.topology)
            rate = model.params.ring_channel_net(m.net_kind) or 0.0
            lines.append(
                f"    network channels: each of NCCL's {model.channel_count(m)} ring channels carries at "
                f"most {format_bandwidth(rate)} per direction over the {m.net_kind} NICs (a measured "
                f"rate NCCL's estimate does not hold), {format_time(cap)} more than at the NICs' rate "
                "(included in its time; NCCL chooses at the NICs' rate)"
            )
        if prediction.chosen.overlap_s > 0:
            lines.append(
                f"    overlap: back-to-back {prediction.chosen.algorithm} calls of a rooted collective "
                f"pipeline along the chain, hiding {format_time(prediction.chosen.overlap_s)} of its latency "
                "(left out of its time; NCCL chooses with it)"
            )
        if prediction.host_bound:
            lines.append(
                f"    host-bound: issuing the call takes {format_time(prediction.host_s)}, longer than the "
                f"GPUs' {format_time(prediction.chosen.time_s)}, so the call takes "
                f"{format_time(prediction.time_s)}"
            )
        return "\n".join(lines)


def _node_rings(problem: Problem, transport: str) -> Schedule | None:
    """NCCL's multi-node ring channels (one per rank of a node, see :mod:`commsim.nccl.network`),
    each on its share of the buffer; None when there would be more than ``MAX_CHANNEL_RANKS`` sends
    per step."""
    rings = node_rings(problem.topology, problem.ranks, transport)
    if len(rings) * problem.n > MAX_CHANNEL_RANKS:
        return None
    return packed_rings(problem.ranks, [(ring, 1.0) for ring in rings], problem.nbytes, problem.collective)


def _as_direct(problem: Problem, how: str) -> Schedule:
    """``direct``'s plan for ``problem``; its refusal (too many ranks) says the nccl algorithm asked."""
    try:
        return Direct().plan(problem)
    except AlgorithmError as exc:
        raise AlgorithmError(
            f"the nccl algorithm {how}, and {exc} (for nccl: its 'algorithms' parameter set to ring or tree)"
        ) from None
