"""``commsim validate --calibrated``: a calibration holds for the GPU it was fitted on.

The calibrated file is a topology whose GPUs carry their ``model:`` (``commsim calibrate`` writes
the log's GPU there) plus a ``nccl:`` mapping. Validating a log of another GPU with it is refused,
naming both GPUs; a file or a log that does not say which GPU is a warning, not a refusal.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.test_bad_inputs_more import refused, run_cli

ROOT = Path(__file__).parent.parent
DATA = Path(__file__).parent / "data" / "nccl-tests"
A100_LOG = DATA / "A100-SXM4-80GB-HGX-NVSwitch_all_reduce_8gpu_1.txt"
H100_LOG = DATA / "H100-SXM-HGX_all_gather_8gpu_1.txt"


def _calibration(tmp_path: Path, models: bool = True) -> Path:
    """The shipped DGX A100 (its GPUs 'A100-SXM4-80GB') with a fitted launch_s, as calibrate writes."""
    text = (ROOT / "topologies" / "dgx_a100.yaml").read_text()
    if not models:
        text = re.sub(r"(kind: gpu), model: [^}]*", r"\1", text)
    path = tmp_path / "c.yaml"
    path.write_text(text + "nccl:\n  launch_s: 5.0e-06\n")
    return path


def test_calibration_of_another_gpu_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An A100 calibration on an 8 x H100 log is refused naming both GPUs and the two ways out (it
    validated the H100 log with the A100's fitted parameters and links, without a word)."""
    calibrated = _calibration(tmp_path)
    refused(
        ["validate", str(H100_LOG), "--calibrated", str(calibrated)],
        capsys,
        f"--calibrated {calibrated}: calibrated on A100 SXM4 80GB, but {H100_LOG} ran on H100 SXM5 80GB",
        "calibrate on logs of this GPU",
        "or drop --calibrated",
    )


def test_calibration_of_the_same_gpu_is_used_without_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The A100 calibration on the A100 log: validated, and no warning about the GPU."""
    code, _, err = run_cli(["validate", str(A100_LOG), "--calibrated", str(_calibration(tmp_path))], capsys)
    assert code == 0, err
    assert "calibrated on" not in err and "records no GPU" not in err


def test_calibration_that_records_no_gpu_is_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A calibrated file whose GPUs have no model cannot be checked: validated, with a warning saying so."""
    calibrated = _calibration(tmp_path, models=False)
    code, _, err = run_cli(["validate", str(H100_LOG), "--calibrated", str(calibrated)], capsys)
    assert code == 0, err
    assert f"warning: --calibrated {calibrated}: the file records no GPU model the catalogue knows" in err


def test_log_that_names_no_gpu_is_a_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The A100 log without its device list names no GPU: validated with the calibration, warning that
    the calibration's GPU (A100 SXM4 80GB) could not be checked and how to check it (--gpu)."""
    log = tmp_path / "all_reduce.txt"
    log.write_text("".join(line for line in A100_LOG.read_text().splitlines(True) if "Rank " not in line))
    calibrated = _calibration(tmp_path)
    code, _, err = run_cli(["validate", str(log), "--calibrated", str(calibrated)], capsys)
    assert code == 0, err
    assert f"calibrated on A100 SXM4 80GB, but {log} does not say which GPU ran" in err
    assert "give --gpu MODEL to check it" in err
    args = ["validate", str(log), "--calibrated", str(calibrated), "--gpu", "H100 SXM"]
    code, _, err = run_cli(args, capsys)
    assert code == 2 and "ran on H100 SXM5 80GB" in err


def test_calibration_of_another_model_of_the_same_generation_is_used_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The A100 SXM4 80GB calibration on the A100 log given as an A100 SXM4 40GB (the same 12 NVLink 3
    links and NCCL tables: review 30 found all 18 A100 40GB logs of tests/data refused): validated, with a
    warning naming both models and their generation (ampere)."""
    args = ["validate", str(A100_LOG), "--calibrated", str(_calibration(tmp_path)), "--gpu", "A100 SXM4 40GB"]
    code, _, err = run_cli(args, capsys)
    assert code == 0, err
    assert "calibrated on A100 SXM4 80GB" in err and "ran on A100 SXM4 40GB" in err
    assert "the same GPU generation (ampere), so the fit is used" in err
