"""Review 27, section 4 and the small findings left (/work/notes/review27/REPORT.md).

Each test states the rule it holds: a message says what was wrong, where, and
what would be valid, in the words of the interface the user is using; a field
that would change nothing is named rather than silently ignored.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_bad_inputs_more import refused, run_cli

# -- U1: nccl_version written as a number, or not a release --------------------------------------


def test_unquoted_nccl_version_says_to_quote_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """YAML and --param read 2.21 unquoted as a number: the message says to quote it, in both forms."""
    scenario = tmp_path / "v.yaml"
    scenario.write_text(
        "name: t\ntopology: dgx_a100\ncollective: all_reduce\nsizes: [1 MB]\n"
        "algorithms: [{algorithm: nccl, params: {nccl_version: 2.21}}]\n"
    )
    refused(["run", str(scenario)], capsys, f"{scenario}:5:", "nccl_version: '2.21' in YAML")
    args = ["run", "--topology", "dgx_a100", "--algorithm", "nccl", "--param", "nccl_version=2.21"]
    refused(args, capsys, "quote the version", "--param \"nccl_version='2.21'\"")


@pytest.mark.parametrize("version", ["abc", "1.9", "3.1", "2"])
def test_nccl_version_that_is_not_a_release_says_what_one_looks_like(
    version: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A version that is not an NCCL 2 release is refused with examples, not pydantic's regex."""
    args = ["run", "--topology", "dgx_a100", "--algorithm", "nccl", "--param", f"nccl_version='{version}'"]
    err = refused(args, capsys, f"{version!r} should be an NCCL 2 release like 2.21 or 2.26.2")
    assert "pattern" not in err


def test_quoted_nccl_version_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """The quoted form the messages suggest is accepted."""
    args = ["run", "--topology", "dgx_a100", "--algorithm", "nccl", "--param", "nccl_version='2.21'", "-q"]
    code, _, err = run_cli(args, capsys)
    assert code == 0, err


# -- U7: protocol names in any case, everywhere -----------------------------------------------------


def test_protocols_are_read_in_any_case(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """validate --proto took 'simple'; scenario protocols and export msccl --proto now do too (as Simple)."""
    scenario = tmp_path / "p.yaml"
    scenario.write_text(
        "name: t\ntopology: dgx_a100\ncollective: all_reduce\nsizes: [1 MB]\n"
        "algorithms: [{algorithm: nccl, params: {protocols: [simple, ll128, Ll]}}]\n"
    )
    code, _, err = run_cli(["run", str(scenario), "-q"], capsys)
    assert code == 0, err
    out = tmp_path / "m.xml"
    args = ["export", "msccl", "--topology", "dgx1_v100", "--algorithm", "ring", "--size", "1M"]
    code, _, err = run_cli([*args, "-o", str(out), "--proto", "simple"], capsys)
    assert code == 0, err
    assert 'proto="Simple"' in out.read_text()


def test_unknown_msccl_protocol_is_near(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown --proto names the valid ones and the nearest."""
    args = ["export", "msccl", "--topology", "dgx1_v100", "--algorithm", "ring", "--size", "1M"]
    refused(
        [*args, "-o", str(tmp_path / "m.xml"), "--proto", "simpel"],
        capsys,
        "unknown MSCCL protocol 'simpel'; valid: Simple, LL128, LL (any case); did you mean 'Simple'?",
    )


# -- U2: pooled machines are a Python option --------------------------------------------------------

DATA = Path(__file__).parent / "data" / "nccl-tests"


def test_calibrate_of_two_machines_names_no_cli_option_it_lacks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The CLI has no across_machines option: the message says one calibrate per machine, and that
    pooling is the Python API's commsim.fit(..., across_machines=True)."""
    logs = [
        DATA / "A100-SXM4-80GB-HGX-NVSwitch_all_reduce_8gpu_1.txt",
        DATA / "H100-SXM5-4GPU-NVLink_all_reduce_4gpu_1.txt",
    ]
    err = refused(
        ["calibrate", *map(str, logs), "-o", str(tmp_path / "c.yaml")],
        capsys,
        "one commsim calibrate per machine",
        "only from Python, commsim.fit(..., across_machines=True)",
    )
    assert "or pass across_machines" not in err


# -- U3: a training scenario given to plot timeline --------------------------------------------------


def test_plot_timeline_of_a_training_scenario_names_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A CLI user is told the CLI command that gives a training step's timeline (run --trace)."""
    scenario = Path(__file__).parent.parent / "scenarios" / "resnet50_dgx1_overlap.yaml"
    refused(
        ["plot", "timeline", str(scenario), "-o", str(tmp_path / "x.png")],
        capsys,
        f"this is a training scenario (top-level 'workload'): run it with commsim run {scenario}",
        "--trace STEP.json",
    )
    assert not (tmp_path / "x.png").exists()


# -- U6: NaN is not a number out of range -----------------------------------------------------------


def test_nan_is_called_not_a_number(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """NaN fails every bound, so 'must be at most 1' or 'at least 0' misleads: say it must be a number."""
    training = tmp_path / "t.yaml"
    training.write_text(
        "name: t\nworkload:\n  model: resnet50\n  batch: 64\n  dtype: fp32\n  device_flops: 125 TFLOPS\n"
        "  efficiency: .nan\ntopology: dgx1_v100\nsync:\n  - {algorithm: multi_ring}\n"
        "bucket_sizes: [25 MB]\noverlap: [true]\n"
    )
    err = refused(
        ["run", str(training)], capsys, f"{training}:7:15: workload.efficiency: must be a number, got nan"
    )
    assert "at most" not in err
    sweep = tmp_path / "s.yaml"
    sweep.write_text(
        "name: x\ncollective: all_reduce\ngrid:\n  - product:\n      topology: [dgx1_v100]\n"
        "      algorithm: [ring]\n      size: [.nan]\n"
    )
    err = refused(
        ["sweep", str(sweep), "-o", str(tmp_path / "o.csv")],
        capsys,
        f"{sweep}:7:14:",
        "must be a number, got nan",
    )
    assert "plain data" not in err


def test_nan_threshold_is_called_not_a_number(capsys: pytest.CaptureFixture[str]) -> None:
    """recommend --threshold nan: not 'must be at least 0' (a negative one still is)."""
    code, _, err = run_cli(["recommend", "--topology", "pcie_4gpu_switch", "--threshold", "nan"], capsys)
    assert code == 2 and "'--threshold': must be a number, got nan" in err
    code, _, err = run_cli(["recommend", "--topology", "pcie_4gpu_switch", "--threshold", "-5"], capsys)
    assert code == 2 and "'--threshold': must be at least 0" in err


def test_workload_efficiency_nan_from_python() -> None:
    """The Python Throughput says the same."""
    from commsim.errors import CommsimError
    from commsim.training.workload import Throughput

    with pytest.raises(CommsimError, match="efficiency must be a number in \\(0, 1\\], got nan"):
        Throughput(1e12, efficiency=float("nan"))


# -- U5: Python API messages ------------------------------------------------------------------------


def test_case_takes_a_machine_name_or_says_a_topology_is_needed() -> None:
    """Case.of(topology=...) takes what get_topology takes; anything else is named as the wrong type."""
    from commsim.scenario.case import Case, CaseError

    case = Case.of(topology="dgx1_v100", collective="all_reduce", algorithm="ring", nbytes="1 MB")
    assert case.topology.name == "dgx1_v100" and len(case.ranks) == 8
    with pytest.raises(CaseError, match=r"topology: expected a Topology \(e.g. commsim.get_topology"):
        Case.of(topology={"a": 1}, collective="all_reduce", algorithm="ring", nbytes="1 MB")
    with pytest.raises(CaseError, match="did you mean 'dgx1_v100'"):
        Case.of(topology="dgx1_v10", collective="all_reduce", algorithm="ring", nbytes="1 MB")


def test_numpy_integer_sizes_are_sizes() -> None:
    """numpy.int64 is a whole number as numpy.float64 is a number."""
    np = pytest.importorskip("numpy")
    import commsim

    topo = commsim.get_topology("dgx1_v100")
    by_int = commsim.simulate(topo, "ring", "all_reduce", np.int64(1000)).time_s
    assert by_int == commsim.simulate(topo, "ring", "all_reduce", 1000).time_s


@pytest.mark.parametrize(
    ("name", "fields", "message"),
    [
        ("ring", {"gpus": "4"}, "builder 'ring': gpus must be a whole number, e.g. 4, got '4' (text)"),
        ("cluster", {"nodes": "four"}, "builder 'cluster': nodes must be a whole number, e.g. 4, got 'four'"),
        ("ring", {"gpus": 4, "color": "red"}, "builder 'ring' has no field 'color'; valid: gpus, kind"),
        ("ring", {"gpus": 4, "gpu": 4}, "did you mean 'gpus'?"),
    ],
)
def test_builder_arguments_of_the_wrong_type_or_name(
    name: str, fields: dict[str, object], message: str
) -> None:
    """A count of the wrong type is called that (not 'needs gpus >= 2'); an unknown field lists the
    valid ones."""
    from commsim.errors import TopologyError
    from commsim.topology import get_topology

    with pytest.raises(TopologyError) as info:
        get_topology(name, **fields)
    assert message in str(info.value)
    assert "unexpected keyword" not in str(info.value)


# -- U4: a file of the wrong kind -------------------------------------------------------------------

ROOT = Path(__file__).parent.parent
MATRIX = "\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV4\t0-7\nGPU1\tNV4\t X \t0-7\n"


@pytest.mark.parametrize(
    ("args", "messages"),
    [
        (["run", "sweeps/dgx1_vs_a100.yaml"], ["this is a sweep file (top-level 'grid')", "commsim sweep"]),
        (
            ["run", "topologies/dgx1_v100.yaml"],
            [
                "this is a topology file (top-level 'devices')",
                "commsim run --topology topologies/dgx1_v100.yaml",
            ],
        ),
        (
            ["sweep", "scenarios/pcie_4gpu_sync_strategies.yaml", "-o", "{tmp}/o.csv"],
            ["this is a scenario file (top-level 'sizes'), not a sweep file", "commsim run scenarios/"],
        ),
        (
            ["run", "--topology", "scenarios/pcie_4gpu_sync_strategies.yaml", "--algorithm", "ring"],
            ["this is a scenario file (top-level 'sizes'), not a topology file"],
        ),
        (["run", "--topology", "{tmp}/m.txt", "--algorithm", "ring"], ["this is nvidia-smi topo -m output"]),
        (
            ["topo", "show", "{tmp}/m.txt"],
            ["this is nvidia-smi topo -m output", "commsim topo import {tmp}/m.txt"],
        ),
    ],
)
def test_a_file_of_another_kind_names_its_command(
    args: list[str],
    messages: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A sweep, scenario, topology or nvidia-smi matrix given to the wrong command is named as what it
    is, with the command that reads it, not as a list of missing fields or a YAML error."""
    monkeypatch.chdir(ROOT)
    (tmp_path / "m.txt").write_text(MATRIX)
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    err = refused(args, capsys, *(m.replace("{tmp}", str(tmp_path)) for m in messages))
    assert "missing required field" not in err and "not valid YAML" not in err


# -- S6: fields that would change nothing -----------------------------------------------------------

BASE = "name: t\ntopology: pcie_4gpu_switch\ncollective: all_reduce\nsizes: [1 MB]\n"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            "overrides: {nvlink: {bandwidth: 1 GB/s}}\n",
            ":5:21: overrides.nvlink: pcie_4gpu_switch has no nvlink link, so the override would change "
            "nothing; its link kinds are pcie3_x16",
        ),
    ],
)
def test_a_field_that_changes_nothing_is_refused_at_its_line(
    extra: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An override of a link kind the machine lacks was silently ignored; like builder options on a
    finished machine, it is refused at its line."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(BASE + extra + "algorithms: [{algorithm: ring}]\n")
    refused(["run", str(scenario)], capsys, f"{scenario}{message}")


def test_root_on_all_reduce_is_taken(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Review 29: 'root:' on all_reduce was refused as changing nothing, but tree and naive_ring order
    their ranks from the root for all-reduce too (dgx1_v100, 64 MB, double binary tree: 4.63 ms from
    root 0, 6.36 ms from root 3): a scenario comparing roots runs, and the two roots differ."""
    times = []
    for root in (0, 3):
        scenario = tmp_path / f"r{root}.yaml"
        scenario.write_text(
            f"name: t\ntopology: dgx1_v100\ncollective: all_reduce\nsizes: [64 MB]\nroot: {root}\n"
            "algorithms: [{algorithm: tree}]\n"
        )
        from commsim.api import run_file

        times.append(run_file(scenario).results[0].time_s)
    assert times[0] != times[1]


def test_fields_that_apply_are_still_taken(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A family (nvlink) or kind the machine has, and root on a rooted collective, run as before."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "name: t\ntopology: dgx1_v100\ncollective: broadcast\nsizes: [1 MB]\nroot: 2\n"
        "overrides: {nvlink: {bandwidth: 10 GB/s}, pcie3_x16: {latency: 1 us}}\n"
        "algorithms: [{algorithm: tree}]\n"
    )
    code, _, err = run_cli(["run", str(scenario), "-q"], capsys)
    assert code == 0, err


# -- H2: an output file replaced ---------------------------------------------------------------------


def test_replacing_an_output_file_is_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """-o overwrites, as most tools do; the 'wrote' line says so when a file was there, not otherwise."""
    out = tmp_path / "m.xml"
    args = [
        "export",
        "msccl",
        "--topology",
        "dgx1_v100",
        "--algorithm",
        "ring",
        "--size",
        "1M",
        "-o",
        str(out),
    ]
    code, _, err = run_cli(args, capsys)
    assert code == 0 and f"wrote {out}:" in err and "replaced" not in err
    code, _, err = run_cli(args, capsys)
    assert code == 0 and f"wrote {out} (replaced the file that was there):" in err
    topo = tmp_path / "t.yaml"
    topo.write_text("old\n")
    matrix = tmp_path / "m.txt"
    matrix.write_text(MATRIX)
    code, _, err = run_cli(["topo", "import", str(matrix), "-o", str(topo)], capsys)
    assert code == 0 and f"wrote {topo} (replaced the file that was there)" in err


# -- S7: validate --calibrated ------------------------------------------------------------------------


def test_calibrated_refuses_a_topology_without_calibration(capsys: pytest.CaptureFixture[str]) -> None:
    """A file without nccl: parameters is no calibration: refused, pointing to --topology or calibrate."""
    log = DATA / "A100-SXM4-80GB-HGX-NVSwitch_all_reduce_8gpu_1.txt"
    topology = ROOT / "topologies" / "dgx1_v100.yaml"
    refused(
        ["validate", str(log), "--calibrated", str(topology)],
        capsys,
        f"--calibrated {topology}: has no nccl: parameters",
        f"give it as --topology {topology}",
    )


def test_calibrated_evidence_names_the_option_and_machine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The board evidence names --calibrated (it said 'option --topology') and the calibrated machine."""
    log = DATA / "A100-SXM4-80GB-HGX-NVSwitch_all_reduce_8gpu_1.txt"
    calibrated = tmp_path / "c.yaml"
    calibrated.write_text(
        (ROOT / "topologies" / "dgx_a100.yaml").read_text() + "nccl:\n  launch_s: 5.0e-06\n"
    )
    code, out, err = run_cli(["validate", str(log), "--calibrated", str(calibrated)], capsys)
    assert code == 0, err
    text = " ".join(out.split())
    assert "board = dgx_a100 (option --calibrated;" in text
    assert "option --topology" not in text and "given with --topology" not in text


# -- U9: a -J JSON nccl_version that is not NCCL's code -------------------------------------------------


@pytest.mark.parametrize(("bad", "shown"), [('"abc"', "'abc'"), ("-1", "-1")])
def test_json_nccl_version_that_is_not_a_code_is_warned_of(
    bad: str, shown: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Like a bad config.ngpus, a bad nccl_version is warned of (and ignored), not dropped silently."""
    text = (DATA / "synthetic_json_RTX2080Ti_all_reduce_2gpu.json").read_text()
    assert '"nccl_version":22005' in text
    log = tmp_path / "r.json"
    log.write_text(text.replace('"nccl_version":22005', f'"nccl_version":{bad}'))
    code, out, err = run_cli(["validate", str(log)], capsys)
    assert code == 0, err
    assert f"nccl_version is {shown}, not NCCL's version code" in " ".join((out + err).split())
    assert "not NCCL's version code (a whole number such as 22602 for 2.26.2); ignored" in " ".join(
        (out + err).split()
    )


# -- U8: messages that did not say where or why ---------------------------------------------------------


def test_one_gpu_machine_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """'needs at least 2 ranks, got 1' names the machine that has one GPU."""
    topology = tmp_path / "one.yaml"
    topology.write_text("name: one\ndevices:\n  - {name: gpu0, kind: gpu}\nlinks: []\n")
    refused(
        ["run", "--topology", str(topology), "--algorithm", "ring"],
        capsys,
        "algorithm 'ring' needs at least 2 ranks, got 1 (machine 'one' has 1 GPU)",
    )


def test_measure_output_that_is_a_file_is_called_that(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """measure -o names a folder: a file there is said to be one, not 'cannot use ...: File exists'."""
    (tmp_path / "exists.yaml").write_text("x\n")
    err = refused(
        ["measure", "--nccl-tests", str(tmp_path), "--gpus", "1", "-o", str(tmp_path / "exists.yaml")],
        capsys,
        f"--output {tmp_path / 'exists.yaml'}: is a file; -o names a folder for the logs",
    )
    assert "File exists" not in err


def test_a_training_scenarios_override_counts_if_any_of_its_machines_has_the_link(tmp_path: Path) -> None:
    """A training scenario's node counts share one 'overrides'; its 1-box machine has no network
    link, so refusing an 'infiniband' override per machine refused a scenario whose 2-box machine
    uses it. An override is refused only when no machine of the list has the link."""
    text = (
        "name: t\n"
        "workload: {model: resnet50, batch: 64, dtype: fp32, device_flops: 312 TFLOPS, efficiency: 0.2}\n"
        "topology: {builder: cluster, box: dgx_a100, nic: ib_hdr}\n"
        "nodes: [1, 2]\n"
        "overrides: {infiniband: {bandwidth: 10 GB/s}}\n"
        "sync:\n  - {algorithm: hierarchical}\n"
        "bucket_sizes: [25 MB]\n"
    )
    from commsim.errors import ScenarioError
    from commsim.training.config import load_training_scenario as load_training

    path = tmp_path / "t.yaml"
    path.write_text(text)
    load_training(path)  # accepted: the 2-box machine has InfiniBand links
    path.write_text(text.replace("infiniband:", "nvlink4:"))
    with pytest.raises(ScenarioError, match=r"t.yaml:5:\d+: overrides.nvlink4: none of cluster_1xdgx_a100, "):
        load_training(path)


def test_an_unquoted_2_10_is_not_advised_as_2_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Review 29: 'nccl_version: 2.10' unquoted is the number 2.1, and the advice said to write
    '2.1', the wrong release. The advice shows how to quote a release and says the number read may
    not be the one meant."""
    scenario = tmp_path / "v.yaml"
    scenario.write_text(
        "name: t\ntopology: dgx_a100\ncollective: all_reduce\nsizes: [1 MB]\n"
        "algorithms: [{algorithm: nccl, params: {nccl_version: 2.10}}]\n"
    )
    err = refused(["run", str(scenario)], capsys, "got the number 2.1:", "2.1 may not be the release meant")
    assert "'2.1'" not in err


def test_a_scenario_with_one_size_is_named_as_a_scenario(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review 29: a scenario written with 'size:' (one size) given to sweep was not recognised as a
    scenario, and the answer was a field error ("did you mean 'algorithm'?"). 'size' with
    'algorithms' is a scenario as 'sizes' with 'algorithms' is."""
    scenario = tmp_path / "one.yaml"
    scenario.write_text(
        "name: t\ntopology: pcie_4gpu_switch\ncollective: all_reduce\nsize: 1 MB\n"
        "algorithms: [{algorithm: ring}]\n"
    )
    refused(
        ["sweep", str(scenario), "-o", str(tmp_path / "o.csv")],
        capsys,
        "this is a scenario file (top-level 'size'), not a sweep file",
        f"commsim run {scenario}",
    )
