"""What ``validate`` tells every user about the model's error (commsim.calibrate.accuracy).

The figures are the headline of docs/validation.md: the median over the development logs of each log's
median |time error|, as shipped and leave-one-machine-out. Both are written by one command
(``tools/validation_table.py --write``), so the shipped file must agree with the page to the digit the
page prints; a model change that regenerates one and not the other fails here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from commsim.calibrate.accuracy import expected_error, expected_error_sentence
from tests.test_bad_inputs import run_cli

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "validation.md"
A100 = ROOT / "tests" / "data" / "nccl-tests" / "A100-SXM4-80GB-HGX-NVSwitch_all_reduce_8gpu_2.txt"


def _summary_row(label: str) -> tuple[int, list[float]]:
    """``(files, [all, >= 64 MiB, < 64 KiB])`` of one row of the page's summary table, as fractions."""
    for line in PAGE.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] == label:
            return int(cells[1]), [float(c.rstrip("%")) / 100 for c in cells[2:5]]
    raise AssertionError(f"no summary row {label!r} in {PAGE}")


@pytest.mark.parametrize(
    ("key", "label"),
    [("as_shipped", "defaults as shipped"), ("leave_one_machine_out", "leave-one-machine-out (defaults)")],
)
def test_shipped_figures_are_the_validation_pages(key: str, label: str) -> None:
    """accuracy.json holds the page's summary row to its printed precision (0.1 %), and the same log count."""
    files, page = _summary_row(label)
    data = expected_error()
    assert data["logs"] == files
    shipped = [data[key][k] for k in ("all", "bandwidth_bound", "latency_bound")]
    assert shipped == pytest.approx(page, abs=0.0005)


def test_machines_are_counted() -> None:
    """The logs come from several machines (logs sharing a host and GPU are one): more than 10, fewer
    than the logs."""
    data = expected_error()
    assert 10 < data["machines"] < data["logs"]


def test_validate_prints_the_expected_error(capsys: pytest.CaptureFixture[str]) -> None:
    """The text report says how far the model misses on a machine never seen, in percent, and where
    that figure comes from."""
    code, out, _ = run_cli(["validate", str(A100)], capsys)
    assert code == 0
    line = next(l for l in out.splitlines() if l.startswith("expected error:"))
    lomo = expected_error()["leave_one_machine_out"]
    assert f"{lomo['all']:.0%} all sizes" in " ".join(out.split())
    assert "leave-one-machine-out" in " ".join(out.split()) and line
    assert "docs/validation.md" in expected_error_sentence()
    outside = expected_error()["outside"]
    said = " ".join(out.split())
    assert f"on {outside['validated']} public logs from outside the development set, " in said
    assert f"{outside['as_shipped']['all']:.0%} all sizes" in expected_error_sentence().split("outside")[1]


def test_validate_json_carries_the_figures(capsys: pytest.CaptureFixture[str]) -> None:
    """``validate --json`` gives scripts the same figures under ``expected_error``."""
    code, out, _ = run_cli(["validate", str(A100), "--json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert data["expected_error"]["leave_one_machine_out"] == expected_error()["leave_one_machine_out"]
    assert re.fullmatch(r"\d+", str(data["expected_error"]["logs"]))
