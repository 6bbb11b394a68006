"""Bad inputs found by a seeded fuzz of every input path but nccl-tests logs (/work/notes/fuzz-inputs).

Each test failed before its fix: a traceback, a silent wrong answer or a
half-written file. Command-line cases run ``commsim`` in-process through its
``main`` and check exit code 2, no traceback, and the words that say what was
wrong, where, and what would be valid.
"""

from __future__ import annotations

import math
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
