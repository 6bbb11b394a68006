"""A calibration whose median relative error rises says why (the fit minimises log ratios)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from commsim.calibrate.fit import fit
from commsim.calibrate.inference import RunOptions
from commsim.calibrate.validate import validate_file

OUTSIDE = Path(__file__).parent / "data" / "outside"


def test_a_fit_whose_median_relative_error_rises_explains_it_with_the_log_ratio() -> None:
    """Outside 265-267 (reduce, all_gather and broadcast of one 4 x 8 H100 cluster, 8 NDR NICs per
    node, as the page states): reduce and broadcast reach 0.79x the model's bus bandwidth, all_gather
    0.90x, so one set of parameters cannot fit all three. The fit minimises the sum of squared
    log(predicted / measured); in |predicted / measured - 1| a prediction too slow counts more than
    one too fast by the same factor, so the median relative error rose (34.9 % -> 39.1 % when this
    was written) while the log ratio's median and squared sum fell. The calibration says so, with
    figures this test recomputes from the residuals."""
    options = RunOptions(nic="ib_ndr", nics_per_node=8)
    logs = [validate_file(path, options=options) for path in sorted(OUTSIDE.glob("26[567]_*.txt"))]
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
