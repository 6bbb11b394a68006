"""What validate infers about the run and the machine, each fact with its evidence.

The expected figures are the development data README's (tests/data/nccl-tests/README.md:
hardware, nGPUs and nodes columns), written here by hand, not taken from the code.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from commsim.calibrate.inference import InferenceError, RunOptions, infer_run
from commsim.calibrate.parser import load_nccl_tests, parse_nccl_tests
from commsim.calibrate.validate import validate_file, validate_runs
from commsim.hardware import gpu_catalogue

DATA = Path(__file__).parent / "data" / "nccl-tests"
ONE_GPU = Path(__file__).parent / "data" / "h100-1gpu"

README = {  # file: (ranks, hosts, catalogue key of the GPU, board class)
    "A100-SXM4-80GB-HGX-NVSwitch_all_reduce_8gpu_1.txt": (8, 1, "a100_sxm", "nvswitch8"),
    "A100-SXM4-80GB-HGX-NVSwitch_all_reduce_8gpu_2.txt": (8, 1, "a100_sxm", "nvswitch8"),
    "A100-SXM4-p4d_all_reduce_16gpu_2node-EFA400_1.txt": (16, 2, "a100_sxm_40gb", "nvswitch8"),
    "A10G-AWS-g5.2xlarge_all_reduce_2gpu_2node-TCP-socket_1.txt": (2, 2, "a10g", "pcie"),
    "AMD-MI300X-8GPU_all_reduce_8gpu_1.txt": (8, 1, "mi300x", "xgmi8"),
    "GB200-NVL72-CoreWeave_all_reduce_72gpu_1rack_1.txt": (72, 18, "gb200", "nvl72"),
    "H100-SXM-DellXE9680_all_reduce_16gpu_2node-IB-NDR400x8_1.txt": (16, 2, "h100_sxm", "nvswitch8"),
    "H100-SXM-GCP-A3Mega_all_reduce_16gpu_2node-TCPXO-8x200G_1.txt": (16, 2, "h100_sxm", "nvswitch8"),
    "H100-SXM-HGX_all_gather_80gpu_10node-NICunstated_1.txt": (80, 10, "h100_sxm", "nvswitch8"),
    "H100-SXM-HGX_all_gather_8gpu_1.txt": (8, 1, "h100_sxm", "nvswitch8"),
    "H100-SXM-HGX_all_reduce_10gpu_10node-NICunstated_1.txt": (10, 10, "h100_sxm", "nvswitch8"),
    "H100-SXM-HGX_all_reduce_64gpu_8node-IB-NDR400x8_1.txt": (64, 8, "h100_sxm", "nvswitch8"),
    "H100-SXM-HGX_all_reduce_80gpu_10node-NICunstated_1.txt": (80, 10, "h100_sxm", "nvswitch8"),
    "H100-SXM-HGX_alltoall_10gpu_10node-NICunstated_1.txt": (10, 10, "h100_sxm", "nvswitch8"),
    "H100-SXM-HGX_alltoall_80gpu_10node-NICunstated_1.txt": (80, 10, "h100_sxm", "nvswitch8"),
    "H100-SXM-HGX_reduce_scatter_80gpu_10node-NICunstated_1.txt": (80, 10, "h100_sxm", "nvswitch8"),
    "H100-SXM-HGX_reduce_scatter_8gpu_1.txt": (8, 1, "h100_sxm", "nvswitch8"),
    "H100-SXM5-4GPU-NVLink_all_gather_4gpu_1.txt": (4, 1, "h100_sxm_94gb", "nvlink_mesh4"),
    "H100-SXM5-4GPU-NVLink_all_gather_8gpu_2node-IB-NDR200x4_1.txt": (
        8,
        2,
        "h100_sxm_94gb",
        "nvlink_mesh4",
    ),
    "H100-SXM5-4GPU-NVLink_all_reduce_4gpu_1.txt": (4, 1, "h100_sxm_94gb", "nvlink_mesh4"),
    "H100-SXM5-4GPU-NVLink_all_reduce_8gpu_2node-IB-NDR200x4_1.txt": (8, 2, "h100_sxm_94gb", "nvlink_mesh4"),
    "H100-SXM5-4GPU-NVLink_reduce_scatter_4gpu_1.txt": (4, 1, "h100_sxm_94gb", "nvlink_mesh4"),
    "H100-SXM5-4GPU-NVLink_reduce_scatter_8gpu_2node-IB-NDR200x4_1.txt": (
        8,
        2,
        "h100_sxm_94gb",
        "nvlink_mesh4",
    ),
    "RTX2080Ti-PCIe-PIX-noP2P_all_gather_2gpu_1.txt": (2, 1, "rtx_2080_ti", None),
    "RTX2080Ti-PCIe-PIX-noP2P_all_reduce_2gpu_1.txt": (2, 1, "rtx_2080_ti", None),
    "RTX2080Ti-PCIe-PIX-noP2P_broadcast_2gpu_1.txt": (2, 1, "rtx_2080_ti", None),
    "RTX4090-PCIe-P2Punlocked-8NUMA_all_reduce_8gpu_1.txt": (8, 1, "rtx_4090", "pcie"),
    "RTX4090-PCIe-noP2P-8NUMA_all_reduce_8gpu_1.txt": (8, 1, "rtx_4090", None),
    "V100-PCIe-32GB-noNVLink_all_reduce_4gpu_2.txt": (4, 1, "v100_pcie", "pcie"),
    "V100-SXM2-hybridcubemesh_all_reduce_8gpu_1.txt": (8, 1, "v100_sxm2_16gb", None),
    "V100-SXM2-p3dn_all_reduce_16gpu_2node-EFA100_1.txt": (16, 2, "v100_sxm2", "dgx1_cube"),
}
"""None as the board: the log holds an ``nvidia-smi topo -m`` matrix, imported as it stands."""


def _infer(name: str, options: RunOptions | None = None):  # type: ignore[no-untyped-def]
    path = DATA / name
    return infer_run(load_nccl_tests(path), path.read_text(encoding="utf-8"), options)


def test_every_real_log_is_listed() -> None:
    """The table above covers every real log of the development data but the one without a GPU name."""
    real = {p.name for p in DATA.glob("*.txt") if not p.name.startswith("synthetic_")}
    assert real - set(README) == {"H100-SXM-CoreWeave_all_reduce_96gpu_12node-IB-SHARP_1.txt"}


@pytest.mark.parametrize("name", sorted(README))
def test_inferred_run_equals_the_readme(name: str) -> None:
    """Ranks, hosts, GPU and board as the README states them."""
    ranks, hosts, gpu, board = README[name]
    inference = _infer(name)
    facts = inference.facts
    assert len(inference.ranks) == ranks == facts["ranks"].value
    assert facts["nodes"].value == hosts
    assert facts["gpu"].value == gpu_catalogue()[gpu].name
    expected_board = "nvidia-smi topo -m matrix" if board is None else board
    assert facts["board"].value == expected_board
    assert len(set(inference.ranks)) == ranks  # every rank on its own GPU


def test_table_only_log_needs_the_gpu_and_then_assumes_the_host_size() -> None:
    """CoreWeave's 96-rank table: ranks from busbw/algbw = 2(96-1)/96; no device list names the GPU.

    Without --gpu the log is refused with the option named; with it, 8 GPUs per host (the HGX
    H100 board) is assumed, so 12 hosts, and the verdict is withheld.
    """
    name = "H100-SXM-CoreWeave_all_reduce_96gpu_12node-IB-SHARP_1.txt"
    with pytest.raises(InferenceError, match="give --gpu"):
        _infer(name)
    facts = _infer(name, RunOptions(gpu="h100_sxm")).facts
    assert facts["ranks"].value == 96 and facts["ranks"].evidence[0].source == "busbw/algbw ratio"
    assert (facts["gpus_per_node"].value, facts["gpus_per_node"].assumed) == (8, True)
    assert (facts["nodes"].value, facts["nodes"].assumed) == (12, True)
    report = validate_file(DATA / name, options=RunOptions(gpu="h100_sxm"))
    assert report.verdict().startswith("cannot judge") and "--gpus-per-node" in report.verdict()


def test_gb200_generic_name_is_resolved_by_the_host_name_as_weak_evidence() -> None:
    """'NVIDIA Graphics Device' is generic; the host 'slurm-gb200-207-171' names gb200.

    The one device line printed (rank 71, device 3) bounds GPUs per host from below at 4, which
    is the NVL72 compute tray's 4 GPUs: 72 ranks = 18 hosts, one NVLink domain.
    """
    inference = _infer("GB200-NVL72-CoreWeave_all_reduce_72gpu_1rack_1.txt")
    gpu = inference.facts["gpu"]
    assert "generic name" in gpu.note and gpu.evidence[1].source == "host name or command"
    assert inference.facts["gpus_per_node"].value == 4 and not inference.facts["gpus_per_node"].assumed
    assert len(inference.topology.boxes) == 1  # one NVLink domain: NCCL sees one node
    assert "network" not in inference.facts


def test_options_win_over_the_log_and_say_so() -> None:
    """--gpus 6 against a log that lists 8 ranks: the option is used, a warning names both."""
    inference = _infer("A100-SXM4-80GB-HGX-NVSwitch_all_reduce_8gpu_1.txt", RunOptions(gpus=6))
    assert len(inference.ranks) == 6
    assert inference.facts["ranks"].evidence[0].source == "option --gpus"
    assert any("--gpus 6 disagrees with the log's rank count 8" in w for w in inference.warnings)


def test_one_gpu_per_node_uses_one_nic_of_the_box() -> None:
    """10 hosts x 1 GPU (device 0 on each): one 8-GPU box per host, rank on gpu 0 of each box.

    With 8 NICs per box but one GPU per host, NCCL uses the NIC next to that GPU: the model's
    network bandwidth per node is one NIC's, 400 Gb/s = 50 GB/s (NDR assumed).
    """
    from commsim.nccl.machine import analyse

    inference = _infer("H100-SXM-HGX_all_reduce_10gpu_10node-NICunstated_1.txt")
    assert len(inference.topology.boxes) == 10
    assert all(inference.topology.device(r).box == k for k, r in enumerate(inference.ranks))
    machine = analyse(inference.topology, inference.ranks)
    assert machine.nic_Bps == pytest.approx(50e9)


def test_assumed_network_withholds_the_verdict_and_nic_option_settles_it() -> None:
    """The 10-node log names no network: NDR is assumed and the verdict says which options to give."""
    path = DATA / "H100-SXM-HGX_all_reduce_80gpu_10node-NICunstated_1.txt"
    assumed = validate_file(path)
    assert assumed.verdict().startswith("cannot judge") and "--nic" in assumed.verdict()
    known = validate_file(path, options=RunOptions(nic="ib_ndr", nics_per_node=8))
    assert not known.verdict().startswith("cannot judge")
    assert known.inference.facts["network"].evidence[0].source == "option --nic"


def test_forced_ring_from_the_environment_is_honoured() -> None:
    """NCCL_ALGO=Ring (together-nccl-tests H100 runs) restricts the model to rings."""
    report = validate_file(DATA / "H100-SXM-HGX_all_gather_8gpu_1.txt")
    assert {r.algorithm for r in report.rows} == {"ring"}


def test_p2p_option_and_catalogue_default() -> None:
    """GeForce RTX 4090: no PCIe peer-to-peer with the stock driver (assumed); --p2p overrides it."""
    default = _infer("RTX4090-PCIe-P2Punlocked-8NUMA_all_reduce_8gpu_1.txt")
    assert (default.facts["p2p"].value, default.facts["p2p"].assumed) == (False, True)
    unlocked = _infer("RTX4090-PCIe-P2Punlocked-8NUMA_all_reduce_8gpu_1.txt", RunOptions(p2p=True))
    assert unlocked.topology.peer_to_peer and not unlocked.facts["p2p"].assumed


def test_four_of_eight_gpus_is_not_a_four_gpu_board() -> None:
    """An 8-GPU NVSwitch GPU run with 4 ranks per host: 4 of the board's 8 GPUs, said to be assumed."""
    text = (DATA / "H100-SXM-HGX_all_gather_8gpu_1.txt").read_text(encoding="utf-8")
    log = parse_nccl_tests(text)
    half = replace(log, devices=log.devices[:4], n_ranks=4, placement={log.hosts[0]: (0, 1, 2, 3)})
    inference = infer_run(half, text)
    assert inference.facts["board"].value == "nvswitch8" and inference.facts["board"].assumed
    assert len(inference.topology.gpus) == 8 and len(inference.ranks) == 4


def test_one_rank_logs_predict_the_local_copy() -> None:
    """One H100: 6.25 us below 1 MiB and 1505 GB/s at 1 GiB (0.449 x 3.35 TB/s HBM3) out of place."""
    report = validate_file(ONE_GPU / "all_reduce_1gpu.txt")
    assert [r.algorithm for r in report.rows][-1] == "local_copy"
    memory = report.inference.facts["memory_bandwidth"]
    assert memory.value == "3.35 TB/s" and not memory.assumed  # H100 SXM datasheet: 3.35 TB/s HBM3
    assert not report.inference.facts["board"].assumed  # one rank uses no GPU-to-GPU link
    assert report.summary()["bandwidth_bound"]["median_abs_error"] < 0.03


def test_several_runs_in_one_file_validate_run_by_run() -> None:
    """The synthetic multi-run log holds runs of two collectives; each is validated on its own."""
    reports = validate_runs(DATA / "synthetic_multi-run_RTX2080Ti_2gpu.txt")
    assert len(reports) >= 2
    assert len({r.collective for r in reports}) >= 2


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "commsim.cli", *args], capture_output=True, text=True, timeout=300
    )


def test_cli_refuses_a_missing_fact_with_its_option_and_accepts_it() -> None:
    """Without a GPU name the CLI exits 2 with one sentence naming --gpu; with --gpu it reports, in
    JSON, the run object whose facts carry their evidence or "assumed"."""
    log = str(DATA / "H100-SXM-CoreWeave_all_reduce_96gpu_12node-IB-SHARP_1.txt")
    refused = _cli("validate", log)
    assert refused.returncode == 2 and "--gpu" in refused.stderr and "Traceback" not in refused.stderr
    given = _cli("validate", log, "--gpu", "H100 SXM", "--nic", "ib_ndr", "--json")
    assert given.returncode == 0, given.stderr
    run = json.loads(given.stdout)["run"]
    assert run["gpu"]["evidence"][0]["source"] == "option --gpu"
    assert run["network"]["assumed"] is False and run["gpus_per_node"]["assumed"] is True


def test_cli_gpus_resolves_printed_names() -> None:
    """`commsim gpus NAME` says which catalogue entry a printed name is; an unknown one exits 2."""
    known = _cli("gpus", "AMD Instinct MI300X")
    assert known.returncode == 0 and "mi300x" in known.stdout and "xgmi_gpu x 7" in known.stdout
    assert _cli("gpus", "Foo 9000").returncode == 2


def test_cli_algo_and_proto_restrict_the_choice_like_nccls_variables() -> None:
    """--algo Ring --proto SIMPLE as NCCL_ALGO/NCCL_PROTO spell them; an unknown name lists the valid ones."""
    log = str(DATA / "A100-SXM4-80GB-HGX-NVSwitch_all_reduce_8gpu_1.txt")
    forced = _cli("validate", log, "--algo", "Ring", "--proto", "SIMPLE", "--json")
    assert forced.returncode == 0, forced.stderr
    rows = json.loads(forced.stdout)["rows"]
    assert {(r["algorithm"], r["protocol"]) for r in rows} == {("ring", "Simple")}
    bogus = _cli("validate", log, "--algo", "spiral")
    assert bogus.returncode == 2 and "unknown 'spiral'" in bogus.stderr and "nvls_tree" in bogus.stderr
