"""Where the NCCL model's fitted defaults come from, so that they can be derived again without a machine.

Most of :class:`~commsim.nccl.params.NcclParams`' defaults are NCCL's own
figures (``tuning.cc``, ``topo.h``) or datasheet ratios. A few are fits to the
development logs (``tests/data``); :data:`FITTED` names each, the logs it was
fitted on and what the model uses without it. A leave-one-machine-out study
(``tools/validation_table.py``) must not predict a log with a constant fitted
on that log's own machine: :func:`without_machine` gives the defaults as they
would be had the machine's logs never been seen, re-deriving ``launch_s``
from the other machines (:func:`host_issue_per_gpu_s`) and falling back,
for a constant fitted only on this machine, to the model without it.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from commsim.nccl.params import DEFAULT_EFFICIENCY, DEFAULT_TRANSPORT_LATENCY_s, NcclParams, transport_key
from commsim.topology.linkkinds import LINK_KINDS

if TYPE_CHECKING:
    from commsim.calibrate.validate import Validation

__all__ = [
    "FITTED",
    "HOST_ISSUE_MAX_BYTES",
    "OUTSIDE_TRANSPORT_OVERHEAD_LOGS",
    "RING_CHANNEL_LOGS",
    "RING_CHANNEL_MIN_BYTES",
    "TRANSPORT_OVERHEAD_ERA",
    "TRANSPORT_OVERHEAD_LOGS",
    "Fitted",
    "host_issue_per_gpu_s",
    "host_note",
    "one_gpu_note",
    "ring_channel_rate_Bps",
    "transport_note",
    "transport_overhead_s",
    "without_machine",
]

HOST_ISSUE_MAX_BYTES = 1024
"""Sizes up to this many bytes measure the host's issue time in a single-process ``-g N`` run."""

ONE_GPU_LOGS = (
    "all_gather_1gpu.txt",
    "all_reduce_1gpu.txt",
    "alltoall_1gpu.txt",
    "broadcast_1gpu.txt",
    "reduce_scatter_1gpu.txt",
    "sendrecv_1gpu.txt",
)


TRANSPORT_OVERHEAD_LOGS: dict[str, tuple[str, ...]] = {
    "efa": (
        "V100-SXM2-p3dn_all_reduce_16gpu_2node-EFA100_1.txt",
        "A100-SXM4-p4d_all_reduce_16gpu_2node-EFA400_1.txt",
    ),
    "tcpxo": ("H100-SXM-GCP-A3Mega_all_reduce_16gpu_2node-TCPXO-8x200G_1.txt",),
}
"""The development logs each transport's default step overhead is derived from (one machine each)."""

OUTSIDE_TRANSPORT_OVERHEAD_LOGS: dict[str, tuple[str, ...]] = {
    "efa_rdma": (
        "51_H100-p5-EKS-2node-16gpu-EFA-tagoutput-nodevices.txt",
        "74_H100-p5-2node-allreduce-16GiB-EFA-nodevices.txt",
        "97_B200-AWS-p6-2node-EFA-allreduce-small.txt",
        "114_H100-AWS-p5-EKS-2node-16rank-allreduce-16GiB-tagoutput-midrow-INFO.txt",
    ),
}
"""The public logs (``tests/data/outside``, one machine each) a transport's default overhead is derived
from where no development log measures it: aws-ofi-nccl's RDMA protocol over EFA (p5 and p6)."""

TRANSPORT_OVERHEAD_ERA: dict[str, str] = {
    "efa": "runs of NCCL 2.4.8 and 2.7.8 with aws-ofi-nccl's SENDRECV protocol, the only one before its "
    "v1.7.0 and still the default on p3dn, p4d and p4de",
    "efa_rdma": "aws-ofi-nccl's RDMA protocol (v1.7.0 on), the default on p5 and p6; the logs' step "
    "overheads spread from -5 to +6 us",
}
"""What the runs behind a transport's default overhead were, where it matters for a newer run."""


@dataclass(frozen=True)
class Fitted:
    """A default fitted on development logs.

    Attributes
    ----------
    logs : tuple of str
        File names of the logs it was fitted on (all of one machine).
    fallback : float or None
        The value the model takes without those logs: the model without the
        term (0 for an added latency), the family's figure for an efficiency,
        a physical bound; None where another rule gives it (``one_rank_s``
        falls back to ``launch_s``: a one-rank call is one issue by the host).
    why : str
        What the fallback means.
    """

    logs: tuple[str, ...]
    fallback: float | None
    why: str


FITTED: dict[str, Fitted] = {
    "efficiency.tcpxo": Fitted(
        ("H100-SXM-GCP-A3Mega_all_reduce_16gpu_2node-TCPXO-8x200G_1.txt",),
        DEFAULT_EFFICIENCY["ethernet"],
        "the Ethernet family's figure",
    ),
    "kernel_s": Fitted(ONE_GPU_LOGS[:2] + ONE_GPU_LOGS[3:5], 0.0, "no fixed GPU cost beyond NCCL's tables"),
    "one_rank_s": Fitted(ONE_GPU_LOGS, None, "launch_s: a one-rank call is one issue by the host"),
    "local_copy_efficiency": Fitted(
        ONE_GPU_LOGS, 0.5, "a copy reads and writes every byte: half the memory bandwidth"
    ),
}
"""Defaults fitted on one machine's development logs (``launch_s`` and the transports' step overheads
are fitted on every machine that measures them and re-derived by :func:`host_issue_per_gpu_s` and
:func:`transport_overhead_s` instead)."""


def host_issue_per_gpu_s(machines: Iterable[Sequence[Validation]]) -> float | None:
    """``launch_s`` from the single-process ``-g N`` logs among ``machines`` (each a machine's logs).

    In such a run the host issues N launches per call while the GPUs wait,
    so sizes up to :data:`HOST_ISSUE_MAX_BYTES` take N x the issue time (not when the calls were
    replayed from CUDA graphs, nccl-tests ``-G``, which leave the host's issue out of the time):
    per log the median over those sizes of time / N, per machine the median
    of its logs, and the median over machines (so a machine with many logs
    counts once). None when no machine has such a log.
    """
    per_machine = []
    for logs in machines:
        values = []
        for v in logs:
            g = v.inference.gpus_per_thread
            small = [r.measured_time_s for r in v.rows if r.nbytes <= HOST_ISSUE_MAX_BYTES]
            if g > 1 and len(v.inference.ranks) > 1 and small and not v.inference.cuda_graph:
                values.append(statistics.median(small) / g)
        if values:
            per_machine.append(statistics.median(values))
    return statistics.median(per_machine) if per_machine else None


def _uses(validation: Validation, transport: str) -> bool:
    """Whether the log's machine reaches other boxes over ``transport``'s links (``"efa_rdma"``: EFA
    with aws-ofi-nccl's RDMA protocol; ``"efa"``: with its SENDRECV one)."""
    protocol = validation.inference.net_protocol
    return any(
        transport_key(kind, protocol) == transport
        for link in validation.inference.topology.links
        if (kind := LINK_KINDS[link.kind].transport) is not None
    )


def _log_overheads(validation: Validation, transport: str) -> list[float]:
    """Per size up to :data:`HOST_ISSUE_MAX_BYTES`: the step overhead of ``transport`` (s) at which
    the model's time equals the measured one (sizes the overhead does not move are left out)."""
    from commsim.calibrate.fit import case_of  # fit imports validate, which imports this module

    without = validation.params.model_copy(
        update={"transport_latency_s": {**validation.params.transport_latency_s, transport: 0.0}}
    )
    case = case_of(0, validation, without, None, None)
    probe = without.model_copy(
        update={"transport_latency_s": {**without.transport_latency_s, transport: _PROBE_s}}
    )
    t0, t1 = case.predicted(without), case.predicted(probe)
    out = []
    for i, nbytes in enumerate(case.nbytes):
        per_s = (t1[i] - t0[i]) / _PROBE_s  # network steps the size pays the overhead on
        if nbytes <= HOST_ISSUE_MAX_BYTES and per_s > 0.5:
            out.append(float((case.measured_s[i] - t0[i]) / per_s))
    return out


_PROBE_s = 10e-6


def transport_overhead_s(machines: Iterable[Sequence[Validation]], transport: str) -> float | None:
    """The step overhead of a network ``transport`` (s) from the logs among ``machines`` that use it.

    Sizes up to :data:`HOST_ISSUE_MAX_BYTES` are all latency: per size, the overhead per network step
    that makes the model's time the measured one (NCCL's tables, the launch and the links' latency
    are the rest); per log the median over those sizes, per machine the median of its logs, and the
    median over machines. None when no machine's logs use the transport.
    """
    per_machine = []
    for logs in machines:
        values = [
            statistics.median(found)
            for v in logs
            if _uses(v, transport) and (found := _log_overheads(v, transport))
        ]
        if values:
            per_machine.append(statistics.median(values))
    return statistics.median(per_machine) if per_machine else None


def without_machine(
    machine_logs: Iterable[str],
    other_machines: Iterable[Sequence[Validation]],
    base: NcclParams | None = None,
) -> NcclParams:
    """The defaults as they would be without one machine's logs (``machine_logs``: their file names).

    ``launch_s`` and the transports' step overheads are derived again from ``other_machines`` (an
    overhead no other machine measures is 0: the model without it); every constant of
    :data:`FITTED` whose logs are all among ``machine_logs`` takes its fallback.
    """
    base = base or NcclParams()
    other_machines = list(other_machines)
    held = set(machine_logs)
    data = base.model_dump()
    data["efficiency"] = dict(data["efficiency"])
    data["transport_latency_s"] = dict(data["transport_latency_s"])
    launch = host_issue_per_gpu_s(other_machines)
    if launch is not None:
        data["launch_s"] = launch
    for transport in TRANSPORT_OVERHEAD_LOGS:  # those derived from outside logs stay: no machine here
        overhead = transport_overhead_s(other_machines, transport)
        data["transport_latency_s"][transport] = 0.0 if overhead is None else overhead
    for name, fitted in FITTED.items():
        if not set(fitted.logs) <= held:
            continue
        value = data["launch_s"] if fitted.fallback is None else fitted.fallback
        if "." in name:
            table, key = name.split(".", 1)
            data[table][key] = value
        else:
            data[name] = value
    return NcclParams.model_validate(data)


RING_CHANNEL_LOGS: dict[str, tuple[str, ...]] = {
    "ib_ndr": (
        "232_B200-Vultr-HGX-2node-16rank-NDRx8-allgather-size0rows-16GiB-rowsonly.txt",
        "266_H100-VoltagePark-4node-32rank-IB3.2T-allgather-size0rows-8B-8G-NCCL2243.txt",
        "56_H100-2node-16gpu-IB-NDR-srunlabel-RING.txt",
    ),
}
"""The public logs (``tests/data/outside``, one machine each, their NICs stated) a NIC kind's ring channel
rate (:data:`commsim.nccl.params.DEFAULT_RING_CHANNEL_NET_Bps`) is derived from."""

RING_CHANNEL_MIN_BYTES = 256 * 1024 * 1024
"""Sizes from this many bytes measure a ring's network rate (well past its latency and fill)."""

_DEGRADED = 0.5
"""A run whose ring sizes measure under this share of the model's rate is degraded, not evidence."""

_RING_CHANNEL_COLLECTIVES = ("all_gather", "reduce_scatter", "all_reduce")


def _log_ring_channel_rates(validation: Validation, kind: str) -> list[float]:
    """Per size from :data:`RING_CHANNEL_MIN_BYTES` that the log's model runs as a ring (Simple or LL128)
    across nodes of NVIDIA GPUs on ``kind`` NICs: the measured bus bandwidth over NCCL's channel count,
    as bytes on the wire (B/s per channel). Empty for other logs and for a degraded run."""
    from commsim.nccl import ring_net

    inference = validation.inference
    if validation.collective not in _RING_CHANNEL_COLLECTIVES:
        return []
    model = inference.nccl_model(validation.params)
    m = model.machine(inference.ranks)
    if m.net_kind != kind or not ring_net.applies(m):
        return []
    rows = [
        r
        for r in validation.rows
        if r.nbytes >= RING_CHANNEL_MIN_BYTES and r.algorithm == "ring" and r.protocol in ring_net.PROTOCOLS
    ]
    if not rows or statistics.median(r.measured_busbw_Bps / r.predicted_busbw_Bps for r in rows) < _DEGRADED:
        return []
    channels = model.channel_count(m)
    return [
        r.measured_busbw_Bps / channels / (ring_net.LL128_PAYLOAD if r.protocol == "LL128" else 1.0)
        for r in rows
    ]


def ring_channel_rate_Bps(machines: Iterable[Sequence[Validation]], kind: str) -> float | None:
    """The most one ring channel carries across ``kind`` NICs (B/s), from the logs among ``machines``
    that measure it: per log the median over its ring sizes from 256 MiB of measured bus bandwidth per
    channel (:func:`_log_ring_channel_rates`), per machine the median of its logs, and the median over
    machines. None when no machine's logs measure it."""
    per_machine = []
    for logs in machines:
        values = [statistics.median(found) for v in logs if (found := _log_ring_channel_rates(v, kind))]
        if values:
            per_machine.append(statistics.median(values))
    return statistics.median(per_machine) if per_machine else None


TRANSPORT_OVERHEAD_GPUS_PER_NODE: dict[str, int] = {"efa": 8}
"""GPUs per node of every run a transport's default overhead is derived from, where all agree."""

_FEWER_GPUS_PER_NODE = {
    "efa": "public SENDRECV runs with one GPU per node measure far less at their smallest sizes "
    "(tests/data/outside 133, 70 and 203: 52, 66 and 46 us, 2.4-5.8x less than the model's; 133 "
    "implies 1.6 us per network step), so the overhead does not scale with the network steps "
    "alone and the model likely prices this run's small sizes too slow",
}
"""What public runs with fewer GPUs per node than a transport's overhead logs show, per transport."""


def _unlike_its_logs(key: str, gpus_per_node: int | None) -> str:
    """A clause for a run with fewer GPUs per node than the runs a default overhead comes from."""
    logs_gpus = TRANSPORT_OVERHEAD_GPUS_PER_NODE.get(key)
    if (
        gpus_per_node is None
        or logs_gpus is None
        or gpus_per_node >= logs_gpus
        or key not in _FEWER_GPUS_PER_NODE
    ):
        return ""
    return f"; those ran {logs_gpus} GPUs per node and this one {gpus_per_node}: {_FEWER_GPUS_PER_NODE[key]}"


def transport_note(
    transport: str | None,
    params: NcclParams,
    protocol: str | None = None,
    gpus_per_node: int | None = None,
    small_sizes: bool = True,
) -> str | None:
    """What the model's latency of a network ``transport`` rests on, when it is not NCCL's own table.

    None for InfiniBand (NCCL's ``hwLat`` NET row is made for it), for no network, and for a
    transport whose overhead ``params`` sets (a calibration). Otherwise a sentence for the user:
    the logs a default overhead is derived from (development logs, or public ones for aws-ofi-nccl's
    RDMA protocol, ``protocol`` ``"rdma"``), or that there is none and NCCL's table stands in.
    ``small_sizes`` False (the log has no size below 64 KiB) says so instead of pointing at them.
    """
    if transport in (None, "ib"):
        return None
    key = transport_key(transport, protocol, params.transport_latency_s)
    if key in params.transport_latency_s:
        return None
    calibrate = "'commsim calibrate' on this machine's logs fits a latency scale for it"
    rests = "sizes below 64 KiB rest on it"
    if not small_sizes:
        rests = "this log has no size below 64 KiB, where it counts most"
    remedy = f"{rests}; {calibrate}"
    if key in DEFAULT_TRANSPORT_LATENCY_s:
        outside = key in OUTSIDE_TRANSPORT_OVERHEAD_LOGS
        logs = (OUTSIDE_TRANSPORT_OVERHEAD_LOGS if outside else TRANSPORT_OVERHEAD_LOGS)[key]
        overhead = f"{DEFAULT_TRANSPORT_LATENCY_s[key] * 1e6:.2g}"
        where = "one development log" if len(logs) == 1 else f"the logs of {len(logs)} development machines"
        if outside:
            where = f"the public logs of {len(logs)} machines (tests/data/outside)"
        era = f" ({TRANSPORT_OVERHEAD_ERA[key]})" if key in TRANSPORT_OVERHEAD_ERA else ""
        name = f"{transport} transport's" + (
            f" ({protocol.upper()} protocol)" if protocol and key != transport else ""
        )
        unlike = _unlike_its_logs(key, gpus_per_node)
        return (
            f"the {name} overhead per network step ({overhead} us) is derived from "
            f"{where} ({', '.join(logs)}){era}, not from this run{unlike}: {remedy}"
        )
    if transport == "socket":
        return (
            "no overhead per network step is known for the socket transport: the model prices its network "
            "steps with NCCL's own latency table and the links' latency, which fits bare-metal hosts; on "
            "virtualised cloud networks (containers on an AWS VPC) one development log measured 70-80 us "
            f"more per step; {remedy}"
        )
    return (
        f"no overhead per network step is known for the {transport} transport: the model prices its "
        f"network steps with NCCL's own latency table, made for InfiniBand; {remedy}"
    )


def host_note(gpus_per_thread: int, ranks: int, params: NcclParams) -> str | None:
    """What a single-process run's small sizes rest on when ``launch_s`` is the shipped default.

    None for one GPU per thread (the GPUs' time sets small sizes), one rank, or a calibrated
    ``launch_s``.
    """
    if gpus_per_thread < 2 or ranks < 2 or params.launch_s != NcclParams().launch_s:
        return None
    return (
        f"one thread drives {gpus_per_thread} GPUs (-g {gpus_per_thread}), so small sizes take "
        f"{gpus_per_thread} x the host's issue time per call: {params.launch_s * 1e6:.1f} us, the median "
        "of 7 development machines' hosts (4.0-6.1 us), not this host's; 'commsim calibrate' on this "
        "machine's logs fits it (launch_s)"
    )


def one_gpu_note(gpu_model: str | None, ranks: int, params: NcclParams) -> str | None:
    """What a one-rank run rests on: the copy constants measured on one H100 SXM (None on one)."""
    defaults = NcclParams()
    shipped = (params.one_rank_s, params.local_copy_efficiency) == (
        defaults.one_rank_s,
        defaults.local_copy_efficiency,
    )
    if ranks != 1 or not shipped or (gpu_model or "").startswith("H100 SXM"):
        return None
    return (
        "a one-GPU call is priced with constants measured on one H100 SXM (the host's 6.25 us per call, "
        "copies at 0.449 of the memory bandwidth), not on this GPU"
    )
