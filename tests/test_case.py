"""One Case for flags, files, sweep points and the API: the same value is refused the same way.

Each bad value is given once as ``commsim run`` flags and once in a
scenario file; both are refused (exit 2) with the same sentence, the flag
naming itself and the file naming its line. The API names its argument.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import commsim
from commsim.errors import ScenarioError
from commsim.scenario.case import Case, CaseError
from commsim.scenario.machine import build_machine
from commsim.sweep import SerialRunner, parse_sweep, read_rows, run_sweep
from tests.test_bad_inputs import run_cli

# (flags after --topology pcie_4gpu_switch, the same case as scenario lines, the flag named,
#  the file's line:col and field, the sentence both give)
SAME_REFUSAL = [
    (
        ["--algorithm", "ring", "--param", "chnks=2"],
        "algorithms: [{algorithm: ring, params: {chnks: 2}}]\nsizes: [1 MB]\n",
        "--param chnks (algorithm 'ring')",
        "2:48: algorithms.0.params.chnks",
        "unknown field 'chnks'; valid: order",
    ),
    (
        ["--algorithm", "naive_ring", "--param", "chunks=0"],
        "algorithms: [{algorithm: naive_ring, params: {chunks: 0}}]\nsizes: [1 MB]\n",
        "--param chunks (algorithm 'naive_ring')",
        "2:55: algorithms.0.params.chunks",
        "must be at least 1, got 0",
    ),
    (
        ["--algorithm", "ring", "--collective", "all_to_all"],
        "algorithms: [{algorithm: ring}]\nsizes: [1 MB]\ncollective: all_to_all\n",
        "--algorithm",
        "2:26: algorithms.0.algorithm",
        "'ring' does not implement all_to_all; it implements: all_gather, all_reduce, reduce_scatter",
    ),
    (
        ["--algorithm", "rign"],
        "algorithms: [{algorithm: rign}]\nsizes: [1 MB]\n",
        "--algorithm",
        "2:26: algorithms.0.algorithm",
        "unknown algorithm 'rign'; valid: direct",
    ),
    (
        ["--algorithm", "ring", "--collective", "al_reduce"],
        "algorithms: [{algorithm: ring}]\nsizes: [1 MB]\ncollective: al_reduce\n",
        "--collective",
        "4:13: collective",
        "unknown collective 'al_reduce'",
    ),
    (
        ["--algorithm", "ring", "--size", "1.5"],
        "algorithms: [{algorithm: ring}]\nsizes: ['1.5']\n",
        "--size",
        "3:9: sizes.0",
        "size '1.5' is 1.5 bytes, not a whole number of bytes",
    ),
    (
        ["--algorithm", "ring", "--size", "0 B"],
        "algorithms: [{algorithm: ring}]\nsizes: [1 MB, 0 B]\n",
        "--size",
        "3:15: sizes.1",
        "size '0 B' must be at least 1 byte",
    ),
]


@pytest.mark.parametrize(("flags", "lines", "flag", "where", "sentence"), SAME_REFUSAL)
def test_a_case_from_flags_refuses_what_a_file_refuses(
    flags: list[str],
    lines: str,
    flag: str,
    where: str,
    sentence: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run_cli(["run", "--topology", "pcie_4gpu_switch", *flags], capsys)
    assert code == 2
    assert f"{flag}: {sentence}" in err, err
    path = tmp_path / "case.yaml"
    path.write_text("name: x\n" + lines + "topology: pcie_4gpu_switch\n", encoding="utf-8")
    code, _, err = run_cli(["run", str(path)], capsys)
    assert code == 2
    assert f"{path}:{where}: {sentence}" in err, err


def test_the_api_names_its_arguments() -> None:
    """simulate() refuses through the same Case, naming ``size``, ``params.chunks``, ``root``."""
    with pytest.raises(CaseError) as info:
        commsim.simulate("pcie_4gpu_switch", "naive_ring", size=0, params={"chunks": 0})
    assert [loc for loc, _ in info.value.problems] == [("size",), ("params", "chunks")]
    assert str(info.value).startswith("size: size 0 must be at least 1 byte")
    assert "\nparams.chunks: must be at least 1, got 0" in str(info.value)
    with pytest.raises(CaseError, match=r"^root: 4 is not a rank of the 4 taking part; give 0 to 3$"):
        commsim.simulate("pcie_4gpu_switch", "tree", "broadcast", "1 MB", root=4)


def test_a_case_holds_whole_bytes_and_the_ranks_taking_part() -> None:
    """'1M' is nccl-tests' 2^20 = 1,048,576 bytes; ranks=3 are the machine's first three GPUs."""
    machine = build_machine("pcie_4gpu_switch")
    case = Case.of(topology=machine, ranks=3, collective="allreduce", algorithm="ring", nbytes="1M")
    assert (case.nbytes, case.ranks, case.collective.value) == (
        1_048_576,
        ("gpu0", "gpu1", "gpu2"),
        "all_reduce",
    )
    assert case.with_size("2 KiB").nbytes == 2048 and case.with_size("2 KiB").ranks == case.ranks


def test_topology_plus_overrides_is_one_machine_from_every_surface(tmp_path: Path) -> None:
    """NVLink at 10 GB/s on fully_connected_4: the API, a scenario file and a sweep point agree.

    Halving the bandwidth of the only links the ring uses doubles its
    bandwidth term, so 20 GB/s is faster than 10 GB/s (the latency term is
    the same); the three surfaces give the same time to the last bit.
    """
    slow = {"nvlink": {"bandwidth": "10 GB/s"}}
    api = commsim.simulate("fully_connected_4", "ring", size="16 MB", overrides=slow).time_s
    fast = commsim.simulate(
        "fully_connected_4", "ring", size="16 MB", overrides={"nvlink": {"bandwidth": "20 GB/s"}}
    )
    assert fast.time_s < api
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\ntopology: fully_connected_4\noverrides: {nvlink: {bandwidth: 10 GB/s}}\n"
        "sizes: [16 MB]\nalgorithms: [{algorithm: ring}]\n",
        encoding="utf-8",
    )
    (from_file,) = commsim.run_file(path).results
    sweep = parse_sweep(
        "topology: fully_connected_4\nalgorithm: ring\nsize: 16 MB\n"
        "grid: {overrides.nvlink.bandwidth: [10 GB/s]}\n",
        "s.yaml",
    )
    run_sweep(sweep, tmp_path / "rows.csv", runner=SerialRunner())
    (row,) = read_rows(tmp_path / "rows.csv")
    assert from_file.time_s == api == row["time_s"]


# (sweep text, where: file:line:col: field, the sentence)
BAD_POINTS = [
    (
        "topology: pcie_4gpu_switch\nalgorithm: naive_ring\nsize: 1 MB\ngrid:\n  product:\n"
        "    params.chunks: [1, 0]\n",
        "bad.yaml:6:24: grid.product.params.chunks.1",
        "must be at least 1, got 0",
    ),
    (
        "topology: pcie_4gpu_switch\nalgorithm: ring\nsize: 1 MB\nparams: {chnks: 2}\n",
        "bad.yaml:4:17: params.chnks",
        "unknown field 'chnks'; valid: order",
    ),
    (
        "topology: pcie_4gpu_switch\nalgorithm: ring\nsize: 1 MB\n"
        "grid: {collective: [all_reduce, all_to_all]}\n",
        "bad.yaml:2:12: algorithm",
        "'ring' does not implement all_to_all",
    ),
    (
        "topology: pcie_4gpu_switch\nalgorithm: ring\nsize: 1 MB\nranks: 1\n",
        "bad.yaml:4:8: ranks",
        "must be at least 2, got 1",
    ),
    (
        "topology: pcie_4gpu_switch\nalgorithm: ring\ngrid: {size: [1 MB, true]}\n",
        "bad.yaml:3:21: grid.size.1",
        "size True is a boolean",
    ),
    (
        "topology: fully_connected_4\nalgorithm: ring\nsize: 1 MB\n"
        "grid: {overrides.nvlink.bandwidth: [16, 1 GB/s]}\n",
        "bad.yaml:4:37: grid.overrides.nvlink.bandwidth.0",
        "bandwidth 16 has no unit; write it with one, e.g. '16 GB/s'",
    ),
    (
        "topology: {builder: ring, gpus: 4}\nalgorithm: tree\nsize: 1 MB\n"
        "grid: {collective: [broadcast], root: [0, -1]}\n",
        "bad.yaml:4:43: grid.root.1",
        "must be at least 0, got -1",
    ),
]


@pytest.mark.parametrize(("text", "where", "sentence"), BAD_POINTS)
def test_bad_sweep_points_are_answered_at_their_line(text: str, where: str, sentence: str) -> None:
    """A grid point is checked as the same case a file or flags make, before any point runs."""
    with pytest.raises(ScenarioError) as info:
        parse_sweep(text, "bad.yaml")
    assert f"{where}: {sentence}" in str(info.value)


@pytest.mark.parametrize(
    ("text", "where", "sentence"),
    [
        (
            "topology: pcie_4gpu_switch\nalgorithm: ring\nsize: 1 MB\ngrid: {ranks: [4, 5]}\n",
            "r.yaml:4:19: grid.ranks.1",
            "ranks=5 but topology 'pcie_4gpu_switch' has 4 GPUs (need 2..4)",
        ),
        (
            "topology: {builder: ring, gpus: 4}\nalgorithm: tree\nsize: 1 MB\ncollective: broadcast\n"
            "grid: {root: [0, 9]}\n",
            "r.yaml:5:18: grid.root.1",
            "9 is not a rank of the 4 taking part; give 0 to 3",
        ),
        (
            "topology: {builder: ring}\nalgorithm: ring\nsize: 1 MB\ngrid: {topology.gpus: [4, 0]}\n",
            "r.yaml:4:27: grid.topology.gpus.1",
            "builder 'ring' needs gpus >= 2, got 0",
        ),
    ],
)
def test_a_sweep_point_the_machine_refuses_is_refused_at_its_line(
    text: str, where: str, sentence: str
) -> None:
    """Ranks and root are checked against the machine each point names, and the machine is built,
    before any point runs (once per distinct topology): ranks 5 on a 4-GPU box, root 9 of 4 ranks,
    a ring of 0 GPUs are input errors at the grid value, not rows that fail."""
    with pytest.raises(ScenarioError) as info:
        parse_sweep(text, "r.yaml")
    assert f"{where}: {sentence}" in str(info.value)


@pytest.mark.parametrize("name", ["pcie_4gpu_sync_strategies.yaml", "resnet50_dgx1_overlap.yaml"])
def test_a_scenario_file_is_read_once(
    name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``commsim run FILE`` parses the file's YAML once, collective or training scenario alike."""
    import commsim.yamlio as yamlio

    path = str(Path(__file__).resolve().parent.parent / "scenarios" / name)
    real, sources = yamlio.read_yaml, []

    def counted(text: str, source: str, *args: object, **kwargs: object) -> object:
        sources.append(source)
        return real(text, source, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(yamlio, "read_yaml", counted)
    code, _, err = run_cli(["run", path, "--format", "json"], capsys)
    assert code == 0, err
    assert sources.count(path) == 1
