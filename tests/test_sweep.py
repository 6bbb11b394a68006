"""Sweeps: grid expansion, stable keys, resume, runners that agree, Dask errors, the CLI."""

from __future__ import annotations

import multiprocessing
import socket
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from commsim.cli.sweep import sweep as sweep_command
from commsim.errors import ScenarioError
from commsim.sweep import (
    DaskRunner,
    ProcessPoolRunner,
    SerialRunner,
    Sweep,
    SweepError,
    choose_runner,
    load_sweep,
    make_runner,
    parse_sweep,
    range_values,
    read_rows,
    run_sweep,
    runners,
    scenario_key,
    usable_cpus,
    winners,
)

ROOT = Path(__file__).resolve().parent.parent

# 2 topologies x 3 algorithms x 3 sizes = 18 cheap scenarios; tree_packing cannot run on
# the PCIe box (no NVLink), so 3 rows record an error.
SMALL = """\
name: small
collective: all_reduce
grid:
  - product:
      topology: [pcie_4gpu_switch, fully_connected_4]
      algorithm: [ring, direct, tree_packing]
      size: [1 MB, 16 MB, 256 MB]
"""


def small_sweep() -> Sweep:
    return parse_sweep(SMALL, "small.yaml")


def expansion(text: str) -> list[dict[str, Any]]:
    return [s.scenario for s in parse_sweep(text, "grid.yaml").scenarios()]


def picked(text: str, *paths: str) -> list[tuple[Any, ...]]:
    rows = []
    for scenario in expansion(text):
        values = []
        for path in paths:
            value: Any = scenario
            for part in path.split("."):
                value = value[part]
            values.append(value)
        rows.append(tuple(values))
    return rows


def spec_error(text: str) -> str:
    with pytest.raises(ScenarioError) as info:
        parse_sweep(text, "bad.yaml")
    return str(info.value)


# -- grid expansion ------------------------------------------------------------------------------


def test_product_is_cartesian_with_the_first_key_outermost() -> None:
    text = (
        "topology: pcie_4gpu_switch\ngrid:\n  product:\n    algorithm: [ring, direct]\n"
        "    size: [1 MB, 2 MB]\n"
    )
    assert picked(text, "algorithm", "size") == [
        ("ring", "1 MB"),
        ("ring", "2 MB"),
        ("direct", "1 MB"),
        ("direct", "2 MB"),
    ]


def test_zip_takes_lists_in_step() -> None:
    text = (
        "topology: pcie_4gpu_switch\nalgorithm: naive_ring\n"  # (ring takes no chunks)
        "grid:\n  zip:\n    size: [1 MB, 2 MB, 4 MB]\n    params.chunks: [1, 2, 4]\n"
    )
    assert picked(text, "size", "params.chunks") == [("1 MB", 1), ("2 MB", 2), ("4 MB", 4)]


def test_groups_nest_and_a_list_of_groups_is_a_product() -> None:
    text = """\
topology: {builder: cluster, box: dgx_a100}
grid:
  - product:
      - zip: {topology.nic: [eth_100g, ib_hdr], topology.nic_per: [box, gpu]}
      - {topology.nodes: [2, 4]}
  - zip:
      algorithm: [ring, nccl]
      size: [1 MB, 1 GB]
"""
    got = picked(text, "topology.nic", "topology.nic_per", "topology.nodes", "algorithm", "size")
    assert got == [
        ("eth_100g", "box", 2, "ring", "1 MB"),
        ("eth_100g", "box", 2, "nccl", "1 GB"),
        ("eth_100g", "box", 4, "ring", "1 MB"),
        ("eth_100g", "box", 4, "nccl", "1 GB"),
        ("ib_hdr", "gpu", 2, "ring", "1 MB"),
        ("ib_hdr", "gpu", 2, "nccl", "1 GB"),
        ("ib_hdr", "gpu", 4, "ring", "1 MB"),
        ("ib_hdr", "gpu", 4, "nccl", "1 GB"),
    ]
    assert expansion(text)[0]["topology"] == {
        "builder": "cluster",
        "box": "dgx_a100",
        "nic": "eth_100g",
        "nic_per": "box",
        "nodes": 2,
    }


def test_range_values() -> None:
    assert range_values({"from": "1 KiB", "to": "8 KiB", "factor": 2}) == [1024, 2048, 4096, 8192]
    assert range_values({"from": 0.1, "to": 100, "factor": 10}) == [0.1, 1, 10, 100]
    assert range_values({"from": 1, "to": 2, "step": 0.5}) == [1, 1.5, 2]


def test_ranges_give_sizes_in_bytes_and_plain_numbers() -> None:
    text = (
        "algorithm: ring\nsize: 1 MB\ntopology: ring\n"
        "grid: [{size: {from: 8 B, to: 64 B, factor: 2}}, {topology.gpus: {from: 2, to: 6, step: 2}}]\n"
    )
    assert picked(text, "size", "topology.gpus") == [(s, g) for s in (8, 16, 32, 64) for g in (2, 4, 6)]
    # a builder given by name becomes a mapping when one of its fields is set
    assert expansion(text)[0]["topology"] == {"builder": "ring", "gpus": 2}


def test_overrides_and_params_are_grid_parameters(tmp_path: Path) -> None:
    text = """\
topology: fully_connected_4
algorithm: ring
size: 1 MB
grid:
  product:
    overrides.nvlink.bandwidth: [10 GB/s, 20 GB/s]
"""
    sweep = parse_sweep(text, "o.yaml")
    assert "overrides.nvlink.bandwidth" in sweep.columns
    run_sweep(sweep, tmp_path / "o.csv", runner=SerialRunner())
    slow, fast = read_rows(tmp_path / "o.csv")
    assert slow["overrides.nvlink.bandwidth"] == "10 GB/s"
    assert slow["time_s"] == pytest.approx(2 * fast["time_s"], rel=0.05)
    chunked = parse_sweep(
        text.replace("ring", "tree")
        .replace("overrides.nvlink.bandwidth", "params.chunks")
        .replace("[10 GB/s, 20 GB/s]", "[1, 4]"),
        "c.yaml",
    )
    run_sweep(chunked, tmp_path / "c.csv", runner=SerialRunner())
    one, four = read_rows(tmp_path / "c.csv")
    assert (one["params.chunks"], four["params.chunks"]) == ("1", "4") and four["time_s"] < one["time_s"]


def test_a_sweep_without_grid_is_one_scenario() -> None:
    assert len(parse_sweep("topology: pcie_4gpu_switch\nalgorithm: ring\nsize: 1 MB\n")) == 1


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        (
            "topology: pcie_4gpu_switch\nsize: 1 MB\ngrid:\n  product:\n    algoritm: [ring]\n",
            "bad.yaml:5:15: grid.product.algoritm",
            "unknown parameter 'algoritm'",
        ),
        (
            "topology: pcie_4gpu_switch\nsize: 1 MB\ngrid:\n  product:\n    algorithm: [ring, rign]\n",
            "bad.yaml:5:23: grid.product.algorithm.1",
            "unknown algorithm 'rign'",
        ),
        (
            "topology: pcie_4gpu_switch\nalgorithm: ring\ngrid:\n"
            "  - product:\n      size: [1 MB, 12 parsecs]\n",
            "bad.yaml:5:20: grid.0.product.size.1",
            "parsecs",
        ),
        (
            "topology: pcie_4gpu_switch\nalgorithm: ring\ngrid:\n  zip:\n    size: [1 MB, 2 MB]\n"
            "    params.chunks: [1, 2, 4]\n",
            "bad.yaml:5:5: grid.zip",
            "zip needs members of equal length; got size: 2, params.chunks: 3",
        ),
        (
            "topology: pcie_4gpu_switch\nalgorithm: ring\ngrid:\n  - {size: [1 MB]}\n  - {size: [2 MB]}\n",
            "bad.yaml:5:5: grid.1",
            "size is set twice",
        ),
        (
            "topology: dgx_a100\nalgorithm: ring\nsize: 1 MB\ngrid:\n"
            "  product:\n    topology.nodes: [2, 4]\n",
            "bad.yaml:6:22: grid.product.topology.nodes.0",
            "cannot set a field inside topology 'dgx_a100'",
        ),
        (
            "topology: pcie_4gpu_switch\nalgorithm: ring\ngrid:\n  product:\n    size: [1 MB, 1000000]\n",
            "bad.yaml:5:18: grid.product.size.1",
            "scenarios 0 and 1 are the same",
        ),
        (
            "topology: pcie_4gpu_switch\ngrid:\n  product:\n    size: [1 MB]\n",
            "bad.yaml:1:1: (document)",
            "algorithm is not given",
        ),
        (
            "topology: pcie_4gpu_switch\nalgorithm: ring\nsizes: [1 MB]\n",
            "bad.yaml:3:8: sizes",
            "unknown field 'sizes'; valid: name, description, topology, algorithm, collective, size, "
            "params, overrides, ranks, root, grid; did you mean 'size'?",
        ),
        (
            "topology: {builder: cluster, box: dgx_a100, node: 2}\nalgorithm: ring\nsize: 1 MB\n",
            "bad.yaml:1:11: topology",
            "builder 'cluster' has no field 'node'",
        ),
        (
            "topology: pcie_4gpu_switch\nalgorithm: ring\nsize: 1 MB\ngrid:\n  product:\n"
            "    overrides.nvlnk.bandwidth: [1 GB/s]\n",
            "bad.yaml:6:32: grid.product.overrides.nvlnk.bandwidth",
            "unknown link kind or family 'nvlnk'",
        ),
        (
            "topology: pcie_4gpu_switch\nalgorithm: ring\nsize: 1 MB\ngrid:\n"
            "  product: {size: {from: 8 B}}\n",
            "bad.yaml:5:19: grid.product.size",
            "a range is {from: A, to: B, factor: F}",
        ),
    ],
)
def test_spec_errors_say_file_line_column_and_what_is_valid(text: str, where: str, message: str) -> None:
    error = spec_error(text)
    assert error.startswith(where), error
    assert message in error


def test_spec_errors_are_reported_together() -> None:
    error = spec_error(
        "topology: pcie_4gpu_switch\nsize: 1 MB\ngrid:\n  product:\n    algorithm: [rign, tre]\n"
    )
    assert error.count("\n") == 1 and "'rign'" in error and "'tre'" in error


def test_every_shipped_sweep_file_loads() -> None:
    files = sorted((ROOT / "sweeps").glob("*.yaml"))
    assert files
    for path in files:
        sweep = load_sweep(path)
        assert len(sweep) > 0, path


def test_the_dgx1_vs_a100_sweep_runs_its_first_scenarios(tmp_path: Path) -> None:
    sweep = load_sweep(ROOT / "sweeps" / "dgx1_vs_a100.yaml")
    assert len(sweep) == 2 * 8 * 31
    summary = run_sweep(sweep, tmp_path / "r.csv", runner=SerialRunner(), limit=12)
    assert summary.computed == 12 and not summary.complete
    assert all(row["time_s"] > 0 for row in read_rows(tmp_path / "r.csv"))


# -- keys ----------------------------------------------------------------------------------------


def test_keys_are_stable_across_runs_and_ignore_mapping_order() -> None:
    scenario = {
        "topology": {"builder": "cluster", "box": "dgx_a100", "nodes": 2},
        "algorithm": "ring",
        "collective": "all_reduce",
        "size": "1 MB",
        "params": {"chunks": 4, "kinds": ["nvlink"]},
        "overrides": {"nvlink": {"bandwidth": "20 GB/s"}},
        "ranks": None,
        "root": 0,
    }
    shuffled = {
        "root": 0,
        "ranks": None,
        "overrides": {"nvlink": {"bandwidth": "20 GB/s"}},
        "params": {"kinds": ["nvlink"], "chunks": 4},
        "size": 1_000_000,
        "collective": "allreduce",
        "algorithm": "ring",
        "topology": {"nodes": 2, "box": "dgx_a100", "builder": "cluster"},
    }
    assert scenario_key(scenario) == scenario_key(shuffled) == "9098cd8583fe2309"
    assert scenario_key({**scenario, "params": {"chunks": 8}}) != scenario_key(scenario)
    assert small_sweep().keys == parse_sweep(SMALL, "other.yaml").keys


# -- running, resume -----------------------------------------------------------------------------


def test_rows_have_grid_columns_results_and_errors(tmp_path: Path) -> None:
    summary = run_sweep(small_sweep(), tmp_path / "r.csv", runner=SerialRunner())
    assert (summary.rows, summary.computed, summary.errors, summary.complete) == (18, 18, 3, True)
    rows = list(read_rows(tmp_path / "r.csv"))
    assert list(rows[0]) == [
        "key",
        "topology",
        "algorithm",
        "collective",
        "size",
        "nbytes",
        "n_ranks",
        "time_s",
        "algbw_Bps",
        "busbw_Bps",
        "bottleneck",
        "error",
    ]
    first = rows[0]
    assert (first["topology"], first["algorithm"], first["size"], first["nbytes"]) == (
        "pcie_4gpu_switch",
        "ring",
        "1 MB",
        1e6,
    )
    assert first["busbw_Bps"] == pytest.approx(first["algbw_Bps"] * 1.5)
    link, utilisation = first["bottleneck"].split(";")[0].split(":")
    assert "->" in link and 0 < float(utilisation) <= 1
    failed = [r for r in rows if r["error"]]
    assert [(r["topology"], r["algorithm"]) for r in failed] == [("pcie_4gpu_switch", "tree_packing")] * 3
    assert "no direct nvlink links" in failed[0]["error"]
    assert failed[0]["time_s"] is None


def test_resume_after_an_interruption_computes_only_the_missing_rows(tmp_path: Path) -> None:
    reference = tmp_path / "reference.csv"
    run_sweep(small_sweep(), reference, runner=SerialRunner())
    output = tmp_path / "r.csv"

    class SimulatedInterruptError(Exception):
        pass

    def interrupt(done: int, total: int) -> None:
        if done >= 7:
            raise SimulatedInterruptError

    with pytest.raises(SimulatedInterruptError):
        run_sweep(small_sweep(), output, runner=_SmallChunks(), progress=interrupt)
    kept = len(list(read_rows(output)))
    assert 7 <= kept < 18
    with output.open("a") as f:  # a row torn by the interruption
        f.write("deadbeef,pcie_4gpu")
    summary = run_sweep(small_sweep(), output, runner=SerialRunner())
    assert (summary.resumed, summary.computed, summary.rows) == (kept, 18 - kept, 18)
    assert output.read_bytes() == reference.read_bytes()
    again = run_sweep(small_sweep(), output, runner=SerialRunner())
    assert (again.resumed, again.computed) == (18, 0)


def test_rows_of_internal_errors_are_recomputed_on_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import commsim.sweep.evaluate as evaluate

    reference, output = tmp_path / "reference.csv", tmp_path / "r.csv"
    run_sweep(small_sweep(), reference, runner=SerialRunner())
    real = evaluate.simulate_case

    def buggy(case: Any, *args: Any, **kwargs: Any) -> Any:
        if case.algorithm == "direct":
            raise ZeroDivisionError("a bug")
        return real(case, *args, **kwargs)

    monkeypatch.setattr(evaluate, "simulate_case", buggy)
    first = run_sweep(small_sweep(), output, runner=SerialRunner())
    bugs = [r["error"] for r in read_rows(output) if r["algorithm"] == "direct"]
    assert bugs == ["internal error: ZeroDivisionError: a bug"] * 6 and first.errors == 9
    monkeypatch.setattr(evaluate, "simulate_case", real)
    second = run_sweep(small_sweep(), output, runner=SerialRunner())
    assert (second.resumed, second.computed, second.rows, second.errors) == (12, 6, 18, 3)
    assert output.read_bytes() == reference.read_bytes()


def test_limit_stops_early_and_the_rest_resumes_in_order(tmp_path: Path) -> None:
    output = tmp_path / "r.jsonl"
    first = run_sweep(small_sweep(), output, runner=SerialRunner(), limit=5)
    assert (first.computed, first.rows, first.complete) == (5, 5, False)
    second = run_sweep(small_sweep(), output, runner=SerialRunner())
    assert (second.resumed, second.computed, second.complete) == (5, 13, True)
    keys = [row["key"] for row in read_rows(output)]
    assert keys == list(small_sweep().keys)


def test_rows_of_scenarios_no_longer_in_the_sweep_are_dropped(tmp_path: Path) -> None:
    output = tmp_path / "r.csv"
    run_sweep(small_sweep(), output, runner=SerialRunner())
    smaller = parse_sweep(SMALL.replace("[1 MB, 16 MB, 256 MB]", "[1 MB, 16 MB]"), "small.yaml")
    summary = run_sweep(smaller, output, runner=SerialRunner())
    assert (summary.computed, summary.resumed, summary.dropped, summary.rows) == (0, 12, 6, 12)
    assert [row["key"] for row in read_rows(output)] == list(smaller.keys)


def test_an_output_with_other_columns_is_not_resumed(tmp_path: Path) -> None:
    output = tmp_path / "r.csv"
    output.write_text("key,something\n")
    with pytest.raises(SweepError, match=r"other columns.*--no-resume"):
        run_sweep(small_sweep(), output, runner=SerialRunner())
    assert run_sweep(small_sweep(), output, runner=SerialRunner(), resume=False).rows == 18


def test_jsonl_holds_the_same_rows_as_csv(tmp_path: Path) -> None:
    run_sweep(small_sweep(), tmp_path / "r.csv", runner=SerialRunner())
    run_sweep(small_sweep(), tmp_path / "r.jsonl", runner=SerialRunner())
    assert list(read_rows(tmp_path / "r.csv")) == list(read_rows(tmp_path / "r.jsonl"))


def test_parquet_output(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    output = tmp_path / "r.parquet"
    run_sweep(small_sweep(), output, runner=SerialRunner(), limit=4)
    summary = run_sweep(small_sweep(), output, runner=SerialRunner())
    assert (summary.resumed, summary.rows) == (4, 18)
    assert not output.with_name("r.parquet.partial.jsonl").exists()
    run_sweep(small_sweep(), tmp_path / "r.jsonl", runner=SerialRunner())
    assert list(read_rows(output)) == list(read_rows(tmp_path / "r.jsonl"))


def test_parquet_without_pyarrow_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(SweepError, match="pip install pyarrow"):
        run_sweep(small_sweep(), tmp_path / "r.parquet", runner=SerialRunner())


def test_unknown_output_suffix_asks_for_a_format(tmp_path: Path) -> None:
    with pytest.raises(SweepError, match="--format"):
        run_sweep(small_sweep(), tmp_path / "r.txt", runner=SerialRunner())


# -- runners -------------------------------------------------------------------------------------


class _SmallChunks(SerialRunner):
    """Serial, three scenarios per task: other chunk boundaries than the default."""

    def chunk_size(self, scenarios: int) -> int:
        return 3


def test_serial_pool_and_dask_write_identical_rows(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    assert distributed
    outputs = {
        "serial": SerialRunner(),
        "small_chunks": _SmallChunks(),
        "pool": ProcessPoolRunner(workers=2),
        "dask": DaskRunner(workers=2, processes=False),
    }
    for name, runner in outputs.items():
        run_sweep(small_sweep(), tmp_path / f"{name}.csv", runner=runner)
    reference = (tmp_path / "serial.csv").read_bytes()
    for name in outputs:
        assert (tmp_path / f"{name}.csv").read_bytes() == reference, name


@pytest.mark.slow
def test_a_local_dask_cluster_of_worker_processes_agrees_with_serial(tmp_path: Path) -> None:
    """What --workers N starts: worker processes on 127.0.0.1 (a few seconds to spawn)."""
    pytest.importorskip("distributed")
    sweep = parse_sweep(SMALL.replace("[1 MB, 16 MB, 256 MB]", "[1 MB]"), "small.yaml")
    run_sweep(sweep, tmp_path / "serial.csv", runner=SerialRunner())
    runner = DaskRunner(workers=1)
    run_sweep(sweep, tmp_path / "dask.csv", runner=runner)
    assert runner.description == "local Dask cluster (1 worker thread(s))"
    assert (tmp_path / "dask.csv").read_bytes() == (tmp_path / "serial.csv").read_bytes()


def test_pool_without_dask_agrees_with_serial(tmp_path: Path) -> None:
    run_sweep(small_sweep(), tmp_path / "serial.jsonl", runner=SerialRunner())
    run_sweep(small_sweep(), tmp_path / "pool.jsonl", runner=ProcessPoolRunner(workers=2))
    assert (tmp_path / "pool.jsonl").read_bytes() == (tmp_path / "serial.jsonl").read_bytes()


def test_chunks_hold_about_a_quarter_of_a_workers_share() -> None:
    assert ProcessPoolRunner(workers=2).chunk_size(1000) == 125
    assert ProcessPoolRunner(workers=2).chunk_size(3) == 1
    assert ProcessPoolRunner(workers=2).chunk_size(10**6) == 256


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_scheduler_is_a_clear_error(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    address = f"tcp://127.0.0.1:{_free_port()}"
    runner = DaskRunner(address=address, timeout_s=1)
    with pytest.raises(SweepError, match=f"cannot reach the Dask scheduler at {address} within 1 s"):
        run_sweep(small_sweep(), tmp_path / "r.csv", runner=runner)


def test_without_dask_a_scheduler_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)
    install = 'pip install "commsim\\[dask\\]"'
    with pytest.raises(SweepError, match=install):
        make_runner(scheduler="tcp://10.0.0.1:8786")
    with pytest.raises(SweepError, match=install):
        make_runner(workers=2)
    with pytest.raises(SweepError, match=install):
        make_runner(environ={"DASK_SCHEDULER_ADDRESS": "tcp://10.0.0.1:8786"})
    assert isinstance(make_runner(environ={}), ProcessPoolRunner)


def test_runner_choice() -> None:
    pytest.importorskip("distributed")
    assert isinstance(make_runner(serial=True), SerialRunner)
    from_env = make_runner(environ={"DASK_SCHEDULER_ADDRESS": "tcp://h:8786"})
    assert isinstance(from_env, DaskRunner) and from_env.address == "tcp://h:8786"
    local = make_runner(workers=3, environ={"DASK_SCHEDULER_ADDRESS": "tcp://h:8786"})
    assert isinstance(local, DaskRunner) and local.address is None and local.local_workers == 3
    with pytest.raises(SweepError, match="choose one"):
        make_runner(serial=True, scheduler="tcp://h:8786")


def test_the_runner_is_chosen_from_the_grid_size_and_the_idle_cores() -> None:
    """Pool iff idle = cores - round(load) >= 2 and scenarios >= 100 per idle core; else serial.

    The shipped dgx1_vs_a100 sweep (496 scenarios) on a 2-core machine: idle at load 0 (2 idle
    cores, 496 >= 200: pool of 2); at load 3.3 (the shared machine) 2 - 3 < 0 idle: serial.
    On 8 cores at load 2.4: 8 - 2 = 6 idle, so 600 scenarios get a pool of 6 and 599 do not.
    """
    idle = choose_runner(496, cores=2, load=0.0)
    assert isinstance(idle, ProcessPoolRunner) and idle.workers == 2
    assert idle.description == "process pool of 2 worker(s); chosen: 496 scenarios, 2 of 2 core(s) idle"
    busy = choose_runner(496, cores=2, load=3.3)
    assert isinstance(busy, SerialRunner)
    assert busy.description == "serial (this process; chosen: 0 of 2 core(s) idle, a pool needs 2)"
    assert isinstance(choose_runner(496, cores=2, load=0.6), SerialRunner)  # round(0.6) = 1 busy
    six = choose_runner(600, cores=8, load=2.4)
    assert isinstance(six, ProcessPoolRunner) and six.workers == 6
    few = choose_runner(599, cores=8, load=2.4)
    assert (
        few.description
        == "serial (this process; chosen: 599 scenarios < 100 per idle core (6 of 8 core(s) idle))"
    )
    assert isinstance(choose_runner(10**6, cores=1, load=0.0), SerialRunner)


def test_usable_cpus_prefers_process_cpu_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """os.process_cpu_count (3.13+) first, as it honours PYTHON_CPU_COUNT and the affinity mask."""
    monkeypatch.setattr(runners.os, "process_cpu_count", lambda: 3, raising=False)
    assert usable_cpus() == 3
    monkeypatch.setattr(runners.os, "process_cpu_count", lambda: None, raising=False)
    assert usable_cpus() == 1


def test_make_runner_chooses_unless_told(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runners, "usable_cpus", lambda: 8)
    monkeypatch.setattr(runners.os, "getloadavg", lambda: (0.2, 0.0, 0.0))
    assert isinstance(make_runner(environ={}, scenarios=799), SerialRunner)
    assert isinstance(make_runner(environ={}, scenarios=800), ProcessPoolRunner)
    assert isinstance(make_runner(environ={}, scenarios=1, pool=True), ProcessPoolRunner)
    assert isinstance(make_runner(environ={}, scenarios=10**6, serial=True), SerialRunner)
    with pytest.raises(SweepError, match="choose one of --serial, --pool, --workers and --scheduler"):
        make_runner(serial=True, pool=True)


def _boom(task: int) -> int:
    if task == 3:
        raise ValueError("case 3 failed")
    return task


def _interrupt(done: int, total: int) -> None:
    if done:
        raise KeyboardInterrupt


def test_no_worker_outlives_an_error_in_one_case() -> None:
    """A task's exception reaches the caller, and every pool worker has exited by then."""
    runner = ProcessPoolRunner(workers=2)
    with pytest.raises(ValueError, match="case 3 failed"), runner:
        for _ in runner.run(_boom, range(50)):
            pass
    assert multiprocessing.active_children() == []


def test_no_worker_outlives_an_interrupt(tmp_path: Path) -> None:
    """Ctrl-C (here raised by the progress callback after the first chunk): workers are gone."""
    with pytest.raises(KeyboardInterrupt):
        run_sweep(small_sweep(), tmp_path / "r.csv", runner=ProcessPoolRunner(workers=2), progress=_interrupt)
    assert multiprocessing.active_children() == []
    assert (tmp_path / "r.csv").read_text().count("\n") >= 2  # header and the rows finished so far


# -- winners and the command line ----------------------------------------------------------------


def test_winners_pick_the_fastest_runnable_algorithm_per_case_and_size() -> None:
    rows = [
        {"topology": "a", "algorithm": "ring", "nbytes": 1.0, "time_s": 2.0, "error": None},
        {"topology": "a", "algorithm": "tree", "nbytes": 1.0, "time_s": 1.0, "error": None},
        {"topology": "b", "algorithm": "ring", "nbytes": 1.0, "time_s": 3.0, "error": None},
        {"topology": "b", "algorithm": "tree", "nbytes": 1.0, "time_s": None, "error": "no tree"},
    ]
    table = winners(rows)
    assert table.cases == ["a", "b"] and table.contenders == ["ring", "tree"]
    assert table.cells == {("a", 1.0): ("tree", 1.0), ("b", 1.0): ("ring", 3.0)}


def test_sweep_command_writes_rows_and_the_winners_plot(tmp_path: Path) -> None:
    spec = tmp_path / "small.yaml"
    spec.write_text(SMALL)
    app = typer.Typer()
    app.command()(sweep_command)
    app.command("other")(lambda: None)  # two commands: the app is a group, as in commsim.cli
    result = CliRunner().invoke(
        app,
        ["sweep", str(spec), "-o", str(tmp_path / "r.csv"), "--serial", "--plot", str(tmp_path / "w.png")],
    )
    assert result.exit_code == 0, result.output
    assert "wrote 18 of 18 rows" in result.output
    assert len(list(read_rows(tmp_path / "r.csv"))) == 18
    assert (tmp_path / "w.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    quiet = CliRunner().invoke(app, ["sweep", str(spec), "-o", str(tmp_path / "r.csv"), "--serial", "-q"])
    assert quiet.exit_code == 0 and quiet.output == ""
