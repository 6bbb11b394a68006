"""Calibration that cannot mislead (commsim.calibrate.fit, fit_checks): one machine per fit,
implausible values flagged, out-of-sample error, recovery of known parameters with SciPy's solver.

Synthetic logs come from the NCCL model with chosen "true" parameters (and a
seeded noise where said); every expected value below follows from those
parameters, never from a fit's output.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from commsim.calibrate.fit import fit
from commsim.calibrate.fit_checks import PLAUSIBLE, MachineKey, check_one_machine, implausible
from commsim.calibrate.validate import Validation
from commsim.errors import CalibrationError
from commsim.nccl.params import NcclParams
from commsim.topology import Topology, get_topology
from tests.test_calibrate import ALL_SIZES, synthetic, synthetic_log

TRUE = NcclParams(efficiency={"nvlink3": 0.70}, latency_scale=1.3, launch_s=4.0e-6)
"""The generating parameters: NVLink3 at 70 % of its rate, NCCL's latencies x 1.3, 4 us per launch."""


@pytest.fixture(scope="module")
def a100() -> Topology:
    return get_topology("dgx_a100")


def scaled(validation: Validation, factor: float) -> Validation:
    """The same log with every measured time multiplied by ``factor``."""
    from dataclasses import replace

    rows = [replace(r, measured_time_s=r.measured_time_s * factor) for r in validation.rows]
    return replace(validation, rows=rows)


def test_two_logs_of_one_machine_recover_the_generating_parameters(a100: Topology) -> None:
    """One DGX A100 run as ``-g 8`` (one thread, 8 launches) and ``-g 1``: all four come back.

    2 % noise on 62 sizes: each value within 3 sigma and 3 % of the true one.
    """
    logs = [synthetic(a100, TRUE, gpus_per_thread=8, seed=21), synthetic(a100, TRUE, seed=22)]
    calibration = fit(logs)
    expected = {"efficiency.nvlink3": 0.70, "latency_scale": 1.3, "launch_s": 4.0e-6}
    assert set(calibration.fitted) == set(expected)
    for name, true in expected.items():
        value, sigma = calibration.fitted[name]
        assert abs(value - true) < 3 * sigma and value == pytest.approx(true, rel=0.03), name
    assert calibration.warnings == []
    assert calibration.iterations > 0


def test_noise_free_logs_are_fitted_exactly_by_scipy(a100: Topology) -> None:
    logs = [synthetic(a100, TRUE, gpus_per_thread=8, noise=0.0), synthetic(a100, TRUE, noise=0.0)]
    calibration = fit(logs, fit=["efficiency.nvlink3", "latency_scale", "launch_s"])
    assert calibration.fitted["efficiency.nvlink3"][0] == pytest.approx(0.70, rel=1e-6)
    assert calibration.fitted["latency_scale"][0] == pytest.approx(1.3, rel=1e-6)
    assert calibration.fitted["launch_s"][0] == pytest.approx(4.0e-6, rel=1e-6)


# ------------------------------------------------------------ one machine per fit


def test_logs_of_different_machines_are_refused(a100: Topology) -> None:
    cluster = get_topology("cluster", box="dgx_a100", nodes=2, nic="ib_hdr")
    one, two = synthetic(a100, TRUE, seed=1), synthetic(cluster, TRUE, seed=2)
    message = (
        "synthetic dgx_a100 all_reduce and synthetic cluster_2xdgx_a100 all_reduce were measured on "
        "different machines (board: dgx_a100 vs cluster_2xdgx_a100; node count: 1 vs 2"
    )
    with pytest.raises(CalibrationError, match=re.escape(message)):
        fit([one, two])
    pooled = fit([one, two], across_machines=True, out_of_sample=False)
    assert pooled.notes[-1].startswith("pooled across 2 machines (across_machines=True)")


def test_a_different_gpu_is_named() -> None:
    a = MachineKey("NVIDIA A100-SXM4-80GB", "nvswitch8", 1, None)
    b = MachineKey("NVIDIA H100 80GB HBM3", "nvswitch8", 1, None)
    with pytest.raises(
        CalibrationError, match=r"^a\.log and b\.log were measured on different machines \(GPU model: "
    ):
        check_one_machine([("a.log", a), ("b.log", b)])
    check_one_machine([("a.log", a), ("c.log", a)])  # the same machine twice is fine


def test_network_differences_are_named() -> None:
    a = MachineKey("H100", "nvswitch8", 2, "8 x ib_ndr")
    b = MachineKey("H100", "nvswitch8", 2, "4 x ib_ndr")
    assert a.differences(b) == ["network: 8 x ib_ndr vs 4 x ib_ndr"]


def test_the_cli_refuses_mixed_machines_with_exit_code_2(tmp_path: Path) -> None:
    """Two development logs: an A100 NVSwitch box and an H100 one (different GPU and board)."""
    data = Path(__file__).parent / "data" / "nccl-tests"
    out = tmp_path / "calibrated.yaml"
    logs = [
        data / "A100-SXM4-80GB-HGX-NVSwitch_all_reduce_8gpu_1.txt",
        data / "H100-SXM-HGX_all_gather_8gpu_1.txt",
    ]
    command = [sys.executable, "-m", "commsim.cli", "calibrate", *map(str, logs), "-o", str(out)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "were measured on different machines (GPU model: " in " ".join(proc.stderr.split())
    assert "Traceback" not in proc.stderr and not out.exists()


# ------------------------------------------------------------ implausible fits


def test_a_latency_scale_of_a_tenth_is_flagged(a100: Topology) -> None:
    """Logs made with latency_scale 0.1: the fit finds it, and says no real machine gives it."""
    truth = TRUE.model_copy(update={"latency_scale": 0.1})
    logs = [synthetic(a100, truth, gpus_per_thread=8, noise=0.0)]
    calibration = fit(logs, base=TRUE, fit=["efficiency.nvlink3", "latency_scale"])
    assert calibration.fitted["latency_scale"][0] == pytest.approx(0.1, rel=1e-6)
    assert len(calibration.warnings) == 1
    assert calibration.warnings[0].startswith(
        "latency_scale = 0.1 is implausible (a real machine gives 0.333 to 3)"
    )
    assert "warning: latency_scale = 0.1 is implausible" in calibration.describe()


def test_an_efficiency_pushed_to_its_bound_is_flagged(a100: Topology) -> None:
    """Times 1.3x faster than NVLink3 at full rate allow: the efficiency stops on its bound 1."""
    full = TRUE.model_copy(update={"efficiency": {**TRUE.efficiency, "nvlink3": 1.0}})
    log = scaled(synthetic(a100, full, gpus_per_thread=8, noise=0.0), 1 / 1.3)
    calibration = fit([log], base=TRUE, fit=["efficiency.nvlink3", "latency_scale"])
    assert calibration.fitted["efficiency.nvlink3"][0] == pytest.approx(1.0)
    assert any(w.startswith("efficiency.nvlink3 = 1 ended on its bound") for w in calibration.warnings)


@pytest.mark.parametrize(
    ("name", "value", "start"),
    [
        (
            "efficiency.infiniband",
            0.06,
            "efficiency.infiniband = 0.06 is implausible (a real machine gives 0.3 to 0.95)",
        ),
        ("efficiency.nvlink4", 0.97, "efficiency.nvlink4 = 0.97 is implausible"),
        ("launch_s", 343e-6, "launch_s = 343 us is implausible (a real machine gives 0.5 us to 30 us)"),
        ("latency_scale", 12.5, "latency_scale = 12.5 is implausible"),
    ],
)
def test_values_outside_the_plausible_range(name: str, value: float, start: str) -> None:
    """The fitted values the development logs' per-file fits gave where the model misses structurally."""
    (warning,) = implausible({name: (value, 0.01 * value)}, {name: (1e-9, 1e2)})
    assert warning.startswith(start)


def test_plausible_values_pass() -> None:
    fitted = {"efficiency.nvlink3": (0.7, 0.01), "latency_scale": (1.3, 0.1), "launch_s": (4e-6, 1e-7)}
    assert implausible(fitted, {n: (1e-9, 1e2) for n in fitted}) == []
    assert PLAUSIBLE["latency_scale"][0] == pytest.approx(1 / 3)


# ------------------------------------------------------------ out of sample


def test_out_of_sample_error_of_consistent_logs_is_the_noise(a100: Topology) -> None:
    """Two ``-g 8`` runs of one box: each determines every parameter, so each predicts the other."""
    logs = [
        synthetic(a100, TRUE, gpus_per_thread=8, seed=31),
        synthetic(a100, TRUE, gpus_per_thread=8, seed=32),
    ]
    calibration = fit(logs)
    assert calibration.out_of_sample is not None
    assert list(calibration.out_of_sample) == list(calibration.residuals)
    assert calibration.out_of_sample_median() < 0.03  # 2 % noise: |N(0, 2 %)| has median 1.3 %
    assert (
        "median |error| out of sample (each log predicted by a fit on the others): " in calibration.describe()
    )


def test_out_of_sample_error_reveals_logs_that_disagree(a100: Topology) -> None:
    """Two noise-free logs of one box, NVLink3 at 70 % and at 50 %: a pooled fit splits the difference.

    Held out, the 50 % log is predicted from the 70 % one: bandwidth-bound times 0.5/0.7 of the
    measured, an error of -28.6 %; the in-sample error after the pooled fit is far smaller.
    """
    slow = TRUE.model_copy(update={"efficiency": {**TRUE.efficiency, "nvlink3": 0.5}})
    sizes = ALL_SIZES[23:]  # 64 MiB to 8 GiB: bandwidth-bound
    logs = [
        synthetic(a100, TRUE, sizes=sizes, noise=0.0),
        synthetic(a100, slow, sizes=sizes, noise=0.0, seed=1),
    ]
    calibration = fit(logs, fit=["efficiency.nvlink3"])
    held_out = list(calibration.out_of_sample or {})[1]
    summary = (calibration.out_of_sample or {})[held_out]["bandwidth_bound"]
    assert summary["median_abs_error"] == pytest.approx(1 - 0.5 / 0.7, rel=0.02)
    in_sample = calibration.log_summary(held_out)["bandwidth_bound"]["median_abs_error"]
    assert in_sample is not None and in_sample < 0.2


def test_one_log_has_no_out_of_sample_error(a100: Topology) -> None:
    calibration = fit([synthetic(a100, TRUE, seed=33)])
    assert calibration.out_of_sample is None and math.isnan(calibration.out_of_sample_median())
    assert "out of sample" not in calibration.describe()
    assert fit([(synthetic_log(a100, TRUE), "")], topology=a100, out_of_sample=False).out_of_sample is None


def test_kept_parameters_are_not_fitted(a100: Topology) -> None:
    """``keep`` leaves host-specific parameters at their starting values: from noise-free logs made with
    latency_scale 1.0 and launch_s 3.1 us (the defaults) and NVLink3 at 0.70, keeping both latency
    parameters still recovers the efficiency exactly, and neither appears among the fitted values."""
    truth = NcclParams(efficiency={"nvlink3": 0.70})
    logs = [synthetic(a100, truth, gpus_per_thread=8, noise=0.0), synthetic(a100, truth, noise=0.0)]
    calibration = fit(logs, keep=("latency_scale", "launch_s"))
    assert "latency_scale" not in calibration.fitted and "launch_s" not in calibration.fitted
    assert calibration.fitted["efficiency.nvlink3"][0] == pytest.approx(0.70, rel=1e-6)
    assert calibration.params.latency_scale == 1.0 and calibration.params.launch_s == NcclParams().launch_s


def test_a_size_slower_than_the_next_larger_one_is_left_out_as_noise(a100: Topology) -> None:
    """Moving more bytes never takes less time: a row measured more than 20 % slower than the next
    larger size is noise (a preempted iteration) and is left out, with a note naming it.

    A noise-free synthetic DGX A100 log (efficiency.nvlink3 0.70, latency_scale 1.3) with its 16 B
    and 8 MiB rows made 5x slower: the fit still returns the generating values exactly, and the
    note names 16 B and 8 MiB. Kept in, those two rows pull the fit to 0.65 and 1.52.
    """
    from dataclasses import replace

    clean = synthetic(a100, TRUE, noise=0.0)
    rows = [
        replace(r, measured_time_s=r.measured_time_s * 5) if r.nbytes in (16, 2**23) else r
        for r in clean.rows
    ]
    noisy = replace(clean, rows=rows)
    calibration = fit([noisy], fit=["efficiency.nvlink3", "latency_scale"])
    assert calibration.fitted["efficiency.nvlink3"][0] == pytest.approx(0.70, rel=1e-6)
    assert calibration.fitted["latency_scale"][0] == pytest.approx(1.3, rel=1e-6)
    assert any("left out 16 B, 8 MiB, measured more than 20% slower" in n for n in calibration.notes)
    assert [r.nbytes for r in rows[:2]] == [8, 16] and rows[1].measured_time_s > 1.2 * rows[2].measured_time_s


def test_a_slower_smaller_size_the_model_predicts_is_kept() -> None:
    """NCCL can run a smaller size slower: on two DGX A100 boxes over EDR (16 ranks, 8 NICs per box:
    16 channels) it prices 256 KiB on ring LL over all its channels and then runs 4 of them (one per
    16 x 4 KiB), while 512 KiB goes to tree LL128. A noise-free log generated by the model shows
    256 KiB more than 20 % slower than 512 KiB; the model predicts it so, so the row is the machine,
    not noise: it is kept (no "left out" note) and the fit returns the generating values."""
    cluster = get_topology("cluster", box="dgx_a100", nodes=2, nic="ib_edr")
    clean = synthetic(cluster, NcclParams(), noise=0.0)
    by_size = {r.nbytes: r for r in clean.rows}
    assert by_size[2**18].measured_time_s > 1.2 * by_size[2**19].measured_time_s
    assert (by_size[2**18].algorithm, by_size[2**18].protocol) == ("ring", "LL")
    calibration = fit([clean], fit=["latency_scale"])
    assert not any("left out" in n for n in calibration.notes)
    assert calibration.fitted["latency_scale"][0] == pytest.approx(1.0, rel=1e-6)
    assert [r.nbytes for r in next(iter(calibration.residuals.values()))] == ALL_SIZES


def test_a_spike_in_the_flat_stretch_of_a_cut_ring_is_still_noise(a100: Topology) -> None:
    """On a DGX A100 a ring LL all-reduce from 32 KiB to 512 KiB runs on one more channel per 32 KiB,
    so the model predicts the same time for each (to rounding: 64 KiB may come out 1 ulp slower than
    128 KiB). A 64 KiB row measured 1.5x slower than 128 KiB is 20 % beyond what the model predicts
    between them: noise, left out, and the fit returns the generating values."""
    from dataclasses import replace

    clean = synthetic(a100, TRUE, noise=0.0)
    by_size = {r.nbytes: r for r in clean.rows}
    assert by_size[2**16].predicted_time_s == pytest.approx(by_size[2**17].predicted_time_s, rel=1e-12)
    rows = [
        replace(r, measured_time_s=r.measured_time_s * 1.5) if r.nbytes == 2**16 else r for r in clean.rows
    ]
    calibration = fit([replace(clean, rows=rows)], fit=["efficiency.nvlink3", "latency_scale"])
    assert any("left out 64 KiB, measured more than 20% slower" in n for n in calibration.notes)
    assert calibration.fitted["latency_scale"][0] == pytest.approx(1.3, rel=1e-6)


def test_the_jacobian_takes_the_side_without_a_jump() -> None:
    """A predicted time can jump where a parameter flips NCCL's choice (onto a ring LL call it runs on
    few channels); a central difference across the jump is no slope. Residuals (theta, 5 above 0.3, 0
    below) at theta 0.3 + 5e-6 with a 1e-5 step: the first row's slope is 1 by either difference; the
    second jumps between theta - step and theta, so its slope is the forward difference, 0, not the
    central 2.5e5. A smooth row keeps the central difference exactly."""
    import numpy as np

    from commsim.calibrate.fit_problem import Problem

    problem = Problem.__new__(Problem)
    problem.low, problem.high, problem.jacobians = np.array([-10.0]), np.array([10.0]), 0
    problem.residuals = lambda theta: np.array(  # type: ignore[method-assign]
        [theta[0], 5.0 if theta[0] > 0.3 else 0.0, theta[0] ** 2]
    )
    theta = np.array([0.3 + 5e-6])
    J = problem.jacobian(theta, problem.residuals(theta))
    assert J[0, 0] == pytest.approx(1.0, rel=1e-9)
    assert J[1, 0] == 0.0
    up, down = theta[0] + 1e-5, theta[0] - 1e-5
    assert J[2, 0] == (up**2 - down**2) / (up - down)
