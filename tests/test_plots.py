"""Plots, topology drawings, the progress bar and the ``commsim plot`` commands."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import numpy as np
import pytest
import typer
from matplotlib.collections import PolyCollection
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from rich.console import Console
from typer.testing import CliRunner

from commsim.api import run_scenario, simulate
from commsim.calibrate.validate import validate_file
from commsim.cli.plot import plot_app, size_range
from commsim.config import load_scenario
from commsim.errors import CommsimError
from commsim.report.activity import binned_utilisation, link_profiles, run_parts
from commsim.report.draw import draw_topology, topology_positions
from commsim.report.plots import (
    BOTTLENECK_COLOUR,
    PlotError,
    check_output,
    figure_png,
    plot_busbw,
    plot_timeline,
    plot_utilisation_heatmap,
    plot_validation,
)
from commsim.report.progress import progress_iter
from commsim.results import Result
from commsim.topology import get_topology
from commsim.topology.cluster import cluster

ROOT = Path(__file__).resolve().parent.parent
SYNC = ROOT / "scenarios" / "pcie_4gpu_sync_strategies.yaml"
A100_LOG = ROOT / "tests" / "data" / "nccl-tests" / "A100-SXM4-80GB-HGX-NVSwitch_all_reduce_8gpu_1.txt"


@pytest.fixture(scope="module")
def sync_results() -> list[Result]:
    return run_scenario(load_scenario(SYNC))


@pytest.fixture(scope="module")
def sweep() -> list[Result]:
    sizes = [2**k for k in range(10, 29, 3)]
    return [simulate("dgx1_v100", a, size=n) for a in ("multi_ring", "tree_packing", "hybrid") for n in sizes]


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def legend_texts(fig: Figure) -> list[str]:
    legends = [legend for ax in fig.axes if (legend := ax.get_legend()) is not None] + list(fig.legends)
    return [t.get_text() for legend in legends for t in legend.get_texts()]


# -- busbw ----------------------------------------------------------------------------
def test_busbw_plot_has_one_line_per_algorithm(sweep: list[Result], tmp_path: Path) -> None:
    fig = plot_busbw(sweep, path=tmp_path / "busbw.png")
    (ax,) = fig.axes
    assert ax.get_xlabel() == "message size (bytes)"
    assert ax.get_ylabel() == "bus bandwidth (GB/s)"
    assert ax.get_xscale() == "log"
    assert legend_texts(fig) == ["multi_ring", "tree_packing", "hybrid"]
    assert len(ax.get_lines()) == 3
    assert all(np.asarray(line.get_xdata()).size == 7 for line in ax.get_lines())
    top = max(np.asarray(line.get_ydata()).max() for line in ax.get_lines())
    assert top == pytest.approx(max(r.busbw_Bps for r in sweep) / 1e9)
    assert png_size((tmp_path / "busbw.png").read_bytes()) == (800, 450)


def test_busbw_plot_with_measured_points_and_time(sweep: list[Result], tmp_path: Path) -> None:
    fig = plot_busbw(sweep, measured=A100_LOG, metric="time")
    (ax,) = fig.axes
    assert ax.get_ylabel() == "time (us)"
    assert ax.get_yscale() == "log"
    texts = legend_texts(fig)
    assert len(texts) == 4 and texts[-1] == f"measured ({A100_LOG.name})"
    assert np.asarray(ax.get_lines()[-1].get_xdata()).size == 30  # every size of the log
    assert png_size(figure_png(fig)) == (800, 450)


def test_busbw_plot_takes_json_records(sweep: list[Result]) -> None:
    fig = plot_busbw([r.to_record() for r in sweep], title="from records")
    assert fig.axes[0].get_title() == "from records"
    with pytest.raises(PlotError, match="valid: busbw, time"):
        plot_busbw(sweep, metric="speed")
    with pytest.raises(PlotError, match="lacks 'busbw_Bps'"):
        plot_busbw([{"label": "x", "nbytes": 1, "time_s": 1}])


# -- timeline ------------------------------------------------------------------------
def test_timeline_panels_share_a_time_axis(sync_results: list[Result], tmp_path: Path) -> None:
    """SEED_FACTS.md section 1: 60, 80, 15, 15 ms, the bottleneck links in red."""
    fig = plot_timeline(sync_results, tmp_path / "timeline.svg")
    assert len(fig.axes) == 4
    assert fig.axes[-1].get_xlabel() == "time (ms)"
    assert fig.axes[0].get_xlim()[1] == pytest.approx(80 * 1.02)
    assert legend_texts(fig) == ["bottleneck link", "other link"]
    cpu_axes = fig.axes[1]
    assert "aggregate on the CPU" in cpu_axes.get_title(loc="left") and "80 ms" in cpu_axes.get_title(
        loc="left"
    )
    ticks = [t.get_text() for t in cpu_axes.get_yticklabels()]
    assert ticks[:2] == ["pcie_switch0->cpu0 (50%)", "cpu0->pcie_switch0 (50%)"]
    bars = [c for c in cpu_axes.collections if isinstance(c, PolyCollection)]
    assert len(bars) == 10  # one row per used link
    red = [c for c in bars if np.allclose(c.get_facecolor()[0], to_rgba(BOTTLENECK_COLOUR))]
    assert len(red) == 2
    svg = (tmp_path / "timeline.svg").read_text()
    assert svg.startswith("<?xml") and "aggregate on the CPU" in svg


def test_timeline_limits_links_and_merges_intervals() -> None:
    result = simulate("ring", "ring", size="64 MB", gpus=64)
    fig = plot_timeline(result, max_links=10)
    (ax,) = fig.axes
    assert len(ax.get_yticklabels()) == 10
    assert "10 busiest of 64 links" in ax.get_title(loc="left")


# -- heat map ------------------------------------------------------------------------
def test_heatmap_shows_links_against_time(sync_results: list[Result], tmp_path: Path) -> None:
    cpu = sync_results[1]
    fig = plot_utilisation_heatmap(cpu, tmp_path / "heat.pdf", bins=40)
    ax = fig.axes[0]
    image = ax.get_images()[0]
    values = np.asarray(image.get_array())
    assert values.shape == (10, 40)
    assert ax.get_xlabel() == "time (ms)" and ax.get_ylabel() == "link"
    assert fig.axes[1].get_ylabel() == "utilisation (share of link capacity)"
    rows = [t.get_text() for t in ax.get_yticklabels()]
    uplink = values[rows.index("pcie_switch0->cpu0")]
    assert np.allclose(uplink[:20], 1.0) and np.allclose(uplink[20:], 0.0)  # full for 40 of 80 ms
    assert (tmp_path / "heat.pdf").read_bytes()[:4] == b"%PDF"


def test_binned_utilisation_conserves_bytes(sweep: list[Result]) -> None:
    """Re-solved rates integrate to the bytes the replay recorded on every link."""
    for result in [r for r in sweep if r.nbytes >= 2**25]:
        run = run_parts(result)
        links = np.flatnonzero(run.record.link_bytes > 0)
        edges = np.linspace(0, run.record.makespan_s, 17)
        share = binned_utilisation(run, links, edges)
        capacity = np.array([run.topology.links[i].bandwidth_Bps for i in links])
        carried = (share * capacity[:, None] * np.diff(edges)[None, :]).sum(axis=1)
        assert np.allclose(carried, run.record.link_bytes[links], rtol=1e-9)
        assert share.max() <= 1 + 1e-9


def test_exact_and_mean_rate_profiles_agree_on_a_symmetric_run() -> None:
    run = run_parts(simulate("ring", "ring", size="16 MB", gpus=16))
    exact, mean = link_profiles(run, exact=True), link_profiles(run, exact=False)
    assert [p.link for p in exact] == [p.link for p in mean]
    for a, b in zip(exact, mean):
        assert np.array_equal(a.times_s, b.times_s) and np.array_equal(a.flows, b.flows)
        assert np.allclose(a.load, b.load)


# -- validation plot (calibration) ------------------------------------------------------
def test_plot_validation_still_writes_a_file(tmp_path: Path) -> None:
    report = validate_file(A100_LOG)
    out = plot_validation(report, tmp_path / "validation.png", calibrated=report)
    assert out == tmp_path / "validation.png"
    assert png_size(out.read_bytes()) == (800, 450)


# -- outputs -------------------------------------------------------------------------
def test_unknown_output_suffix_names_the_valid_ones() -> None:
    with pytest.raises(PlotError, match=r"'\.jpg'; use one of \.png, \.svg, \.pdf"):
        check_output("plot.jpg")
    assert check_output("PLOT.PNG") == Path("PLOT.PNG")
    assert issubclass(PlotError, CommsimError)


def test_saved_figures_are_deterministic(sync_results: list[Result], tmp_path: Path) -> None:
    for suffix in ("png", "svg", "pdf"):
        a, b = tmp_path / f"a.{suffix}", tmp_path / f"b.{suffix}"
        plot_timeline(sync_results[0], a)
        plot_timeline(sync_results[0], b)
        assert a.read_bytes() == b.read_bytes(), suffix


# -- topology drawings -----------------------------------------------------------------
def test_pcie_box_is_drawn_as_a_tree(tmp_path: Path) -> None:
    topo = get_topology("pcie_4gpu_switch")
    pos = topology_positions(topo)
    assert pos["cpu0"][1] > pos["pcie_switch0"][1] > pos["gpu0"][1]
    assert pos["cpu0"][0] == pytest.approx(pos["pcie_switch0"][0])
    assert [pos[f"gpu{i}"][0] for i in range(4)] == sorted(pos[f"gpu{i}"][0] for i in range(4))
    fig = draw_topology(topo, tmp_path / "box.png")
    texts = legend_texts(fig)
    assert "pcie3_x16 (16 GB/s per link per direction)" in texts
    assert {"gpu", "cpu", "pcie switch"} <= set(texts)
    labels = [t.get_text() for t in fig.axes[0].texts]
    assert labels.count("16 GB/s") == 5  # every link labelled
    assert png_size((tmp_path / "box.png").read_bytes())[0] > 300


def test_dgx1_is_drawn_as_two_quads() -> None:
    topo = get_topology("dgx1_v100")
    pos = topology_positions(topo)
    left = {pos[f"gpu{i}"] for i in range(4)}
    right = {pos[f"gpu{i}"] for i in range(4, 8)}
    for quad in (left, right):  # a unit square each
        xs, ys = sorted({x for x, _ in quad}), sorted({y for _, y in quad})
        assert len(quad) == 4 and len(xs) == 2 and len(ys) == 2
        assert xs[1] - xs[0] == pytest.approx(ys[1] - ys[0])
    assert max(x for x, _ in left) < min(x for x, _ in right)
    assert all(pos[f"cpu{i}"][1] > pos["pcie_switch0"][1] > pos["gpu0"][1] for i in range(2))
    fig = draw_topology(topo)
    labels = [t.get_text() for t in fig.axes[0].texts]
    assert labels.count("50 GB/s") == 8  # the bonded NV2 pairs; single links are in the legend
    assert "nvlink2 (25 GB/s per link per direction)" in legend_texts(fig)


def test_nvswitch_is_drawn_as_a_star() -> None:
    topo = get_topology("dgx_a100")
    pos = topology_positions(topo)
    gpu_x = [pos[g][0] for g in topo.gpus]
    assert pos["nvswitch0"][0] == pytest.approx(sum(gpu_x) / len(gpu_x))
    assert pos["nvswitch0"][1] < min(pos[g][1] for g in topo.gpus)


def test_gpu_only_graphs_are_circles_and_clusters_sit_side_by_side() -> None:
    ring = topology_positions(get_topology("ring", gpus=8))
    radii = {round(x * x + y * y, 9) for x, y in ring.values()}
    assert len(radii) == 1
    two = cluster("dgx_a100", nodes=2)
    pos = topology_positions(two)
    box0 = max(pos[g][0] for g in two.boxes[0])
    box1 = min(pos[g][0] for g in two.boxes[1])
    assert box0 < box1
    assert pos["switch0"][1] > max(y for name, (_, y) in pos.items() if name != "switch0")
    fig = draw_topology(two)
    assert "ib_hdr (25 GB/s per link per direction)" in legend_texts(fig)


# -- progress bar ----------------------------------------------------------------------
def test_progress_bar_only_on_a_terminal() -> None:
    terminal = io.StringIO()
    items = list(progress_iter(range(5), "work", console=Console(file=terminal, force_terminal=True)))
    assert items == list(range(5)) and "work" in terminal.getvalue()
    piped = io.StringIO()
    assert list(progress_iter(range(5), "work", console=Console(file=piped))) == list(range(5))
    assert piped.getvalue() == ""
    quiet = io.StringIO()
    list(progress_iter(range(5), "work", enabled=False, console=Console(file=quiet, force_terminal=True)))
    assert quiet.getvalue() == ""
    single = io.StringIO()
    list(progress_iter([1], "work", console=Console(file=single, force_terminal=True)))
    assert single.getvalue() == ""


# -- commsim plot ----------------------------------------------------------------------
def _app() -> typer.Typer:
    app = typer.Typer()
    app.add_typer(plot_app, name="plot")
    return app


def invoke(*args: str) -> object:
    return CliRunner().invoke(_app(), ["plot", *args])


def test_size_range_doubles_like_nccl_tests() -> None:
    assert size_range("8B..64B") == [8, 16, 32, 64]
    assert size_range("1KiB..1MiB", factor=4) == [2**10, 2**12, 2**14, 2**16, 2**18, 2**20]
    assert size_range("1 GB..1 GB") == [1e9]
    for bad in ("8B", "1GB..8B", "0B..8B"):
        with pytest.raises(CommsimError):
            size_range(bad)


def test_plot_commands_write_files(tmp_path: Path) -> None:
    result = invoke(
        "busbw", "--topology", "dgx1_v100", "--algorithm", "ring", "--algorithm", "multi_ring",
        "--sizes", "1KB..1GB", "--log", str(A100_LOG), "-o", str(tmp_path / "b.png"),
    )  # fmt: skip
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    assert png_size((tmp_path / "b.png").read_bytes()) == (800, 450)
    assert invoke("timeline", str(SYNC), "-o", str(tmp_path / "t.svg")).exit_code == 0  # type: ignore[attr-defined]
    heat = invoke("heatmap", str(SYNC), "--select", "chunked ring", "-o", str(tmp_path / "h.png"))
    assert heat.exit_code == 0, heat.output  # type: ignore[attr-defined]
    assert invoke("topology", "dgx1_p100", "-o", str(tmp_path / "p.pdf")).exit_code == 0  # type: ignore[attr-defined]
    assert {p.name for p in tmp_path.iterdir()} == {"b.png", "t.svg", "h.png", "p.pdf"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["topology", "dgx1_v100", "-o", "x.jpg"], "use one of .png, .svg, .pdf"),
        (["heatmap", str(SYNC), "-o", "x.png"], "a heat map shows one run, got 4"),
        (["timeline", str(SYNC), "--select", "nope", "-o", "x.png"], "--select nope: no such run"),
        (["busbw", "--topology", "dgx1_v100", "-o", "x.png"], "give a scenario file, or --topology"),
        (["busbw", str(SYNC), "--algorithm", "ring", "-o", "x.png"], "not both"),
    ],
)
def test_plot_command_errors_are_commsim_errors(args: list[str], message: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(_app(), ["plot", *args[:-1], str(tmp_path / args[-1])])
    assert isinstance(result.exception, CommsimError)
    assert message in str(result.exception)
    assert not any(tmp_path.iterdir())


def _two_series_log(tmp_path: Path) -> Path:
    """A100_LOG's table followed by the same sweep as 'half' (as nccl-tests -d float,half prints it)."""
    lines = A100_LOG.read_text().splitlines()
    rows = [l for l in lines if l.split()[:1] and l.split()[0].isdigit() and " float " in l]
    assert rows
    last = max(i for i, l in enumerate(lines) if l in rows)
    half = [r.replace(" float ", "  half ") for r in rows]
    path = tmp_path / "two_series.txt"
    path.write_text("\n".join(lines[: last + 1] + half + lines[last + 1 :]) + "\n")
    return path


def test_busbw_log_of_several_series_takes_run(tmp_path: Path) -> None:
    """A log of two datatype series is two runs: --log alone is refused with the list (nothing written),
    --run 2 plots the half series, and --run without --log is refused."""
    log = _two_series_log(tmp_path)
    base = ["busbw", "--topology", "dgx1_v100", "--algorithm", "ring", "--sizes", "1KB..1MB"]
    base += ["--log", str(log)]
    refused = CliRunner().invoke(_app(), ["plot", *base, "-o", str(tmp_path / "a.png")])
    assert isinstance(refused.exception, CommsimError)
    assert "--run N" in str(refused.exception) and "half" in str(refused.exception)
    assert not (tmp_path / "a.png").exists()
    chosen = invoke(*base, "--run", "2", "-o", str(tmp_path / "b.png"))
    assert chosen.exit_code == 0, chosen.output  # type: ignore[attr-defined]
    assert png_size((tmp_path / "b.png").read_bytes()) == (800, 450)
    alone = CliRunner().invoke(_app(), ["plot", *base[:-2], "--run", "2", "-o", str(tmp_path / "c.png")])
    assert isinstance(alone.exception, CommsimError) and "give --log too" in str(alone.exception)
