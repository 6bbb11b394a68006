"""What a machine adds to a call's cost beyond NCCL's tables: NVLink SHARP's port rate, the network
route's latency, and a one-rank call's local copy.

Used by :class:`~commsim.nccl.model.NcclModel`; NCCL's (and RCCL's) own figures are in
:mod:`commsim.nccl.tuning` and :mod:`commsim.nccl.rccl_tables`.
"""

from __future__ import annotations

from commsim.algorithms.base import Problem
from commsim.nccl.candidates import Raw
from commsim.nccl.machine import NcclMachine
from commsim.nccl.params import NcclParams
from commsim.topology.linkkinds import LINK_KINDS
from commsim.topology.model import Topology

__all__ = ["NVLS_GENERATION", "memory_Bps", "net_route_latency", "nvlink_port_Bps", "one_rank"]

NVLS_GENERATION = {"hopper": 1.0, "blackwell": 0.74 / 0.85}
"""NVLink SHARP's efficiency of a GPU generation relative to Hopper's, from NCCL's own
``nvlsEfficiency`` table (``src/graph/tuning.cc``, 2.25+; ``src/tuning/nvls.cc`` from 2.28:
Hopper 0.85, Blackwell 0.74): NVLink 5 doubles the ports' rate but the switches' reduction does not
keep up. ``NcclParams.nvls_efficiency`` is the Hopper figure; a Blackwell GPU's NVLS runs at it times
0.74 / 0.85 = 0.871."""


def nvlink_port_Bps(topology: Topology, gpu: str) -> float:
    """A GPU's NVLink port rate (B/s per direction): the sum of its NVLink links."""
    return sum(l.bandwidth_Bps for l in topology.links if l.src == gpu and l.family == "nvlink")


def net_route_latency(
    topology: Topology,
    machine: NcclMachine,
    ranks: tuple[str, ...],
    params: NcclParams,
    protocol: str | None = None,
) -> float:
    """Latency of one network hop between the first two boxes: its links, plus its transport's overhead.

    The transport's overhead (``NcclParams.transport_latency_s``: the EFA
    provider's and TCPXO's cost per message beyond the wire) comes from the
    kind of the route's network links and, where the transport's plugin has
    several protocols, the run's ``protocol`` (aws-ofi-nccl's ``"rdma"`` or
    ``"sendrecv"``; None: the transport's default figure).
    """
    if machine.nodes < 2:
        return 0.0
    first = ranks[0]
    other = next(r for r in ranks if topology.device(r).box != topology.device(first).box)
    route = [topology.links[i] for i in topology.route(first, other)]
    network = [link for link in route if link.family in ("infiniband", "ethernet")]
    transports = {LINK_KINDS[link.kind].transport for link in network} - {None}
    overhead = max((params.transport_latency(t, protocol) for t in transports if t is not None), default=0.0)
    return sum(link.latency_s for link in network) + overhead


def one_rank(problem: Problem, params: NcclParams) -> list[Raw]:
    """One rank: NCCL copies the send buffer into the receive buffer on the GPU (out of place).

    No NCCL latency: the GPU's time is the kernel's fixed cost plus the bytes
    over its device-to-device copy rate (``local_copy_efficiency`` x memory
    bandwidth); the host's cost of the call is ``params.one_rank_s``.
    """
    rate_Bps = memory_Bps(problem.topology.device(problem.ranks[0]).model)
    return [("local_copy", "Simple", 0.0, params.local_copy_efficiency * rate_Bps)]


def memory_Bps(model: str | None) -> float:
    """The GPU's memory bandwidth from the catalogue (the H100 SXM's 3.35 TB/s when unknown: validate
    reports that as an assumption)."""
    from commsim.hardware import find_gpu

    spec = find_gpu(model).spec if model else None
    value = spec.memory_Bps if spec is not None else None
    return float(value) if value else 3.35e12
