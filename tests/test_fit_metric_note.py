"""A calibration whose median relative error rises says why (the fit minimises log ratios)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from commsim.calibrate.fit import fit
from commsim.calibrate.inference import RunOptions
from commsim.calibrate.validate import validate_file

OUTSIDE = Path(__file__).parent / "data" / "outside"


def test_a_fit_whose_median_relative_error_rises_explains_it_with_the_log_ratio() -> None:
    """Outside 109 (2 ABCI nodes of 8 A100 on HDR InfiniBand, NCCL 2.8.4 as its page states): no one
    set of parameters fits every size, and the fit minimises the sum of squared log(predicted /
    measured); in |predicted / measured - 1| a prediction too slow counts more than one too fast by
    the same factor, so the median relative error rose (18.8 % -> 27.3 % when this was written)
    while the log ratio's squared sum fell. The calibration says so, with figures this test
    recomputes from the residuals. (Outside 265-267, the case this test first used, no longer rise
    since the model prices NCCL's ring LL channel cut.)"""
    options = RunOptions(nccl_version="2.8.4")
    logs = [validate_file(path, options=options) for path in sorted(OUTSIDE.glob("109_*.txt"))]
    calibration = fit(logs, out_of_sample=False)
    before = np.array(
        [np.log(r.before_time_s / r.measured_time_s) for rows in calibration.residuals.values() for r in rows]
    )
    after = np.array(
        [np.log(r.after_time_s / r.measured_time_s) for rows in calibration.residuals.values() for r in rows]
    )
    assert (after @ after) < (before @ before)
    rose = calibration.after["all"]["median_abs_error"] > calibration.before["all"]["median_abs_error"]  # type: ignore[operator]
    notes = [n for n in calibration.notes if n.startswith("the median |error| rose")]
    assert rose and len(notes) == 1
    assert f"from {np.median(np.abs(before)):.3f} to {np.median(np.abs(after)):.3f}" in notes[0]
    assert f"from {before @ before:.3g} to {after @ after:.3g}" in notes[0]
