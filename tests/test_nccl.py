"""The NCCL model: machine analysis, choices by size, and validation on real logs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from commsim.algorithms import Problem, make_algorithm
from commsim.api import simulate
from commsim.calibrate.inference import RunOptions
from commsim.calibrate.validate import validate_file
from commsim.collectives import Collective
from commsim.nccl import NcclParams, analyse, gpu_arch, predict
from commsim.topology import get_topology

DATA = Path(__file__).resolve().parent / "data" / "nccl-tests"
ROOT = Path(__file__).resolve().parent.parent


def _problem(name: str, nbytes: float, **kw: object) -> Problem:
    topo = get_topology(name, **kw)
    return Problem(topo, tuple(topo.gpus), Collective.ALL_REDUCE, nbytes)


@pytest.mark.parametrize(
    ("model", "arch"),
    [
        ("NVIDIA A100-SXM4-80GB", "ampere"),
        ("NVIDIA H100 80GB HBM3", "hopper"),
        ("Tesla V100-SXM2-32GB", "volta"),
        ("NVIDIA GeForce RTX 4090", "ada"),
        ("NVIDIA GeForce RTX 2080 Ti", "turing"),
        ("mystery", "unknown"),
    ],
)
def test_gpu_generation_from_model(model: str, arch: str) -> None:
    assert gpu_arch(model) == arch


def test_machine_analysis() -> None:
    a100 = analyse(get_topology("dgx_a100"), tuple(get_topology("dgx_a100").gpus))
    assert (a100.nodes, a100.per_node, a100.transport, a100.nvls) == (1, 8, "nvswitch", False)
    h100 = analyse(get_topology("hgx_h100"), tuple(get_topology("hgx_h100").gpus))
    assert h100.nvls
    v100 = analyse(get_topology("dgx1_v100"), tuple(get_topology("dgx1_v100").gpus))
    assert v100.transport == "nvlink"
    two = get_topology("cluster", box="dgx_a100", nodes=2, nic="ib_hdr")
    m = analyse(two, tuple(two.gpus))
    assert (m.nodes, m.per_node, m.net_family) == (2, 8, "infiniband")
    assert m.nic_Bps == pytest.approx(8 * 25e9)  # 8 HDR NICs of 200 Gbit/s


def test_choice_small_and_large_on_an_8_gpu_nvlink_machine() -> None:
    """Small messages take the low-latency LL protocol; large ones the ring with Simple."""
    small = predict(_problem("dgx1_v100", 8)).chosen
    large = predict(_problem("dgx1_v100", 2**30)).chosen
    assert small.protocol == "LL"
    assert (large.algorithm, large.protocol) == ("ring", "Simple")
    # large: the rings over every NVLink 2 link (2 x (50 + 25) GB/s, both directions) at NCCL's
    # usable 20 of 25 GB/s per NVLink 2 link (topo.h SM70_NVLINK_BW): 0.8 x 150 GB/s
    ring = predict(_problem("dgx1_v100", 2**30)).ring_busbw_Bps
    assert ring == pytest.approx(0.8 * 150e9, rel=1e-6)


def test_nvls_is_chosen_for_large_messages_on_h100() -> None:
    assert predict(_problem("hgx_h100", 2**30)).chosen.algorithm == "nvls"
    assert predict(_problem("dgx_a100", 2**30)).chosen.algorithm == "ring"


def test_restricting_algorithms_and_efficiency_moves_the_time() -> None:
    p = _problem("dgx_a100", 2**28)
    ring_only = predict(p, algorithms=("ring",)).chosen
    assert ring_only.algorithm == "ring"
    slower = predict(p, NcclParams(efficiency={"nvlink": 0.39})).chosen
    assert slower.time_s > ring_only.time_s * 1.8


def test_host_issue_time_overlaps_the_gpus_time() -> None:
    """nccl-tests issues iterations back to back, so a call takes max(host issue, GPU time).

    One thread driving 8 GPUs (``-g 8``) issues 8 launches per call: at 8 B
    on a DGX A100 that is 8 x launch_s (8 x 4.9 = 39.2 us), longer than the
    GPUs' kernel_s + NCCL ring/LL latency (3.6 + 6.6 + 14 x 0.6 = 18.6 us),
    so the call takes exactly 8 x launch_s. At 1 GiB the GPUs take
    milliseconds and the host's issue time is hidden: -g 1 and -g 8 agree.
    """
    params = NcclParams()
    small = predict(_problem("dgx_a100", 8), gpus_per_thread=8)
    assert small.host_bound
    assert small.time_s == pytest.approx(8 * params.launch_s)
    assert small.chosen.time_s < small.time_s
    large = _problem("dgx_a100", 2**30)
    assert predict(large, gpus_per_thread=8).time_s == predict(large, gpus_per_thread=1).time_s
    assert not predict(large, gpus_per_thread=8).host_bound


def test_nccl_algorithm_reports_its_model_time_and_replays_its_channels() -> None:
    """1 GB all-reduce on a DGX A100 (8 GPUs, 12 NVLink 3 ports each through the NVSwitches).

    The ring's bus bandwidth is 12 x 25 GB/s at NCCL's 235/300 = 235 GB/s; ring/Simple's algorithm
    bandwidth 235 x 8/14 = 134.3 GB/s; its latency (NCCL 2.21 tables) baseLat 8.4 us + 14 steps x
    3.4 us = 56 us (kernel start and end included): 56 + 7446.8 = 7502.8 us. LL128 (0.92 of the
    bandwidth) and the tree (0.92 x 0.5) are slower at 1 GB, and the host's 8 x 4.9 us is hidden.
    """
    r = simulate("dgx_a100", "nccl", size="1 GB", params={"gpus_per_thread": 8}, verify=True)
    expected = (8.4e-6 + 14 * 3.4e-6) + 1e9 / (235e9 * 8 / 14)
    assert r.time_s == pytest.approx(expected, rel=1e-9)
    assert r.time_s == r.analytic_time_s  # the algorithm reports its model's time, not its replay's
    assert r.replay_time_s is not None and r.replay_time_s < r.time_s
    assert r.bottleneck[0].link.startswith("gpu") or "nvswitch0" in r.bottleneck[0].link
    text = make_algorithm("nccl").explain(_problem("dgx_a100", 2**20))  # type: ignore[attr-defined]
    assert "->" in text and "nvswitch in a box" in text


REAL_LOGS = sorted(p.name for p in DATA.glob("*.txt") if not p.name.startswith("synthetic_"))
ONE_GPU_LOGS = sorted(p.name for p in (DATA.parent / "h100-1gpu").glob("*_1gpu*.txt"))
NEEDS_GPU_OPTION = {"H100-SXM-CoreWeave_all_reduce_96gpu_12node-IB-SHARP_1.txt"}
"""Logs that do not name their GPU (the CoreWeave README table has no device list)."""


@pytest.mark.parametrize("name", REAL_LOGS + ONE_GPU_LOGS)
def test_validation_on_every_development_log(name: str) -> None:
    """Every real log validates (the one without a GPU name given --gpu); the JSON has the documented fields.

    The verdict either judges the machine or, when a fact it rests on is only assumed, says
    "cannot judge" and names the options that would settle it.
    """
    options = RunOptions(gpu="H100 SXM") if name in NEEDS_GPU_OPTION else None
    folder = DATA if name in REAL_LOGS else DATA.parent / "h100-1gpu"
    report = validate_file(folder / name, options=options)
    data = report.to_json()
    assert set(data) == {
        "run",
        "machine",
        "topology",
        "collective",
        "data_type",
        "redop",
        "root",
        "ranks",
        "nodes",
        "rows",
        "summary",
        "expected_error",
        "warnings",
        "verdict",
        "judgement",
    }
    assert {"ranks", "gpu", "nodes", "gpus_per_node", "board", "nccl_version"} <= set(data["run"])
    assert "p2p" in data["run"] or data["run"]["gpus_per_node"]["value"] == 1  # one per host: no peer
    assert data["warnings"][: len(report.log.warnings)] == list(report.log.warnings)
    assert {
        "nbytes",
        "measured_time_s",
        "predicted_time_s",
        "measured_busbw_Bps",
        "predicted_busbw_Bps",
        "algorithm",
        "protocol",
    } == set(data["rows"][0])
    assert set(data["summary"]) == {"all", "bandwidth_bound", "latency_bound"}
    assert len(data["rows"]) == sum(1 for r in report.log.rows if r.nbytes > 0)
    assert all(r["predicted_time_s"] > 0 for r in data["rows"])
    verdict = data["verdict"]
    if report.inference.assumed:
        assert verdict.startswith("cannot judge")
        assert all(f.option in verdict for f in report.inference.assumed if f.option)
    else:
        assert verdict.startswith(("as expected", "1.", "2.", "3.", "4.", "5."))
        if data["summary"]["all"]["median_abs_error"] > 0.25:
            assert "the model misses this log" in verdict


ACCURACY = {  # bandwidth-bound median |error| the model reaches today with datasheet defaults
    "H100-SXM-DellXE9680_all_reduce_16gpu_2node-IB-NDR400x8_1.txt": 0.10,
    "RTX2080Ti-PCIe-PIX-noP2P_all_reduce_2gpu_1.txt": 0.10,
    "RTX4090-PCIe-noP2P-8NUMA_all_reduce_8gpu_1.txt": 0.10,
    "V100-SXM2-p3dn_all_reduce_16gpu_2node-EFA100_1.txt": 0.10,
    # 0.13: its 64-512 MiB rows sit 12-20 % above the model (the mid-size ramp it lacks); before
    # host and GPU times overlapped, 8 x 3.1 us of launch added to every size hid part of that
    "A100-SXM4-80GB-HGX-NVSwitch_all_reduce_8gpu_1.txt": 0.13,
}


@pytest.mark.parametrize("name", sorted(ACCURACY))
def test_bandwidth_bound_accuracy(name: str) -> None:
    stats = validate_file(DATA / name).summary()["bandwidth_bound"]
    assert stats["median_abs_error"] is not None and stats["median_abs_error"] <= ACCURACY[name]


def test_machine_inference_reasons() -> None:
    """p3dn: the log shows EFA and forces rings (NCCL_TREE_THRESHOLD=0), over 2 hosts of 8 V100s."""
    v100 = validate_file(DATA / "V100-SXM2-p3dn_all_reduce_16gpu_2node-EFA100_1.txt")
    facts = v100.inference.facts
    assert facts["network"].value == "efa_v1" and facts["network"].evidence[0].value == "efa"
    assert facts["algorithms"].value == ["ring"] and facts["nodes"].value == 2
    assert facts["board"].value == "dgx1_cube"
    assert {r.algorithm for r in v100.rows} == {"ring"}
    gpu2080 = validate_file(DATA / "RTX2080Ti-PCIe-PIX-noP2P_all_reduce_2gpu_1.txt")
    assert not gpu2080.inference.topology.peer_to_peer


def test_validate_cli_json_and_plot(tmp_path: Path) -> None:
    png = tmp_path / "busbw.png"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "commsim.cli",
            "validate",
            str(DATA / "RTX4090-PCIe-noP2P-8NUMA_all_reduce_8gpu_1.txt"),
            "--json",
            "--plot",
            str(png),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["ranks"] == 8 and data["nodes"] == 1 and data["topology"]["peer_to_peer"] is False
    assert png.stat().st_size > 10_000


def test_validate_refuses_what_it_cannot_judge(tmp_path: Path) -> None:
    """Too few GPUs in a given topology, a collective the log does not measure, no GPU named."""
    from commsim.errors import ParseError, TopologyError
    from commsim.topology import get_topology as topology

    log = DATA / "A100-SXM4-80GB-HGX-NVSwitch_all_reduce_8gpu_1.txt"
    with pytest.raises(TopologyError, match=r"1 box\(es\) of 4 GPU\(s\) but the run has 1 host\(s\) of 8"):
        validate_file(log, topology=topology("pcie_4gpu_switch"))
    with pytest.raises(ParseError, match="the log measured all_reduce, not broadcast"):
        validate_file(log, collective="broadcast")
    with pytest.raises(ParseError, match=r"does not say which GPU ran .*give --gpu"):
        validate_file(DATA / "H100-SXM-CoreWeave_all_reduce_96gpu_12node-IB-SHARP_1.txt")


def test_pcie_cards_are_not_taken_for_nvlink_servers() -> None:
    """An A10 or a GTX 1080 Ti is a PCIe card: the inferred machine has no NVLink."""
    report = validate_file(DATA / "synthetic_legacy-ms-format_all_reduce_2gpu.txt")
    topo = report.inference.topology
    assert not any(link.family == "nvlink" for link in topo.links)
    assert report.inference.facts["board"].value == "pcie"


def test_faster_than_modelled_is_not_called_as_expected() -> None:
    report = validate_file(DATA / "RTX2080Ti-PCIe-PIX-noP2P_broadcast_2gpu_1.txt")
    assert report.verdict().startswith("1.4x faster than the model expects")


def test_nvls_rate_scales_by_nccls_generation_efficiency() -> None:
    """NVLink SHARP's algorithm bandwidth is the GPU's NVLink ports x nvls_efficiency (0.57, the Hopper
    figure) x NCCL's nvlsEfficiency of the generation over Hopper's (tuning.cc: Hopper 0.85, Blackwell
    0.74). H100: 18 x 25 GB/s = 450 GB/s x 0.57 = 256.5 GB/s. B200 in an NVL72 rack: 18 x 50 GB/s =
    900 GB/s x 0.57 x 0.74 / 0.85 = 446.61 GB/s (not 513 GB/s: the switches' reduction does not keep up
    with NVLink 5's doubled ports)."""
    rates = {}
    for name in ("hgx_h100", "nvl72_rack"):
        topo = get_topology(name)
        p = predict(Problem(topo, tuple(topo.gpus), Collective.ALL_REDUCE, 2.0**33))
        rates[name] = next(c.algbw_Bps for c in p.candidates if c.algorithm == "nvls")
    assert rates["hgx_h100"] == pytest.approx(450e9 * 0.57, rel=1e-9)
    assert rates["nvl72_rack"] == pytest.approx(900e9 * 0.57 * 0.74 / 0.85, rel=1e-9)


def test_broadcast_streams_at_its_slowest_hop_without_pipeline_fill() -> None:
    """NCCL pipelines a broadcast along its ring channels in thousands of chunks, so at large sizes its
    bus bandwidth is the chain's slowest hop: on an HGX H100 (NVSwitch) the same 450 GB/s x 0.824 =
    370.8 GB/s as the all-gather's ring. A replay of 16 pieces used to charge the 7-hop chain's fill,
    16 / (16 + 6) of it: 269.7 GB/s, and a public H800 broadcast measured 165 GB/s where that gave 120."""
    topo = get_topology("hgx_h100")
    ranks = tuple(topo.gpus)
    bcast = predict(Problem(topo, ranks, Collective.BROADCAST, 2.0**31)).ring_busbw_Bps
    ring = predict(Problem(topo, ranks, Collective.ALL_GATHER, 2.0**31)).ring_busbw_Bps
    assert bcast == pytest.approx(450e9 * 20.6 / 25.0, rel=1e-6)
    assert bcast == pytest.approx(ring, rel=1e-9)


def test_kernel_cost_is_a_one_rank_calls_own() -> None:
    """``kernel_s`` prices the one-rank copy, which NCCL's tables give no latency: raising it by 10 us
    adds 10 us to a one-rank call (GPU-bound at 1 GiB) and nothing to an 8-rank call, whose kernel start
    and end are in NCCL's baseLat."""
    topo = get_topology("dgx_a100")
    one = Problem(topo, tuple(topo.gpus[:1]), Collective.ALL_REDUCE, 2.0**30)
    eight = _problem("dgx_a100", 2.0**30)
    base, more = NcclParams(), NcclParams(kernel_s=NcclParams().kernel_s + 10e-6)
    assert predict(one, more).time_s - predict(one, base).time_s == pytest.approx(10e-6, rel=1e-9)
    assert predict(eight, more).time_s == predict(eight, base).time_s
