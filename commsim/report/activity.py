"""What every link did over time, rebuilt from a replay record for traces and plots.

The replay records, per send, when its bytes started to flow and when the
send completed, and the links it crossed. From these this module rebuilds,
per directed link, the number of flows crossing it over time and the share
of its capacity they used.

A flow's *end* is the send's completion minus the receiver's reduction time
(the replay charges ``nbytes / reduce_bandwidth`` after the last byte), so
flow counts are exact. Rates are not recorded; between two flow events
(a flow starting or ending) they are constant and max-min fair, so they are
re-solved with the engine's :func:`~commsim.engine.max_min_rates` over the
flows alive in each interval: the same rates the replay used. That costs one
solve per event; for runs beyond :data:`EXACT_WORK_LIMIT` the fast path
takes every flow at its *mean* rate (``nbytes`` over its flow time),
exact whenever a flow's rate does not change during its life (as in the
steps of a symmetric collective), a smoothed picture otherwise, capped at
full capacity. Bytes are conserved either way: the binned utilisation of
a link sums to its recorded ``link_bytes``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from commsim.engine import ReplayRecord, max_min_rates
from commsim.engine.arrays import gather_csr
from commsim.errors import CommsimError
from commsim.results import Result
from commsim.schedule import Schedule
from commsim.topology.model import Topology

__all__ = [
    "EXACT_WORK_LIMIT",
    "LinkProfile",
    "Run",
    "binned_utilisation",
    "exact_work",
    "flow_end_s",
    "link_profiles",
    "run_parts",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

EXACT_WORK_LIMIT = 3_000_000
"""Largest :func:`exact_work` for which :func:`link_profiles` re-solves the rates exactly by default."""


@dataclass(frozen=True)
class Run:
    """The parts of a :class:`Result` that renderings need, checked to be present."""

    result: Result
    record: ReplayRecord
    schedule: Schedule
    topology: Topology


def run_parts(result: Result) -> Run:
    """The record, schedule and topology of ``result``.

    Raises
    ------
    CommsimError
        If the result was built without them (e.g. read back from JSON).
    """
    if result.record is None or result.schedule is None or result.topology_obj is None:
        raise CommsimError(
            f"result {result.label!r} has no replay record; traces and timelines need a Result "
            "from commsim.api.simulate or run_scenario"
        )
    return Run(result, result.record, result.schedule, result.topology_obj)


def flow_end_s(run: Run) -> FloatArray:
    """Per send: when its last byte arrived (its completion minus any reduction time)."""
    end = run.record.op_end_s
    reduce = run.schedule.op_reduce
    if not reduce.any():
        return end
    rate = np.array(
        [
            (run.topology.device(d).reduce_bandwidth_Bps or np.inf) if run.topology.has_device(d) else np.inf
            for d in run.schedule.devices
        ],
        dtype=float,
    )
    delay = np.where(reduce, run.schedule.op_nbytes / rate[run.schedule.op_dst], 0.0)
    return end - delay


@dataclass(frozen=True)
class _Flows:
    """The sends that moved bytes: op ids, data start and flow end (s), links CSR."""

    ops: IntArray
    start_s: FloatArray
    end_s: FloatArray


def _flows(run: Run) -> _Flows:
    start, end = run.record.op_data_start_s, flow_end_s(run)
    ops = np.flatnonzero((run.schedule.op_nbytes > 0) & (end > start))
    return _Flows(ops, start[ops], end[ops])


@dataclass(frozen=True)
class LinkProfile:
    """One link's load as a step function of time.

    From ``times_s[k]`` until the next time, ``flows[k]`` flows crossed the
    link and used ``load[k]`` of its capacity. Only instants where the state
    changes are kept; the last step always has no flows.
    """

    link: int
    times_s: FloatArray
    flows: IntArray
    load: FloatArray


def exact_work(run: Run, flows: _Flows | None = None) -> int:
    """(flow, link) entries summed over the intervals between flow events.

    The cost of the exact path of :func:`link_profiles`.
    """
    flows = flows or _flows(run)
    ptr = run.record.op_links_ptr
    length = (ptr[flows.ops + 1] - ptr[flows.ops]).astype(np.float64)
    times = np.unique(np.concatenate([flows.start_s, flows.end_s]))
    by_start, by_end = np.argsort(flows.start_s), np.argsort(flows.end_s)
    started = np.concatenate([[0.0], np.cumsum(length[by_start])])
    ended = np.concatenate([[0.0], np.cumsum(length[by_end])])
    active = started[np.searchsorted(flows.start_s[by_start], times, side="right")]
    active -= ended[np.searchsorted(flows.end_s[by_end], times, side="right")]
    return int(active.sum())


_States = tuple[IntArray, FloatArray, IntArray, FloatArray]
"""(link, time, flows, load) rows: each link's state from that time on, sorted by link then time."""


def _exact_states(run: Run, flows: _Flows, wanted: NDArray[np.bool_]) -> _States:
    """States at every flow event, the rates re-solved max-min over all live flows."""
    record = run.record
    capacity = np.array([lk.bandwidth_Bps for lk in run.topology.links])
    times = np.unique(np.concatenate([flows.start_s, flows.end_s]))
    by_start, by_end = np.argsort(flows.start_s, kind="stable"), np.argsort(flows.end_s, kind="stable")
    start_at = np.searchsorted(flows.start_s[by_start], times, side="right")
    end_at = np.searchsorted(flows.end_s[by_end], times, side="right")
    active = np.zeros(run.schedule.n_ops, dtype=bool)
    was_used = np.empty(0, np.int64)
    parts: list[tuple[IntArray, FloatArray, IntArray, FloatArray]] = []
    started = ended = 0
    for k, t in enumerate(times.tolist()):
        active[flows.ops[by_end[ended : end_at[k]]]] = False
        active[flows.ops[by_start[started : start_at[k]]]] = True
        started, ended = int(start_at[k]), int(end_at[k])
        live = np.flatnonzero(active)
        owner, hops = gather_csr(record.op_links_ptr, record.op_links, live)
        used, slot = np.unique(hops, return_inverse=True)
        rates = max_min_rates(owner, hops, live.size, capacity)
        count = np.bincount(slot, minlength=used.size)
        load = np.bincount(slot, weights=rates[owner], minlength=used.size) / capacity[used]
        freed = np.setdiff1d(was_used, used, assume_unique=True)  # links whose last flow just ended
        keep = wanted[used]
        rows = np.concatenate([used[keep], freed[wanted[freed]]])
        parts.append(
            (
                rows,
                np.full(rows.size, t),
                np.concatenate([count[keep], np.zeros(rows.size - int(keep.sum()), np.int64)]),
                np.concatenate([load[keep], np.zeros(rows.size - int(keep.sum()))]),
            )
        )
        was_used = used
    link, time, count_rows, load_rows = (np.concatenate(c) for c in zip(*parts))
    order = np.lexsort((time, link))
    return link[order], time[order], count_rows[order], load_rows[order]


def _mean_rate_states(run: Run, flows: _Flows, wanted: NDArray[np.bool_]) -> _States:
    """States with every flow at its mean rate (bytes over flow time), capped at full capacity."""
    record = run.record
    capacity = np.array([lk.bandwidth_Bps for lk in run.topology.links])
    owner, hops = gather_csr(record.op_links_ptr, record.op_links, flows.ops)
    keep = wanted[hops]
    owner, hops = owner[keep], hops[keep]
    share = run.schedule.op_nbytes[flows.ops[owner]] / (flows.end_s - flows.start_s)[owner] / capacity[hops]
    link = np.concatenate([hops, hops])
    time = np.concatenate([flows.start_s[owner], flows.end_s[owner]])
    step = np.concatenate([np.ones(hops.size, np.int64), -np.ones(hops.size, np.int64)])
    order = np.lexsort((time, link))
    link, time = link[order], time[order]
    count, load = np.cumsum(step[order]), np.cumsum(np.concatenate([share, -share])[order])
    last = np.ones(link.size, dtype=bool)  # the state after the last event of an instant
    last[:-1] = (link[1:] != link[:-1]) | (time[1:] != time[:-1])
    link, time, count, load = link[last], time[last], count[last], load[last]
    # The running sums cross links. Every link ends at zero flows, so the counts
    # need no correction; the loads subtract what the previous links left (rounding).
    first = np.ones(link.size, dtype=bool)
    first[1:] = link[1:] != link[:-1]
    group_start = np.maximum.accumulate(np.where(first, np.arange(link.size), 0))
    load = load - np.where(group_start > 0, load[np.maximum(group_start - 1, 0)], 0.0)
    load = np.where(count > 0, np.clip(load, 0.0, 1.0), 0.0)
    return link, time, count, load


def link_profiles(run: Run, links: IntArray | None = None, exact: bool | None = None) -> list[LinkProfile]:
    """The load profile of every link that carried data (or of ``links``), in link order.

    Parameters
    ----------
    run : Run
    links : int array, optional
        Link indices (default: every link with bytes).
    exact : bool, optional
        Re-solve the max-min rates between every two flow events (exact), or
        take every flow at its mean rate (fast, memory per send; capped at
        full capacity; exact too when rates do not change during a flow).
        Default: exact when :func:`exact_work` is at most :data:`EXACT_WORK_LIMIT`.
    """
    flows = _flows(run)
    wanted = np.zeros(len(run.topology.links), dtype=bool)
    wanted[run.record.link_bytes > 0 if links is None else np.asarray(links, np.int64)] = True
    if not flows.ops.size or not wanted.any():
        return []
    if exact is None:
        exact = exact_work(run, flows) <= EXACT_WORK_LIMIT
    link, time, count, load = (_exact_states if exact else _mean_rate_states)(run, flows, wanted)
    load = np.round(load, 12)  # drop the sums' rounding noise
    changed = np.ones(link.size, dtype=bool)
    changed[1:] = (link[1:] != link[:-1]) | (count[1:] != count[:-1]) | (load[1:] != load[:-1])
    link, time, count, load = link[changed], time[changed], count[changed], load[changed]
    bounds = np.flatnonzero(np.diff(link)) + 1
    return [
        LinkProfile(int(link[a]), time[a:b], count[a:b], load[a:b])
        for a, b in zip(
            np.concatenate([[0], bounds]).tolist(), np.concatenate([bounds, [link.size]]).tolist()
        )
    ]


def binned_utilisation(run: Run, links: IntArray, edges_s: FloatArray) -> FloatArray:
    """Share of capacity each link used in each time bin: ``(len(links), len(edges_s) - 1)``.

    The bytes a link carried in a bin, divided by what it could carry in it
    (capacity times bin width), from :func:`link_profiles`.
    """
    capacity = np.array([run.topology.links[i].bandwidth_Bps for i in links.tolist()])
    carried = np.zeros((links.size, edges_s.size))
    row_of = {int(lk): i for i, lk in enumerate(links.tolist())}
    for profile in link_profiles(run, links):
        load_Bps = profile.load * capacity[row_of[profile.link]]
        cumulative = np.concatenate([[0.0], np.cumsum(load_Bps[:-1] * np.diff(profile.times_s))])
        carried[row_of[profile.link]] = np.interp(edges_s, profile.times_s, cumulative)
    widths = np.diff(edges_s)
    return np.diff(carried, axis=1) / (capacity[:, None] * widths[None, :])
