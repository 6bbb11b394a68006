"""More realistic bad inputs, one table per surface, found by an adversarial pass over every command.

Each row is an input a user could plausibly give (a typo, a file saved by the
wrong tool, an output folder not created yet, a number with one zero too many)
and what commsim must answer: exit code 2, the place (``file:line:col``, or
the flag) and the words that say what was wrong and what would be valid;
nothing half-written; never a traceback or a library's wording. Most rows
were mishandled before (a traceback, a hang, ``got NoneType``, pydantic's
``Input should be ...``, an output file left behind); the rest are a sample
of what was already right, kept so that it stays right.

The command-line rows run ``commsim`` in-process (as the console script
does); the API rows call the readers the CLI does not reach.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from commsim.errors import CommsimError
from tests.test_bad_inputs import run_cli

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
LOG = DATA / "nccl-tests" / "RTX2080Ti-PCIe-PIX-noP2P_all_reduce_2gpu_1.txt"
JSON_LOG = DATA / "nccl-tests" / "synthetic_json_RTX2080Ti_all_reduce_2gpu.json"
GOOD = "name: x\ntopology: pcie_4gpu_switch\nsizes: [1 MB]\nalgorithms: [{algorithm: ring}]\n"
SWEEP = (
    "name: s\ncollective: all_reduce\ngrid:\n  - product:\n      topology: [pcie_4gpu_switch]\n"
    "      algorithm: [ring]\n      size: [1 MB]\n"
)
RUN = ["run", "--topology", "pcie_4gpu_switch", "--algorithm", "ring"]
MSCCL = ["export", "msccl", "--topology", "pcie_4gpu_switch", "--algorithm", "ring"]
JARGON = ("Traceback", "NoneType", "Input should", "Extra inputs", "function-after", "unhashable")


def refused(args: list[str], capsys: pytest.CaptureFixture[str], *messages: str) -> str:
    """Run ``args``; check exit 2, nothing on stdout, each message on stderr, no jargon, < 5 s."""
    start = time.perf_counter()
    code, out, err = run_cli(args, capsys)
    assert code == 2, err
    assert out == ""
    for message in messages:
        assert message in err
    for jargon in JARGON:
        assert jargon not in err
    assert time.perf_counter() - start < 5  # the bar is "a second or two" unloaded
    return err


# -- command-line misuse: {tmp} is the test's folder ------------------------------------------------

CLI_CASES = [
    # typer checks option values with pydantic: its wording becomes the user's
    (["sweep", "{tmp}/s.yaml", "-o", "{tmp}/o.csv", "--workers", "0"], "'--workers': must be at least 1"),
    (["run", "--topology", "ring", "--gpus", "four"], "'--gpus': expected a whole number, e.g. 4"),
    (
        ["recommend", "--topology", "pcie_4gpu_switch", "--threshold", "-5"],
        "'--threshold': must be at least 0",
    ),
    # output paths: checked before any work
    (
        [*RUN, "--trace", "{tmp}/t.txt"],
        "--trace {tmp}/t.txt: unknown format '.txt'; use a file ending .json, .json.gz",
    ),
    ([*RUN, "--trace", "{tmp}/no/t.json"], "--trace {tmp}/no/t.json: the folder '{tmp}/no' does not exist"),
    ([*RUN, "--trace", "{tmp}"], "--trace {tmp}: unknown format '(no suffix)'"),
    (["plot", "topology", "dgx1_v100", "-o", "{tmp}/no/d.png"], "--output {tmp}/no/d.png: the folder"),
    (
        ["export", "astra", "--topology", "ring", "--gpus", "4", "-o", "{tmp}/no/a.yml"],
        "--output {tmp}/no/a.yml: the folder '{tmp}/no' does not exist; create it first",
    ),
    (["topo", "import", str(DATA / "nvsmi" / "pcie_mixed.txt"), "-o", "{tmp}/no/m.yaml"], "the folder"),
    (["calibrate", str(LOG), "-o", "{tmp}/no/c.yaml"], "--output {tmp}/no/c.yaml: the folder"),
    (["validate", str(LOG), "--plot", "{tmp}/no/v.png"], "--plot {tmp}/no/v.png: the folder"),
    (["sweep", "{tmp}/s.yaml", "-o", "{tmp}"], "--output {tmp}: is a folder; give a file name in it"),
    # validate/calibrate options checked even where the run would not use them
    (["validate", str(LOG), "--nodes", "0"], "--nodes must be at least 1, got 0"),
    (["validate", str(LOG), "--gpus-per-node", "-1"], "--gpus-per-node must be at least 1, got -1"),
    (["validate", str(LOG), "--nic", "[/]"], "--nic '[/]' is no network link kind; valid: efa_v1,"),
    (["validate", str(LOG), "--nic", "ib_hrd"], "did you mean 'ib_hdr'"),
    # an unknown GPU is an error on stderr, not a line on stdout
    (["gpus", "[bold]Quadro ZZZ"], "error: name '[bold]Quadro ZZZ' is not in the GPU catalogue"),
    # bounds that stop hangs
    (
        ["run", "--topology", "pcie_4gpu_switch", "--algorithm", "naive_ring", "--param", "chunks=100000000"],
        "--param chunks (algorithm 'naive_ring'): must be at most 1024, got 100000000",
    ),
    (
        ["run", "--topology", "dgx1_v100", "--algorithm", "kv_parameter_server", "--param", "keys=100000000"],
        "must be at most 4096",
    ),
    (
        ["run", "--topology", "ring", "--gpus", "16384", "--algorithm", "ring", "--verify"],
        # 16,384 devices x 16,384 chunks x 16,384 ranks = 2^42 counters
        "of 16,384 ranks needs 4,398,046,511,104 symbolic counters (devices x chunks x ranks), "
        "more than the limit of 150,000,000; run it without --verify",
    ),
    (
        ["plot", "topology", "ring", "--gpus", "16384", "-o", "{tmp}/r.png"],
        "topology 'ring_16384' has 16,384 devices, more than the limit of 2,048 for a drawing",
    ),
    # booleans are not numbers: chunks=true was read as 1
    (
        ["run", "--topology", "pcie_4gpu_switch", "--algorithm", "naive_ring", "--param", "chunks=true"],
        "--param chunks (algorithm 'naive_ring'): expected a whole number, got true (true/false)",
    ),
    # an MSCCL size range: 0..0 was written as an algorithm for no size at all
    (
        [*MSCCL, "--max-bytes", "0", "-o", "{tmp}/m.xml"],
        "--max-bytes 0 must be at least 1 and at least --min-bytes (0)",
    ),
    (
        [*MSCCL, "--min-bytes", "-1", "-o", "{tmp}/m.xml"],
        "--min-bytes must be at least 0, got -1",
    ),
    # a sample of what was already right
    ([*RUN, "--size", "1 Gb"], "a lower-case 'b' is ambiguous in a size"),
    ([*RUN, "--collective", "[/]"], "unknown collective '[/]'"),
    (["recommend", "--topology", "pcie_4gpu_switch", "--tuned-sizes", "1G..1K"], "at most the last"),
    (["plot", "topology", "dgx1_v100", "-o", "{tmp}/d.gif"], "unknown format '.gif'; use one of .png"),
]


@pytest.mark.parametrize(("args", "message"), CLI_CASES)
def test_command_line_misuse(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "s.yaml").write_text(SWEEP, encoding="utf-8")
    before = sorted(tmp_path.rglob("*"))
    refused(
        [a.replace("{tmp}", str(tmp_path)) for a in args], capsys, message.replace("{tmp}", str(tmp_path))
    )
    assert sorted(tmp_path.rglob("*")) == before  # nothing written, no folder made


def test_a_sweep_into_a_missing_folder_makes_no_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It used to create the folders and write there; every other command refuses."""
    spec = tmp_path / "s.yaml"
    spec.write_text(SWEEP, encoding="utf-8")
    refused(["sweep", str(spec), "-o", str(tmp_path / "a" / "b" / "o.csv")], capsys, "the folder")
    assert not (tmp_path / "a").exists()


def test_a_sweep_plot_in_an_unknown_format_leaves_no_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The plot's suffix is checked before the sweep runs: no CSV is left behind by a refused command."""
    spec = tmp_path / "s.yaml"
    spec.write_text(SWEEP, encoding="utf-8")
    args = ["sweep", str(spec), "-o", str(tmp_path / "o.csv"), "--plot", str(tmp_path / "p.gif")]
    refused(args, capsys, "unknown format '.gif'")
    assert not (tmp_path / "o.csv").exists()


def test_a_sweep_whose_runner_cannot_start_leaves_no_file(tmp_path: Path) -> None:
    """The output is opened (header written) before the runner starts; a failure there removes it."""
    from commsim.sweep import run_sweep
    from commsim.sweep.runners import SerialRunner

    class Broken(SerialRunner):
        def __enter__(self) -> Broken:
            raise CommsimError("cannot reach the Dask scheduler")

    spec = tmp_path / "s.yaml"
    spec.write_text(SWEEP, encoding="utf-8")
    with pytest.raises(CommsimError, match="cannot reach"):
        run_sweep(spec, tmp_path / "o.csv", runner=Broken())
    assert not (tmp_path / "o.csv").exists()


# -- files read by `run`, `topo show` and `sweep` -------------------------------------------------

FILE_CASES: list[tuple[str, str | bytes, str]] = [
    # (command and file kind, file content, where:what); {path} is the file
    ("run", "", "{path}: expected a mapping of scenario fields, got nothing (the file is empty)"),
    ("run", "\n  \n", "got nothing (the file is empty)"),
    ("run", "- a\n- b\n", "expected a mapping of scenario fields, got a list"),
    ("topo", "", "{path}: expected a mapping of fields at the top level, got nothing (the file is empty)"),
    ("sweep", "", "{path}: expected a mapping of sweep fields, got nothing (the file is empty)"),
    # a control character YAML forbids (a BEL pasted from a terminal): at its line and column
    ("run", GOOD.replace("name: x", "name: x\x07y"), "{path}:1:8: not valid YAML: control character U+0007"),
    # a 5,000-digit number: Python refuses to convert it (a traceback before)
    ("run", GOOD.replace("1 MB", "9" * 5000), "{path}:3:9: the number 999999999999... has 5,000 digits"),
    ("run", GOOD + "? [a, b]\n: x\n", "{path}:5:3: a list or mapping is used as a key"),
    # an override's problem at the override, not at the topology line (2:11)
    (
        "run",
        GOOD + "overrides: {pcie3_x16: {bandwidth: 0 GB/s}}\n",
        "{path}:5:36: overrides.pcie3_x16.bandwidth: bandwidth '0 GB/s' is zero",
    ),
    (
        "run",
        GOOD.replace("{algorithm: ring}", "{algorithm: tree, params: {chunks: 5000}}"),
        "{path}:4:49: algorithms.0.params.chunks: must be at most 1024, got 5000",  # col 49: after "chunks: "
    ),
    # a calibrated topology's nccl section: the valid fields, not "Extra inputs are not permitted"
    (
        "topo",
        (ROOT / "topologies" / "pcie_4gpu_switch.yaml").read_text() + "nccl: {colour: 1}\n",
        "{path}:22:16: nccl.colour: unknown field 'colour'; valid: efficiency, shm_efficiency,",
    ),
    (
        "run",
        GOOD.replace("{algorithm: ring}", "{algorithm: naive_ring, params: {chunks: true}}"),
        "{path}:4:55: algorithms.0.params.chunks: expected a whole number, got true (true/false)",
    ),
    # 150,000 values took 5 s to refuse (unknown field); the limit for a scenario is 100,000
    (
        "run",
        GOOD + "extra: [" + ",".join(["1"] * 150_000) + "]\n",
        "{path}:5:199983: holds more than the limit of 100,000 values",  # "extra: [" + 99,987 "1,"
    ),
    # a sample of what was already right
    ("run", GOOD.replace("1 MB", "1 MBB"), "{path}:3:9: sizes.0: cannot read size '1 MBB'"),
    ("run", GOOD + "ranks: [gpu0, gpu0]\n", "{path}:5:8: ranks: ranks ['gpu0', 'gpu0'] name a GPU twice"),
    ("sweep", SWEEP.replace("[ring]", "[ring, trre]"), "{path}:6:25: grid.0.product.algorithm.1: unknown"),
    ("sweep", SWEEP + "collective: broadcast\n", "{path}:8:1: key 'collective' is given twice"),
]


@pytest.mark.parametrize(("command", "content", "message"), FILE_CASES)
def test_bad_files(
    command: str, content: str | bytes, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "in[1].yaml"  # brackets in a file name are not console markup
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    args = {
        "run": ["run", str(path)],
        "topo": ["topo", "show", str(path)],
        "sweep": ["sweep", str(path), "-o", str(tmp_path / "o.csv")],
    }[command]
    refused(args, capsys, message.replace("{path}", str(path)))
    assert not (tmp_path / "o.csv").exists()


# -- logs, matrices and interchange files -----------------------------------------------------------


def _matrix(n: int) -> str:
    """An ``nvidia-smi topo -m`` matrix of ``n`` GPUs, all joined by SYS."""
    header = "\t" + "\t".join(f"GPU{i}" for i in range(n)) + "\n"
    rows = "".join(
        f"GPU{i}\t" + "\t".join("X" if i == j else "SYS" for j in range(n)) + "\n" for i in range(n)
    )
    return header + rows


def _big(path: Path) -> None:
    """A 21 MB log (sparse: written in no time): over the 20 MB limit."""
    with path.open("wb") as stream:
        stream.write(LOG.read_bytes())
        stream.truncate(21_000_000)


def _negative_size_json(path: Path) -> None:
    path.write_text(JSON_LOG.read_text().replace('{"size":8,', '{"size":-8,'), encoding="utf-8")


LOG_CASES: list[tuple[str, Callable[[Path], None], str]] = [
    # (command, how the file is made, message); {path} is the file
    (
        "validate",
        _negative_size_json,
        "{path}:8: results[0]: 'size' is -8 bytes; a message size is 0 bytes or more",
    ),
    ("validate", _big, "{path}: 21 MB is larger than the limit of 20 MB for a nccl-tests log"),
    # 600 GPUs in one host's matrix took 26 s to import
    (
        "topo import",
        lambda p: p.write_text(_matrix(600), encoding="utf-8"),
        "{path}:1: the matrix has 600 columns (GPUs and NICs), more than the limit of 128",
    ),
    # a sample of what was already right
    (
        "validate",
        lambda p: p.write_text(JSON_LOG.read_text()[:1500], encoding="utf-8"),
        "{path}:8: invalid JSON",
    ),
    ("validate", lambda p: p.write_bytes(b"\x7fELF\x00\x01"), "the file holds NUL bytes"),
]


@pytest.mark.parametrize(("command", "make", "message"), LOG_CASES)
def test_bad_logs_and_matrices(
    command: str,
    make: Callable[[Path], None],
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "input.txt"
    make(path)
    refused([*command.split(), str(path)], capsys, message.replace("{path}", str(path)))


def test_a_wrong_rank_count_is_warned_about_in_a_few_lines() -> None:
    """``--gpus 8`` on a log of 2 ranks: every row's busbw disagrees (factor 2 x 7/8 instead of 2 x 1/2).

    The log has 28 rows of two halves each (56 busbw); those of the 4 smallest rows (8 to 64 B,
    lines 49-52) are too small to tell any factor apart after print rounding: 48 disagree,
    from line 53 on. Three are named one by one, the other 45 in one line naming the likely cause.
    """
    from commsim.calibrate.parser import load_nccl_tests

    log = load_nccl_tests(LOG, n_ranks=8)
    rows = [w for w in log.warnings if "disagree" in w]
    assert len(rows) == 4
    assert rows[3].startswith("... and 45 more printed bandwidths disagree the same way (lines 54 to 76)")
    assert rows[3].endswith("check the number of ranks (8) and the collective")


def test_rocm_smi_cell_that_is_not_a_number_is_named_with_its_line(tmp_path: Path) -> None:
    from commsim.interop import FormatError
    from commsim.interop.rocm_smi import read_rocm_smi

    path = tmp_path / "showtopo.txt"
    text = (DATA / "rocm_smi" / "pcie_4gpu_showtopo.txt").read_text()
    path.write_text(text.replace("GPU1   52           0", "GPU1   abc          0", 1), encoding="utf-8")
    with pytest.raises(FormatError) as caught:
        read_rocm_smi(path)
    assert str(caught.value) == (
        f"{path}:5: block 'Weight between two GPUs': GPU1/GPU0 is 'abc', expected a whole number"
    )


def test_msccl_ngpus_of_a_hundred_million_is_refused_at_once(tmp_path: Path) -> None:
    """The id check built a list of ``ngpus`` numbers: 9 s for 10^8."""
    from commsim.interop import FormatError, read_msccl
    from commsim.interop.msccl_import import msccl_to_schedule
    from commsim.topology import get_topology

    path = tmp_path / "a.xml"
    text = (DATA / "msccl" / "allgather_ring_rcs_4gpu.xml").read_text()
    path.write_text(text.replace('ngpus="4"', 'ngpus="100000000"', 1), encoding="utf-8")
    start = time.perf_counter()
    with pytest.raises(FormatError, match=r"a\.xml:1: <gpu> ids are \[0, 1, 2, 3\], expected 0\.\.99999999"):
        msccl_to_schedule(read_msccl(path), get_topology("pcie_4gpu_switch"), 1 << 20)
    assert time.perf_counter() - start < 2


# -- valid but odd: the result, and a warning naming the line -------------------------------------


def test_a_json_log_whose_ngpus_is_not_a_number_is_read_with_a_warning(tmp_path: Path) -> None:
    """The device list gives the ranks; the unreadable header field is named, not silently dropped."""
    from commsim.calibrate.parser import load_nccl_tests

    path = tmp_path / "run.json"
    path.write_text(JSON_LOG.read_text().replace('"ngpus":2', '"ngpus":"two"'), encoding="utf-8")
    log = load_nccl_tests(path)
    assert log.n_ranks == 2
    assert "line 8: config.ngpus is 'two', not a whole number >= 1; ignored" in log.warnings


def test_an_unknown_gpu_model_for_topo_import_is_warned_about(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(
        ["topo", "import", str(DATA / "nvsmi" / "pcie_mixed.txt"), "--gpu", "Quadro ZZZ"], capsys
    )
    assert code == 0 and out.startswith("name:")
    assert "warning: --gpu 'Quadro ZZZ' is not in the GPU catalogue" in err


# -- the API misused: the same kind of error as the command line, not a TypeError -----------------


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: __import__("commsim").get_topology(None), "topology: expected a name or a YAML path"),
        (
            lambda: __import__("commsim").simulate(5, "ring", "1 MB"),
            "topology 5: expected a name, a YAML path, a builder mapping or a Topology, got int",
        ),
    ],
)
def test_api_misuse(call: Callable[[], object], message: str) -> None:
    with pytest.raises(CommsimError) as caught:
        call()
    assert message in str(caught.value)


def test_msccl_import_of_a_call_of_zero_bytes_is_refused() -> None:
    from commsim.errors import UnitError
    from commsim.interop import read_msccl
    from commsim.interop.msccl_import import msccl_to_schedule
    from commsim.topology import get_topology

    algo = read_msccl(DATA / "msccl" / "allgather_ring_rcs_4gpu.xml")
    with pytest.raises(UnitError, match="nbytes 0: a call's size is a number of bytes above 0"):
        msccl_to_schedule(algo, get_topology("pcie_4gpu_switch"), 0)
