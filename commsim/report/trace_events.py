"""The events of a Chrome trace of replays: one process per result, its tracks and their slices.

Layout of a trace (the JSON object form, ``displayTimeUnit: "ns"``):

- one *process* per result, named by its label, collective, size and
  topology (``ph: "M"`` metadata);
- in it, a ``steps`` track: one slice per algorithm step, from the first
  send of the step becoming ready to the last one completing (steps of
  pipelined algorithms overlap, so this track may have several lanes);
- one *thread* track per device that sends: every send is a complete event
  (``ph: "X"``) on its sender's track, from when it became ready (its
  dependencies done) to when it completed; ``args`` hold ``bytes``,
  ``chunk``, ``step``, ``src``, ``dst``, ``path``, ``reduce`` and the time
  its first byte left (``data_start_us``, after the path latency).
  Perfetto cannot draw overlapping slices on one track, so a device whose
  sends overlap gets several lanes (``gpu0``, ``gpu0 #2``, ...), assigned
  by greedy interval colouring (each send, in order of start, takes the
  lowest lane free at its start: as few lanes as the most sends ever in
  flight at once);
- one thread track per directed link that carried data: its busy intervals
  as ``busy`` slices (they never overlap), and two counters per link
  (``ph: "C"``): ``flows``, the number of flows crossing it, and ``load``,
  the share of its capacity in use (rates as the replay shared them, see
  :mod:`commsim.report.activity`).

Times are in microseconds as the format wants, rounded to whole
nanoseconds first, so slices that touch in the simulation touch exactly in
the trace. The output is deterministic: the same results give the same
bytes. :mod:`commsim.report.trace` makes the document and the file.

Big runs: a 1024-GPU ring all-reduce has two million sends. With
``max_transfers`` (default :data:`DEFAULT_MAX_TRANSFERS`), a result with
more sends keeps those of an evenly spaced sample of sending devices
(every k-th, smallest k that fits; if one device alone has too many, its
first ``max_transfers`` sends by start time) and the link tracks those sends
cross (with *all* of those links' activity). The ``steps`` track still
covers every send, and ``otherData.sampled`` says what was kept. Pass
``max_transfers=None`` to keep every send.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from commsim.report.activity import LinkProfile, Run, link_profiles, run_parts
from commsim.results import Result
from commsim.topology.elements import Link
from commsim.units import format_size, format_time

__all__ = ["DEFAULT_MAX_TRANSFERS", "Event", "assign_lanes", "sample_sends", "trace_events"]

DEFAULT_MAX_TRANSFERS = 100_000
"""Sends per result kept in a trace by default (a trace of this size opens in Perfetto in seconds)."""

IntArray = NDArray[np.int64]
Event = dict[str, Any]
"""One trace event, JSON-ready."""


def _ns(times_s: NDArray[np.float64]) -> IntArray:
    """Seconds to whole nanoseconds."""
    return np.rint(times_s * 1e9).astype(np.int64)


def _us(ns: int) -> float:
    return ns / 1000


def assign_lanes(start_ns: IntArray, end_ns: IntArray) -> IntArray:
    """Greedy interval colouring: the lane of each interval, no two overlapping in a lane.

    Intervals are taken in order of start (ties by position); each takes the
    lowest-numbered lane whose last interval ended at or before its start.
    The number of lanes equals the largest number of intervals open at once.
    """
    lanes = np.empty(start_ns.size, np.int64)
    busy: list[tuple[int, int]] = []  # (end, lane) of lanes in use
    free: list[int] = []
    for i in np.lexsort((np.arange(start_ns.size), start_ns)).tolist():
        start = int(start_ns[i])
        while busy and busy[0][0] <= start:
            heapq.heappush(free, heapq.heappop(busy)[1])
        lane = heapq.heappop(free) if free else len(busy) + len(free)
        lanes[i] = lane
        heapq.heappush(busy, (int(end_ns[i]), lane))
    return lanes


def sample_sends(run: Run, max_transfers: int | None) -> tuple[IntArray, str | None]:
    """The sends to show, and a note saying what was left out (None: all kept)."""
    n_ops = run.schedule.n_ops
    if max_transfers is None or n_ops <= max_transfers:
        return np.arange(n_ops, dtype=np.int64), None
    src = run.schedule.op_src
    counts = np.bincount(src, minlength=len(run.schedule.devices))
    senders = np.flatnonzero(counts)
    for stride in range(1, senders.size + 1):
        chosen = senders[::stride]
        if counts[chosen].sum() <= max_transfers:
            ops = np.flatnonzero(np.isin(src, chosen))
            names = [run.schedule.devices[i] for i in chosen.tolist()]
            shown = ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")
            return ops, (
                f"{ops.size} of {n_ops} sends: those of {chosen.size} of {senders.size} sending "
                f"devices (one in {stride}: {shown})"
            )
    first = np.flatnonzero(src == senders[0])
    order = np.lexsort((first, run.record.op_ready_s[first]))
    ops = np.sort(first[order[:max_transfers]])
    return ops, f"{ops.size} of {n_ops} sends: the first of {run.schedule.devices[int(senders[0])]}"


def _meta(name: str, pid: int, tid: int, args: dict[str, Any]) -> Event:
    """A metadata event (``ph: "M"``): names and sort order of processes and threads."""
    return {"name": name, "cat": "__metadata", "ph": "M", "ts": 0, "pid": pid, "tid": tid, "args": args}


def _complete(
    name: str, cat: str, start_ns: int, end_ns: int, pid: int, tid: int, args: dict[str, Any]
) -> Event:
    """A complete event (``ph: "X"``): a slice from ``start_ns`` to ``end_ns`` on one track."""
    return {"name": name, "cat": cat, "ph": "X", "ts": _us(start_ns), "dur": _us(end_ns - start_ns),
            "pid": pid, "tid": tid, "args": args}  # fmt: skip


class _Tracks:
    """Hands out thread ids in order and names the tracks."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.next_tid = 1
        self.meta: list[Event] = []

    def add(self, name: str) -> int:
        tid = self.next_tid
        self.next_tid += 1
        self.meta.append(_meta("thread_name", self.pid, tid, {"name": name}))
        self.meta.append(_meta("thread_sort_index", self.pid, tid, {"sort_index": tid}))
        return tid

    def lanes(self, name: str, count: int) -> list[int]:
        return [self.add(name if lane == 0 else f"{name} #{lane + 1}") for lane in range(count)]


def _process_events(run: Run, pid: int, note: str | None) -> list[Event]:
    r = run.result
    size, time = format_size(r.nbytes), format_time(r.time_s)
    labels = [f"{r.ranks} ranks", f"time {time}"] + ([f"sampled: {note}"] if note else [])
    return [
        _meta(
            "process_name",
            pid,
            0,
            {"name": f"{r.label}: {r.collective.value} of {size} on {r.topology} ({time})"},
        ),
        _meta("process_sort_index", pid, 0, {"sort_index": pid}),
        _meta("process_labels", pid, 0, {"labels": ", ".join(labels)}),
    ]


def _step_events(run: Run, tracks: _Tracks) -> Iterator[Event]:
    """One slice per algorithm step over all its sends (lanes where steps overlap)."""
    s, rec = run.schedule, run.record
    if not s.n_ops:
        return
    steps, inverse = np.unique(s.op_step, return_inverse=True)
    first = np.full(steps.size, np.inf)
    last = np.full(steps.size, -np.inf)
    np.minimum.at(first, inverse, rec.op_ready_s)
    np.maximum.at(last, inverse, rec.op_end_s)
    sends = np.bincount(inverse, minlength=steps.size)
    nbytes = np.bincount(inverse, weights=s.op_nbytes, minlength=steps.size)
    start_ns, end_ns = _ns(first), _ns(last)
    lanes = assign_lanes(start_ns, end_ns)
    tids = tracks.lanes("steps", int(lanes.max()) + 1)
    for i in range(steps.size):
        step, start, end, tid = int(steps[i]), int(start_ns[i]), int(end_ns[i]), tids[int(lanes[i])]
        args = {"step": step, "sends": int(sends[i]), "bytes": float(nbytes[i])}
        yield _complete(f"step {step}", "step", start, end, tracks.pid, tid, args)


def _path_names(run: Run, ops: IntArray) -> list[str]:
    """``"gpu0>pcie_switch0>gpu1"`` per op, built once per path spec."""
    rec, links = run.record, run.topology.links
    by_path: dict[int, str] = {}
    names = []
    for op, path in zip(ops.tolist(), run.schedule.op_path[ops].tolist()):
        text = by_path.get(path)
        if text is None:
            hops = rec.op_links[rec.op_links_ptr[op] : rec.op_links_ptr[op + 1]].tolist()
            text = ">".join([links[hops[0]].src] + [links[h].dst for h in hops]) if hops else ""
            by_path[path] = text
        names.append(text)
    return names


def _transfer_events(run: Run, ops: IntArray, tracks: _Tracks) -> Iterator[Event]:
    """Every kept send as a slice on a lane of its sender's track."""
    s, rec = run.schedule, run.record
    start_ns, end_ns = _ns(rec.op_ready_s[ops]), _ns(rec.op_end_s[ops])
    data_ns = _ns(rec.op_data_start_s[ops])
    src = s.op_src[ops]
    lanes = np.empty(ops.size, np.int64)
    tid = np.empty(ops.size, np.int64)
    for device in np.unique(src).tolist():
        mine = np.flatnonzero(src == device)
        lanes[mine] = assign_lanes(start_ns[mine], end_ns[mine])
        tids = tracks.lanes(s.devices[device], int(lanes[mine].max()) + 1)
        tid[mine] = np.asarray(tids, np.int64)[lanes[mine]]
    paths = _path_names(run, ops)
    cols = zip(
        s.op_src[ops].tolist(),
        s.op_dst[ops].tolist(),
        s.op_chunk[ops].tolist(),
        s.op_step[ops].tolist(),
        s.op_reduce[ops].tolist(),
        s.op_nbytes[ops].tolist(),
    )
    for k, (a, b, chunk, step, reduce, nbytes) in enumerate(cols):
        src_name, dst_name = s.devices[a], s.devices[b]
        args = {
            "op": int(ops[k]),
            "bytes": nbytes,
            "chunk": chunk,
            "step": step,
            "src": src_name,
            "dst": dst_name,
            "path": paths[k],
            "reduce": reduce,
            "data_start_us": _us(int(data_ns[k])),
        }
        name = f"{src_name}->{dst_name}"
        yield _complete(name, "transfer", int(start_ns[k]), int(end_ns[k]), tracks.pid, int(tid[k]), args)


def _crossed_links(run: Run, ops: IntArray) -> IntArray:
    """Links that carried data and that at least one of ``ops`` crossed."""
    rec = run.record
    counts = np.diff(rec.op_links_ptr)
    kept = np.zeros(counts.size, dtype=bool)
    kept[ops] = True
    crossed = np.zeros(len(run.topology.links), dtype=bool)
    crossed[rec.op_links[np.repeat(kept, counts)]] = True
    return np.flatnonzero(crossed & (rec.link_bytes > 0))


def _busy_events(link: Link, starts_ns: list[int], ends_ns: list[int], pid: int, tid: int) -> Iterator[Event]:
    args = {"link": link.name, "kind": link.kind, "bandwidth_Bps": link.bandwidth_Bps}
    for a, b in zip(starts_ns, ends_ns):
        yield _complete("busy", "link", a, b, pid, tid, args)


def _counter_events(link: Link, profile: LinkProfile, pid: int, tid: int) -> Iterator[Event]:
    cols = zip(_ns(profile.times_s).tolist(), profile.flows.tolist(), profile.load.tolist())
    for t, flows, load in cols:
        yield {"name": link.name, "cat": "link_load", "ph": "C", "ts": _us(t),
               "pid": pid, "tid": tid, "args": {"flows": flows, "load": round(load, 9)}}  # fmt: skip


def _link_events(run: Run, ops: IntArray, tracks: _Tracks) -> Iterator[Event]:
    """Busy slices and flow/load counters of the links the kept sends crossed."""
    rec = run.record
    links = _crossed_links(run, ops)
    profiles = {p.link: p for p in link_profiles(run, links)}
    order = np.lexsort((rec.interval_start_s, rec.interval_link))
    ilink = rec.interval_link[order]
    istart, iend = _ns(rec.interval_start_s[order]), _ns(rec.interval_end_s[order])
    first, last = np.searchsorted(ilink, links), np.searchsorted(ilink, links, side="right")
    for i, link_index in enumerate(links.tolist()):
        link = run.topology.links[link_index]
        tid = tracks.add(f"link {link.name}")
        span = slice(int(first[i]), int(last[i]))
        yield from _busy_events(link, istart[span].tolist(), iend[span].tolist(), tracks.pid, tid)
        if link_index in profiles:
            yield from _counter_events(link, profiles[link_index], tracks.pid, tid)


def trace_events(
    results: Sequence[Result], max_transfers: int | None = DEFAULT_MAX_TRANSFERS
) -> Iterator[Event]:
    """Every event of the trace of ``results``, one at a time (see the module docstring)."""
    for pid, result in enumerate(results, start=1):
        run = run_parts(result)
        ops, note = sample_sends(run, max_transfers)
        tracks = _Tracks(pid)
        yield from _process_events(run, pid, note)
        yield from _step_events(run, tracks)
        yield from _transfer_events(run, ops, tracks)
        yield from _link_events(run, ops, tracks)
        yield from tracks.meta  # track names, known once the tracks are made
