"""Bad inputs found by a systematic sweep of every command (397 cases; /work/notes/fuzz in the project notes).

Each row was mishandled before: a traceback, a hang, a silent wrong answer
(``device_flops: 125`` read as 125 FLOP/s), an input file overwritten, or a
message that did not say where or what would be valid. Every row checks the
exit code (2), that no traceback or library wording appears, and the words
that say what was wrong, where, and what would be valid.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from commsim.errors import ArgumentError, CommsimError
from tests.test_bad_inputs_more import refused

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
LOG = DATA / "nccl-tests" / "RTX2080Ti-PCIe-PIX-noP2P_all_reduce_2gpu_1.txt"
GOOD = "name: x\ntopology: pcie_4gpu_switch\nsizes: [1 MB]\nalgorithms: [{algorithm: ring}]\n"
TRAIN = (
    "name: t\nworkload: {model: resnet50, batch: 64, device_flops: 125 TFLOPS}\n"
    "topology: dgx1_v100\nsync: [{algorithm: multi_ring}]\n"
)
RING = ["run", "--algorithm", "ring", "--topology"]

# -- flags: the message names the flags that gave the machine, and only the valid kinds -------------

FLAG_CASES = [
    (
        [*RING, "ring", "--gpus", "0"],
        ["--topology ring --gpus 0: builder 'ring' needs gpus >= 2, got 0"],
    ),
    (
        [*RING, "cluster", "--nodes", "2", "--nic", "infiniband"],
        # network kinds only: the catalogue's PCIe and NVLink kinds were listed too
        ["--topology cluster --nodes 2 --nic infiniband: unknown cluster nic 'infiniband'; valid: efa_v1,"],
    ),
    (
        [*RING, "cluster", "--nodes", "2", "--box", "ring"],
        ["--box ring", "unknown cluster box 'ring'; valid:"],
    ),
    (["topo", "show", "ring", "--gpus", "1"], ["--topology ring --gpus 1: builder 'ring' needs gpus >= 2"]),
    (
        ["recommend", "--topology", "pcie_4gpu_switch", "--tuned-sizes", "1K"],
        ["--tuned-sizes '1K': a size range must look like FIRST..LAST, e.g. 8B..1GB"],
    ),
    (
        ["recommend", "--topology", "pcie_4gpu_switch", "--tuned-sizes", "0..1G"],
        ["--tuned-sizes '0..1G': size '0' must be at least 1 byte"],
    ),
    (
        ["recommend", "--topology", "pcie_4gpu_switch", "--threshold", "inf"],
        ["--threshold inf: expected a finite"],
    ),
    (["measure", "--nccl-tests", ".", "--gpus", "2", "--timeout", "-5"], ["'--timeout': must be at least 0"]),
    # 100,000 ranks built a 50,000-host cluster for minutes
    ([*["validate", str(LOG)], "--gpus", "100000"], ["--gpus 100000 is above the limit of 65,536 ranks"]),
]


@pytest.mark.parametrize(("args", "messages"), FLAG_CASES)
def test_flags(args: list[str], messages: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    err = refused(args, capsys, *messages)
    assert "nvlink1" not in err  # a --nic lists network kinds only


def test_an_unknown_metric_is_refused_before_anything_is_drawn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "p.png"
    args = ["plot", "busbw", "-o", str(out), "--topology", "pcie_4gpu_switch", "--algorithm", "ring"]
    refused([*args, "--metric", "latency"], capsys, "--metric 'latency': unknown metric; valid: busbw, time")
    assert not out.exists()


def test_sizes_with_a_scenario_file_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``plot busbw FILE --sizes 8..1K`` drew the file's sizes and said nothing."""
    out = tmp_path / "p.png"
    scenario = str(ROOT / "scenarios" / "pcie_4gpu_sync_strategies.yaml")
    refused(
        ["plot", "busbw", scenario, "-o", str(out), "--sizes", "8..1K"],
        capsys,
        "--sizes does not apply to a scenario file: the file gives the sizes (--size, repeatable,",
    )
    assert not out.exists()


# -- files: the place and what would be valid -----------------------------------------------------

FILE_CASES: list[tuple[str, str, list[str]]] = [
    # (command, file content, messages); {path} is the file
    (
        "run",
        "name: x\ntopology: *nothere\n",
        ["{path}:2:11: the alias *nothere names no anchor; define it first with &nothere"],
    ),
    (
        "run",
        GOOD.replace("[1 MB]", "[1 MB"),
        [
            "not valid YAML: did not find expected ',' or ']' "
            "(in the [...] list that began at line 3, column 8)"
        ],
    ),
    ("run", "name: 'x\n", ["{path}:2:1:", "(in the quoted text that began at line 1, column 7)"]),
    (
        "run",
        GOOD.replace("{algorithm: ring}", "{algorithm: naive_ring, params: {chunks: .nan}}"),
        ["{path}:4:55: algorithms.0.params.chunks: expected a finite number (not nan or inf), got nan"],
    ),
    (
        "run",
        GOOD + "ranks: []\n",  # was reported at the algorithm entry, as "needs at least 2 ranks, got 0"
        ["{path}:5:8: ranks: ranks [] name 0 GPU(s); a collective needs at least 2, e.g. [gpu0, gpu1]"],
    ),
    ("run", GOOD.replace("name: x", "name: ''"), ["{path}:1:7: name: expected text of at least 1 character"]),
    # a cluster in a scenario file (as in training and sweep files): its fields are the builder's
    (
        "run",
        GOOD.replace("pcie_4gpu_switch", "{builder: cluster, box: dgx_a100, nodes: 2, gpus_per_node: 3}"),
        [
            "{path}:2:11: topology: builder 'cluster' has no field 'gpus_per_node'; valid: box,",
            "did you mean 'nics_per_node'?",
        ],
    ),
    (
        "run",
        GOOD.replace("pcie_4gpu_switch", "{file: t.yaml, nodes: 2}"),
        ["{path}:2:11: topology: 'nodes': builder fields apply to {builder: NAME, ...}, not to {file: ...}"],
    ),
    # read as 125 FLOP/s: a step of days, silently
    (
        "run",
        TRAIN.replace("125 TFLOPS", "125"),
        [
            "{path}:2:54: workload.device_flops: device_flops 125 has no unit; "
            "write it with one, e.g. '125 TFLOPS'"
        ],
    ),
    (
        "sweep",
        "name: s\ngrid:\n  - prodcut:\n      algorithm: [ring]\n      size: [1 MB]\n",
        ["unknown parameter 'prodcut'", "(or a group: product, zip); did you mean 'product'?"],
    ),
    (  # "the range gives over 10000 values": which range, and what to do
        "sweep",
        "name: s\ngrid:\n  - product:\n      algorithm: [ring]\n"
        "      size: {from: 1 MB, to: 1 GB, step: 2}\n",
        [
            "{path}:5:13: grid.0.product.size: the range from 1 MB to 1 GB by step 2 gives over 10,000",
            "use a larger step, or factor (e.g. factor: 2) for sizes",
        ],
    ),
    # topology files: names that break routes and CSV cells; calibrations the model would ignore
    (
        "topo",
        (ROOT / "topologies" / "pcie_4gpu_switch.yaml").read_text().replace("gpu0", "'gpu 0'"),
        ["{path}:12:12: devices.2.name: device name 'gpu 0' must be letters, digits and"],
    ),
    (
        "topo",
        (ROOT / "topologies" / "pcie_4gpu_switch.yaml").read_text()
        + "nccl: {efficiency: {nvlink9: 0.5, pcie: 5}}\n",
        [
            "{path}:22:30: nccl.efficiency.nvlink9: unknown link kind, family or transport 'nvlink9'; "
            "valid: ",
            "did you mean 'nvlink' or 'nvlink5'?",
            "{path}:22:41: nccl.efficiency.pcie: must be a fraction of the link's bandwidth in (0, 1], got 5",
        ],
    ),
    (
        "import",
        "\tGPU0\tGPU1\nGPU0\tX\tNV99\nGPU1\tNV99\tX\n",
        ["{path}:2: cell GPU0/GPU1 is NV99, more NVLinks"],
    ),
]


@pytest.mark.parametrize(("command", "content", "messages"), FILE_CASES)
def test_files(
    command: str, content: str, messages: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(content, encoding="utf-8")
    args = {
        "run": ["run", str(path)],
        "sweep": ["sweep", str(path), "-o", str(tmp_path / "o.csv")],
        "topo": ["topo", "show", str(path)],
        "import": ["topo", "import", str(path)],
    }[command]
    refused(args, capsys, *[m.replace("{path}", str(path)) for m in messages])
    assert not (tmp_path / "o.csv").exists()


def test_a_cluster_in_a_scenario_file_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Refused before with "unknown field 'box'", though training and sweep files take it."""
    from tests.test_bad_inputs import run_cli

    path = tmp_path / "s.yaml"
    path.write_text(GOOD.replace("pcie_4gpu_switch", "{builder: cluster, box: dgx_a100, nodes: 2}"))
    code, out, err = run_cli(["run", str(path), "--csv"], capsys)
    assert code == 0, err
    assert out.splitlines()[1].startswith("ring,ring,all_reduce,cluster_2xdgx_a100,16,1000000,")


# -- what is read: endless devices, pipes, outputs over inputs ---------------------------------------


def test_an_endless_device_is_refused_at_the_limit(capsys: pytest.CaptureFixture[str]) -> None:
    """/dev/zero has no size: it was read whole (until memory ran out)."""
    refused(
        ["run", "/dev/zero"], capsys, "/dev/zero: larger than the limit of 5,000,000 bytes for a YAML file"
    )
    refused(["topo", "import", "/dev/zero"], capsys, "/dev/zero: it goes on past the limit of 20 MB")


def test_a_named_pipe_nobody_writes_to_reads_as_empty(tmp_path: Path) -> None:
    """It waited forever; a pipe with a writer (``<(command)``) is still read."""
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    command = [sys.executable, "-m", "commsim.cli", "run", str(fifo)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 2
    assert (
        proc.stderr
        == f"error: {fifo}: expected a mapping of scenario fields, got nothing (the file is empty)\n"
    )


def test_a_log_in_a_pipe_is_refused_with_how_to_keep_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """validate reads a log more than once: a pipe's second read found "no result rows"."""
    fifo = tmp_path / "run.log"
    os.mkfifo(fifo)  # never opened: refused by what it is
    refused(
        ["validate", str(fifo)], capsys, f"{fifo}: is a pipe or a device, not a file", "save it to a file"
    )


def test_calibrate_does_not_write_over_its_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``calibrate run.yaml -o run.yaml`` replaced the log with the calibration."""
    log = tmp_path / "run.yaml"
    log.write_bytes(LOG.read_bytes())
    refused(["calibrate", str(log), "-o", str(log)], capsys, f"--output {log}: is one of the input files")
    assert log.read_bytes() == LOG.read_bytes()
    # and a calibration is YAML: --calibrated and --topology know a topology file by its suffix
    refused(
        ["calibrate", str(log), "-o", str(tmp_path / "c.txt")], capsys, "unknown format '.txt'; use a file"
    )
    assert not (tmp_path / "c.txt").exists()


def test_topo_import_does_not_write_over_its_matrix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    matrix = tmp_path / "m.yaml"
    matrix.write_bytes((DATA / "nvsmi" / "dgx1_v100.txt").read_bytes())
    refused(["topo", "import", str(matrix), "-o", str(matrix)], capsys, "is one of the input files")
    assert matrix.read_bytes() == (DATA / "nvsmi" / "dgx1_v100.txt").read_bytes()


# -- the API misused: ArgumentError (a TypeError and a CommsimError) naming the argument ------------


def _commsim() -> Any:
    import commsim

    return commsim


API_CASES: list[tuple[Callable[[], object], str]] = [
    (lambda: _commsim().simulate("pcie_4gpu_switch", "ring", params=[1]), "params: expected a mapping"),
    (lambda: _commsim().simulate("pcie_4gpu_switch", "ring", overrides=5), "overrides: expected a mapping"),
    (lambda: _commsim().simulate("pcie_4gpu_switch", "ring", verify="yes"), "verify: expected True, False"),
    (lambda: _commsim().run_file(None), "path: expected a scenario file's path (str or Path), or what"),
    (lambda: _commsim().run_file(5), "got 5 (int)"),
    (lambda: _commsim().run_scenario("s.yaml"), "loaded: expected a loaded scenario"),
    (lambda: _commsim().explain("x"), "result: expected a Result (from simulate or run_file), got 'x'"),
    (lambda: _commsim().load_scenario(5), "path: expected a scenario file's path"),
    (
        lambda: _commsim().load_topology_file(None),
        "path: expected a YAML file's path (str or Path), got None",
    ),
    (lambda: _commsim().load_topo_matrix(None), "path: expected the path of a nvidia-smi topo output"),
    (lambda: _commsim().save_topology("ring", "/tmp/x.yaml"), "topology: expected a Topology (get_topology"),
    (lambda: _commsim().results_table(5), "results: expected a list of Result"),
    (lambda: _commsim().results_table([1, 2]), "results[0]: expected a Result"),
    (lambda: _commsim().plot_busbw(5), "results: expected a list of Result"),
    (lambda: _commsim().simulate_step(5, "ring"), "workload: expected a Workload"),
    (lambda: _commsim().draw_topology("dgx1_v100", "d.png"), "topology: expected a Topology"),
    (lambda: _commsim().load_training_scenario(None), "path: expected a training scenario file's path"),
    (lambda: _commsim().plot_utilisation_heatmap([1]), "result: expected one Result"),
]


@pytest.mark.parametrize(("call", "message"), API_CASES)
def test_api_misuse(call: Callable[[], object], message: str) -> None:
    start = time.perf_counter()
    with pytest.raises(ArgumentError) as caught:
        call()
    assert isinstance(caught.value, TypeError) and isinstance(caught.value, CommsimError)
    assert message in str(caught.value)
    assert "NoneType" not in str(caught.value)
    assert time.perf_counter() - start < 5


def test_recommend_of_a_wrong_topology_says_so() -> None:
    """It ran every algorithm, each failing, then raised AttributeError on ``5.name``."""
    from commsim.errors import TopologyError

    with pytest.raises(TopologyError, match="topology 5: expected a name, a YAML path"):
        _commsim().recommend(5, "all_reduce", "1 MB")


def test_a_trace_of_nothing_writes_no_file(tmp_path: Path) -> None:
    """The file was opened before the results were looked at: half a trace was left behind."""
    out = tmp_path / "t.json"
    with pytest.raises(ArgumentError, match="results: expected a list of Result"):
        _commsim().write_trace(5, out)
    assert not out.exists()


def test_an_interrupted_trace_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The trace streamed into its file: Ctrl-C half way left half a JSON document."""
    import commsim.report.trace as trace

    def interrupted(stream: Any, results: Any, max_transfers: Any) -> None:
        stream.write('{"traceEvents": [')
        raise KeyboardInterrupt

    result = _commsim().simulate("pcie_4gpu_switch", "ring", size="1 MB")
    monkeypatch.setattr(trace, "_write", interrupted)
    for name in ("t.json", "t.json.gz"):
        with pytest.raises(KeyboardInterrupt):
            trace.write_trace([result], tmp_path / name)
    assert list(tmp_path.iterdir()) == []  # neither the file nor its temporary


def test_a_drawing_that_fails_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from matplotlib.figure import Figure

    from commsim.report.plots import new_figure, save_figure

    def broken(self: Figure, target: Any, **kwargs: Any) -> None:
        target.write(b"<svg")
        raise RuntimeError("renderer failed")

    fig, _ = new_figure(2, 2)
    monkeypatch.setattr(Figure, "savefig", broken)
    with pytest.raises(RuntimeError):
        save_figure(fig, tmp_path / "p.svg")
    assert list(tmp_path.iterdir()) == []
