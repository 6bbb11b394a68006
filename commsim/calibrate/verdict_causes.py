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
NON_MONOTONE_LIMIT = 1.5
"""A row this many times slower than the next larger size is called out."""
SLOW_NIC = 0.9
"""A printed NIC speed under this fraction of the link kind's rate is slower than stated."""
LINE_RATE_SLACK = 1.05
"""A size moved faster than this times the NICs' rate is impossible: the run is doubtful."""
_BANDWIDTH_BOUND = 64 * 2**20


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
    paired = [r for r in rows if r.ip_time_s and r.oop_time_s > 0]
    if not paired:
        return None
    picked = [paired[i] for i in large_indices(r.nbytes for r in paired)]
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
    return out


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


def non_monotone(rows: Sequence[NcclTestsRow], ranks: int, *, large_only: bool) -> list[str]:
    """Rows more than :data:`NON_MONOTONE_LIMIT` times slower than the next larger size: the three
    most disturbed, in size order, and how many more there are.

    Outside probe 10's log 180 (4 x 2 A100): the 1 MiB row takes 3.7x the 4 MiB one, the run's
    largest disturbance, but three milder ones at smaller sizes came first and it went unsaid.
    """
    rows = [r for r in rows if r.nbytes > 0]
    found: list[tuple[float, int, str]] = []
    for index, (row, bigger) in enumerate(zip(rows, rows[1:])):
        if bigger.nbytes <= row.nbytes or (large_only and row.nbytes < _BANDWIDTH_BOUND):
            continue
        pairs = [(row.oop_time_s, bigger.oop_time_s, "out-of-place")]
        if ranks > 1 and row.ip_time_s and bigger.ip_time_s:
            pairs.append((row.ip_time_s, bigger.ip_time_s, "in-place"))
        worst = max(pairs, key=lambda pair: pair[0] / pair[1])
        time_s, next_s, label = worst
        if time_s > NON_MONOTONE_LIMIT * next_s:
            found.append(
                (
                    time_s / next_s,
                    index,
                    f"the {_size(row.nbytes)} row (line {row.line}, {label}) is {time_s / next_s:.1f}x "
                    f"slower than the larger {_size(bigger.nbytes)} one: a disturbed measurement",
                )
            )
    kept = sorted(sorted(found, reverse=True)[:3], key=lambda item: item[1])
    out = [text for _, _, text in kept]
    if len(found) > len(kept):
        more = len(found) - len(kept)
        out[-1] += f" ({more} more row{'s' if more > 1 else ''} slower than the next larger size)"
    return out


def step_down(rows: Sequence[NcclTestsRow]) -> list[str]:
    """A persistent step down at large sizes: every row from some size on is slower than the smaller ones.

    Among bandwidth-bound rows (out-of-place busbw), the first row whose busbw
    is under the median of the rows before it by more than
    :data:`NON_MONOTONE_LIMIT`, when every larger row stays that low too (at
    least two rows after the step): bandwidth grows or holds with size in
    nccl-tests, so this is the run (memory, a link, a switch) changing at
    that size, not noise in one row. Single disturbed rows are
    :func:`non_monotone`'s.
    """
    big = [r for r in rows if r.nbytes >= _BANDWIDTH_BOUND and r.oop_busbw_Bps > 0]
    for k in range(2, len(big) - 1):
        before = statistics.median(r.oop_busbw_Bps for r in big[:k])
        after = big[k:]
        if all(r.oop_busbw_Bps * NON_MONOTONE_LIMIT < before for r in after):
            level = statistics.median(r.oop_busbw_Bps for r in after)
            first, last = after[0], after[-1]
            return [
                f"from {_size(first.nbytes)} on ({len(after)} rows, lines {first.line}-{last.line}) busbw "
                f"drops to {level / before:.2f}x that of the smaller sizes ({_gbps_bytes(level)} against "
                f"{_gbps_bytes(before)} out-of-place): a step between the {_size(big[k - 1].nbytes)} and "
                f"{_size(first.nbytes)} rows that the model does not have"
            ]
    return []


def falling_bandwidth(rows: Sequence[NcclTestsRow], *, skip_from: int | None = None) -> list[str]:
    """A sustained fall of bandwidth with growing size anywhere in the sweep (the first one), or nothing.

    A row is *fallen* when its out-of-place bandwidth (size / time, which is
    busbw up to the collective's constant factor, without the printed
    columns' two-decimal rounding at small sizes) is under the best of every
    smaller size by more than :data:`NON_MONOTONE_LIMIT`. Two or more
    consecutive fallen rows are reported, as :func:`step_down` asks of a step
    (one alone is :func:`non_monotone`'s disturbed row): bandwidth holds or
    grows with size in nccl-tests, so a run of slower sizes is something in
    the run (contention, a degraded link, throttling), not the model. Rows
    from ``skip_from`` bytes on are left to :func:`step_down` when it found a
    step there. None of the 42 development logs has such a run; of the
    outside logs, those whose pages call the run poor, noisy or disturbed do
    (tests/data/outside 11, 20, 48, 53, 60; 78's is its step), and probe 7's
    log 123 (an ABCI V100 broadcast, 7.0 GB/s busbw at 2 MiB, 2.5 and 2.0
    GB/s at 16 and 32 MiB).
    """
    run: list[NcclTestsRow] = []
    best: NcclTestsRow | None = None
    found: list[NcclTestsRow] = []
    for row in (r for r in rows if r.nbytes > 0 and r.oop_time_s > 0):
        if best is not None and row.nbytes <= best.nbytes:
            best, run = None, []  # another run of sizes (several data types): start again
        if skip_from is not None and row.nbytes >= skip_from:
            break
        if best is not None and _Bps(row) * NON_MONOTONE_LIMIT < _Bps(best):
            run.append(row)
            continue
        if len(run) >= 2:
            found = run
            break
        run = []
        best = row if best is None or _Bps(row) > _Bps(best) else best
    found = found or (run if len(run) >= 2 else [])
    if not found or best is None:
        return []
    low = min(found, key=_Bps)
    return [
        f"bandwidth falls with size: the {_size(found[0].nbytes)}-{_size(found[-1].nbytes)} rows "
        f"({len(found)} rows, lines {found[0].line}-{found[-1].line}) reach {_Bps(low) / _Bps(best):.2f}-"
        f"{max(_Bps(r) for r in found) / _Bps(best):.2f}x the bandwidth of the smaller {_size(best.nbytes)} "
        f"row (busbw {_gbps_bytes(low.oop_busbw_Bps)} at {_size(low.nbytes)} against "
        f"{_gbps_bytes(best.oop_busbw_Bps)}, out-of-place): bandwidth holds or grows with size in "
        "nccl-tests, so something in the run slowed these sizes (contention, a degraded link, "
        "throttling), not the model"
    ]


def _Bps(row: NcclTestsRow) -> float:
    """Out-of-place bytes per second of ``row`` (its algbw, unrounded)."""
    return row.nbytes / row.oop_time_s


def _gbps_bytes(bytes_per_s: float) -> str:
    return f"{bytes_per_s / 1e9:.3g} GB/s"


def _where(evidence: Evidence) -> str:
    return evidence.describe()


def _gbps(bytes_per_s: float) -> str:
    return f"{bytes_per_s * 8 / 1e9:.4g} Gb/s"


def _size(nbytes: int) -> str:
    from commsim.units import format_size

    return format_size(nbytes)
