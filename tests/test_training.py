"""Training steps: workloads, gradient buckets, overlap, scenarios and the notebook.

SEED_FACTS.md section 1 (gradients become ready layer by layer during the
backward pass, so their synchronisation can overlap it), section 3 (the
parameter-server cost model) and section 5 (multi-machine training).
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import math
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from commsim.algorithms.multi_machine_ps import textbook_ps_time
from commsim.api import simulate
from commsim.errors import ScenarioError, UnknownNameError
from commsim.topology import Device, PhysicalLink, Topology, get_topology
from commsim.topology.cluster import cluster
from commsim.training import (
    DEFAULT_BUCKET_BYTES,
    CollectiveTimer,
    Layer,
    TrainingError,
    Workload,
    bert_large,
    bert_large_shapes,
    best_steps,
    gpt2_xl,
    gpt2_xl_shapes,
    load_training_scenario,
    pack_buckets,
    parse_training_scenario,
    resnet50,
    resnet50_shapes,
    run_loaded_training,
    simulate_step,
    step_trace,
    training_json,
    training_report,
    write_step_trace,
)
from commsim.training.config import _default_buckets
from commsim.training.workload import parse_flops
from commsim.units import parse_size

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"
NOTEBOOK = ROOT / "notebooks" / "training_step_overlap.ipynb"
MB = 1e6
RESNET50_FLOPS = 8_178_368_512  # forward FLOPs per 224x224 image (4.09 G multiply-adds)
RESNET50_BYTES = 25_557_032 * 4  # fp32 gradients


def toy(compute_s: float = 1e-3, layers: int = 6, params: int = 1_000_000, name: str = "toy") -> Workload:
    """Equal layers of ``params`` parameters; forward ``compute_s / 3`` and backward twice that, in all."""
    per_layer = compute_s / (3 * layers)
    return Workload(name, tuple(Layer(f"l{i}", params, per_layer, 2 * per_layer) for i in range(layers)))


# -- models: published parameter counts --------------------------------------------------------


def test_resnet50_has_the_published_parameter_count() -> None:
    """He et al. 2016 / torchvision: 25,557,032 parameters; 4.09 G multiply-adds per image."""
    shapes = resnet50_shapes(batch=1)
    assert sum(s.params for s in shapes) == 25_557_032
    assert len(shapes) == 54  # 53 convolutions (with their batch norms) and the classifier
    assert sum(s.forward_flops for s in shapes) == RESNET50_FLOPS
    assert resnet50(batch=64).nbytes == RESNET50_BYTES


def test_bert_large_has_the_published_parameter_count() -> None:
    """Devlin et al. 2019: BERT-large 340 M (the encoder and pooler: 335,141,888)."""
    total = sum(s.params for s in bert_large_shapes())
    assert total == 335_141_888
    assert 335e6 <= total <= 340e6
    assert bert_large(batch=8, seq=512).params == total


def test_gpt2_xl_has_the_published_parameter_count() -> None:
    """Radford et al. 2019: GPT-2 XL, 1.558 B parameters in the released checkpoint (tied LM head)."""
    shapes = gpt2_xl_shapes()
    assert sum(s.params for s in shapes) == 1_557_611_200
    head = shapes[-1]
    assert (head.name, head.params) == ("lm_head", 0)
    assert head.forward_flops == 2 * 1600 * 50257 * 4 * 1024
    assert gpt2_xl(batch=4, seq=1024).nbytes == pytest.approx(1_557_611_200 * 4)


def test_transformer_flops_follow_two_flops_per_parameter_and_token() -> None:
    """Dense layers: 2 x params x tokens; attention adds 4 x seq^2 x hidden per sequence."""
    batch, seq, hidden = 2, 128, 1024
    attention = next(s for s in bert_large_shapes(batch, seq) if s.kind == "attention")
    weights = 4 * hidden * hidden
    assert attention.forward_flops == 2 * weights * batch * seq + 4 * seq * seq * hidden * batch


def test_compute_time_is_flops_over_effective_throughput() -> None:
    """time = FLOPs / (peak x efficiency); backward = 2 x forward."""
    w = resnet50(batch=64, flops_per_s="125 TFLOPS", efficiency=0.25)
    assert w.forward_s == pytest.approx(64 * RESNET50_FLOPS / 31.25e12, rel=1e-12)
    assert w.backward_s == pytest.approx(2 * w.forward_s, rel=1e-12)


@pytest.mark.parametrize(("text", "value"), [("125 TFLOPS", 125e12), ("19.5 TFLOP/s", 19.5e12), (3e9, 3e9)])
def test_device_throughput_is_read_with_units(text: str | float, value: float) -> None:
    """'125 TFLOPS' style figures."""
    assert parse_flops(text) == pytest.approx(value)


# -- errors ------------------------------------------------------------------------------------


def test_a_model_with_no_layers_is_an_error() -> None:
    """A workload must have at least one layer."""
    with pytest.raises(TrainingError) as info:
        Workload("empty", ())
    assert str(info.value) == "workload 'empty' has no layers; give at least one Layer"


def test_a_bucket_larger_than_the_model_is_one_bucket() -> None:
    """A cap above the gradient bytes is an upper bound, as in DDP: the whole model in one bucket.

    fp16 ResNet-50 has 25,557,032 x 2 B = 51.11 MB of gradients < 100 MB, so one bucket
    holding every layer with parameters, ready when the backward of the first layer ends
    (the step's compute time).
    """
    workload = resnet50(64, dtype="fp16")
    step = simulate_step(workload, get_topology("dgx1_v100"), "ring", bucket_bytes="100 MB")
    assert len(step.buckets) == 1
    (only,) = step.buckets
    assert only.bucket.nbytes == 25_557_032 * 2
    assert only.bucket.ready_s == workload.compute_s
    assert len(only.bucket.layers) == sum(1 for layer in workload.layers if layer.params > 0)


@pytest.mark.parametrize("cap", [0.0, -1.0, math.inf, math.nan])
def test_a_bucket_that_is_not_a_positive_size_is_an_error(cap: float) -> None:
    """Zero, negative, infinite or NaN caps are refused, naming a valid example."""
    with pytest.raises(TrainingError) as info:
        pack_buckets(toy(), cap)
    assert str(info.value).startswith("bucket size must be a positive number of bytes (e.g. '25 MiB'")


def test_the_default_bucket_is_ddps_25_mib() -> None:
    """DDP's bucket_cap_mb=25 is int(25 * 1024 * 1024) = 26,214,400 B (torch docs and source), not 25e6.

    ResNet-50's fp32 gradients, 25,557,032 x 4 = 102,228,128 B, at a 26,214,400 B cap: a bucket
    closes once it holds >= the cap, so at most floor(102,228,128 / 26,214,400) = 3 full buckets
    (3 x 26,214,400 = 78,643,200 <= 102,228,128 < 4 x 26,214,400) and a remainder: 3 or 4 buckets,
    every closed one >= 26,214,400 B.
    """
    assert DEFAULT_BUCKET_BYTES == 26_214_400
    assert parse_size(_default_buckets()[0]) == 26_214_400
    step = simulate_step(resnet50(64), get_topology("dgx1_v100"), "multi_ring")
    assert step.bucket_bytes == 26_214_400
    assert len(step.buckets) in (3, 4)
    assert all(t.bucket.nbytes >= 26_214_400 for t in step.buckets[:-1])
    assert sum(t.bucket.nbytes for t in step.buckets) == 102_228_128


def test_overlap_without_compute_is_an_error() -> None:
    """Zero backward time leaves nothing to overlap with."""
    with pytest.raises(TrainingError) as info:
        simulate_step(toy(0.0), get_topology("pcie_4gpu_switch"), "ring", bucket_bytes="1 MB", overlap=True)
    assert str(info.value) == (
        "workload 'toy' has zero backward compute time, so there is no backward pass for communication "
        "to overlap with; use overlap=False (the step is then the sum of the bucket collectives)"
    )


def test_unknown_dtype_and_bad_efficiency_are_errors() -> None:
    """Typed errors naming what is valid."""
    with pytest.raises(TrainingError, match="unknown dtype 'fp12'; valid: fp64, fp32"):
        resnet50(dtype="fp12")
    with pytest.raises(TrainingError, match=r"efficiency must be in \(0, 1\], got 1.5"):
        resnet50(efficiency=1.5)


# -- buckets -----------------------------------------------------------------------------------


@pytest.mark.parametrize("cap_mb", [1, 5, 25, 100])
def test_buckets_fill_in_backward_order_ddp_style(cap_mb: float) -> None:
    """Reverse layer order; a bucket closes at the cap; all bytes packed exactly once."""
    w = resnet50(64)
    buckets = pack_buckets(w, cap_mb * MB)
    assert sum(b.nbytes for b in buckets) == w.nbytes
    sizes = {l.name: l.params * w.dtype_bytes for l in w.layers}
    packed = [name for b in buckets for name in b.layers]
    assert packed == [l.name for l in reversed(w.layers)]
    for b in buckets[:-1]:
        assert cap_mb * MB <= b.nbytes < cap_mb * MB + sizes[b.layers[-1]]
    assert [b.ready_s for b in buckets] == sorted(b.ready_s for b in buckets)
    assert buckets[-1].ready_s == pytest.approx(w.compute_s)


# -- the step: limits and properties -------------------------------------------------------------


def test_zero_compute_step_is_the_sum_of_the_bucket_collectives() -> None:
    """Compute zero: the step is the collectives back to back; overlap then changes nothing.

    Overlap with exactly zero compute is an error (above), so its limit is
    checked with a vanishing compute time.
    """
    topology = get_topology("dgx1_v100")
    timer = CollectiveTimer(topology, "multi_ring")
    step = simulate_step(toy().scaled(0.0), timer, bucket_bytes="2 MB", overlap=False)
    assert step.iteration_s == sum(b.cost.time_s for b in step.buckets)
    assert step.iteration_s == pytest.approx(6 * timer(4 * MB).time_s, rel=1e-12)  # a 4 MB layer per bucket
    tiny = toy(1e-15)
    with_overlap = simulate_step(tiny, timer, bucket_bytes="2 MB", overlap=True)
    without = simulate_step(tiny, timer, bucket_bytes="2 MB", overlap=False)
    assert with_overlap.iteration_s == pytest.approx(without.iteration_s, rel=1e-9)
    assert with_overlap.iteration_s == pytest.approx(step.iteration_s, rel=1e-9)


def test_infinite_bandwidth_step_is_compute() -> None:
    """Links of 1e30 B/s and zero latency: communication vanishes, the step is compute alone."""
    topology = get_topology("dgx1_v100")
    families = {link.family for link in topology.links}
    fast = topology.with_overrides({family: (1e30, 0.0) for family in families})
    for overlap in (False, True):
        step = simulate_step(resnet50(64), fast, "multi_ring", bucket_bytes="25 MB", overlap=overlap)
        assert step.iteration_s == pytest.approx(step.compute_s, rel=1e-12)
        assert step.scaling_efficiency == pytest.approx(1.0, rel=1e-12)


_LAYER = st.tuples(st.integers(0, 4_000_000), st.floats(0, 5e-3), st.floats(1e-6, 1e-2))


@settings(max_examples=15, deadline=None)
@given(
    st.lists(_LAYER, min_size=1, max_size=8),
    st.floats(0.05, 1.0),
    st.sampled_from(["ring", "parameter_server"]),
)
def test_overlap_is_never_slower(
    layers: list[tuple[int, float, float]], fraction: float, algorithm: str
) -> None:
    """Between the limits, starting buckets early never lengthens the step (and never beats compute)."""
    workload = Workload(
        "random", tuple(Layer(f"l{i}", p + (1 if i == 0 else 0), f, b) for i, (p, f, b) in enumerate(layers))
    )
    timer = CollectiveTimer(get_topology("pcie_4gpu_switch"), algorithm)
    cap = max(1, round(fraction * workload.nbytes))  # a size is whole bytes
    with_overlap = simulate_step(workload, timer, bucket_bytes=cap, overlap=True)
    without = simulate_step(workload, timer, bucket_bytes=cap, overlap=False)
    assert with_overlap.iteration_s <= without.iteration_s * (1 + 1e-12)
    assert without.iteration_s == pytest.approx(workload.compute_s + without.comm_s, rel=1e-12)
    assert with_overlap.iteration_s >= max(workload.compute_s, with_overlap.comm_s) * (1 - 1e-12)


def test_buckets_run_one_after_another_on_one_stream() -> None:
    """A collective starts when its bucket is ready and the previous one has finished."""
    step = simulate_step(
        resnet50(64), get_topology("pcie_4gpu_switch"), "parameter_server", bucket_bytes="5 MB"
    )
    previous_end = 0.0
    for timing in step.buckets:
        assert timing.start_s == max(timing.bucket.ready_s, previous_end)
        assert timing.end_s == pytest.approx(timing.start_s + timing.cost.time_s, rel=1e-15)
        previous_end = timing.end_s
    assert step.iteration_s == max(previous_end, step.workload.compute_s)


def test_link_utilisation_is_busy_time_over_the_step() -> None:
    """The textbook box, PS on the CPU: the CPU's uplink carries 4 x g each way per step."""
    w = toy(0.1, params=10_000_000)  # 240 MB of fp32 gradients
    step = simulate_step(
        w,
        get_topology("pcie_4gpu_switch"),
        "parameter_server",
        params={"server": "cpu"},
        bucket_bytes=w.nbytes,
        overlap=False,
    )
    uplink = next(l for l in step.links if l.link == "pcie_switch0->cpu0")
    assert uplink.nbytes == pytest.approx(4 * w.nbytes)
    assert uplink.utilisation == pytest.approx(4 * w.nbytes / 16e9 / step.iteration_s)
    # SEED_FACTS section 1: 8 x 10 ms per 160 MB through the CPU's one link (4 pushes, 4 pulls)
    assert step.iteration_s == pytest.approx(0.1 + 8 * w.nbytes / 16e9)


def test_parameter_server_step_falls_with_shards_and_matches_the_closed_form() -> None:
    """SEED_FACTS.md section 3 with zero compute: step = N g / (M BW) + N W / (M BW), O(m/n).

    m one-GPU workers and n dedicated server machines on 100 GbE, zero latency.
    """
    box = Topology(
        "gpu_box", [Device("gpu0", "gpu"), Device("cpu0", "cpu")], [PhysicalLink("gpu0", "cpu0", "pcie3_x16")]
    )
    w = toy(0.0, params=10_000_000)
    m, times = 8, []
    for n in (1, 2, 4, 8):
        topology = cluster(box, nodes=m + n, nic="eth_100g", nic_per="box").scaled({}, latency_s=0.0)
        servers = [f"n{m + j}_cpu0" for j in range(n)]
        step = simulate_step(
            w,
            topology,
            "kv_parameter_server",
            params={"servers": servers},
            ranks=topology.gpus[:m],
            bucket_bytes="10 MB",
            overlap=False,
        )
        assert step.iteration_s == pytest.approx(textbook_ps_time(m, n, w.nbytes, 12.5e9), rel=1e-9)
        times.append(step.iteration_s)
    assert times == sorted(times, reverse=True)


def test_timeline_and_trace() -> None:
    """The timeline covers compute and every bucket; the trace is JSON with one slice per span."""
    step = simulate_step(
        resnet50(64), get_topology("dgx1_v100"), "multi_ring", bucket_bytes="25 MB", optimizer="1 ms"
    )
    spans = step.timeline()
    assert [s.track for s in spans].count("compute") == 2 * len(step.workload.layers)
    assert [s.name for s in spans if s.track == "communication"] == [
        f"bucket {i} ({b})" for i, b in enumerate(["26.05 MB", "26.26 MB", "25.75 MB", "24.18 MB"])
    ]
    assert spans[-1].track == "optimizer" and spans[-1].end_s == step.iteration_s
    trace = json.loads(json.dumps(step_trace([step])))
    assert sum(e["ph"] == "X" for e in trace["traceEvents"]) == len(spans)
    record = json.loads(training_json([step]))[0]
    assert record["buckets"] == 4 and record["iteration_s"] == step.iteration_s


def test_a_step_trace_ending_in_gz_is_gzip(tmp_path: Path) -> None:
    """``.json.gz`` is gzip (magic bytes 1f 8b) holding the same JSON as ``.json``; no temp file left."""
    step = simulate_step(toy(), get_topology("pcie_4gpu_switch"), "ring", bucket_bytes="2 MB")
    plain = write_step_trace([step], tmp_path / "t.json").read_bytes()
    packed = write_step_trace([step], tmp_path / "t.json.gz").read_bytes()
    assert packed[:2] == b"\x1f\x8b"
    assert gzip.decompress(packed) == plain
    assert json.loads(plain) == step_trace([step])
    assert sorted(f.name for f in tmp_path.iterdir()) == ["t.json", "t.json.gz"]


# -- scenarios -----------------------------------------------------------------------------------

DGX1_COMPUTE_S = 64 * 3 * RESNET50_FLOPS / (125e12 * 0.25)
BUCKETS = {1 * MB: 35, 5 * MB: 13, 25 * MB: 4, 100 * MB: 2}  # buckets of ResNet-50's 102.2 MB


def _ring_sum(buckets: int) -> float:
    """NVLink double rings on the DGX-1: 14 x (0.5 us + b / (8 x 150 GB/s)) per bucket, summed."""
    return 14 * buckets * 0.5e-6 + 14 * RESNET50_BYTES / (8 * 150e9)


def _stream(
    workload: Workload, bucket_bytes: float, overlap: bool, collective_s: Callable[[float], float]
) -> float:
    """The iteration time of the step model, worked by hand (commsim/training/step.py docstring).

    Buckets (sizes and ready times from the workload's layers, :func:`pack_buckets`) run one
    after another on one stream: bucket k starts at max(ready_k, end_{k-1}) (and, without
    overlap, not before the backward ends at the compute time) and lasts collective_s(bytes_k);
    the step ends at max(last end, compute).
    """
    free_s = 0.0 if overlap else workload.compute_s
    for bucket in pack_buckets(workload, bucket_bytes):
        free_s = max(bucket.ready_s, free_s) + collective_s(bucket.nbytes)
    return max(free_s, workload.compute_s)


def _dgx1_ring_s(nbytes: float) -> float:
    """NVLink double rings on the DGX-1 V100: 14 steps of (0.5 us + b / (8 x 150 GB/s))."""
    return 14 * (0.5e-6 + nbytes / (8 * 150e9))


# (sync label, overlap, bucket) -> how one bucket's collective time is known: the rings by their
# closed form; the parameter servers by one replay of that bucket's collective (the engine's
# single-collective figures are checked against closed forms in test_algorithms.py).
DGX1_CASES: list[tuple[str, bool, float]] = [
    *[("NVLink double rings", overlap, b) for b in BUCKETS for overlap in (False, True)],
    ("sharded over the 8 GPUs", True, 25 * MB),
    ("parameter server on GPU 0", False, 25 * MB),
    ("parameter server on GPU 0", True, 5 * MB),
    ("parameter server on the CPU", False, 25 * MB),
    ("parameter server on the CPU", True, 1 * MB),
    ("parameter server on the CPU", True, 100 * MB),
]
DGX1_SYNC = {
    "sharded over the 8 GPUs": ("sharded_parameter_server", {}),
    "parameter server on GPU 0": ("parameter_server", {"server": 0}),
    "parameter server on the CPU": ("parameter_server", {"server": "cpu"}),
}


def _dgx1_collective_s(label: str) -> Callable[[float], float]:
    if label == "NVLink double rings":
        return _dgx1_ring_s
    name, params = DGX1_SYNC[label]
    return lambda nbytes: simulate(get_topology("dgx1_v100"), name, size=nbytes, params=params).time_s


def test_dgx1_overlap_scenario_headlines() -> None:
    """ResNet-50 on a DGX-1 V100: the step recurrence over closed-form rings; best buckets."""
    results = run_loaded_training(load_training_scenario(SCENARIOS / "resnet50_dgx1_overlap.yaml"))
    assert len(results) == 4 * 2 * 4
    by = {(r.label, r.overlap, r.bucket_bytes): r for r in results}
    for r in results:
        assert r.compute_s == pytest.approx(DGX1_COMPUTE_S, rel=1e-12)
        assert len(r.buckets) == BUCKETS[r.bucket_bytes]
    for label, overlap, bucket in DGX1_CASES:
        result = by[(label, overlap, bucket)]
        expected = _stream(result.workload, bucket, overlap, _dgx1_collective_s(label))
        assert result.iteration_s == pytest.approx(expected, rel=1e-12), (label, overlap, bucket)
    for bucket, count in BUCKETS.items():  # no overlap: compute + the sum of the closed forms
        no_overlap = by[("NVLink double rings", False, bucket)].iteration_s
        assert no_overlap == pytest.approx(DGX1_COMPUTE_S + _ring_sum(count), rel=1e-12)
    cpu_25 = by[("parameter server on the CPU", False, 25 * MB)].exposed_comm_s
    assert cpu_25 == pytest.approx(4 * RESNET50_BYTES / (16e9 * 128 / 130), rel=1e-3)  # PCIe 3.0 x16
    best = {r.label: (r.bucket_bytes, r.overlap) for r in best_steps(results)}
    assert best == {
        "NVLink double rings": (1 * MB, True),
        "sharded over the 8 GPUs": (1 * MB, True),
        "parameter server on GPU 0": (5 * MB, True),
        "parameter server on the CPU": (1 * MB, True),
    }
    cpu = by[("parameter server on the CPU", False, 25 * MB)]
    assert cpu.bottleneck is not None and cpu.bottleneck.link == "cpu0->pcie_switch0"
    console = Console(width=200, record=True)
    console.print(training_report(results, title="resnet50_dgx1_overlap"))
    text = console.export_text()
    assert "best bucket size for parameter server on GPU 0: 5 MB with overlap" in text


def _scaling(nodes: list[int] | None = None) -> list:  # type: ignore[type-arg]
    loaded = load_training_scenario(SCENARIOS / "resnet50_a100_cluster_scaling.yaml")
    if nodes is not None:
        loaded = dataclasses.replace(loaded, machines=[m for m in loaded.machines if m[0] in nodes])
    return run_loaded_training(loaded)


A100_COMPUTE_S = 64 * 3 * RESNET50_FLOPS / (312e12 * 0.2)


def _nvswitch_ring_sum(buckets: int) -> float:
    """One DGX A100: a ring over NVSwitch, 14 steps of (2 x 0.5 us + b / (8 x 300 GB/s)) per bucket."""
    return 14 * buckets * 1e-6 + 14 * RESNET50_BYTES / (8 * 300e9)


def _nvswitch_ring_s(nbytes: float) -> float:
    """One DGX A100: 14 ring steps of (2 x 0.5 us + b / (8 x 300 GB/s)) over the NVSwitch."""
    return 14 * (1e-6 + nbytes / (8 * 300e9))


def _hierarchical_s(nodes: int) -> Callable[[float], float]:
    """One bucket's hierarchical all-reduce on ``nodes`` boxes: a replay of that one collective."""
    topology = cluster("dgx_a100", nodes=nodes, nic="ib_hdr")
    return lambda nbytes: simulate(topology, "hierarchical", size=nbytes).time_s


def _check_scaling(results: list, cases: list[tuple[int, bool, float]]) -> None:  # type: ignore[type-arg]
    """Each case's iteration follows the step recurrence (one box: closed-form rings)."""
    by = {(r.nodes, r.overlap, r.bucket_bytes): r for r in results}
    for nodes, overlap, bucket in cases:
        result = by[(nodes, overlap, bucket)]
        collective_s = _nvswitch_ring_s if nodes == 1 else _hierarchical_s(nodes)
        expected = _stream(result.workload, bucket, overlap, collective_s)
        assert result.iteration_s == pytest.approx(expected, rel=1e-12), (nodes, overlap, bucket)


SCALING_CASES = [
    *[(1, False, b) for b in BUCKETS],
    (1, True, 25 * MB),
    (2, False, 1 * MB),
    (2, True, 25 * MB),
]
SCALING_CASES_64 = [(64, False, 1 * MB), (64, False, 100 * MB), (64, True, 1 * MB), (64, True, 5 * MB)]


def test_cluster_scaling_scenario_small_node_counts() -> None:
    """The scaling scenario on 1 and 2 boxes (fast): the step recurrence; one box in closed form."""
    results = _scaling([1, 2])
    assert {r.nodes for r in results} == {1, 2}
    for r in results:
        assert r.compute_s == pytest.approx(A100_COMPUTE_S, rel=1e-12)
        assert r.ranks == 8 * r.nodes
    _check_scaling(results, SCALING_CASES)
    by = {(r.nodes, r.overlap, r.bucket_bytes): r.iteration_s for r in results}
    for bucket, count in BUCKETS.items():
        assert by[(1, False, bucket)] == pytest.approx(A100_COMPUTE_S + _nvswitch_ring_sum(count), rel=1e-12)


@pytest.mark.slow
def test_cluster_scaling_scenario_headlines() -> None:
    """1 to 64 DGX A100 boxes: without overlap small buckets stop scaling first.

    Each hierarchical all-reduce crosses the network in 2 (K - 1) ring
    steps, each paying the path latency: 35 buckets of 1 MB pay it 35 times.
    """
    results = _scaling()
    assert len(results) == 7 * 2 * 4
    by = {(r.nodes, r.overlap, r.bucket_bytes): r for r in results}
    _check_scaling(results, SCALING_CASES_64)
    for bucket in BUCKETS:
        for overlap in (False, True):
            efficiency = [by[(n, overlap, bucket)].scaling_efficiency for n in (1, 2, 4, 8, 16, 32, 64)]
            assert efficiency == sorted(efficiency, reverse=True)
    no_overlap_64 = [by[(64, False, b)].scaling_efficiency for b in sorted(BUCKETS)]
    assert no_overlap_64 == sorted(no_overlap_64)  # bigger buckets, fewer latency-bound collectives
    bottleneck = by[(64, True, 25 * MB)].bottleneck
    assert bottleneck is not None and bottleneck.kind == "ib_hdr"
    console = Console(width=250, record=True)
    console.print(training_report(results))
    text = console.export_text()
    assert (
        "hierarchical all-reduce, 1 MB buckets without overlap: efficiency falls below 90% at 8 nodes (87.2%)"
        in text
    )
    assert "(latency-bound)" in text


# -- scenario files: errors with their line -------------------------------------------------------

_GOOD = """\
name: t
workload: {model: resnet50, batch: 8, device_flops: 100 TFLOPS}
topology: pcie_4gpu_switch
sync: [{algorithm: ring}]
bucket_sizes: [10 MB]
"""


@pytest.mark.parametrize(
    ("text", "error", "message"),
    [
        (
            _GOOD.replace("resnet50", "resnet51"),
            ScenarioError,
            "<t>:2:19: workload.model: unknown model 'resnet51'; valid: resnet50, bert_large, gpt2_xl",
        ),
        (
            _GOOD.replace("[10 MB]", "[10 MB, 0 MB]"),
            ScenarioError,
            "<t>:5:23: bucket_sizes.1: size '0 MB' must be at least 1 byte; expected a whole number of "
            "bytes with an optional unit, e.g. '160 MB', '1M', '1 GiB', '4096', '8 Gbit' (K/M/G/T alone "
            "are binary as in nccl-tests, KB/MB/GB decimal, KiB/MiB/GiB binary)",
        ),
        (
            _GOOD.replace(", device_flops: 100 TFLOPS", ""),
            ScenarioError,
            "<t>:2:11: workload: model 'resnet50' needs the device's throughput: give exactly one of "
            "device_flops (e.g. '125 TFLOPS') or flops_per_s (e.g. 1.25e14)",
        ),
        (
            _GOOD.replace("{model: resnet50, batch: 8, device_flops: 100 TFLOPS}", "{layers: []}"),
            TrainingError,
            "<t>:2:11: workload: workload 'custom' has no layers; give at least one Layer",
        ),
        (
            _GOOD.replace(
                "{model: resnet50, batch: 8, device_flops: 100 TFLOPS}",
                "{layers: [{name: a, params: 1.0e7}]}",
            )
            + "overlap: [false, true]\n",
            TrainingError,
            "<t>:6:18: overlap: workload 'custom' has zero backward compute time, so there is nothing for "
            "communication to overlap with; use overlap: [false]",
        ),
        (
            _GOOD + "nodes: [1, 2]\n",
            ScenarioError,
            "<t>:6:8: nodes: 'nodes' needs a builder topology, e.g. {builder: cluster, box: dgx_a100}",
        ),
        (
            _GOOD.replace("ring}", "butterfly}"),
            ScenarioError,
            "<t>:4:20: sync.0.algorithm: unknown algorithm 'butterfly'",
        ),
    ],
)
def test_scenario_errors_name_file_and_line(text: str, error: type[Exception], message: str) -> None:
    """Validation errors carry ``file:line:col`` and say what would be valid."""
    with pytest.raises(error) as info:
        parse_training_scenario(text, "<t>")
    assert str(info.value).startswith(message)


def test_layers_given_directly_run() -> None:
    """A workload of layers with times runs like a shipped model."""
    text = _GOOD.replace(
        "{model: resnet50, batch: 8, device_flops: 100 TFLOPS}",
        "{name: mine, dtype: fp16, layers: [{name: a, params: 2.0e6, forward: 1 ms, backward: 2 ms},"
        " {name: b, params: 8000000, forward: 2 ms, backward: 4 ms}]}",
    ).replace("[10 MB]", "[4 MB, 20 MB]")
    results = run_loaded_training(parse_training_scenario(text, "<t>"))
    assert [len(r.buckets) for r in results] == [2, 1]
    assert results[0].compute_s == pytest.approx(9e-3)


def test_unknown_model_by_name() -> None:
    """get_model lists the shipped models."""
    from commsim.training import get_model

    with pytest.raises(UnknownNameError, match="unknown model 'vgg'; valid: bert_large, gpt2_xl, resnet50"):
        get_model("vgg")


# -- the notebook ----------------------------------------------------------------------------------


# (the notebook is executed with the others by tests/test_notebooks.py)


def test_one_gpu_has_nothing_to_synchronise() -> None:
    """ranks=1: no collective, the step is compute and the efficiency exactly 1."""
    step = simulate_step(resnet50(64), get_topology("dgx1_v100"), "multi_ring", ranks=1)
    assert step.iteration_s == step.compute_s and step.scaling_efficiency == 1.0
    assert step.links == [] and step.bottleneck is None
