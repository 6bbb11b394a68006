"""Chrome trace-event output: format, completeness, lanes, link tracks and counters."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from commsim.api import run_scenario, simulate
from commsim.config import load_scenario
from commsim.errors import CommsimError
from commsim.report.activity import flow_end_s, link_profiles, run_parts
from commsim.report.trace import assign_lanes, chrome_trace, write_trace
from commsim.results import Result
from commsim.topology import Device, PhysicalLink, Topology

ROOT = Path(__file__).resolve().parent.parent
SYNC = ROOT / "scenarios" / "pcie_4gpu_sync_strategies.yaml"
REQUIRED = {"name", "cat", "ph", "ts", "pid", "tid", "args"}


@pytest.fixture(scope="module")
def sync_results() -> list[Result]:
    return run_scenario(load_scenario(SYNC))


@pytest.fixture(scope="module")
def mixed_results(sync_results: list[Result]) -> list[Result]:
    """The four sync strategies, a pipelined tree packing (overlapping sends) and a reducing box."""
    devices = [Device("sw", "pcie_switch")] + [
        Device(f"gpu{i}", "gpu", reduce_bandwidth_Bps=4e9) for i in range(4)
    ]
    links = [PhysicalLink(f"gpu{i}", "sw", "pcie3_x16", 1, 16e9, 1e-6) for i in range(4)]
    slow_sums = Topology("star_reduce", devices, links)
    return [
        *sync_results,
        simulate("dgx1_v100", "tree_packing", size="64 MB", params={"chunks": 8}),
        simulate(slow_sums, "ring", size="16 MB"),
    ]


def _ns(us: float) -> int:
    return round(us * 1000)


def _check_format(trace: dict[str, Any]) -> None:
    assert trace["displayTimeUnit"] == "ns"
    for event in trace["traceEvents"]:
        assert set(event) >= REQUIRED, event
        assert event["ph"] in {"X", "M", "C"}
        assert isinstance(event["pid"], int) and isinstance(event["tid"], int)
        assert event["ts"] >= 0
        if event["ph"] == "X":
            assert event["dur"] >= 0


def test_trace_has_the_event_format(mixed_results: list[Result]) -> None:
    trace = chrome_trace(mixed_results)
    _check_format(trace)
    json.dumps(trace, allow_nan=False)  # plain JSON: no NaN or infinity


def test_every_transfer_is_present_exactly_once(mixed_results: list[Result]) -> None:
    trace = chrome_trace(mixed_results)
    ops: dict[int, list[int]] = defaultdict(list)
    for event in trace["traceEvents"]:
        if event["cat"] == "transfer":
            ops[event["pid"]].append(event["args"]["op"])
    for pid, result in enumerate(mixed_results, start=1):
        assert result.schedule is not None
        assert sorted(ops[pid]) == list(range(result.schedule.n_ops))


def test_no_two_slices_overlap_on_a_track(mixed_results: list[Result]) -> None:
    trace = chrome_trace(mixed_results)
    tracks: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for event in trace["traceEvents"]:
        if event["ph"] == "X":
            start = _ns(event["ts"])
            tracks[event["pid"], event["tid"]].append((start, start + _ns(event["dur"])))
    assert tracks
    for spans in tracks.values():
        spans.sort()
        for (_, end), (start, _) in zip(spans, spans[1:]):
            assert start >= end


def test_overlapping_sends_get_lanes(mixed_results: list[Result]) -> None:
    """Tree packing keeps several sends of one GPU in flight: they need several lanes."""
    trace = chrome_trace(mixed_results[4:5])
    names = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    assert "gpu0" in names.values() and "gpu0 #2" in names.values()
    assert "steps" in names.values()


def test_transfer_slices_match_the_record(sync_results: list[Result]) -> None:
    """SEED_FACTS.md section 1: aggregating on the CPU, every send takes 40 ms (4 share the uplink)."""
    cpu = sync_results[1]
    trace = chrome_trace([cpu])
    sends = [e for e in trace["traceEvents"] if e["cat"] == "transfer"]
    assert len(sends) == 8
    assert sorted((e["ts"], e["dur"]) for e in sends) == [(0.0, 40000.0)] * 4 + [(40000.0, 40000.0)] * 4
    first = min(sends, key=lambda e: (e["ts"], e["args"]["op"]))
    assert first["args"] | {"op": 0} == {
        "op": 0,
        "bytes": 160e6,
        "chunk": first["args"]["chunk"],
        "step": 0,
        "src": "gpu0",
        "dst": "cpu0",
        "path": "gpu0>pcie_switch0>cpu0",
        "reduce": True,
        "data_start_us": 0.0,
    }


def test_link_tracks_and_counters(sync_results: list[Result]) -> None:
    """SEED_FACTS.md section 1: the CPU uplink is busy 0-40 ms with four flows at full capacity."""
    trace = chrome_trace([sync_results[1]])
    events = trace["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    uplink = next(tid for tid, name in names.items() if name == "link pcie_switch0->cpu0")
    busy = [(e["ts"], e["dur"]) for e in events if e["tid"] == uplink and e["ph"] == "X"]
    assert busy == [(0.0, 40000.0)]
    counters = [(e["ts"], e["args"]) for e in events if e["tid"] == uplink and e["ph"] == "C"]
    assert counters == [(0.0, {"flows": 4, "load": 1.0}), (40000.0, {"flows": 0, "load": 0.0})]
    link_tracks = {name for name in names.values() if name.startswith("link ")}
    assert len(link_tracks) == 10  # every directed link of the box carried data


def test_counters_end_at_zero_and_stay_within_capacity(mixed_results: list[Result]) -> None:
    trace = chrome_trace(mixed_results)
    last: dict[tuple[int, str], dict[str, Any]] = {}
    for event in trace["traceEvents"]:
        if event["ph"] == "C":
            assert 0 <= event["args"]["load"] <= 1 + 1e-6
            assert event["args"]["flows"] >= 0
            last[event["pid"], event["name"]] = event["args"]
    assert last and all(args == {"flows": 0, "load": 0.0} for args in last.values())


def test_reduction_time_is_not_flow_time(mixed_results: list[Result]) -> None:
    """With a reduction bandwidth, a flow ends before its send completes (by nbytes / rate)."""
    run = run_parts(mixed_results[5])
    ends = flow_end_s(run)
    reduce = run.schedule.op_reduce
    delay = run.schedule.op_nbytes[reduce] / 4e9
    assert np.allclose(run.record.op_end_s[reduce] - ends[reduce], delay)
    for profile in link_profiles(run):
        assert profile.flows[-1] == 0


def test_assign_lanes_is_greedy_and_optimal() -> None:
    start = np.array([0, 0, 5, 10, 10, 12], np.int64)
    end = np.array([10, 5, 10, 20, 11, 13], np.int64)
    assert assign_lanes(start, end).tolist() == [0, 1, 1, 0, 1, 1]
    assert assign_lanes(np.empty(0, np.int64), np.empty(0, np.int64)).tolist() == []


def test_trace_is_deterministic_and_written_as_json(sync_results: list[Result], tmp_path: Path) -> None:
    first = json.dumps(chrome_trace(sync_results))
    assert json.dumps(chrome_trace(sync_results)) == first
    path = write_trace(sync_results, tmp_path / "sync.json")
    assert json.loads(path.read_text()) == json.loads(first)
    packed = write_trace(sync_results, tmp_path / "sync.json.gz")
    assert json.loads(gzip.decompress(packed.read_bytes())) == json.loads(first)
    again = write_trace(sync_results, tmp_path / "again.json.gz")
    assert again.read_bytes() == packed.read_bytes()


def test_big_runs_are_sampled_by_device() -> None:
    result = simulate("ring", "ring", size="64 MB", gpus=64)
    assert result.schedule is not None
    trace = chrome_trace([result], max_transfers=1000)
    _check_format(trace)
    events = trace["traceEvents"]
    sends = [e for e in events if e["cat"] == "transfer"]
    assert 0 < len(sends) <= 1000
    assert len({e["args"]["op"] for e in sends}) == len(sends)
    kept = {e["args"]["src"] for e in sends}
    assert all(sum(e["args"]["src"] == d for e in sends) == 2 * 63 for d in kept)  # whole devices
    steps = [e for e in events if e["cat"] == "step"]
    assert sum(e["args"]["sends"] for e in steps) == result.schedule.n_ops
    assert "of 8064 sends" in trace["otherData"]["sampled"]["1"]
    full = chrome_trace([result], max_transfers=None)
    assert sum(e["cat"] == "transfer" for e in full["traceEvents"]) == result.schedule.n_ops


def test_one_device_over_the_limit_keeps_its_first_sends() -> None:
    result = simulate("pcie_4gpu_switch", "ring", size="160 MB")
    trace = chrome_trace([result], max_transfers=3)
    sends = [e for e in trace["traceEvents"] if e["cat"] == "transfer"]
    assert [(e["args"]["src"], e["ts"]) for e in sends] == [("gpu0", 0.0), ("gpu0", 2500.0), ("gpu0", 5000.0)]


def test_a_result_without_record_is_refused(sync_results: list[Result]) -> None:
    bare = Result(**{**sync_results[0].__dict__, "record": None})
    with pytest.raises(CommsimError, match="no replay record"):
        chrome_trace([bare])
