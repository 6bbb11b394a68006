"""A topology YAML may name a builder and its fields, as a scenario's ``topology:`` mapping does.

``commsim validate --topology`` takes ``--gpus`` as the run's rank count,
so an NVSwitch box of 12 or 16 GPUs could not be asked for there; a file
``{builder: nvswitch_box, gpus: 12}`` failed with "missing required field
'name'".
"""

from __future__ import annotations

from pathlib import Path

import pytest

from commsim.errors import TopologyError
from commsim.topology import get_topology, load_topology_file
from commsim.topology.io import parse_topology
from tests.test_bad_inputs import run_cli
from tests.test_dgx2_board import DGX2_BROADCAST

DGX2 = "builder: nvswitch_box\ngpus: 16\nfabric: nvlink2\nlinks: 6\npcie: pcie3_x16\n"


def test_a_builder_file_builds_what_the_builder_builds() -> None:
    """16 GPUs on one switch, each port 6 NVLink 2 links of 25 GB/s: 150 GB/s per direction."""
    topology = parse_topology(DGX2, "dgx2.yaml")
    assert len(topology.gpus) == 16
    port = [link for link in topology.links if link.src == "gpu0" and link.dst == "nvswitch0"]
    assert sum(link.bandwidth_Bps for link in port) == pytest.approx(150e9)
    same = get_topology("nvswitch_box", gpus=16, fabric="nvlink2", links=6, pcie="pcie3_x16")
    assert [(l.name, l.bandwidth_Bps) for l in topology.links] == [
        (l.name, l.bandwidth_Bps) for l in same.links
    ]


def test_a_builder_file_is_found_by_path(tmp_path: Path) -> None:
    path = tmp_path / "twelve.yaml"
    path.write_text("builder: nvswitch_box\ngpus: 12\n")
    assert len(load_topology_file(path).gpus) == 12
    assert len(get_topology(str(path)).gpus) == 12


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "builder: nvswitch_boxx\ngpus: 12\n",
            "f.yaml:1:10: builder: unknown topology builder 'nvswitch_boxx'; valid: bridged_pairs_box",
        ),
        ("builder: [a]\n", "f.yaml:1:10: builder: expected a builder name, e.g. 'nvswitch_box', got a list"),
        (
            "builder: nvswitch_box\ngpus: 12\nname: dgx2\n",
            "f.yaml:3:1: name: builder 'nvswitch_box' has no field 'name'; valid: gpus, fabric, links",
        ),
        ("builder: nvswitch_box\ngpus: 1\n", "f.yaml:2:7: builder 'nvswitch_box' needs gpus >= 2"),
        (
            "builder: ring\ngpus: 20000\n",
            "f.yaml:2:7: builder 'ring': gpus 20000 is above the limit of 16,384",
        ),
        (
            "builder: nvswitch_box\nfabric: pcie3_x16\n",
            "f.yaml:2:9: builder 'nvswitch_box': fabric 'pcie3_x16' is a pcie link, not nvlink",
        ),
    ],
)
def test_a_bad_builder_file_is_refused_at_its_line(text: str, message: str) -> None:
    """At the line of the field a message names (gpus, fabric), else at the builder line."""
    with pytest.raises(TopologyError) as caught:
        parse_topology(text, "f.yaml")
    assert str(caught.value).startswith(message)


def _validate_dgx2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], box_text: str | None
) -> tuple[int, str, str, Path]:
    """``validate`` of the DGX-2 broadcast log with ``--topology``: a file of ``box_text``, else the
    builder name ``nvswitch_box``; (exit code, stdout, stderr, the file)."""
    log = tmp_path / "dgx2.log"
    log.write_text(DGX2_BROADCAST)
    box = tmp_path / "dgx2.yaml"
    if box_text is not None:
        box.write_text(box_text)
    topology = str(box) if box_text is not None else "nvswitch_box"
    code, out, err = run_cli(["validate", str(log), "--topology", topology], capsys)
    return code, out, err, box


def test_validate_takes_a_builder_file_for_a_16_gpu_nvswitch_box(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The outside log's 12 ranks on the file's 16-GPU box; the board is the option's."""
    code, out, err, _ = _validate_dgx2(tmp_path, capsys, DGX2)
    assert code == 0, err
    assert "board = nvswitch_box_16xnvlink2 (option --topology" in " ".join(out.split())


def test_validate_refuses_a_bad_builder_file_with_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err, box = _validate_dgx2(tmp_path, capsys, "builder: nvswitch_box\ngpu: 12\n")
    assert code == 2
    assert f"{box}:2:1: gpu: builder 'nvswitch_box' has no field 'gpu'; valid: gpus," in err
    assert "Traceback" not in err


def test_a_named_box_too_small_for_the_run_points_to_a_builder_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--topology nvswitch_box builds the builder's default 8-GPU box (``--gpus`` is the run's rank
    count, not the builder's): the 12-rank log is refused, and the message names the builder file that
    would give a box of 12."""
    code, _, err, _ = _validate_dgx2(tmp_path, capsys, None)
    assert code == 2
    said = " ".join(err.split())
    assert "the machine has 1 box(es) of 8 GPU(s) but the run has 1 host(s) of 12 rank(s)" in said
    assert "'{builder: nvswitch_box, gpus: 12}'" in said
