# ruff: noqa: E501  (the log is quoted as nccl-tests prints it)
"""--topology takes every board class the report names (probe 7, logs 111, 113, 117, 120, bug 5).

The board fact says e.g. "assumed board = nvswitch8 (... it could also be nvlink_mesh4; give the real
value with --topology)"; ``--topology nvlink_mesh4`` used to fail "unknown topology". A board class
given with --topology is that board of the log's GPU.

ABCI_120 is probe 7's log 120 (aistabci/abci2.0benchmark allreduce/intra_anode/job04: 4 of the 8
A100-SXM4-40GB of an ABCI A-node, NCCL 2.8.4), its header, device list and the 8 largest rows.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from commsim.calibrate.infer_machine import BOARD_CLASSES, HOST_GPUS
from commsim.hardware.catalogue import gpu_catalogue
from tests.test_bad_inputs import run_cli

ABCI_120 = """# nThread 1 nGpus 1 minBytes 4 maxBytes 33554432 step: 2(factor) warmup iters: 5 iters: 100 validation: 1
#
# Using devices
#   Rank  0 Pid 1243363 on      a0048 device  0 [0x27] A100-SXM4-40GB
#   Rank  1 Pid 1243364 on      a0048 device  1 [0x2a] A100-SXM4-40GB
#   Rank  2 Pid 1243365 on      a0048 device  2 [0x51] A100-SXM4-40GB
#   Rank  3 Pid 1243366 on      a0048 device  3 [0x57] A100-SXM4-40GB
#
#                                                     out-of-place                       in-place
#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
      262144         65536   float     sum    42.28    6.20    9.30  2e-07    42.48    6.17    9.26  2e-07
      524288        131072   float     sum    56.78    9.23   13.85  2e-07    56.05    9.35   14.03  2e-07
     1048576        262144   float     sum    83.97   12.49   18.73  2e-07    84.35   12.43   18.65  2e-07
     2097152        524288   float     sum    97.32   21.55   32.32  2e-07    96.72   21.68   32.53  2e-07
     4194304       1048576   float     sum    128.3   32.69   49.03  2e-07    127.0   33.01   49.52  2e-07
     8388608       2097152   float     sum    138.6   60.51   90.77  2e-07    137.7   60.94   91.41  2e-07
    16777216       4194304   float     sum    211.9   79.16  118.74  2e-07    209.4   80.12  120.18  2e-07
    33554432       8388608   float     sum    298.4  112.43  168.64  2e-07    279.2  120.17  180.26  2e-07
"""


def test_the_hinted_board_is_accepted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The plain run assumes nvswitch8 and names nvlink_mesh4; --topology nvlink_mesh4 then validates
    with the board known (given with --topology) and modelled as a 4-GPU NVLink mesh."""
    path = tmp_path / "all_reduce_abci.txt"
    path.write_text(ABCI_120)
    code, out, _ = run_cli(["validate", str(path)], capsys)
    assert code == 0 and "it could also be nvlink_mesh4; give the real value with --topology" in " ".join(
        out.split()
    )
    code, out, err = run_cli(["validate", str(path), "--topology", "nvlink_mesh4"], capsys)
    folded = " ".join(out.split())
    assert code == 0, err
    assert "known board = nvlink_mesh4 (option --topology" in folded
    assert "4 GPUs, every pair joined by 4 x nvlink3" in folded


def test_a_board_the_gpu_does_not_ship_on_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An AMD xGMI board for an A100 is refused, naming the A100's boards (exit 2)."""
    path = tmp_path / "all_reduce_abci.txt"
    path.write_text(ABCI_120)
    code, out, err = run_cli(["validate", str(path), "--topology", "xgmi8"], capsys)
    assert code == 2 and out == ""
    assert "--topology xgmi8: A100 SXM4 40GB ships on nvswitch8, nvlink_mesh4, not on xgmi8" in err


def _shipped_on() -> list[tuple[str, str]]:
    """(board class, a catalogue GPU that ships on it) for every class of BOARD_CLASSES: one whose
    usual (first) board it is where there is one."""
    usual: dict[str, str] = {}
    found: dict[str, str] = {}
    for key, spec in gpu_catalogue().items():
        for board in spec.boards:
            found.setdefault(board.machine_class, key)
        if spec.boards:
            usual.setdefault(spec.boards[0].machine_class, key)
    return sorted({**found, **usual}.items())


def test_every_board_class_of_the_catalogue_is_one_the_inference_names() -> None:
    """The classes GPUs ship on are exactly BOARD_CLASSES (so the next test covers all of them)."""
    assert {cls for cls, _ in _shipped_on()} == set(BOARD_CLASSES)


@pytest.mark.parametrize(("board", "gpu"), _shipped_on())
def test_every_board_class_is_accepted_by_topology(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], board: str, gpu: str
) -> None:
    """A one-host all_reduce of as many ranks as the board holds (2 for PCIe boards, 4 for an NVL72
    tray) on a GPU that ships on it validates with ``--topology BOARD --gpu GPU``, the board known."""
    ranks = {"nvl72": 4, "nvl_superchip": 1}.get(board, HOST_GPUS.get(board, 2))
    factor = 2 * (ranks - 1) / ranks
    devices = "\n".join(
        f"#  Rank {r} Group  0 Pid {100 + r} on host device {r} [0x{r + 16:02x}] GPU" for r in range(ranks)
    )
    text = (
        f"# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1048576 step: 2(factor) warmup iters: 5 iters: 20\n"
        f"# Using devices\n{devices}\n"
        "#  size  count  type  redop  root  time  algbw  busbw  #wrong  time  algbw  busbw  #wrong\n"
        f"  1048576  262144  float  sum  -1  100.0  10.49  {10.49 * factor:.2f}  0  100.0  10.49  {10.49 * factor:.2f}  0\n"
    )
    path = tmp_path / "all_reduce_board.txt"
    path.write_text(text)
    code, out, err = run_cli(["validate", str(path), "--topology", board, "--gpu", gpu, "--json"], capsys)
    assert code == 0, err
    import json

    fact = json.loads(out)["run"]["board"]
    assert fact["value"] == board and not fact["assumed"]
