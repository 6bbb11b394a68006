"""Bad inputs found by a seeded fuzz of every input path but nccl-tests logs (/work/notes/fuzz-inputs).

Each test failed before its fix: a traceback, a silent wrong answer or a
half-written file. Command-line cases run ``commsim`` in-process through its
``main`` and check exit code 2, no traceback, and the words that say what was
wrong, where, and what would be valid.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from commsim.sweep.checks import range_values
from tests.test_bad_inputs import run_cli

SWEEP = "name: x\ntopology: pcie_4gpu_switch\nalgorithm: ring\ngrid:\n  product:\n    size: {range}\n"


# -- sweep ranges: non-finite bounds, factors and steps ---------------------------------------------


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        # 1 * 2**1024 raised OverflowError (a traceback) on the way to an infinite bound
        ("{from: 1, to: .inf, factor: 2}", "w.yaml:6:11: grid.product.size: a range bound is a finite"),
        # factor nan passed 'factor <= 1' and silently gave the one value 'from'
        ("{from: 1, to: 100, factor: .nan}", "needs a finite factor > 1 and from > 0; got factor nan"),
        ("{from: 1, to: 100, factor: .inf}", "needs a finite factor > 1 and from > 0; got factor inf"),
        ("{from: 1, to: 100, step: .nan}", "a range needs a finite step > 0; got nan"),
    ],
)
def test_sweep_ranges_refuse_non_finite_numbers(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    spec: str,
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("w.yaml").write_text(SWEEP.format(range=spec))
    code, _, err = run_cli(["sweep", "w.yaml", "-o", "o.csv", "-q", "--serial"], capsys)
    assert code == 2 and "Traceback" not in err and message in err
    assert not Path("o.csv").exists()


def test_a_geometric_range_past_the_largest_float_stops_there() -> None:
    """A finite bound near the largest float: 2**1024 overflowed instead of ending the series."""
    values = range_values({"from": 1, "to": 1.7e308, "factor": 2})
    assert len(values) == 1024 and values[-1] == 2**1023 and all(math.isfinite(v) for v in values)


# -- topology names -----------------------------------------------------------------------------------

NVSMI = Path(__file__).parent / "data" / "nvsmi" / "dgx1_v100.txt"


def test_an_empty_topology_name_is_refused_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``topo import --name ''`` built the machine, then saving it raised pydantic's ValidationError."""
    out = tmp_path / "m.yaml"
    code, _, err = run_cli(["topo", "import", str(NVSMI), "--name", "", "-o", str(out)], capsys)
    assert code == 2 and "Traceback" not in err and "ValidationError" not in err
    assert "a topology's name must be a non-empty string, got ''" in err
    assert not out.exists()


def test_a_topology_without_a_name_is_a_topology_error() -> None:
    from commsim.errors import TopologyError
    from commsim.topology import get_topology
    from commsim.topology.model import Topology

    machine = get_topology("pcie_4gpu_switch")
    with pytest.raises(TopologyError, match="name must be a non-empty string, got ''"):
        Topology("", machine.devices, machine.physical_links)


# -- YAML types no field holds ----------------------------------------------------------------------

SCENARIO = "name: x\ntopology: pcie_4gpu_switch\nsizes: {sizes}\nalgorithms: [{{algorithm: ring{label}}}]\n"


@pytest.mark.parametrize(
    ("sizes", "label", "message"),
    [
        # a Python set: pydantic took it as the list of sizes, in an order that changed run to run
        ("!!set {1 MB, 4 MB, 2 MB, 8 MB}", "", "s.yaml:3:8: the tag !!set is not allowed: only plain values"),
        ("!!omap [a: 1 MB]", "", "s.yaml:3:8: the tag !!omap is not allowed"),
        # bytes were taken as the label b'hello' decoded
        ("[1 MB]", ", label: !!binary aGVsbG8=", "s.yaml:4:39: the tag !!binary is not allowed"),
    ],
)
def test_yaml_sets_ordered_maps_and_binary_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sizes: str, label: str, message: str
) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(sizes=sizes, label=label))
    code, out, err = run_cli(["run", "-q", str(path)], capsys)
    assert code == 2 and "Traceback" not in err and f"{path}:{message.split(':', 1)[1]}" in err and not out


def test_a_date_is_read_as_the_text_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``description: 2024-05-01`` was a datetime.date, refused as 'expected text, got datetime.date(...)'."""
    path = tmp_path / "s.yaml"
    text = SCENARIO.format(sizes="[1 MB]", label=", label: 2024-05-01")
    path.write_text(text.replace("name: x\n", "name: x\ndescription: 2024-05-01 10:00:00\n"))
    code, out, err = run_cli(["run", "-q", "--csv", str(path)], capsys)
    assert code == 0, err
    assert out.splitlines()[1].startswith("2024-05-01,ring,")


# -- rocm-smi output given where nvidia-smi output or topology YAML is read ----------------------------

ROCM = Path(__file__).parent / "data" / "rocm_smi" / "pcie_4gpu_showtopo.txt"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        # was: 'cell GPU0/GPU0 is '0'; expected X, NV#, PIX, ...' (the weight matrix read as NV# cells)
        (["topo", "import", str(ROCM)], "not nvidia-smi topo -m output"),
        # was: 'this is nvidia-smi topo -m output ... convert it with commsim topo import', which then failed
        (["run", "--topology", str(ROCM), "--algorithm", "ring"], "not a topology YAML file"),
    ],
)
def test_rocm_smi_output_is_named_and_the_way_to_import_it_given(
    capsys: pytest.CaptureFixture[str], args: list[str], expected: str
) -> None:
    code, _, err = run_cli(args, capsys)
    assert code == 2 and "Traceback" not in err
    assert f"{ROCM}: this is rocm-smi --showtopo output, {expected}" in err
    assert "read_rocm_smi and rocm_smi_to_topology" in err and "nvidia-smi topo -m output, not" not in err


# -- MSCCL sizes beyond 64 bits --------------------------------------------------------------------


def test_msccl_max_bytes_beyond_64_bits_is_refused_and_nothing_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--max-bytes 10**23`` was written as is, beyond the int64 MSCCL reads it into."""
    out = tmp_path / "o.xml"
    args = ["export", "msccl", "--topology", "pcie_4gpu_switch", "--algorithm", "ring", "-o", str(out)]
    code, _, err = run_cli([*args, "--max-bytes", str(10**23)], capsys)
    assert code == 2 and "Traceback" not in err and not out.exists()
    assert (
        "maxBytes=100000000000000000000000 is above 9,223,372,036,854,775,807, the largest size MSCCL" in err
    )
    code, _, err = run_cli([*args, "--max-bytes", str(2**63 - 1)], capsys)
    assert code == 0 and 'maxBytes="9223372036854775807"' in out.read_text()


# -- Python API: topology mappings, plot and trace arguments ------------------------------------------


@pytest.mark.parametrize(
    ("topology", "message"),
    [
        ({}, "a topology mapping has exactly one of builder, file (got none)"),  # was KeyError: 'file'
        ({"nvlink": {"bandwidth": "18 GB/s"}}, "exactly one of builder, file (got none)"),
        ({"file": 5}, "expected a file path, got 5"),  # was TypeError from Path / int
        ({"builder": "ring", "gpus": 4, "x": 1}, "builder 'ring' has no field 'x'; valid: bandwidth, gpus"),
    ],
)
def test_simulate_checks_a_topology_mapping_as_a_scenario_file_does(topology: dict, message: str) -> None:
    from commsim.api import simulate
    from commsim.errors import TopologyError

    with pytest.raises(TopologyError) as info:
        simulate(topology, "ring", size="1 MB")
    assert str(info.value).startswith(f"topology {topology!r}: ") and message in str(info.value)


def test_plot_and_trace_counts_must_be_whole_numbers_from_one(tmp_path: Path) -> None:
    """0 and -1 silently cut the links or sends shown; 2.5 failed as a slice index; 2**40 bins
    tried to allocate 8 TiB; a dict as the path was a TypeError from pathlib."""
    from commsim.api import simulate
    from commsim.errors import ArgumentError, CommsimError
    from commsim.report.figures import PlotError
    from commsim.report.plots import plot_timeline, plot_utilisation_heatmap
    from commsim.report.trace import chrome_trace, write_trace

    result = simulate("pcie_4gpu_switch", "ring", size="1 MB")
    counts = "must be a whole number from 1 to 10,000, got "
    for bad in (0, -1, 2.5, 2**40, True):
        with pytest.raises(PlotError, match=re.escape(f"bins {counts}{bad!r}")):
            plot_utilisation_heatmap(result, bins=bad)
        with pytest.raises(PlotError, match=re.escape(f"max_links {counts}{bad!r}")):
            plot_timeline(result, max_links=bad)
    for bad in (0, -1, 2.5, True):
        with pytest.raises(CommsimError, match="max_transfers must be None or a whole number of at least 1"):
            write_trace([result], tmp_path / "t.json", max_transfers=bad)
        with pytest.raises(CommsimError, match="max_transfers must be None"):
            chrome_trace([result], max_transfers=bad)
    with pytest.raises(ArgumentError, match=re.escape("path: expected a file path ending .png")):
        plot_timeline(result, {})  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match=re.escape("path: expected a file path ending .json or .json.gz")):
        write_trace([result], 5)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


# -- Python API: training ----------------------------------------------------------------------------


def test_training_api_refuses_wrong_types_with_typed_errors() -> None:
    """Each call raised TypeError or AttributeError from inside (or, for overlap='no', overlapped)."""
    from commsim.algorithms import get_algorithm
    from commsim.errors import ArgumentError, CommsimError, UnknownNameError
    from commsim.topology import get_topology
    from commsim.training import CollectiveTimer, bert_large, best_steps, resnet50, simulate_step
    from commsim.training.errors import TrainingError

    machine = get_topology("pcie_4gpu_switch")
    with pytest.raises(TrainingError, match=r"efficiency: expected a number, got 'x' \(str\)"):
        resnet50(efficiency="x")  # type: ignore[arg-type]
    with pytest.raises(TrainingError, match=r"unknown dtype \{\}; valid: fp64, fp32"):
        bert_large(dtype={})  # type: ignore[arg-type]
    with pytest.raises(UnknownNameError, match=r"unknown algorithm '\[1\]'"):
        get_algorithm([1])  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match="topology: expected a Topology"):
        CollectiveTimer(5, "ring")  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match="nbytes: expected a number of bytes"):
        CollectiveTimer(machine, "ring")({})  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match=r"results\[...\]: expected a StepResult"):
        best_steps(["a"])  # type: ignore[list-item]
    with pytest.raises(ArgumentError, match="overlap: expected True or False, got 'no'"):
        simulate_step(resnet50(), machine, "ring", overlap="no")  # type: ignore[arg-type]
    with pytest.raises(CommsimError, match="nodes: expected None or a whole number"):
        simulate_step(resnet50(), machine, "ring", nodes="x")  # type: ignore[arg-type]


# -- Python API: formatting ------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["format_size", "format_bandwidth", "format_time"])
def test_formatting_refuses_what_is_no_number(name: str) -> None:
    """A dict failed in abs() or '>=' (TypeError), digits -1 or 1e400 in the format spec (ValueError)."""
    import commsim
    from commsim.errors import ArgumentError

    format_value = getattr(commsim, name)
    with pytest.raises(ArgumentError, match=r"expected a number, got \{\} \(dict\)"):
        format_value({})
    for digits in (-1, 0, 1e400, True, 10**30):  # 10**30: 'Too many decimal digits in format string'
        with pytest.raises(ArgumentError, match="digits: expected a whole number of significant digits"):
            format_value(1e6, digits)
    assert format_value(1e6, 3).startswith("1")


# -- writing to a folder --------------------------------------------------------------------------------


def test_writing_over_a_folder_names_the_folder_before_writing(tmp_path: Path) -> None:
    """save_topology / write_trace to a folder wrote everything, then failed renaming
    '.NAME.xxxx.tmp' onto it: the message named the temporary file."""
    from commsim.api import simulate
    from commsim.report.trace import write_trace
    from commsim.topology import get_topology, save_topology

    folder = tmp_path / "out.yaml"
    folder.mkdir()
    with pytest.raises(IsADirectoryError) as info:
        save_topology(get_topology("pcie_4gpu_switch"), folder)
    assert info.value.filename == str(folder) and ".tmp" not in str(info.value)
    with pytest.raises(IsADirectoryError, match="is a folder; give a file name"):
        write_trace([simulate("pcie_4gpu_switch", "ring", size="1 MB")], folder)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.yaml"] and not any(folder.iterdir())


def test_a_path_that_is_no_path_is_an_argument_error() -> None:
    """save_topology(topology, 5) failed in pathlib with a bare TypeError."""
    from commsim.errors import ArgumentError
    from commsim.topology import get_topology, save_topology

    with pytest.raises(ArgumentError, match=r"path: expected a file path \(str or os.PathLike\), got 5"):
        save_topology(get_topology("pcie_4gpu_switch"), 5)  # type: ignore[arg-type]


def test_api_flags_and_models_of_the_wrong_type_are_refused() -> None:
    """'no' as p2p or verify was true; gpu_model={} was taken, 5 failed in re; measured=5 and
    progress=b'x' failed inside (AttributeError, 'bytes' object is not callable)."""
    from commsim.api import run_file, simulate
    from commsim.errors import ArgumentError
    from commsim.report.plots import plot_busbw
    from commsim.topology import load_topo_matrix

    scenario = str(Path(__file__).parent.parent / "scenarios" / "pcie_4gpu_sync_strategies.yaml")
    with pytest.raises(ArgumentError, match="p2p: expected True or False, got 'no'"):
        load_topo_matrix(NVSMI, p2p="no")
    for model in ({}, 5):
        with pytest.raises(ArgumentError, match="gpu_model: expected None or the model's name"):
            load_topo_matrix(NVSMI, gpu_model=model)
    with pytest.raises(ArgumentError, match="verify: expected None, True or False, got 'no'"):
        run_file(scenario, verify="no")  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match="progress: expected None or a callable"):
        run_file(scenario, progress=b"x")  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match="measured: expected an nccl-tests log's path or NcclTestsLog"):
        plot_busbw([simulate("pcie_4gpu_switch", "ring", size="1 MB")], 5)  # type: ignore[arg-type]


# -- the topology JSON Schema ------------------------------------------------------------------------


def test_the_json_schema_accepts_the_topology_files_commsim_writes() -> None:
    """Bandwidths and latencies were typed "number" in 'commsim topo schema', though the files
    hold text with a unit ('16 GB/s') and a bare number is refused: the schema rejected every
    saved topology and accepted what commsim refuses."""
    import json

    import yaml

    from commsim.topology import get_topology, topology_to_dict
    from commsim.topology.io import topology_json_schema

    schema = json.loads(topology_json_schema())
    for model, field in (
        ("KindFigures", "bandwidth"),
        ("LinkSpec", "latency"),
        ("DeviceSpec", "reduce_bandwidth"),
    ):
        types = [part.get("type") for part in schema["$defs"][model]["properties"][field]["anyOf"]]
        assert types == ["string", "null"]
    jsonschema = pytest.importorskip("jsonschema")
    document = yaml.safe_load(yaml.safe_dump(topology_to_dict(get_topology("pcie_4gpu_switch"))))
    assert [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(document)] == []
    document["link_kinds"]["pcie3_x16"]["bandwidth"] = 16  # a bare number, refused when read
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(document))


# -- sweep overrides that match no link -------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "grid", "where"),
    [
        ("", "overrides.nvlink.bandwidth: [1 GB/s, 2 GB/s]", "w.yaml:6:44: grid.0.product.overrides.nvlink"),
        ("overrides: {nvlink: {bandwidth: 1 GB/s}}\n", "size: [1 MB, 2 MB]", "w.yaml:5:21: overrides.nvlink"),
    ],
)
def test_a_sweep_override_no_machine_has_is_refused(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    overrides: str,
    grid: str,
    where: str,
) -> None:
    """``run`` refuses it; a sweep wrote rows that differ in the override and not at all in time."""
    monkeypatch.chdir(tmp_path)
    base = "name: x\ntopology: pcie_4gpu_switch\nalgorithm: ring\nsize: 1 MB\n"
    Path("w.yaml").write_text(f"{base}{overrides}grid:\n  - product: {{{grid}}}\n")
    code, _, err = run_cli(["sweep", "w.yaml", "-o", "o.csv", "-q", "--serial"], capsys)
    assert code == 2 and "Traceback" not in err and not Path("o.csv").exists()
    assert where in err and "no machine of the sweep has nvlink links, so the override would change" in err
    assert "link kinds are pcie3_x16" in err


def test_a_sweep_override_some_machines_have_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    grid = "{topology: [pcie_4gpu_switch, fully_connected_4], overrides.nvlink.bandwidth: [1 GB/s, 2 GB/s]}"
    Path("w.yaml").write_text(f"name: x\nalgorithm: ring\nsize: 1 MB\ngrid:\n  - product: {grid}\n")
    code, _, err = run_cli(["sweep", "w.yaml", "-o", "o.csv", "-q", "--serial"], capsys)
    assert code == 0, err
    assert len(Path("o.csv").read_text().splitlines()) == 5


def test_a_list_where_a_name_is_expected_is_an_unknown_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A training scenario's ``topology: {builder: [1, 2]}`` failed in the name lookup (unhashable list)."""
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: t\nworkload: {model: resnet50, batch: 64, device_flops: 125 TFLOPS}\n"
        "topology: {builder: [1, 2], box: dgx_a100, nic: ib_hdr}\nnodes: [1]\n"
        "sync: [{algorithm: hierarchical}]\n"
    )
    code, _, err = run_cli(["run", "-q", str(path)], capsys)
    assert code == 2 and "Traceback" not in err
    assert f"{path}:3:11: topology: unknown builder [1, 2]; valid: ring, fully_connected, cluster" in err
