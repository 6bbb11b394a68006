"""Fitting the NCCL model's few physical parameters to nccl-tests measurements.

:func:`fit` adjusts a small set of :class:`~commsim.nccl.NcclParams` fields
so that the model's predicted times match the measured ones, by least
squares on the log time ratio ``log(predicted / measured)`` over every size
of every log given (a relative error, so 8 B and 8 GiB weigh alike).

The fittable parameters are ``efficiency.<family>`` (one per link family,
e.g. ``efficiency.nvlink``, ``efficiency.infiniband``), ``shm_efficiency``,
``nvls_efficiency``, ``latency_scale`` and ``launch_s``. They are fitted as
logarithms, so they stay positive; efficiencies are clamped to (0, 1].
The solver is a projected Levenberg-Marquardt with finite-difference
Jacobians (:mod:`commsim.calibrate.lm`, numpy, no SciPy needed), deterministic.

A parameter is only fitted if the data can determine it. Before fitting,
the Jacobian at the starting point decides: a parameter no predicted time
depends on (``nvls_efficiency`` on an A100 box, ``shm_efficiency`` on an
NVLink machine) is dropped, and so is one whose column is nearly a
combination of columns already kept (``launch_s`` next to ``latency_scale``
when every size runs with the same algorithm and protocol: both then only
add a constant). Parameters are considered in a fixed order (bandwidths
first, then ``latency_scale``, then ``launch_s``), so the choice is
deterministic. After fitting, a parameter whose relative 1-sigma exceeds
:data:`UNDETERMINED` is dropped too and the fit redone. Asking for any of
these explicitly (``fit=[...]``) is a :class:`~commsim.errors.CalibrationError`.
A parameter that ends where no predicted time depends on it any more
(another link became the bottleneck) is kept, with an infinite sigma and a
note: the logs only bound it.

Uncertainties are 1-sigma, from the Jacobian at the solution:
``cov = s^2 (J^T J)^-1`` with ``s^2`` the residual variance; they assume
the model is right and the errors independent, so they are lower bounds
for a model that misses systematically.

Usage::

    from commsim.calibrate.fit import fit
    from commsim.calibrate.validate import validate_file

    report = validate_file("my_machine_all_reduce.txt")
    calibration = fit([report])
    print(calibration.describe())
    calibration.save("my_machine.yaml", report.inference.topology)  # the topology + ``nccl:``

References
----------
K. Levenberg (1944), "A method for the solution of certain non-linear
problems in least squares"; D. Marquardt (1963), "An algorithm for
least-squares estimation of nonlinear parameters", SIAM J. Appl. Math. 11.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from commsim.algorithms.base import Problem
from commsim.calibrate.calibration import Calibration, Residual
from commsim.calibrate.lm import levenberg_marquardt
from commsim.calibrate.parser import NcclTestsLog
from commsim.calibrate.validate import Validation, error_summary, validate_log
from commsim.collectives import Collective, get_collective
from commsim.errors import CalibrationError, UnknownNameError
from commsim.nccl.machine import analyse
from commsim.nccl.model import predict
from commsim.nccl.params import DEFAULT_EFFICIENCY, NcclParams
from commsim.topology.linkkinds import FAMILIES
from commsim.topology.model import Topology

__all__ = [
    "CONDITION_LIMIT",
    "FITTABLE",
    "SENSITIVITY_FLOOR",
    "UNDETERMINED",
    "Calibration",
    "Residual",
    "fit",
    "levenberg_marquardt",
]

_FAMILY_ORDER = tuple(DEFAULT_EFFICIENCY) + tuple(sorted(FAMILIES - set(DEFAULT_EFFICIENCY)))
FITTABLE: tuple[str, ...] = (
    *(f"efficiency.{family}" for family in _FAMILY_ORDER),
    "shm_efficiency",
    "nvls_efficiency",
    "latency_scale",
    "launch_s",
)
"""Every parameter :func:`fit` can fit, in the order it considers them."""

_BOUNDS = {"latency_scale": (1e-2, 1e2), "launch_s": (1e-9, 1e-3)}
_EFFICIENCY_BOUNDS = (1e-3, 1.0)
SENSITIVITY_FLOOR = 1e-4
"""A parameter whose 1 % change moves no predicted time by 1e-4 % has no sensitivity."""
CONDITION_LIMIT = 100.0
"""Largest condition number of the column-normalised Jacobian of the fitted parameters."""
UNDETERMINED = 1.0
"""A fitted parameter whose relative 1-sigma uncertainty exceeds this (100 %) is not determined."""
_STEP = 1e-5  # finite-difference step in log-parameter space


@dataclass(frozen=True)
class _Case:
    """One log, ready to predict: the machine, the run and the measured times."""

    key: str
    topology: Topology
    ranks: tuple[str, ...]
    collective: Collective
    gpus_per_thread: int
    algorithms: tuple[str, ...] | None
    protocols: tuple[str, ...] | None
    nbytes: tuple[int, ...]
    measured_s: np.ndarray

    def predicted(self, params: NcclParams) -> np.ndarray:
        """Predicted time of every size (s)."""
        return np.array(
            [
                predict(
                    Problem(self.topology, self.ranks, self.collective, float(n)),
                    params,
                    self.gpus_per_thread,
                    self.algorithms,
                    self.protocols,
                ).chosen.time_s
                for n in self.nbytes
            ]
        )


def _value(name: str, value: float) -> str:
    return f"{value * 1e6:.3g} us" if name == "launch_s" else f"{value:.4g}"


def _get(params: NcclParams, name: str) -> float:
    if name.startswith("efficiency."):
        return params.family_efficiency(name.split(".", 1)[1])
    return float(getattr(params, name))


def _with(params: NcclParams, values: dict[str, float]) -> NcclParams:
    """``params`` with the named parameters replaced (validated)."""
    data = params.model_dump()
    data["efficiency"] = dict(data["efficiency"])
    for name, value in values.items():
        if name.startswith("efficiency."):
            data["efficiency"][name.split(".", 1)[1]] = value
        else:
            data[name] = value
    return NcclParams.model_validate(data)


def _log_bounds(name: str) -> tuple[float, float]:
    low, high = _BOUNDS.get(name, _EFFICIENCY_BOUNDS)
    return math.log(low), math.log(high)


def _case(
    index: int,
    item: tuple[NcclTestsLog, str] | Validation,
    base: NcclParams,
    topology: Topology | None,
    nic: str | None,
) -> _Case:
    validation = (
        item
        if isinstance(item, Validation)
        else validate_log(item[0], item[1], topology=topology, nic=nic, params=base)
    )
    inference = validation.inference
    topo = inference.topology
    rows = [r for r in validation.rows if r.measured_time_s > 0]
    return _Case(
        validation.source or f"log {index}",
        topo,
        inference.ranks,
        get_collective(validation.collective),
        inference.gpus_per_thread,
        inference.algorithms,
        inference.protocols,
        tuple(r.nbytes for r in rows),
        np.array([r.measured_time_s for r in rows]),
    )


def _unique_keys(cases: list[_Case]) -> list[_Case]:
    """The cases, with ``#2``, ``#3`` ... appended to repeated source names."""
    seen: dict[str, int] = {}
    out = []
    for case in cases:
        seen[case.key] = seen.get(case.key, 0) + 1
        out.append(case if seen[case.key] == 1 else replace(case, key=f"{case.key} #{seen[case.key]}"))
    return out


class _Problem:
    """The least-squares problem: log-parameters in, log time ratios out."""

    def __init__(self, cases: list[_Case], base: NcclParams, names: list[str]) -> None:
        self.cases, self.base, self.names = cases, base, names
        self.log_measured = np.concatenate([np.log(c.measured_s) for c in cases])
        bounds = [_log_bounds(n) for n in names]
        self.low, self.high = np.array([b[0] for b in bounds]), np.array([b[1] for b in bounds])

    def start(self) -> np.ndarray:
        values = [
            min(max(_get(self.base, n), math.exp(lo)), math.exp(hi))
            for n, lo, hi in zip(self.names, self.low, self.high)
        ]
        return np.log(np.array(values))

    def params(self, theta: np.ndarray) -> NcclParams:
        return _with(self.base, {n: float(math.exp(t)) for n, t in zip(self.names, theta)})

    def residuals(self, theta: np.ndarray) -> np.ndarray:
        params = self.params(theta)
        return np.log(np.concatenate([c.predicted(params) for c in self.cases])) - self.log_measured

    def jacobian(self, theta: np.ndarray, r0: np.ndarray) -> np.ndarray:
        """Central differences in log space; one-sided at a bound."""
        columns = []
        for i in range(len(theta)):
            up, down = theta.copy(), theta.copy()
            up[i] = min(theta[i] + _STEP, self.high[i])
            down[i] = max(theta[i] - _STEP, self.low[i])
            r_up = self.residuals(up) if up[i] != theta[i] else r0
            r_down = self.residuals(down) if down[i] != theta[i] else r0
            columns.append((r_up - r_down) / (up[i] - down[i]))
        return np.column_stack(columns) if columns else np.zeros((len(r0), 0))


def _insensitive_reason(name: str, cases: list[_Case]) -> str:
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
    if name.startswith("efficiency."):
        family = name.split(".", 1)[1]
        return f"no {family} link limits the bandwidth NCCL reaches in these logs"
    return "no predicted time depends on it"


def _select(J: np.ndarray, names: list[str], cases: list[_Case]) -> tuple[list[int], dict[str, str]]:
    """Indices of the columns the data determine, and why the others are dropped."""
    kept: list[int] = []
    dropped: dict[str, str] = {}
    norms = np.linalg.norm(J, axis=0)
    for i, name in enumerate(names):
        if float(np.max(np.abs(J[:, i]), initial=0.0)) < SENSITIVITY_FLOOR:
            dropped[name] = _insensitive_reason(name, cases)
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


def _check_request(requested: list[str] | None) -> list[str]:
    if requested is None:
        return list(FITTABLE)
    for name in requested:
        if name not in FITTABLE:
            raise UnknownNameError("fittable parameter", name, FITTABLE)
    return [name for name in FITTABLE if name in set(requested)]


def _log_sigmas(J: np.ndarray, r: np.ndarray) -> np.ndarray:
    """1-sigma of each log-parameter, ``sqrt(diag(s^2 (J^T J)^-1))``; inf where no time depends on it."""
    sensitive = np.max(np.abs(J), axis=0, initial=0.0) >= SENSITIVITY_FLOOR
    sigmas = np.full(J.shape[1], math.inf)
    columns = J[:, sensitive]
    variance = float(r @ r) / (len(r) - J.shape[1])
    sigmas[sensitive] = np.sqrt(np.maximum(np.diag(variance * np.linalg.pinv(columns.T @ columns)), 0.0))
    return sigmas


def fit(
    logs: Sequence[tuple[NcclTestsLog, str] | Validation],
    *,
    topology: Topology | None = None,
    nic: str | None = None,
    base: NcclParams | None = None,
    fit: list[str] | None = None,
) -> Calibration:
    """Fit the NCCL model's physical parameters to measured nccl-tests logs.

    Parameters
    ----------
    logs : sequence
        ``(log, raw text)`` pairs (as :func:`~commsim.calibrate.validate.validate_log`
        takes them) or :class:`~commsim.calibrate.validate.Validation` reports
        (their inferred topology and run settings are used, their parameters not).
    topology, nic : optional
        The machine for ``(log, raw)`` pairs, as for ``validate_log``
        (default: inferred from each log).
    base : NcclParams, optional
        Starting values, and the values of everything not fitted (default: datasheet).
    fit : list of str, optional
        Parameters to fit (see :data:`FITTABLE`). Default: every one the data determine.

    Returns
    -------
    Calibration

    Raises
    ------
    CalibrationError
        If there are no more sizes than parameters, or a parameter asked for
        in ``fit`` is one the logs cannot determine (the message says why).
    UnknownNameError
        If ``fit`` names a parameter that cannot be fitted.

    """
    base = base or NcclParams()
    candidates = _check_request(fit)
    cases = _unique_keys([_case(i, item, base, topology, nic) for i, item in enumerate(logs)])
    if not cases:
        raise CalibrationError("no logs to fit")
    rows = sum(len(c.nbytes) for c in cases)
    if fit is not None:
        _check_rows(rows, candidates)
    everything = _Problem(cases, base, candidates)
    theta0 = everything.start()
    kept, dropped = _select(everything.jacobian(theta0, everything.residuals(theta0)), candidates, cases)
    if fit is not None and dropped:
        raise CalibrationError("cannot fit " + "; ".join(f"{n}: {why}" for n, why in dropped.items()))
    names = [candidates[i] for i in kept]
    _check_rows(rows, names)
    while True:
        problem = _Problem(cases, base, names)
        theta, r, log_sigmas, iterations = _solve(problem)
        worst = _least_determined(log_sigmas)
        if worst is None:
            break
        value = _value(names[worst], math.exp(theta[worst]))
        reason = (
            f"not determined by these logs: the fit gives {value} "
            f"with a 1-sigma uncertainty of {log_sigmas[worst]:.0%} of its value"
        )
        if fit is not None:
            raise CalibrationError(f"cannot fit {names[worst]}: {reason}")
        dropped[names.pop(worst)] = reason
        _check_rows(rows, names)
    notes = _notes(problem, everything, theta, log_sigmas, dropped)
    before = _Problem(cases, base, []).residuals(np.zeros(0))
    return _calibration(problem, theta, r, log_sigmas, before, dropped, notes, iterations)


def _check_rows(rows: int, names: list[str]) -> None:
    if not names:
        raise CalibrationError("no parameter of the NCCL model changes any predicted time of these logs")
    if rows <= len(names):
        raise CalibrationError(
            f"{rows} measured sizes cannot determine {len(names)} parameters "
            f"({', '.join(names)}) and their uncertainty; give more sizes or logs"
        )


def _least_determined(log_sigmas: np.ndarray) -> int | None:
    """The parameter with the largest finite relative uncertainty above :data:`UNDETERMINED`, if any."""
    finite = [(float(s), i) for i, s in enumerate(log_sigmas) if math.isfinite(s) and s > UNDETERMINED]
    return max(finite)[1] if finite else None


def _solve(problem: _Problem) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(log-parameters, residuals, their 1-sigma, iterations) at the least-squares solution."""
    theta, iterations = levenberg_marquardt(
        problem.residuals, problem.jacobian, problem.start(), problem.low, problem.high
    )
    r = problem.residuals(theta)
    return theta, r, _log_sigmas(problem.jacobian(theta, r), r), iterations


def _notes(
    problem: _Problem,
    everything: _Problem,
    theta: np.ndarray,
    log_sigmas: np.ndarray,
    dropped: dict[str, str],
) -> list[str]:
    """Remarks on fitted parameters that ended on a bound or beyond the point where they matter."""
    notes = []
    for name, t, lo, hi, s in zip(problem.names, theta, problem.low, problem.high, log_sigmas):
        if t >= hi or t <= lo:
            notes.append(f"{name} ended on its bound {math.exp(hi if t >= hi else lo):.3g}")
        if not math.isfinite(s):
            side = "at least" if t > math.log(_get(problem.base, name)) else "at most"
            limiters = _limiters(problem, theta, everything, dropped)
            notes.append(
                f"{name}: past {_value(name, math.exp(t))} it changes no predicted time{limiters}, "
                f"so these logs only say it is {side} that"
            )
    return notes


def _limiters(problem: _Problem, theta: np.ndarray, everything: _Problem, dropped: dict[str, str]) -> str:
    """`` (x limits instead)``: dropped parameters that matter at the solution."""
    here = problem.params(theta)
    probe = _Problem(problem.cases, here, [n for n in everything.names if n in dropped])
    start = probe.start()
    J = probe.jacobian(start, probe.residuals(start))
    names = [n for n, column in zip(probe.names, J.T) if np.max(np.abs(column)) >= SENSITIVITY_FLOOR]
    return f" ({', '.join(names)} limits instead)" if names else ""


def _calibration(
    problem: _Problem,
    theta: np.ndarray,
    r: np.ndarray,
    log_sigmas: np.ndarray,
    r_before: np.ndarray,
    dropped: dict[str, str],
    notes: list[str],
    iterations: int,
) -> Calibration:
    values = np.exp(theta)
    fitted = {n: (float(v), float(v * s)) for n, v, s in zip(problem.names, values, log_sigmas)}
    residuals: dict[str, list[Residual]] = {}
    offset = 0
    for case in problem.cases:
        count = len(case.nbytes)
        before = case.measured_s * np.exp(r_before[offset : offset + count])
        after = case.measured_s * np.exp(r[offset : offset + count])
        residuals[case.key] = [
            Residual(n, float(m), float(b), float(a))
            for n, m, b, a in zip(case.nbytes, case.measured_s, before, after)
        ]
        offset += count
    every = [r for rows in residuals.values() for r in rows]
    return Calibration(
        problem.params(theta),
        fitted,
        dropped,
        residuals,
        error_summary((r.nbytes, r.before_error) for r in every),
        error_summary((r.nbytes, r.error) for r in every),
        notes,
        iterations,
    )
