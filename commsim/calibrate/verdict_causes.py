"""What a log shows against its run: doubts (it contradicts itself) and causes of running below.

The thresholds are calibrated as :mod:`commsim.calibrate.verdict` says; the
readers of the log's own lines are :mod:`commsim.calibrate.verdict_evidence`.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from commsim.calibrate import verdict_evidence as signs
from commsim.calibrate.evidence import Evidence
from commsim.calibrate.parser import NcclTestsLog, NcclTestsRow
from commsim.calibrate.parser_checks import line_spans, wrong_rows
from commsim.calibrate.parser_series import repeated_sizes
from commsim.calibrate.settings import p2p_disabled
from commsim.calibrate.verdict_rows import BANDWIDTH_BOUND as _BANDWIDTH_BOUND
from commsim.calibrate.verdict_rows import (
    NON_MONOTONE_LIMIT,
    _size,
    falling_bandwidth,
    non_monotone,
    step_down,
)

if TYPE_CHECKING:
    from commsim.calibrate.validate import Validation

__all__ = [
    "IN_PLACE_LIMIT",
    "LINE_RATE_SLACK",
    "NON_MONOTONE_LIMIT",
    "SLOW_NIC",
    "across_nodes",
    "causes",
    "doubts",
    "falling_bandwidth",
    "large_indices",
    "non_monotone",
    "step_down",
    "wrong_results",
]

IN_PLACE_LIMIT = 1.5
"""In-place and out-of-place times further apart than this factor make a run doubtful."""
SLOW_NIC = 0.9
"""A printed NIC speed under this fraction of the link kind's rate is slower than stated."""
LINE_RATE_SLACK = 1.05
"""A size moved faster than this times the NICs' rate is impossible: the run is doubtful."""


def large_indices(nbytes: Iterable[int]) -> list[int]:
    """Indices of the bandwidth-bound sizes (the three largest if none is)."""
    sizes = list(nbytes)
    big = [i for i, n in enumerate(sizes) if n >= _BANDWIDTH_BOUND]
    return big or list(range(len(sizes)))[-3:]


def across_nodes(validation: Validation) -> bool:
    """Whether the run crosses nodes (so its NICs matter)."""
    nodes = validation.inference.facts.get("nodes")
    return nodes is not None and int(nodes.value) > 1


# ------------------------------------------------------------ doubts


def doubts(validation: Validation, lines: list[tuple[int, str]]) -> list[str]:
    out = []
    rows = [r for r in validation.log.rows if r.nbytes > 0]
    if len(validation.inference.ranks) > 1:
        spread = _in_place_spread(rows)
        if spread is not None and spread > IN_PLACE_LIMIT:
            out.append(
                f"in-place and out-of-place times differ by a median {spread:.1f}x at large sizes "
                f"(more than {IN_PLACE_LIMIT:g}x; the two do the same work)"
            )
    too_fast = _faster_than_network(validation, rows, lines)
    if too_fast:
        out.append(too_fast)
    for group in repeated_sizes(rows):  # at a bandwidth-bound size: small ones jitter by nature
        if group.nbytes >= _BANDWIDTH_BOUND and group.spread > IN_PLACE_LIMIT:
            out.append(
                f"the {len(group.times_s)} rows of {_size(group.nbytes)} (lines {group.first_line}-"
                f"{group.last_line}) measure the same work {group.spread:.2f}x apart (more than "
                f"{IN_PLACE_LIMIT:g}x): a disturbed or jittery run"
            )
    return out


def wrong_results(log: NcclTestsLog) -> str | None:
    """The run's own report that its results are wrong (``#wrong`` > 0, out-of-bounds values), or None.

    nccl-tests checks each result against the expected data; a run that
    computed wrong data did not run the collective it claims to time (a broken
    network path, in-network reduction ...), so its times are not judged.
    """
    wrong = wrong_rows(log.rows)
    parts = []
    if wrong:
        parts.append(
            f"{len(wrong)} of {len(log.rows)} rows have #wrong > 0 ({line_spans([r.line for r in wrong])})"
        )
    if log.out_of_bounds:
        where = f"footer line {log.out_of_bounds_line}" if log.out_of_bounds_line else "the footer"
        parts.append(f"{where} reports {log.out_of_bounds} out-of-bounds values (FAILED)")
    if not parts:
        return None
    return "the run reports wrong results: " + "; ".join(parts)


def _in_place_spread(rows: list[NcclTestsRow]) -> float | None:
    """The median in-place / out-of-place time ratio (either way up) at the bandwidth-bound sizes;
    None without any: below them a call's time is mostly fixed cost and jitters by nature (as for
    repeated sizes), so a 64 B row measured 1.7x apart says nothing about the run."""
    picked = [r for r in rows if r.ip_time_s and r.oop_time_s > 0 and r.nbytes >= _BANDWIDTH_BOUND]
    if not picked:
        return None
    return statistics.median(
        max(r.ip_time_s / r.oop_time_s, r.oop_time_s / r.ip_time_s) for r in picked if r.ip_time_s
    )


def _node_volume(collective: str, nbytes: int, nodes: int, ranks: int) -> float | None:
    """Bytes one host must move over its NICs (one direction) at the least, or None if not bounded.

    All-reduce: every host's data must leave it once even with in-network
    reduction (``S``; without it ``2(N-1)/N S >= S``); broadcast and reduce:
    a non-root host receives or sends ``S``; all-gather and reduce-scatter:
    ``(N-1)/N S``; all-to-all: each of the host's ranks sends ``(N-1)/N`` of its buffer.
    """
    share = (nodes - 1) / nodes
    volumes = {
        "all_reduce": nbytes,
        "broadcast": nbytes,
        "reduce": nbytes,
        "all_gather": share * nbytes,
        "reduce_scatter": share * nbytes,
        "all_to_all": share * nbytes * ranks / nodes,
    }
    return volumes.get(collective)


def _host_nic_Bps(validation: Validation, lines: list[tuple[int, str]]) -> tuple[float, str] | None:
    """What the NICs of one host carry per direction (bytes/s), and how it is known."""
    if signs.speed_guessed(lines) is None:
        speeds = signs.nic_speeds(lines)
        if speeds:
            first = min(speeds.values(), key=lambda e: e.line or 0)
            total = sum(float(e.value) for e in speeds.values())
            return (
                total,
                f"{len(speeds)} NIC(s), {_gbps(total)} in all, as NCCL prints them (line {first.line})",
            )
    facts = validation.inference.facts
    network, nics = facts.get("network"), facts.get("nics_per_node")
    if network is None or nics is None or network.assumed or nics.assumed:
        return None
    from commsim.topology.linkkinds import LINK_KINDS

    kind = LINK_KINDS.get(str(network.value))
    if kind is None:
        return None
    total = kind.bandwidth_Bps * int(nics.value)
    return total, f"{nics.value} x {network.value} ({_gbps(total)} in all)"


def _faster_than_network(
    validation: Validation, rows: list[NcclTestsRow], lines: list[tuple[int, str]]
) -> str | None:
    nodes_fact = validation.inference.facts.get("nodes")
    if nodes_fact is None or nodes_fact.assumed or int(nodes_fact.value) < 2:
        return None
    capacity = _host_nic_Bps(validation, lines)
    if capacity is None:
        return None
    nodes, ranks = int(nodes_fact.value), len(validation.inference.ranks)
    worst: tuple[float, NcclTestsRow] | None = None
    for row in rows:
        volume = _node_volume(validation.collective, row.nbytes, nodes, ranks)
        if volume is None:
            return None
        speed = volume / row.oop_time_s / capacity[0]
        if worst is None or speed > worst[0]:
            worst = (speed, row)
    if worst is None or worst[0] <= LINE_RATE_SLACK:
        return None
    speed, row = worst
    return (
        f"the {_size(row.nbytes)} row (line {row.line}) moves {speed:.1f}x what the NICs of a host can "
        f"carry in that time ({capacity[1]})"
    )


# ------------------------------------------------------------ causes


def causes(validation: Validation, lines: list[tuple[int, str]]) -> list[str]:
    multi_node = int(validation.inference.facts["nodes"].value) > 1
    out = _far_nic(validation, lines) if multi_node else []
    out += _p2p_off(validation, lines)
    out += _slow_nic(validation, lines) if multi_node else []
    out += _few_channels(validation, lines, multi_node)
    out += non_monotone(validation.log.rows, len(validation.inference.ranks), large_only=True)
    return out


def _reach(gpus: Sequence[str]) -> str:
    """The verb for ``gpus``: ``gpu0 reaches``, ``gpu0, gpu1 reach``."""
    return "reaches" if len(gpus) == 1 else "reach"


def _far_nic(validation: Validation, lines: list[tuple[int, str]]) -> list[str]:
    log = validation.log
    used = sorted({d for devices in log.placement.values() for d in devices}) or None
    out = []
    far = signs.far_nic_gpus(log.topo_matrix, used)
    if far:
        out.append(
            f"GPU and NIC on different sockets: {', '.join(far)} {_reach(far)} every NIC only across the "
            "inter-socket link (SYS in the nvidia-smi topo -m matrix; nccl-tests issue #293)"
        )
    elif across_nodes(validation):
        topo, ranks = validation.inference.topology, validation.inference.ranks
        box_ranks = [r for r in ranks if topo.device(r).box == topo.device(ranks[0]).box]
        far_given = signs.far_nic_gpus_in(topo, box_ranks)
        if far_given:
            out.append(
                f"GPU and NIC on different sockets: {', '.join(far_given)} {_reach(far_given)} every NIC "
                "only across the inter-socket link in the machine given (nccl-tests issue #293)"
            )
    refused = signs.gdr_refused(lines)
    if refused is not None:
        distance, limit = refused.value
        out.append(
            f"NCCL refused GPUDirect RDMA because the NIC is too far from the GPU (distance {distance} > "
            f"{limit}, line {refused.line}): network traffic is staged through host memory"
        )
    elif (off := signs.gdr_off(lines)) is not None and not _socket_network(validation):
        out.append(
            f"NCCL runs its network without GPUDirect RDMA (line {off.line}: {_quote(off.text or '')}): "
            "network traffic is staged through host memory, which the model does not price"
        )
    return out


def _socket_network(validation: Validation) -> bool:
    """Whether the run's network is NCCL's socket transport (it never uses GPUDirect RDMA)."""
    from commsim.topology.linkkinds import LINK_KINDS

    network = validation.inference.facts.get("network")
    kind = LINK_KINDS.get(str(network.value)) if network is not None else None
    return kind is not None and kind.transport == "socket"


def _quote(text: str, width: int = 60) -> str:
    """A log line as a verdict quotes it: from NCCL's message on, at most ``width`` characters."""
    message = text.split("NCCL INFO ", 1)[-1].strip()
    return f"'{message if len(message) <= width else message[: width - 3] + '...'}'"


def _p2p_off(validation: Validation, lines: list[tuple[int, str]]) -> list[str]:
    if not validation.inference.topology.peer_to_peer:
        return []  # the model already priced the host-memory path
    disabled = p2p_disabled(validation.log.settings)
    if disabled is not None:
        return [f"peer-to-peer off: NCCL_P2P_DISABLE=1 ({_where(disabled)}) but the model assumed it on"]
    host = {d.rank: d.host for d in validation.log.devices}
    for link in signs.transports(lines):
        same_host = link.src_rank in host and host.get(link.src_rank) == host.get(link.dst_rank)
        if link.transport == "SHM" or (link.transport == "NET" and same_host):
            return [
                f"peer-to-peer off: NCCL connects ranks {link.src_rank} and {link.dst_rank} of one host "
                f"via {link.transport} (line {link.line}), through host memory, where the model assumed "
                "GPU peer-to-peer"
            ]
    return []


def _slow_nic(validation: Validation, lines: list[tuple[int, str]]) -> list[str]:
    network = validation.inference.facts.get("network")
    if network is None or signs.speed_guessed(lines) is not None:
        return []
    from commsim.topology.linkkinds import LINK_KINDS

    kind = LINK_KINDS.get(str(network.value))
    speeds = signs.nic_speeds(lines)
    if kind is None or not speeds:
        return []
    name, slowest = min(speeds.items(), key=lambda item: float(item[1].value))
    if float(slowest.value) >= SLOW_NIC * kind.bandwidth_Bps:
        return []
    return [
        f"a NIC slower than stated: NCCL reports {name} at {_gbps(float(slowest.value))} (line "
        f"{slowest.line}) where the machine has {kind.name} at {_gbps(kind.bandwidth_Bps)}"
    ]


def _few_channels(validation: Validation, lines: list[tuple[int, str]], multi_node: bool) -> list[str]:
    env = validation.log.settings.env
    for name in ("NCCL_MAX_NCHANNELS", "NCCL_MAX_NRINGS"):
        forced = env.get(name)
        if forced is not None:
            return [
                f"fewer channels than usual: {name}={forced.value} ({_where(forced)}) caps NCCL's "
                "channels; the model assumes NCCL's own count"
            ]
    channels = signs.coll_channels(lines)
    if channels is None:
        return []
    count = int(channels.value)
    nics = validation.inference.facts.get("nics_per_node")
    floor = int(nics.value) if multi_node and nics is not None and not nics.assumed else 2
    if count >= floor:
        return []
    why = f"fewer than the {floor} NICs of a host, so some NICs idle" if floor > 2 else "a single channel"
    return [f"fewer channels than usual: NCCL built {count} coll channel(s) (line {channels.line}), {why}"]


def _where(evidence: Evidence) -> str:
    return evidence.describe()


def _gbps(bytes_per_s: float) -> str:
    return f"{bytes_per_s * 8 / 1e9:.4g} Gb/s"
