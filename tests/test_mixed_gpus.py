"""A device list that names several GPU models is warned about: the model prices every rank as one GPU."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from commsim.calibrate.validate import validate_file

LOG = """# nThread 1 nGpus 1 minBytes 1048576 maxBytes 2097152 step: 2(factor) warmup iters: 5 iters: 20
#
# Using devices
#  Rank  0 Group  0 Pid   1001 on      hosta device  0 [0x17] NVIDIA H100 PCIe
#  Rank  1 Group  0 Pid   1002 on      hosta device  1 [0x31] NVIDIA H100 PCIe
#  Rank  2 Group  0 Pid   1003 on      hosta device  2 [0xb1] NVIDIA A100-PCIE-40GB
#  Rank  3 Group  0 Pid   1004 on      hosta device  3 [0xca] NVIDIA H100 PCIe
#
#  size  count  type  redop  root  time  algbw  busbw  #wrong  time  algbw  busbw  #wrong
  1048576  262144  float  sum  -1  100.0  10.49  15.73  0  100.0  10.49  15.73  0
  2097152  524288  float  sum  -1  180.0  11.65  17.48  0  180.0  11.65  17.48  0
"""


def test_mixed_gpu_models_are_named_with_their_ranks(tmp_path: Path) -> None:
    """Ranks 0, 1 and 3 are H100 PCIe and rank 2 an A100 PCIe: the warning lists both models with
    their ranks ('0-1, 3' and '2'), names the one every rank is priced as, and the remedy (--gpu)."""
    path = tmp_path / "all_reduce_mixed.txt"
    path.write_text(LOG)
    report = validate_file(path)
    warning = next(w for w in report.inference.warnings if "GPU models" in w)
    assert "'NVIDIA H100 PCIe' on rank(s) 0-1, 3" in warning
    assert "'NVIDIA A100-PCIE-40GB' on rank(s) 2" in warning
    assert "prices every rank as H100 PCIe" in warning and "--gpu" in warning


def test_one_gpu_model_is_not_warned_about() -> None:
    """A device list of one model (the 8 x A100 development log) gives no such warning."""
    data = Path(__file__).parent / "data" / "nccl-tests"
    report = validate_file(data / "A100-SXM4-80GB-HGX-NVSwitch_all_reduce_8gpu_1.txt")
    assert not any("GPU models" in w for w in report.inference.warnings)


SHARED = """# nThread 1 nGpus 1 minBytes 1048576 maxBytes 2097152 step: 2(factor) warmup iters: 5 iters: 20
#
# Using devices
#  Rank  0 Group  0 Pid   1001 on        lab device  0 [0000:01:00] NVIDIA GeForce RTX 5090
#  Rank  1 Group  0 Pid   1002 on        lab device  0 [0000:01:00] NVIDIA GeForce RTX 5090
#
#  size  count  type  redop  root  time  algbw  busbw  #wrong  time  algbw  busbw  #wrong
  1048576  262144  float  sum  -1  900.0  1.17  1.17  0  900.0  1.17  1.17  0
"""


def test_two_ranks_on_one_gpu_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Ranks 0 and 1 both print device 0 [0000:01:00] of host 'lab' (a full bus id: one GPU shared by
    two MPI ranks; a short '[0x01]' would not prove it, see tests/test_one_gpu_per_process.py): validate
    refuses with one sentence naming the ranks, the device and the host (exit 2), where it used to
    stop with the schedule layer's bare "send from 'gpu0' to itself"."""
    from tests.test_bad_inputs import run_cli

    path = tmp_path / "all_reduce_shared.txt"
    path.write_text(SHARED)
    code, out, err = run_cli(["validate", str(path)], capsys)
    assert code == 2 and out == ""
    assert err == (
        f"error: {path}: ranks 0-1 run on one GPU (device 0 of host lab): several ranks sharing a GPU "
        "(MPS, oversubscription) are not modelled; the model needs one GPU per rank (check the device "
        "list, or give --gpus-per-node if it is abridged)"
    )


@pytest.mark.parametrize(
    ("printed", "why"),
    [
        ("AMD Radeon Graphics", "ROCm prints this generic marketing name for Instinct GPUs in some setups"),
        ("NVIDIA Graphics Device", "a driver older than the GPU prints this"),
    ],
)
def test_generic_gpu_names_are_explained_by_vendor(tmp_path: Path, printed: str, why: str) -> None:
    """A generic name is refused (give --gpu) with the reason that fits its vendor: ROCm on a current
    release prints 'AMD Radeon Graphics' for MI-series GPUs, which is not an old driver."""
    from commsim.calibrate.infer_layout import InferenceError

    path = tmp_path / "all_reduce_generic.txt"
    path.write_text(LOG.replace("NVIDIA H100 PCIe", printed).replace("NVIDIA A100-PCIE-40GB", printed))
    with pytest.raises(InferenceError, match=re.escape(f"only as '{printed}' ({why}); give --gpu MODEL")):
        validate_file(path)
