"""``commsim export msccl | nccl-tuner | astra``: files written whole, errors as exit code 2."""

from __future__ import annotations

from pathlib import Path

from commsim.interop.astra import read_astra
from commsim.interop.msccl_check import msccl_problems
from commsim.interop.msccl_format import read_msccl
from commsim.interop.nccl_tuner import read_tuner_csv
from tests.test_cli import commsim


def test_export_msccl_writes_a_checked_algorithm(tmp_path: Path) -> None:
    """multi_ring on dgx1_v100: 4 channels (two rings, both directions), chunks of 1/24 and 1/48."""
    path = tmp_path / "mr.xml"
    done = commsim(
        "export",
        "msccl",
        "--topology",
        "dgx1_v100",
        "--algorithm",
        "multi_ring",
        "--proto",
        "LL128",
        "-o",
        str(path),
    )
    assert done.returncode == 0, done.stderr
    algo = read_msccl(path)
    assert msccl_problems(algo) == []
    assert (algo.coll, algo.ngpus, algo.nchannels, algo.nchunksperloop, algo.proto) == (
        "allreduce",
        8,
        4,
        48,
        "LL128",
    )
    assert algo.max_bytes == 1_000_000
    assert f"wrote {path}: allreduce on 8 GPUs, 4 channels" in done.stderr


def test_export_nccl_tuner_and_astra(tmp_path: Path) -> None:
    csv_path, yml_path = tmp_path / "rules.csv", tmp_path / "net.yml"
    done = commsim(
        "export", "nccl-tuner", "--topology", "dgx_a100", "--collective", "all_reduce", "-o", str(csv_path)
    )
    assert done.returncode == 0, done.stderr
    rules = read_tuner_csv(csv_path).rules
    assert {r.collective for r in rules} == {"allreduce"} and rules[0].min_bytes == 0
    done = commsim("export", "astra", "--topology", "ring", "--gpus", "6", "-o", str(yml_path))
    assert done.returncode == 0, done.stderr
    assert (read_astra(yml_path).topology, read_astra(yml_path).npus_count) == (["Ring"], [6])


def test_export_errors_exit_2_and_leave_no_file(tmp_path: Path) -> None:
    path = tmp_path / "net.yml"
    done = commsim("export", "astra", "--topology", "dgx1_v100", "-o", str(path))
    assert done.returncode == 2
    assert done.stderr.startswith("error: topology 'dgx1_v100' has cpu0") and "Traceback" not in done.stderr
    assert list(tmp_path.iterdir()) == []
