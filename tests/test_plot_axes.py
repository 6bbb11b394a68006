"""Plots people read: log axes in nccl-tests' units, rows by device kind, legends clear of titles.

Each test builds a Figure with the Agg backend and reads back its Axes
(scales, tick labels, label texts, window extents of legends and titles);
no image is compared.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.patches import Rectangle
from matplotlib.text import Text

from commsim.api import simulate
from commsim.calibrate.validate import validate_file
from commsim.interop.nccl_topo import read_nccl_topo
from commsim.report.draw import MIN_FONT_PT, draw_topology
from commsim.report.layout import MIN_SPACING, topology_positions
from commsim.report.plots import plot_busbw, plot_timeline, plot_validation, validation_figure
from commsim.sweep.plot import is_model, plot_winners, winners_figure
from commsim.topology import get_topology
from commsim.topology.cluster import cluster

ROOT = Path(__file__).resolve().parent.parent
A100_LOG = ROOT / "tests" / "data" / "nccl-tests" / "A100-SXM4-80GB-HGX-NVSwitch_all_reduce_8gpu_1.txt"


# -- helpers ---------------------------------------------------------------------------------
def legends(fig: Figure) -> list[Legend]:
    return [legend for ax in fig.axes if (legend := ax.get_legend()) is not None] + list(fig.legends)


def titles(ax: Axes) -> Iterator[Text]:
    """The axes' centre, left and right titles that have text."""
    for title in (ax.title, ax._left_title, ax._right_title):  # no public getter for these Texts
        if title.get_text():
            yield title


def assert_no_legend_over_a_title(fig: Figure) -> None:
    """No legend's drawn box overlaps any title's drawn box (Agg renderer, display pixels)."""
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    boxes = [title.get_window_extent(renderer) for ax in fig.axes for title in titles(ax)]
    assert boxes, "the figure has a title"
    for legend in legends(fig):
        frame = legend.get_window_extent(renderer)
        assert not any(frame.overlaps(box) for box in boxes), legend


def records(label: str, sizes: list[int], busbw_GBps: float = 100.0) -> list[dict[str, object]]:
    """Result records of a curve that rises with size: busbw = busbw_GBps * n / (n + 1 MiB)."""
    out = []
    for n in sizes:
        busbw = busbw_GBps * 1e9 * n / (n + 2**20)
        out.append({"label": label, "nbytes": n, "time_s": n / busbw, "busbw_Bps": busbw})
    return out


SIZES = [2**k for k in range(3, 31)]  # nccl-tests -b 8 -e 1G -f 2


# -- bus bandwidth and time against size ---------------------------------------------------------
@pytest.mark.parametrize(("metric", "ylabel"), [("busbw", "bus bandwidth (GB/s)"), ("time", "time (us)")])
def test_size_plots_are_log_log_in_nccl_tests_units(metric: str, ylabel: str) -> None:
    """Both axes logarithmic; y in GB/s or us as nccl-tests prints; x ticks at powers of two.

    Sizes 2^3 .. 2^30 span 27 doublings; at most ten ticks gives a step of
    ceil(27 / 9) = 3 doublings: 8 B, 64 B, 512 B, 4 KiB, ... 128 MiB, 1 GiB.
    """
    data = records("ring", SIZES)
    fig = plot_busbw(data, metric=metric, title="all_reduce on 8 GPUs")
    (ax,) = fig.axes
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
    assert ax.xaxis.get_transform().base == 2 and ax.yaxis.get_transform().base == 10
    assert ax.get_ylabel() == ylabel
    assert ax.get_xlabel() == "message size (bytes)"
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks == [
        "8 B",
        "64 B",
        "512 B",
        "4 KiB",
        "32 KiB",
        "256 KiB",
        "2 MiB",
        "16 MiB",
        "128 MiB",
        "1 GiB",
    ]
    assert list(ax.get_xticks()) == [2.0**k for k in range(3, 31, 3)]
    (line,) = ax.get_lines()
    y = np.asarray(line.get_ydata())
    expected = [float(r["busbw_Bps"]) / 1e9 if metric == "busbw" else float(r["time_s"]) * 1e6 for r in data]  # type: ignore[arg-type]
    assert np.allclose(y, expected, rtol=1e-12)
    low, high = ax.get_ylim()
    # the small-message regime is on the plot, not squashed onto zero: 8 B at 100 GB/s * 8 / (8 + 2^20)
    assert 0 < low <= y.min() and high >= y.max()
    if metric == "busbw":
        assert y.min() == pytest.approx(100 * 8 / (8 + 2**20))
        assert y.max() / y.min() > 1e5  # five decades: invisible on a linear axis


def test_busbw_y_ticks_read_as_plain_numbers() -> None:
    fig = plot_busbw(records("ring", SIZES))
    ax = fig.axes[0]
    FigureCanvasAgg(fig).draw()
    low, high = ax.get_ylim()
    shown = [t for t in ax.get_yticklabels() if t.get_text() and low <= t.get_position()[1] <= high]
    assert [t.get_text() for t in shown] == ["0.001", "0.01", "0.1", "1", "10", "100"]


def test_busbw_legend_sits_inside_the_axes_clear_of_the_title() -> None:
    data = records("ring", SIZES) + records("tree", SIZES, busbw_GBps=50.0)
    fig = plot_busbw(data, measured=A100_LOG, title="all_reduce, 8 GPUs: simulated against measured")
    (legend,) = legends(fig)
    assert legend._loc == 2  # "upper left": empty under curves that rise with size
    assert [t.get_text() for t in legend.get_texts()] == ["ring", "tree", f"measured ({A100_LOG.name})"]
    assert_no_legend_over_a_title(fig)
    renderer = FigureCanvasAgg(fig).get_renderer()
    frame, axes_box = legend.get_window_extent(renderer), fig.axes[0].get_window_extent(renderer)
    assert axes_box.x0 <= frame.x0 and frame.x1 <= axes_box.x1 and frame.y1 <= axes_box.y1


def test_validation_plot_is_log_log(tmp_path: Path) -> None:
    report = validate_file(A100_LOG)
    fig = validation_figure(report)
    (ax,) = fig.axes
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
    assert ax.get_ylabel() == "bus bandwidth (GB/s)"
    measured = np.asarray(ax.get_lines()[0].get_ydata())
    assert np.array_equal(measured, [r.measured_busbw_Bps / 1e9 for r in report.rows])
    assert ax.get_ylim()[0] > 0  # a 0.00 GB/s row of the log is masked, not clipped to a fake value
    assert_no_legend_over_a_title(fig)
    assert plot_validation(report, tmp_path / "v.png") == tmp_path / "v.png"


def test_the_overlap_check_sees_a_legend_over_a_title() -> None:
    """The checker itself: a legend anchored on the title's spot is caught."""
    fig = plot_busbw(records("ring", SIZES), title="a title in the middle")
    ax = fig.axes[0]
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0))
    with pytest.raises(AssertionError):
        assert_no_legend_over_a_title(fig)


# -- timeline ------------------------------------------------------------------------------------
def test_timeline_legend_is_below_the_time_axis_not_over_a_title() -> None:
    runs = [simulate("pcie_4gpu_switch", a, size="16 MB") for a in ("ring", "direct")]
    fig = plot_timeline(runs)
    assert_no_legend_over_a_title(fig)
    (legend,) = legends(fig)
    renderer = FigureCanvasAgg(fig).get_renderer()
    assert legend.get_window_extent(renderer).y1 < fig.axes[-1].get_window_extent(renderer).y0


# -- sweep winner maps -----------------------------------------------------------------------------
WINNER_ROWS = [
    {"topology": t, "algorithm": a, "nbytes": float(n), "time_s": time, "error": None}
    for t, table in {
        "dgx1_v100": {"ring": (3.0, 2.0, 1.0), "nccl": (1.0, 1.5, 2.0)},
        "dgx_a100": {"ring": (1.0, 1.0, 1.0), "nccl": (2.0, 0.5, 0.5)},
    }.items()
    for a, times in table.items()
    for n, time in zip((8, 2**20, 2**30), times)
]


def test_winner_map_marks_model_times_apart_from_replays(tmp_path: Path) -> None:
    """nccl wins (dgx1, 8 B), (dgx1, 1 MiB), (a100, 1 MiB), (a100, 1 GiB): four hatched cells."""
    fig = winners_figure(WINNER_ROWS, title="all_reduce: fastest algorithm")
    (ax,) = fig.axes
    hatched = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_hatch()]
    corners = sorted((round(p.get_x() + 0.5), round(p.get_y() + 0.5)) for p in hatched)
    assert corners == [(0, 0), (1, 0), (1, 1), (2, 1)]  # (size column, case row)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["8 B", "1 MiB", "1 GiB"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["dgx1_v100", "dgx_a100"]
    assert ax.get_xlabel() == "message size"
    (legend,) = legends(fig)
    assert [t.get_text() for t in legend.get_texts()] == [
        "ring (ideal replay)",
        "nccl (NCCL model)",
        "no algorithm ran",
    ]
    assert legend.get_patches()[1].get_hatch() and not legend.get_patches()[0].get_hatch()
    assert_no_legend_over_a_title(fig)
    out = plot_winners(WINNER_ROWS, tmp_path / "w.svg")
    assert out == tmp_path / "w.svg" and "nccl (NCCL model)" in out.read_text()


def test_model_contenders_are_named_by_their_algorithm() -> None:
    assert is_model("nccl") and is_model("nccl, version=2.21")
    assert not is_model("ring") and not is_model("multi_ring, chunks=8") and not is_model("nccl_like")


# -- topology drawings -----------------------------------------------------------------------------
def _switch(bus: int, gpu: int, nics: tuple[int, ...]) -> str:
    nvlinks = "".join(
        f'<nvlink target="0000:0{5 + i}:00.0" count="{c}" tclass="0x068000"/>'
        for i, c in enumerate((5, 4, 5, 4))
    )
    ports = "".join(
        f'<pci busid="0000:{bus + 3 + i:02x}:00.0" class="0x020000" vendor="0x15b3" device="0x1021" '
        f'link_speed="32.0 GT/s PCIe" link_width="16"><nic><net name="mlx5_{d}" dev="{d}" speed="400000" '
        f'port="1" guid="0x{d:x}" maxconn="131072" gdr="1"/></nic></pci>'
        for i, d in enumerate(nics)
    )
    return (
        f'<pci busid="0000:{bus:02x}:00.0" class="0x060400" vendor="0x1000" device="0xc030" '
        f'link_speed="32.0 GT/s PCIe" link_width="16">'
        f'<pci busid="0000:{bus + 2:02x}:00.0" class="0x030200" vendor="0x10de" device="0x2330" '
        f'link_speed="32.0 GT/s PCIe" link_width="16"><gpu dev="{gpu}" sm="90" rank="{gpu}" gdr="1">{nvlinks}'
        f"</gpu></pci>{ports}</pci>"
    )


@pytest.fixture(scope="module")
def hgx_16_nics(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An NCCL topology dump of an HGX H100 with two ConnectX-7 per PCIe switch: 8 GPUs, 16 NICs."""
    cpus = "".join(
        f'<cpu numaid="{c}" affinity="0000ffff" arch="x86_64" vendor="GenuineIntel" familyid="6" '
        'modelid="143">'
        + "".join(_switch(0x10 * (g + 1), g, (2 * g, 2 * g + 1)) for g in range(4 * c, 4 * c + 4))
        + "</cpu>"
        for c in (0, 1)
    )
    path = tmp_path_factory.mktemp("topo") / "hgx_h100_16nic.xml"
    path.write_text(f'<system version="1">{cpus}</system>')
    return path


def test_imported_16_nic_server_is_drawn_in_rows_by_kind(hgx_16_nics: Path) -> None:
    """GPUs in one row 2 x 0.8 = 1.6 apart (two NIC places each), NICs in a row above the PCIe switches.

    Each switch sits over its GPU, and its two NICs at +-0.4 around it, so
    the NIC row is exactly as wide as the GPU row plus one NIC spacing.
    """
    topo = read_nccl_topo(hgx_16_nics).topology
    assert (len(topo.gpus), len(topo.devices_of_kind("nic"))) == (8, 16)
    pos = topology_positions(topo)
    rows = {
        kind: {pos[n][1] for n in topo.devices_of_kind(kind)} for kind in ("nic", "cpu", "pcie_switch", "gpu")
    }
    assert all(len(ys) == 1 for ys in rows.values()), rows  # one row per kind
    ((nic_y,), (cpu_y,), (switch_y,), (gpu_y,)) = rows.values()
    assert nic_y > cpu_y > switch_y > gpu_y
    gpu_x = [pos[f"gpu{i}"][0] for i in range(8)]
    assert np.allclose(np.diff(gpu_x), 2 * MIN_SPACING)
    nic_x = sorted(pos[n][0] for n in topo.devices_of_kind("nic"))
    assert np.allclose(np.diff(nic_x), MIN_SPACING)
    assert nic_x[-1] - nic_x[0] == pytest.approx(gpu_x[-1] - gpu_x[0] + MIN_SPACING)
    for i in range(8):
        (switch,) = [n for n in topo.graph.successors(f"gpu{i}") if topo.device(n).kind == "pcie_switch"]
        assert pos[switch][0] == pytest.approx(gpu_x[i])
        assert (pos[f"nic{2 * i}"][0] + pos[f"nic{2 * i + 1}"][0]) / 2 == pytest.approx(gpu_x[i])


def test_drawing_text_survives_a_slide(hgx_16_nics: Path) -> None:
    """Every text at least MIN_FONT_PT (9 pt); names short and under their markers; legend clear of the title.

    NVLink 4 is 25 GB/s per link and direction; each GPU's 18 links to the
    NVSwitches (5 + 4 + 5 + 4) make 450 GB/s, said once in the legend, not
    on eight identical edges.
    """
    fig = draw_topology(read_nccl_topo(hgx_16_nics).topology)
    ax = fig.axes[0]
    texts = [t for t in fig.findobj(Text) if t.get_text()]
    assert min(t.get_fontsize() for t in texts) >= MIN_FONT_PT
    names = {t.get_text() for t in ax.texts}
    assert {"gpu0", "nic15", "sw 10:00.0", "cpu1", "nvsw0"} <= names
    assert "450 GB/s" not in names
    legend_texts = [t.get_text() for t in legends(fig)[0].get_texts()]
    assert "nvlink4 (25 GB/s per link per direction; 18 bonded: 450 GB/s)" in legend_texts
    gpu0 = next(t for t in ax.texts if t.get_text() == "gpu0")
    assert gpu0.get_va() == "top" and gpu0.xyann[1] < 0  # type: ignore[attr-defined]
    assert ax.get_title(loc="left") == "hgx_h100_16nic: 8 GPUs"
    assert_no_legend_over_a_title(fig)
    width, height = fig.get_size_inches()
    assert width <= 4.5 + 14 and height <= 1.6 + 9  # fits a slide at a readable scale


def test_cluster_boxes_side_by_side_are_captioned_once() -> None:
    two = cluster("hgx_h100", nodes=2)
    fig = draw_topology(two)
    names = [t.get_text() for t in fig.axes[0].texts]
    assert names.count("box 0") == 1 and names.count("box 1") == 1
    assert not any(name.startswith("n0 ") or name.startswith("n1 ") for name in names)
    assert names.count("nic0") == 2  # one per box, told apart by the caption
    pos = topology_positions(two)
    assert max(pos[g][0] for g in two.boxes[0]) < min(pos[g][0] for g in two.boxes[1])
    assert_no_legend_over_a_title(fig)


def test_big_clusters_lose_device_names_but_keep_box_captions() -> None:
    """Four DGX A100 boxes are 4 x 23 + 1 = 93 devices, above the 64 that get names."""
    four = cluster("dgx_a100", nodes=4)
    assert len(four.devices) == 93
    captions = [t.get_text() for t in draw_topology(four).axes[0].texts]
    assert captions == ["box 0", "box 1", "box 2", "box 3"]


def test_small_machines_keep_every_link_label() -> None:
    """A machine of at most 12 links labels each one: the 4-GPU PCIe box's 5 links at 16 GB/s."""
    fig = draw_topology(get_topology("pcie_4gpu_switch"))
    labels = [t.get_text() for t in fig.axes[0].texts]
    assert labels.count("16 GB/s") == 5
    assert_no_legend_over_a_title(fig)
