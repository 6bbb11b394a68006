"""Which of the NCCL model's parameters a set of logs determines, and how well.

:func:`select` decides before a fit, from the Jacobian at the starting point:
a parameter no predicted time depends on is dropped (with the reason in the
logs' terms: no NVLS-capable box, no host-memory transport, no link of that
family limiting), and so is one whose column is nearly a combination of the
columns already kept (condition number of the column-normalised Jacobian
above :data:`CONDITION_LIMIT`). After a fit, :func:`parameter_sigmas` gives each
log-parameter's 1-sigma from ``cov = s^2 (J^T J)^-1`` and
:func:`least_determined` the one whose relative 1-sigma exceeds
:data:`UNDETERMINED`, which :func:`commsim.calibrate.fit.fit` drops before
fitting again. The notes a fit adds: :func:`bound_notes` on a parameter
fitted past the point where any predicted time depends on it (the logs only
bound it), :func:`noise_notes` on sizes left out as noise, :func:`pooled_note`
on logs of several machines fitted together, and :func:`metric_note` on a
median relative error that rose although the fit's log-ratio objective fell.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from commsim.calibrate.fit_problem import Case, Problem, get_value, value_text
from commsim.nccl.machine import analyse
from commsim.units import format_size

if TYPE_CHECKING:
    from commsim.calibrate.calibration import Calibration

__all__ = [
    "CONDITION_LIMIT",
    "NOISE_RATIO",
    "SENSITIVITY_FLOOR",
    "UNDETERMINED",
    "bound_notes",
    "least_determined",
    "metric_note",
    "noise_notes",
    "parameter_sigmas",
    "pooled_note",
    "select",
]

NOISE_RATIO = 1.2
"""A size measured this many times slower than the next larger size is noise and left out of a fit:
moving more bytes with the same algorithm never takes less time, so such a row is a preempted
iteration or a first-call cost, and least squares would bend physical parameters towards it. Where
the model itself predicts the smaller size slower (NCCL's choice of a ring LL call it then runs on
few channels: :mod:`commsim.nccl.channel_cut`), the measured ratio is held against this many times
the predicted one: a step the model explains is the machine and is kept, a larger one is noise."""
SENSITIVITY_FLOOR = 1e-4
"""A parameter whose 1 % change moves no predicted time by 1e-4 % has no sensitivity."""
CONDITION_LIMIT = 100.0
"""Largest condition number of the column-normalised Jacobian of the fitted parameters."""
UNDETERMINED = 1.0
"""A fitted parameter whose relative 1-sigma uncertainty exceeds this (100 %) is not determined."""


def insensitive_reason(name: str, cases: list[Case]) -> str:
    machines = [analyse(c.topology, c.ranks) for c in cases]
    if name == "nvls_efficiency":
        if not any(m.nvls for m in machines):
            return (
                "no log runs where NCCL can use NVLink SHARP (NVLS needs an NVSwitch box with Hopper "
                "or newer GPUs)"
            )
        return "NVLS is NCCL's choice at none of these sizes (it only serves large all-reduces)"
    if name == "shm_efficiency":
        if not any(m.transport == "shm" for m in machines):
            return "no log uses host-memory (SHM) transport: every machine has GPU peer-to-peer"
        return "no predicted time depends on it"
    if name.startswith("ring_channel_net."):
        return f"NCCL runs no ring across {name.split('.', 1)[1]} NICs at these sizes whose channels limit it"
    if name.startswith("efficiency."):
        family = name.split(".", 1)[1]
        return f"no {family} link limits the bandwidth NCCL reaches in these logs"
    return "no predicted time depends on it"


def select(J: np.ndarray, names: list[str], cases: list[Case]) -> tuple[list[int], dict[str, str]]:
    """Indices of the columns the data determine, and why the others are dropped."""
    kept: list[int] = []
    dropped: dict[str, str] = {}
    norms = np.linalg.norm(J, axis=0)
    for i, name in enumerate(names):
        if float(np.max(np.abs(J[:, i]), initial=0.0)) < SENSITIVITY_FLOOR:
            dropped[name] = insensitive_reason(name, cases)
            continue
        trial = [*kept, i]
        unit = J[:, trial] / norms[trial]
        _, singular, vt = np.linalg.svd(unit, full_matrices=False)
        condition = float(singular[0] / singular[-1]) if singular[-1] > 0 else math.inf
        if condition > CONDITION_LIMIT:
            partners = [names[j] for j, weight in zip(trial, vt[-1]) if j != i and abs(weight) > 0.1]
            dropped[name] = (
                f"indistinguishable from {', '.join(partners)} in these logs (condition number "
                f"{condition:.3g} > {CONDITION_LIMIT:g} with it)"
            )
            continue
        kept.append(i)
    return kept, dropped


def parameter_sigmas(J: np.ndarray, r: np.ndarray) -> np.ndarray:
    """1-sigma of each log-parameter, ``sqrt(diag(s^2 (J^T J)^-1))``; inf where no time depends on it."""
    sensitive = np.max(np.abs(J), axis=0, initial=0.0) >= SENSITIVITY_FLOOR
    sigmas = np.full(J.shape[1], math.inf)
    columns = J[:, sensitive]
    variance = float(r @ r) / (len(r) - J.shape[1])
    sigmas[sensitive] = np.sqrt(np.maximum(np.diag(variance * np.linalg.pinv(columns.T @ columns)), 0.0))
    return sigmas


def least_determined(log_sigmas: np.ndarray) -> int | None:
    """The parameter with the largest finite relative uncertainty above :data:`UNDETERMINED`, if any."""
    finite = [(float(s), i) for i, s in enumerate(log_sigmas) if math.isfinite(s) and s > UNDETERMINED]
    return max(finite)[1] if finite else None


def bound_notes(
    problem: Problem,
    everything: Problem,
    theta: np.ndarray,
    log_sigmas: np.ndarray,
    dropped: dict[str, str],
) -> list[str]:
    """Remarks on fitted parameters that ended beyond the point where they matter."""
    notes = []
    for name, t, s in zip(problem.names, theta, log_sigmas):
        if not math.isfinite(s):
            side = "at least" if t > math.log(get_value(problem.base, name)) else "at most"
            limiters = _limiters(problem, theta, everything, dropped)
            notes.append(
                f"{name}: past {value_text(name, math.exp(t))} it changes no predicted time{limiters}, "
                f"so these logs only say it is {side} that"
            )
    return notes


def _limiters(problem: Problem, theta: np.ndarray, everything: Problem, dropped: dict[str, str]) -> str:
    """`` (x limits instead)``: dropped parameters that matter at the solution."""
    here = problem.params(theta)
    probe = Problem(problem.cases, here, [n for n in everything.names if n in dropped])
    start = probe.start()
    J = probe.jacobian(start, probe.residuals(start))
    names = [n for n, column in zip(probe.names, J.T) if np.max(np.abs(column)) >= SENSITIVITY_FLOOR]
    return f" ({', '.join(names)} limits instead)" if names else ""


def metric_note(calibration: Calibration, before: np.ndarray, after: np.ndarray) -> list[str]:
    """Why the median |predicted / measured - 1| can rise although the fit improved: it minimises
    the log ratio, under which a prediction twice too slow and one twice too fast weigh alike, while
    the relative error counts the first as 100 % and the second as 50 %."""
    rose = calibration.after["all"]["median_abs_error"] or 0.0
    if rose <= (calibration.before["all"]["median_abs_error"] or 0.0):
        return []
    log_before, log_after = float(np.median(np.abs(before))), float(np.median(np.abs(after)))
    return [
        "the median |error| rose because the fit minimises the log of predicted / measured (twice too slow "
        "and twice too fast weigh alike), which the relative error does not: the median |log ratio| went "
        f"from {log_before:.3f} to {log_after:.3f}, and the sum of its squares from "
        f"{float(before @ before):.3g} to {float(after @ after):.3g}; no one set of parameters fits every "
        "size (the errors of each log follow)"
    ]


def noise_notes(cases: list[Case]) -> list[str]:
    """One note per log with sizes left out as noise (slower than the next larger size)."""
    return [
        f"{Path(case.key).name}: left out {', '.join(format_size(n) for n in case.noisy)}, measured "
        f"more than {NOISE_RATIO - 1:.0%} slower than the next larger size (noise, not the machine)"
        for case in cases
        if case.noisy
    ]


def pooled_note(cases: list[Case]) -> list[str]:
    machines = list(dict.fromkeys(c.machine for c in cases))
    if len(machines) < 2:
        return []
    return [
        f"pooled across {len(machines)} machines (across_machines=True): every fitted value is shared by "
        "all of them, a compromise where they differ"
    ]
