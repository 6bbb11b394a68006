"""The 4-GPU P100 SXM2 NVLink board is built, not refused (review nit 4).

A Tesla P100 SXM2 has 4 NVLink 1 links of 20 GB/s per direction (Pascal white paper). On a 4-GPU
board they cannot split evenly over 3 peers: each GPU has one link to every peer and its fourth to
one of them. Dell EMC's PowerEdge C4130 configuration K (4 P100-SXM2, the PCIe host reached over
PCIe) documents it: "two links between GPU0 and GPU3, but only 1 link between GPU0 and GPU1 as well
as GPU0 and GPU2" (p2pBandwidthLatencyTest 36.39 GB/s GPU0 to GPU3, about half that to GPU1 and
GPU2). ``--topology nvlink_mesh4`` on a P100 SXM2 log used to fail "4 links per GPU do not split
evenly over 3 peers", although the report named nvlink_mesh4 as the board it could be.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from commsim.errors import TopologyError
from commsim.topology.machines import nvlink_mesh_box
from tests.test_bad_inputs import run_cli


def test_the_p100_board_has_dells_links() -> None:
    """gpu0-gpu3 and gpu1-gpu2 by 2 x nvlink1 (40 GB/s per direction), every other pair by 1 (20 GB/s);
    each GPU's 4 links are 80 GB/s per direction, the P100 datasheet's 160 GB/s both ways."""
    box = nvlink_mesh_box(fabric="nvlink1", links=4, link_bandwidth=20e9, pcie="pcie3_x16")
    counts = {(a, b): box.link(f"gpu{a}", f"gpu{b}").count for a in range(4) for b in range(4) if a < b}
    assert counts == {(0, 1): 1, (0, 2): 1, (0, 3): 2, (1, 2): 2, (1, 3): 1, (2, 3): 1}
    assert box.link("gpu1", "gpu2").bandwidth_Bps == 40e9
    for gpu in box.gpus:
        assert sum(box.link(gpu, peer).bandwidth_Bps for peer in box.gpus if peer != gpu) == 80e9
    assert "gpu0-gpu3 and gpu1-gpu2 by 2" in box.description


@pytest.mark.parametrize(("gpus", "links"), [(4, 5), (4, 7), (4, 2), (3, 3)])
def test_a_count_no_board_has_is_still_refused(gpus: int, links: int) -> None:
    """Spares beyond one link per peer (5, 7: which pairs get more?), fewer links than peers, or a
    spare on an odd number of GPUs leave the layout open: refused, naming the counts that build and the
    nvidia-smi topo -m file to give instead."""
    with pytest.raises(TopologyError, match=r"nvidia-smi topo -m file as --topology"):
        nvlink_mesh_box(gpus=gpus, links=links)


def test_a_p100_log_validates_on_nvlink_mesh4(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A 4-rank all_reduce of Tesla P100-SXM2-16GB with --topology nvlink_mesh4: exit 0, the board
    known and modelled with the doubled pairs."""
    devices = "\n".join(
        f"#  Rank {r} Group  0 Pid {100 + r} on host device {r} [0x{r + 16:02x}] Tesla P100-SXM2-16GB"
        for r in range(4)
    )
    path = tmp_path / "all_reduce_p100.txt"
    path.write_text(
        "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1048576 step: 2(factor) warmup iters: 5 iters: 20\n"
        f"# Using devices\n{devices}\n"
        "#  size  count  type  redop  root  time  algbw  busbw  #wrong  time  algbw  busbw  #wrong\n"
        "  1048576  262144  float  sum  -1  100.0  10.49  15.73  0  100.0  10.49  15.73  0\n"
    )
    code, out, err = run_cli(["validate", str(path), "--topology", "nvlink_mesh4"], capsys)
    folded = " ".join(out.split())
    assert code == 0, err
    assert "known board = nvlink_mesh4 (option --topology" in folded
    assert "every pair joined by 1 x nvlink1 (20 GB/s per direction), gpu0-gpu3 and gpu1-gpu2 by 2" in folded
