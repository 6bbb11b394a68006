"""Runs replayed from CUDA graphs (nccl-tests ``-G N``) and grouped calls (``agg iters``).

nccl-tests' ``-G N`` captures the timed calls of a size in one CUDA graph per GPU and times N launches
of it (``src/common.cu``, ``cudaGraphLaunches``), so the reported time per call holds no host issue:
the call takes the GPUs' time. ``agg iters: A`` issues A calls per ``ncclGroupStart/End``, which NCCL
launches with fewer kernels than one per call; the model cannot price that and says so.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from commsim.calibrate.defaults import host_issue_per_gpu_s
from commsim.calibrate.validate import validate_file
from commsim.nccl.params import NcclParams

DATA = Path(__file__).parent / "data" / "nccl-tests"
A100 = DATA / "A100-SXM4-80GB-HGX-NVSwitch_all_reduce_8gpu_1.txt"
HEADER = "agg iters: 1 validation: 1 graph: 0"


def _variant(tmp_path: Path, header: str) -> Path:
    """The A100 -g 8 log with its run header's 'agg iters .. graph ..' tail replaced."""
    text = A100.read_text()
    assert HEADER in text
    path = tmp_path / "a100_variant.txt"
    path.write_text(text.replace(HEADER, header))
    return path


def test_cuda_graph_run_is_priced_without_the_hosts_issue(tmp_path: Path) -> None:
    """One thread drives 8 GPUs (-g 8): replayed call by call, an 8-byte all-reduce takes the host's
    8 x launch_s = 8 x 4.9 = 39.2 us. From a CUDA graph it takes the GPUs' time: ring/LL latency
    (NCCL's baseLat 6.6 us + 2 x 7 steps x NVLink LL hop 0.6 us = 15.0 us, kernel start and end
    included) + 8 B at the ring's bandwidth (a few ns) = 15.0 us."""
    plain = validate_file(A100)
    graph = validate_file(_variant(tmp_path, "agg iters: 1 validation: 1 graph: 15"))
    params = NcclParams()
    assert plain.rows[0].nbytes == graph.rows[0].nbytes == 8
    assert plain.rows[0].predicted_time_s == pytest.approx(8 * params.launch_s, rel=1e-9)
    assert graph.rows[0].predicted_time_s == pytest.approx(15.0e-6, abs=0.01e-6)
    assert graph.inference.cuda_graph and not plain.inference.cuda_graph
    fact = graph.inference.facts["cuda_graph"]
    assert "no host issue" in fact.describe() and "-G" in fact.describe()
    # bandwidth-bound sizes do not change: the GPUs set their time either way
    assert graph.rows[-1].predicted_time_s == pytest.approx(plain.rows[-1].predicted_time_s, rel=1e-12)


def test_cuda_graph_run_is_not_told_its_small_sizes_rest_on_the_hosts_issue_time(tmp_path: Path) -> None:
    """The note that a -g N run's small sizes rest on the shipped launch_s is true of a run issued
    call by call, and false of one replayed from CUDA graphs."""
    plain = validate_file(A100)
    graph = validate_file(_variant(tmp_path, "agg iters: 1 validation: 1 graph: 1"))
    assert any("host's issue time" in n for n in plain.notes())
    assert not any("host's issue time" in n for n in graph.notes())


def test_cuda_graph_logs_do_not_train_launch_s(tmp_path: Path) -> None:
    """launch_s is derived from -g N logs whose small sizes take N x the host's issue time; a log
    replayed from CUDA graphs does not measure it, so a machine with only such a log adds nothing."""
    graph = validate_file(_variant(tmp_path, "agg iters: 1 validation: 1 graph: 1"))
    plain = validate_file(A100)
    assert host_issue_per_gpu_s([[graph]]) is None
    small = [r.measured_time_s for r in plain.rows if r.nbytes <= 1024]  # 8 sizes: 8 B .. 1 KiB
    assert len(small) == 8
    assert host_issue_per_gpu_s([[plain]]) == pytest.approx(statistics.median(small) / 8, rel=1e-12)


def test_grouped_calls_are_warned_about(tmp_path: Path) -> None:
    """'agg iters: 4' groups four calls per ncclGroupStart/End: the warning says the model prices
    them as separate calls and names calibration as the remedy; 'agg iters: 1' says nothing."""
    grouped = validate_file(_variant(tmp_path, "agg iters: 4 validation: 1 graph: 0"))
    assert any("agg iters: 4" in w and "commsim calibrate" in w for w in grouped.inference.warnings)
    assert not any("agg iters" in w for w in validate_file(A100).inference.warnings)


def test_nccl_algorithm_takes_cuda_graph() -> None:
    """The nccl algorithm's cuda_graph parameter drops the host's issue time: a -g 8 call of 8 B on a
    DGX A100 takes 8 x launch_s = 39.2 us issued call by call, and its GPU time from a graph."""
    from commsim.algorithms.base import Problem
    from commsim.collectives import Collective
    from commsim.nccl.algorithm import Nccl
    from commsim.topology import get_topology

    topo = get_topology("dgx_a100")
    problem = Problem(topo, tuple(topo.gpus), Collective.ALL_REDUCE, 8.0)
    called = Nccl({"gpus_per_thread": 8}).predict(problem)
    graphed = Nccl({"gpus_per_thread": 8, "cuda_graph": True}).predict(problem)
    assert called.time_s == pytest.approx(8 * NcclParams().launch_s, rel=1e-9)
    assert graphed.time_s == pytest.approx(graphed.chosen.time_s, rel=1e-12)
    assert graphed.time_s < 0.5 * called.time_s
    assert "CUDA graph" in Nccl({"cuda_graph": True}).explain(problem)
