"""The command line: tables, JSON, CSV, and clear errors with exit code 2."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "scenarios" / "pcie_4gpu_sync_strategies.yaml"


def commsim(*args: str, cwd: Path = ROOT, columns: int = 200) -> subprocess.CompletedProcess[str]:
    """Run the CLI with its tables ``columns`` wide (piped tables follow COLUMNS, which
    readline, imported by pytest, sets to 80 for child processes)."""
    env = {**os.environ, "COLUMNS": str(columns)}
    return subprocess.run(
        [sys.executable, "-m", "commsim.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        env=env,
    )


def test_run_scenario_prints_the_table() -> None:
    """SEED_FACTS.md section 1: the table shows 60, 80 and 15 ms with bottlenecks."""
    proc = commsim("run", str(SCENARIO))
    assert proc.returncode == 0, proc.stderr
    lines = {line.split("│")[1].strip(): line for line in proc.stdout.splitlines() if line.count("│") > 3}
    assert "60 ms" in lines["aggregate on one GPU"]
    assert "80 ms" in lines["aggregate on the CPU"]
    assert "15 ms" in lines["sharded over the 4 GPUs"]
    assert "gpu0->pcie_switch0 50%" in lines["aggregate on one GPU"]


def test_run_json_records() -> None:
    proc = commsim("run", str(SCENARIO), "--json")
    assert proc.returncode == 0, proc.stderr
    records = json.loads(proc.stdout)
    assert [r["label"] for r in records] == [
        "aggregate on one GPU",
        "aggregate on the CPU",
        "sharded over the 4 GPUs",
        "chunked ring",
    ]
    keys = {
        "label",
        "algorithm",
        "collective",
        "topology",
        "ranks",
        "nbytes",
        "time_s",
        "algbw_Bps",
        "busbw_Bps",
        "bottleneck",
    }
    assert keys <= set(records[0])
    assert records[1]["time_s"] == pytest.approx(0.080, rel=1e-9)
    assert records[2]["busbw_Bps"] == pytest.approx(16e9, rel=1e-9)  # 160 MB/15 ms x 1.5
    assert records[0]["bottleneck"][0]["link"] == "gpu0->pcie_switch0"


def test_run_from_flags_csv() -> None:
    proc = commsim(
        "run",
        "--topology",
        "ring",
        "--gpus",
        "4",
        "--algorithm",
        "ring",
        "--size",
        "1 MB",
        "--size",
        "2 MB",
        "--csv",
    )
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert [float(r["nbytes"]) for r in rows] == [1e6, 2e6]
    assert float(rows[1]["time_s"]) > float(rows[0]["time_s"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--topology", "nope", "--algorithm", "ring"], "unknown topology 'nope'; valid: "),
        (
            ["run", "--topology", "pcie_4gpu_switch", "--algorithm", "magic"],
            "unknown algorithm 'magic'; valid:",
        ),
        (
            ["run", "--topology", "pcie_4gpu_switch", "--algorithm", "ring", "--size", "12 parsecs"],
            "cannot read size '12 parsecs'",
        ),
        (
            ["run", "--topology", "pcie_4gpu_switch", "--algorithm", "ring", "--collective", "all_scream"],
            "unknown collective 'all_scream'",
        ),
        (["run", "does_not_exist.yaml"], "cannot read does_not_exist.yaml"),
        (["run"], "give a scenario file, or --topology and --algorithm"),
    ],
)
def test_errors_exit_2_without_traceback(args: list[str], message: str) -> None:
    proc = commsim(*args)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert message in " ".join(proc.stderr.split())
    if "nope" in args:
        assert "dgx1_v100" in proc.stderr and "pcie_4gpu_switch" in proc.stderr


def test_scenario_yaml_error_names_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: x\ntopology: pcie_4gpu_switch\nsizes: [160 MB]\n"
        "algorithms:\n  - algorithm: ring\n  - algorithm: rnig\n",
        encoding="utf-8",
    )
    proc = commsim("run", str(bad))
    assert proc.returncode == 2
    text = " ".join(proc.stderr.split())
    assert f"{bad}:6:" in text and "unknown algorithm 'rnig'" in text


def test_bad_size_in_scenario_points_at_its_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: x\ntopology: pcie_4gpu_switch\nsizes:\n  - 160 MB\n  - 12 parsecs\n"
        "algorithms: [{algorithm: ring}]\n",
        encoding="utf-8",
    )
    proc = commsim("run", str(bad))
    assert proc.returncode == 2
    assert f"{bad}:5:" in proc.stderr.replace("\n", "") and "12 parsecs" in proc.stderr


def test_scenario_with_unknown_field_and_override(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: x\ntopology: pcie_4gpu_switch\nsizes: [1 MB]\nalgorithms: [{algorithm: ring}]\n"
        "overrides: {warp_drive: {bandwidth: 1 GB/s}}\n",
        encoding="utf-8",
    )
    proc = commsim("run", str(bad))
    assert proc.returncode == 2
    assert "warp_drive" in proc.stderr and "valid:" in proc.stderr


def test_topology_subcommands() -> None:
    listing = commsim("topo", "list")
    assert listing.returncode == 0
    for name in ("pcie_4gpu_switch", "dgx1_p100", "dgx1_v100", "fully_connected_4", "ring (builder)"):
        assert name in listing.stdout
    shown = commsim("topo", "show", "dgx1_v100")
    assert shown.returncode == 0 and "gpu0 <-> gpu3" in shown.stdout and "50 GB/s" in shown.stdout
    schema = json.loads(commsim("topo", "schema").stdout)
    assert "devices" in schema["properties"]
    algos = commsim("algos")
    assert algos.returncode == 0
    for name in ("parameter_server", "sharded_parameter_server", "ring", "naive_ring"):
        assert name in algos.stdout


def test_topo_import_writes_a_topology(tmp_path: Path) -> None:
    out = tmp_path / "machine.yaml"
    matrix = ROOT / "tests" / "data" / "nvsmi" / "dgx1_v100.txt"
    proc = commsim("topo", "import", str(matrix), "--gpu", "Tesla V100-SXM2-32GB", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    from commsim.topology import load_topology_file

    topo = load_topology_file(out)
    assert len(topo.gpus) == 8
    assert topo.link("gpu0", "gpu3").count == 2  # NV2
    shown = commsim("topo", "show", str(out))
    assert shown.returncode == 0 and "nvlink2" in shown.stdout


def test_run_nccl_explain() -> None:
    proc = commsim(
        "run",
        "--topology",
        "dgx_a100",
        "--algorithm",
        "nccl",
        "--size",
        "1 GB",
        "--param",
        "gpus_per_thread=8",
        "--explain",
    )
    assert proc.returncode == 0, proc.stderr
    assert "-> ring      Simple" in proc.stdout and "nvswitch in a box" in proc.stdout
    bad = commsim("run", "--topology", "dgx_a100", "--algorithm", "nccl", "--param", "gpus_per_thread")
    assert bad.returncode == 2 and "KEY=VALUE" in bad.stderr


def test_calibrate_then_validate_with_the_calibrated_topology(tmp_path: Path) -> None:
    """commsim calibrate writes a topology with fitted NCCL parameters that validate then uses."""
    data = ROOT / "tests" / "data" / "nccl-tests"
    out = tmp_path / "calibrated.yaml"
    proc = commsim("calibrate", str(data / "RTX2080Ti-PCIe-PIX-noP2P_all_reduce_2gpu_1.txt"), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "shm_efficiency" in proc.stdout
    from commsim.topology import load_topology_file

    topo = load_topology_file(out)
    assert topo.nccl is not None and topo.nccl["shm_efficiency"] != 0.49
    assert topo.peer_to_peer is False
    before = json.loads(
        commsim("validate", str(data / "RTX2080Ti-PCIe-PIX-noP2P_all_reduce_2gpu_1.txt"), "--json").stdout
    )
    after = json.loads(
        commsim(
            "validate",
            str(data / "RTX2080Ti-PCIe-PIX-noP2P_all_reduce_2gpu_1.txt"),
            "--calibrated",
            str(out),
            "--json",
        ).stdout
    )
    assert after["summary"]["all"]["median_abs_error"] < before["summary"]["all"]["median_abs_error"]


def test_calibrated_file_with_a_bad_nccl_field_names_its_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: t\ndevices:\n  - {name: gpu0, kind: gpu}\n  - {name: gpu1, kind: gpu}\n"
        "links:\n  - {between: [gpu0, gpu1], kind: nvlink2}\nnccl:\n  shm_efficency: 0.5\n",
        encoding="utf-8",
    )
    proc = commsim("topo", "show", str(bad))
    assert proc.returncode == 2
    assert f"{bad}:8:" in proc.stderr and "shm_efficency" in proc.stderr


def test_recommend_ranks_and_explains() -> None:
    proc = commsim(
        "recommend", "--topology", "dgx1_v100", "--collective", "all_reduce", "--size", "160 MB", "--json"
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    times = [r["time_s"] for r in data["ranking"]]
    assert times == sorted(times) and len(times) >= 8
    winner = data["ranking"][0]["algorithm"]
    assert data["explanation"].startswith(f"{winner} wins at")
    assert "leaves idle" in data["explanation"]
    assert "halving_doubling" not in data["not_applicable"]  # 8 ranks: a power of two


def test_top_level_simulate_is_the_api() -> None:
    import commsim

    r = commsim.simulate(topology="pcie_4gpu_switch", algorithm="sharded_parameter_server", size="160 MB")
    assert r.time_s == pytest.approx(0.015, rel=1e-9)


def test_one_public_namespace() -> None:
    """What users and the notebooks need is importable from ``commsim`` itself, and is the real thing."""
    import commsim
    from commsim.api import explain, run_file, simulate
    from commsim.calibrate.fit import fit
    from commsim.calibrate.validate import validate_file
    from commsim.topology import Topology, get_topology
    from commsim.training import simulate_step

    assert commsim.simulate is simulate and commsim.run_file is run_file and commsim.explain is explain
    assert commsim.validate is validate_file and commsim.fit is fit
    assert commsim.Topology is Topology and commsim.get_topology is get_topology
    assert commsim.simulate_step is simulate_step
    assert all(getattr(commsim, name) is not None for name in commsim.__all__)
    with pytest.raises(AttributeError, match="has no attribute 'simulte'"):
        commsim.simulte  # noqa: B018


def test_training_scenario_with_a_trace(tmp_path: Path) -> None:
    out = tmp_path / "steps.json"
    proc = commsim("run", str(ROOT / "scenarios" / "resnet50_dgx1_overlap.yaml"), "--trace", str(out))
    assert proc.returncode == 0, proc.stderr
    trace = json.loads(out.read_text(encoding="utf-8"))
    names = {e["name"] for e in trace["traceEvents"] if e.get("ph") == "M" and e["name"] == "process_name"}
    assert names == {"process_name"}
    processes = [e for e in trace["traceEvents"] if e.get("ph") == "M" and e["name"] == "process_name"]
    assert len(processes) >= 8  # one per simulated step
    assert "iteration" in proc.stdout and "best bucket size" in proc.stdout


def test_validate_imports_a_topo_matrix_with_the_logs_gpu(tmp_path: Path) -> None:
    """An nvidia-smi topo -m file names no GPU model; given as --topology it is imported with the GPU
    the log's device list names (A100 PCIe: PCIe 4.0 x16), where it used to fall back to the
    matrix's default (PCIe 3.0), and with --gpu when given."""
    log = tmp_path / "all_reduce_a100pcie.txt"
    log.write_text(
        "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1048576 step: 2(factor) warmup iters: 5 iters: 20\n"
        "# Using devices\n"
        + "".join(
            f"#  Rank  {r} Group  0 Pid  {100 + r} on  box device  {r} [0x0{r}] NVIDIA A100-PCIE-40GB\n"
            for r in range(4)
        )
        + "#  size  count  type  redop  root  time  algbw  busbw  #wrong  time  algbw  busbw  #wrong\n"
        "  1048576  262144  float  sum  -1  100.0  10.49  15.73  0  100.0  10.49  15.73  0\n"
    )
    matrix = ROOT / "tests" / "data" / "nvsmi" / "pcie_mixed.txt"
    result = commsim("validate", str(log), "--topology", str(matrix), "--json")
    assert result.returncode == 0, result.stderr
    description = json.loads(result.stdout)["topology"]["description"]
    assert "A100 40GB PCIe" in description
