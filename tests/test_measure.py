"""``commsim measure``: nccl-tests runs against fake binaries that print recorded logs."""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from commsim.calibrate.parser import load_nccl_tests
from commsim.cli.sweep import measure as measure_command
from commsim.measure import (
    MeasureError,
    find_binaries,
    measure,
    nccl_tests_command,
    next_commands,
    supports_json,
)

FAKES = Path(__file__).resolve().parent / "data" / "fake_nccl_tests"


def _executable(path: Path) -> None:
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


@pytest.fixture
def nccl_tests(tmp_path: Path) -> Path:
    """A fake nccl-tests checkout: binaries in build/, executable bits set (git may drop them)."""
    folder = tmp_path / "nccl-tests"
    shutil.copytree(FAKES, folder)
    (folder / "binaries").rename(folder / "build")  # build/ itself is git-ignored
    for script in [*folder.glob("build/*_perf"), folder / "driver" / "nvidia-smi"]:
        _executable(script)
    return folder


@pytest.fixture
def bare_path(tmp_path: Path) -> str:
    """A PATH holding only ``python3`` (for the fakes' shebang): no nvidia-smi."""
    folder = tmp_path / "bare-bin"
    folder.mkdir()
    (folder / "python3").symlink_to(sys.executable)
    return str(folder)


@pytest.fixture
def with_driver(nccl_tests: Path, bare_path: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake nvidia-smi on PATH; every fake call's arguments recorded in ``args.jsonl``."""
    monkeypatch.setenv("PATH", f"{nccl_tests / 'driver'}{os.pathsep}{bare_path}")
    record = nccl_tests.parent / "args.jsonl"
    monkeypatch.setenv("FAKE_NCCL_TESTS_ARGS", str(record))
    return record


def test_measure_runs_every_binary_found_and_keeps_the_logs(
    nccl_tests: Path, with_driver: Path, tmp_path: Path
) -> None:
    out = tmp_path / "logs"
    started: list[str] = []
    result = measure(nccl_tests, 2, out, on_start=lambda name, command: started.append(name))
    assert started == ["all_reduce", "all_gather", "broadcast"]
    assert sorted(p.name for p in out.iterdir()) == [
        "all_gather_2gpu.txt",
        "all_reduce_2gpu.json",
        "all_reduce_2gpu.txt",
        "broadcast_2gpu.txt",
        "nvidia-smi-topo.log",
    ]
    runs = [json.loads(line) for line in with_driver.read_text().splitlines() if "--help" not in line]
    assert runs == [
        ["all_reduce", "-b", "8", "-e", "8G", "-f", "2", "-g", "2", "-J", str(out / "all_reduce_2gpu.json")],
        ["all_gather", "-b", "8", "-e", "8G", "-f", "2", "-g", "2"],
        ["broadcast", "-b", "8", "-e", "8G", "-f", "2", "-g", "2"],
    ]
    for log in result.logs:
        parsed = load_nccl_tests(log.log)  # the command line on top names the collective
        assert (parsed.collective, parsed.n_ranks, len(parsed.rows)) == (log.collective, 2, 28)
        assert log.log.read_text().splitlines()[0].endswith(" ".join(runs[result.logs.index(log)][1:]))
    assert result.logs[0].json == out / "all_reduce_2gpu.json"
    assert json.loads((out / "all_reduce_2gpu.json").read_text())["version"] == 2
    assert result.gpu_model == "NVIDIA GeForce RTX 2080 Ti"
    from commsim.topology import load_topo_matrix

    imported = load_topo_matrix(out / "nvidia-smi-topo.log", gpu_model=result.gpu_model)
    assert (len(imported.gpus), imported.peer_to_peer) == (2, False)  # the p2p matrix says NS
    assert result.notes == [
        "reduce_scatter_perf not found; looked for "
        + ", ".join(
            str(nccl_tests / folder / name)
            for folder in ("", "build")
            for name in ("reduce_scatter_perf", "reduce_scatter_perf_mpi")
        )
    ]


def test_next_commands_import_the_matrix_then_calibrate(
    nccl_tests: Path, with_driver: Path, tmp_path: Path
) -> None:
    result = measure(nccl_tests, 2, tmp_path / "logs", collectives=["all_gather"])
    logs = tmp_path / "logs"
    assert next_commands(result) == [
        f"commsim topo import {logs / 'nvidia-smi-topo.log'} --gpu 'NVIDIA GeForce RTX 2080 Ti' "
        f"-o {logs / 'topology.yaml'}",
        f"commsim calibrate {logs}/*.txt --topology {logs / 'topology.yaml'} -o calibrated.yaml",
    ]


def test_measure_command_prints_what_to_run_next(nccl_tests: Path, with_driver: Path, tmp_path: Path) -> None:
    app = typer.Typer()
    app.command()(measure_command)
    app.command("other")(lambda: None)
    logs = tmp_path / "logs"
    result = CliRunner().invoke(
        app, ["measure", "--nccl-tests", str(nccl_tests), "--gpus", "2", "-o", str(logs)]
    )
    assert result.exit_code == 0, result.output
    assert (
        f"commsim calibrate {logs}/*.txt --topology {logs / 'topology.yaml'} -o calibrated.yaml"
        in result.output
    )
    assert "note: reduce_scatter_perf not found" in result.output
    assert (
        f"wrote {logs / 'all_reduce_2gpu.txt'} and {logs / 'all_reduce_2gpu.json'}: 28 sizes" in result.output
    )


def test_without_binaries_it_names_every_path_looked_at_and_the_missing_driver(
    tmp_path: Path, bare_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", bare_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(MeasureError) as info:
        measure(empty, 8, tmp_path / "logs")
    message = str(info.value)
    for name in ("all_reduce_perf", "all_gather_perf", "reduce_scatter_perf", "broadcast_perf"):
        assert f"{name} not found; looked for {empty / name}, {empty / (name + '_mpi')}, " in message
        assert str(empty / "build" / name) in message
    assert "nvidia-smi not found on PATH" in message
    assert "make -C nccl-tests" in message
    assert not (tmp_path / "logs").exists()


def test_a_binary_without_its_executable_bit_is_named(
    nccl_tests: Path, with_driver: Path, tmp_path: Path
) -> None:
    binary = nccl_tests / "build" / "broadcast_perf"
    binary.chmod(0o644)
    found, missing = find_binaries(nccl_tests, ["broadcast", "all_gather"])
    assert found == {"all_gather": nccl_tests / "build" / "all_gather_perf"} and list(missing) == [
        "broadcast"
    ]
    assert find_binaries(nccl_tests / "build", ["all_gather"])[0]  # the build folder itself works too
    with pytest.raises(MeasureError, match=f"{binary} exists but is not executable: chmod \\+x it"):
        measure(nccl_tests, 2, tmp_path / "logs", collectives=["broadcast"])


def test_more_gpus_than_the_machine_has_is_refused_before_running(
    nccl_tests: Path, with_driver: Path, tmp_path: Path
) -> None:
    with pytest.raises(
        MeasureError, match=r"--gpus 8 but nvidia-smi lists 2 GPU\(s\): GPU 0: NVIDIA GeForce"
    ):
        measure(nccl_tests, 8, tmp_path / "logs")
    assert not with_driver.exists()  # no nccl-tests binary was started


def test_a_failed_run_keeps_its_output_and_says_why(
    nccl_tests: Path, bare_path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", bare_path)  # a machine without the driver
    monkeypatch.setenv("FAKE_NCCL_TESTS_FAIL", "1")
    logs = tmp_path / "logs"
    with pytest.raises(MeasureError) as info:
        measure(nccl_tests, 2, logs, collectives=["all_reduce", "broadcast"])
    message = str(info.value)
    assert "all_reduce_perf -b 8 -e 8G -f 2 -g 2 -J" in message and "failed: exit code 2" in message
    assert "no CUDA-capable device is detected" in message
    assert f"output kept in {logs / 'all_reduce_2gpu.failed.log'}" in message
    assert "nvidia-smi not found on PATH" in message
    assert sorted(p.name for p in logs.iterdir()) == ["all_reduce_2gpu.failed.log"]


def test_unknown_collective_or_folder_is_named(nccl_tests: Path, tmp_path: Path) -> None:
    with pytest.raises(MeasureError, match="no nccl-tests binary known for 'all_to_all'; valid: all_reduce"):
        measure(nccl_tests, 2, tmp_path / "logs", collectives=["all_to_all"])
    with pytest.raises(MeasureError, match="nowhere is not a directory"):
        measure(tmp_path / "nowhere", 2, tmp_path / "logs")


def test_command_line_and_json_detection(nccl_tests: Path, with_driver: Path) -> None:
    assert nccl_tests_command("/b/all_reduce_perf", 8) == [
        "/b/all_reduce_perf",
        "-b",
        "8",
        "-e",
        "8G",
        "-f",
        "2",
        "-g",
        "8",
    ]
    assert nccl_tests_command("x", 4, "1M", "1G", 4, "o.json")[-2:] == ["-J", "o.json"]
    assert supports_json(nccl_tests / "build" / "all_reduce_perf")
    assert not supports_json(nccl_tests / "build" / "broadcast_perf")


@pytest.mark.parametrize(
    ("first", "last", "passed"),
    [
        ("1M", "8G", ["1M", "8G"]),  # nccl-tests' own form passes through
        ("1 MB", "1 GiB", ["1000000", "1073741824"]),  # other forms become bytes, read as we read them
        ("8", "64 KiB", ["8", "65536"]),
    ],
)
def test_sizes_reach_nccl_tests_as_we_read_them(first: str, last: str, passed: list[str]) -> None:
    """One size parser: '1 MB' is 10**6 bytes here and for nccl-tests (which would not read 'MB')."""
    command = nccl_tests_command("x", 2, first, last)
    assert [command[2], command[4]] == passed


@pytest.mark.parametrize(
    ("first", "last", "message"),
    [
        ("0", "8G", "--min-bytes: size '0' must be at least 1 byte"),
        ("8", "lots", "--max-bytes: cannot read size 'lots'"),
        ("1G", "1M", "--min-bytes 1G is larger than --max-bytes 1M"),
    ],
)
def test_bad_sizes_are_refused_before_running(tmp_path: Path, first: str, last: str, message: str) -> None:
    with pytest.raises(MeasureError, match=message):
        measure(tmp_path / "nowhere", 2, tmp_path / "logs", min_bytes=first, max_bytes=last)
    assert not (tmp_path / "logs").exists()
