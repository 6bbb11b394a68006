"""Realistic bad inputs, per surface: each answered with exit 2, one message naming what and where.

The command-line cases run the CLI in-process through its ``main`` (as the
console script does), so a whole table costs well under a second per case;
one case runs as a real subprocess to check the exit code end to end.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from commsim.cli import main

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = str(ROOT / "scenarios" / "pcie_4gpu_sync_strategies.yaml")
TRAINING = str(ROOT / "scenarios" / "resnet50_dgx1_overlap.yaml")
FLAGS = ["run", "--topology", "pcie_4gpu_switch", "--algorithm", "ring"]


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``(exit code, stdout, stderr with whitespace folded)`` of ``commsim ARGS``."""
    old = sys.argv
    sys.argv = ["commsim", *args]
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    finally:
        sys.argv = old
    captured = capsys.readouterr()
    return code, captured.out, " ".join(captured.err.split())


# -- command-line misuse ------------------------------------------------------------------------

CLI_CASES = [
    # flags that do not apply to the input are refused by name, not ignored
    ([*["run", SCENARIO], "--gpus", "16", "--collective", "broadcast"], "--gpus, --collective do not apply"),
    ([*["run", SCENARIO], "--size", "1 MB"], "--size does not apply to a scenario file"),
    ([*["run", TRAINING], "--explain"], "--explain does not apply to a training scenario"),
    (
        ["run", "--topology", "dgx1_v100", "--gpus", "4", "--algorithm", "ring"],
        "--gpus does not apply to 'dgx1_v100'",
    ),
    (["topo", "show", "dgx1_v100", "--gpus", "4"], "gpus=4 applies to builders"),
    (
        ["plot", "topology", "dgx1_v100", "-o", "d.png", "--gpus", "4"],
        "not to 'dgx1_v100', which is a finished machine",
    ),
    # user text is shown as typed, never read as console markup
    ([*FLAGS[:4], "[bold]ring"], "unknown algorithm '[bold]ring'"),
    # nearest names
    ([*FLAGS, "--collective", "al_reduce"], "did you mean 'all_reduce' or 'reduce'?"),
    (["run", "--topology", "pcie_4gpu_swtich", "--algorithm", "ring"], "did you mean 'pcie_4gpu_switch'"),
    # --param: YAML safely, errors as sentences
    (
        [*FLAGS, "--param", "chunks=!!python/object/apply:os.system [ls]"],
        "the tag '!!python/object/apply:os.system' is not allowed",
    ),
    ([*FLAGS, "--param", "chunks=[1,"], "--param chunks"),
    ([*FLAGS, "--param", "chunks"], "--param 'chunks' must look like KEY=VALUE"),
    ([*FLAGS, "--param", "chunks=2", "--param", "chunks=4"], "--param chunks is given twice"),
    ([*FLAGS, "--param", "chnks=2"], "--param chnks (algorithm 'ring'): unknown field 'chnks'; valid: order"),
    (
        ["run", "--topology", "pcie_4gpu_switch", "--algorithm", "naive_ring", "--param", "chunks=0"],
        "--param chunks (algorithm 'naive_ring'): must be at least 1, got 0",
    ),
    # sizes: whole bytes > 0, booleans are not numbers
    ([*FLAGS, "--size", "0"], "size '0' must be at least 1 byte"),
    ([*FLAGS, "--size", "true"], "cannot read size 'true'"),
    ([*FLAGS, "--size", "1.5"], "not a whole number of bytes"),
    (["recommend", "--topology", "pcie_4gpu_switch", "--size", "0 B"], "must be at least 1 byte"),
    # formats
    ([*FLAGS, "--format", "jsno"], "did you mean 'json'"),
    ([*FLAGS, "--format", "json", "--csv"], "choose one output"),
    # sizes nobody bounded: refused at once, naming the limit
    (
        ["run", "--topology", "ring", "--gpus", "1000000000", "--algorithm", "ring"],
        "gpus 1000000000 is above the limit of 16,384",
    ),
    (
        ["run", "--topology", "cluster", "--box", "dgx_a100", "--nodes", "1000000", "--algorithm", "ring"],
        "nodes 1000000 is above the limit of 1,024",
    ),
    # numbers out of range
    (["plot", "timeline", "-o", "t.png", "--max-links", "-3", *FLAGS[1:]], "Invalid value for '--max-links'"),
]


@pytest.mark.parametrize(("args", "message"), CLI_CASES)
def test_command_line_misuse(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    start = time.perf_counter()
    code, out, err = run_cli(args, capsys)
    assert code == 2, err
    assert message in err
    assert "Traceback" not in err and out == ""
    assert time.perf_counter() - start < 5  # generous: the bar is "well under a second" unloaded


# -- scenario files -------------------------------------------------------------------------------

GOOD = "name: x\ntopology: pcie_4gpu_switch\nsizes: [1 MB]\nalgorithms: [{algorithm: ring}]\n"

FILE_CASES = [
    # (file bytes, line:column of the problem, message)
    ("name: x\nname: y\ntopology: pcie_4gpu_switch\n", "2:1", "key 'name' is given twice"),
    (
        GOOD + "overrides: {pcie: {bandwidth: 16}}\n",
        "5:31: overrides.pcie.bandwidth",
        "bandwidth 16 has no unit; write it with one, e.g. '16 GB/s'",
    ),
    (GOOD + "overrides: {pcie: {latency: 5}}\n", "5:29: overrides.pcie.latency", "time 5 has no unit"),
    (
        GOOD.replace("pcie_4gpu_switch", "{builder: ring, gpus: 4, bandwidth: 16}"),
        "2:47",
        "topology.bandwidth: bandwidth 16 has no unit; write it with one, e.g. '16 GB/s'",
    ),
    ("a: " + "[" * 100 + "]" * 100 + "\n", "1:", "nested deeper than the limit of 40 levels"),
    (
        "a: &a [x,x,x,x,x,x,x,x,x,x]\n"
        + "".join(
            f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(9)
        ),
        ":",
        "more than the limit of 100,000 values",
    ),
    ("name: x\ntopology: !!python/object/apply:os.system [ls]\n", "2:11", "is not allowed"),
    ("name: caf\xe9\n".encode("latin-1"), "1:10", "not UTF-8 text (byte 0xE9"),
    (b"\x00\x01\x02binary", ":1", "NUL bytes"),
    ("name: x\n---\nname: y\n", "2:1", "more than one document"),
    # pydantic's wording becomes the user's
    (
        GOOD.replace("{algorithm: ring}", "{algorithm: ring, lable: a}"),
        "4:39",
        "algorithms.0.lable: unknown field 'lable'; valid: algorithm, label, params; did you mean 'label'?",
    ),
    (GOOD.replace("pcie_4gpu_switch", "5"), "2:11", "topology: expected text or a mapping of fields, got 5"),
    (
        GOOD.replace("pcie_4gpu_switch", "{builder: ring, gpus: x}"),
        "2:33",
        "gpus: expected a whole number, got 'x'",
    ),
    (GOOD + "root: -1\n", "5:7", "root: must be at least 0, got -1"),
    (GOOD.replace("name: x", "name:"), "1:6", "name: expected text, got nothing"),
    (GOOD.replace("sizes: [1 MB]", "sizes: [true]"), "3:9", "size True is a boolean"),
    # cases checked before anything runs, at their line
    (
        GOOD + "collective: all_to_all\n",
        "4:26",
        "algorithms.0.algorithm: 'ring' does not implement all_to_all",
    ),
    (
        GOOD.replace("{algorithm: ring}", "{algorithm: ring, params: {chnks: 2}}"),
        "4:48",
        "algorithms.0.params.chnks: unknown field 'chnks'; valid: order",
    ),
    (GOOD + "ranks: 9\n", "5:8", "ranks: ranks=9 but topology 'pcie_4gpu_switch' has 4 GPUs (need 2..4)"),
    (GOOD + "ranks: [gpu0, gpu9]\n", "5:8", "ranks ['gpu9'] are not GPUs of topology 'pcie_4gpu_switch'"),
    (
        GOOD.replace("{algorithm: ring}", "{algorithm: tree}") + "collective: broadcast\nroot: 7\n",
        "6:7",
        "root: 7 is not a rank of the 4 taking part; give 0 to 3",
    ),
    (
        GOOD.replace("[1 MB]", "[" + ", ".join(str(i) for i in range(1, 10_002)) + "]"),
        "4:13",
        "1 algorithms x 10001 sizes = 10,001 cases, more than the limit of 10,000",
    ),
    # found while planning: still at the entry's line
    (
        GOOD.replace("{algorithm: ring}", "{algorithm: parameter_server, params: {server: nope}}"),
        "4:14",
        "algorithms.0 (parameter_server, 1 MB): server 'nope' is not a device",
    ),
]


@pytest.mark.parametrize(("content", "where", "message"), FILE_CASES)
def test_bad_scenario_files(
    tmp_path: Path, content: str | bytes, where: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s[final].yaml"  # brackets in a name are not markup either
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)
    code, out, err = run_cli(["run", str(path)], capsys)
    assert code == 2 and out == ""
    assert str(path) in err  # the whole name, brackets included
    assert where in err and message in err
    assert "Traceback" not in err
    for jargon in ("Input should", "function-after", "NoneType", "Extra inputs", "instance of"):
        assert jargon not in err


def test_utf16_with_bom_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """What PowerShell's ``>`` writes: UTF-16 with a byte-order mark."""
    path = tmp_path / "s.yaml"
    path.write_bytes(GOOD.encode("utf-16"))
    code, out, err = run_cli(["run", str(path), "--format", "csv"], capsys)
    assert code == 0, err
    assert out.splitlines()[1].startswith("ring,ring,all_reduce,pcie_4gpu_switch,4,1000000,")


def test_exit_code_of_the_console_script() -> None:
    """End to end: a flag that does not apply exits 2 with one line on stderr."""
    proc = subprocess.run(
        [sys.executable, "-m", "commsim.cli", "run", SCENARIO, "--gpus", "16"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: --gpus does not apply to a scenario file: the file gives the case (give a file or flags, "
        "not both)"
    ]


def test_a_sweep_grid_over_the_limit_is_refused_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """1,000 x 1,000 x 2 = 2,000,000 scenarios: refused before one is expanded, nothing written."""
    values = "[" + ", ".join(str(i) for i in range(1, 1001)) + "]"
    spec = tmp_path / "big.yaml"
    spec.write_text(
        "name: big\ntopology: pcie_4gpu_switch\ngrid:\n  - product:\n"
        f"      size: {values}\n      root: {values}\n      algorithm: [ring, tree]\n",
        encoding="utf-8",
    )
    start = time.perf_counter()
    code, out, err = run_cli(["sweep", str(spec), "-o", str(tmp_path / "r.csv")], capsys)
    assert code == 2 and out == ""
    assert f"{spec}:4:3: grid: 2,000,000 scenarios is more than the limit of 100,000" in err
    assert not (tmp_path / "r.csv").exists()
    assert time.perf_counter() - start < 5
