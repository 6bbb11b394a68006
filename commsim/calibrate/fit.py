"""Fitting the NCCL model's few physical parameters to nccl-tests measurements.

:func:`fit` adjusts a small set of :class:`~commsim.nccl.NcclParams` fields
so that the model's predicted times match the measured ones, by least
squares on the log time ratio ``log(predicted / measured)`` over every size
of every log given (a relative error, so 8 B and 8 GiB weigh alike).

The fittable parameters are ``ring_channel_net.<kind>`` (the most a ring
channel carries across NICs of a kind that has such a figure, in B/s:
:mod:`commsim.nccl.ring_net`), ``efficiency.<kind>`` for network links (one
per NIC generation and transport, e.g. ``efficiency.ib_ndr``,
``efficiency.efa_v2``: a pooled fit never lends one generation's figure to
another), ``efficiency.<family>`` for the rest (one per link family or
NVLink generation, e.g. ``efficiency.nvlink4``, ``efficiency.pcie``), ``shm_efficiency``,
``nvls_efficiency``, ``latency_scale`` and ``launch_s``. They are fitted as
logarithms, so they stay positive; efficiencies are clamped to (0, 1].
The solver is SciPy's trust-region reflective least squares
(:func:`scipy.optimize.least_squares`, ``method="trf"``, bounds on every
parameter) with central finite-difference Jacobians in log space
(:mod:`commsim.calibrate.fit_problem`); deterministic.

Logs of different machines (GPU model, board, node count or network) are
refused unless ``across_machines=True`` asks for parameters shared by every
machine (per network kind and link family, as the leave-one-machine-out study of
``tools/validation_table.py`` fits them): :mod:`commsim.calibrate.fit_checks`.
Fitted values a real machine does not give (a latency scale of 0.1, an
efficiency on its bound of 1) come back as warnings
(:attr:`Calibration.warnings`), and with several logs each is predicted by a
fit on the others (leave one file out, :attr:`Calibration.out_of_sample`):
the error a new log of the same machine should expect, where the in-sample
error only says how well the parameters bend to the logs they came from.

A parameter is only fitted if the data can determine it
(:mod:`commsim.calibrate.fit_select`). Before fitting,
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
M. A. Branch, T. F. Coleman, Y. Li (1999), "A subspace, interior, and
conjugate gradient method for large-scale bound-constrained minimization
problems", SIAM J. Sci. Comput. 21 (SciPy's ``trf``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from commsim.calibrate.calibration import Calibration, Residual
from commsim.calibrate.fit_checks import check_one_machine, implausible, machine_key
from commsim.calibrate.fit_problem import Case, Problem, solve, value_text
from commsim.calibrate.fit_select import (
    CONDITION_LIMIT,
    NOISE_RATIO,
    SENSITIVITY_FLOOR,
    UNDETERMINED,
    bound_notes,
    least_determined,
    metric_note,
    noise_notes,
    parameter_sigmas,
    pooled_note,
    select,
)
from commsim.calibrate.parser import NcclTestsLog
from commsim.calibrate.validate import Validation, error_summary, validate_log
from commsim.collectives import get_collective
from commsim.errors import CalibrationError, UnknownNameError
from commsim.nccl.params import DEFAULT_EFFICIENCY, DEFAULT_RING_CHANNEL_NET_Bps, NcclParams
from commsim.topology.linkkinds import FAMILIES, LINK_KINDS
from commsim.topology.model import Topology

__all__ = [
    "CONDITION_LIMIT",
    "FITTABLE",
    "SENSITIVITY_FLOOR",
    "UNDETERMINED",
    "Calibration",
    "Residual",
    "fit",
]

_FAMILY_ORDER = tuple(DEFAULT_EFFICIENCY) + tuple(sorted(FAMILIES - set(DEFAULT_EFFICIENCY)))
NETWORK_KINDS: tuple[str, ...] = tuple(
    kind for kind, entry in LINK_KINDS.items() if entry.family in ("infiniband", "ethernet")
)
"""Network link kinds, each fitted on its own (one NIC generation and transport: ``ib_ndr``, ``efa_v2``)."""
FITTABLE: tuple[str, ...] = (
    *(f"ring_channel_net.{kind}" for kind in DEFAULT_RING_CHANNEL_NET_Bps),
    *(f"efficiency.{kind}" for kind in NETWORK_KINDS),
    *(f"efficiency.{family}" for family in _FAMILY_ORDER),
    "shm_efficiency",
    "nvls_efficiency",
    "latency_scale",
    "launch_s",
)
"""Every parameter :func:`fit` can fit, in the order it considers them."""


def case_of(
    index: int,
    item: tuple[NcclTestsLog, str] | Validation,
    base: NcclParams,
    topology: Topology | None,
    nic: str | None,
) -> Case:
    """One log (a validation, or a parsed log and its text) ready to predict, noisy sizes marked."""
    validation = (
        item
        if isinstance(item, Validation)
        else validate_log(item[0], item[1], topology=topology, nic=nic, params=base)
    )
    inference = validation.inference
    topo = inference.topology
    rows = [r for r in validation.rows if r.measured_time_s > 0]
    noisy = {  # slower than the next larger size by 20 % beyond what the model predicts between them
        a.nbytes
        for a, b in zip(rows, rows[1:])
        if a.measured_time_s
        > NOISE_RATIO * b.measured_time_s * max(1.0, a.predicted_time_s / b.predicted_time_s)
    }
    rows = [r for r in rows if r.nbytes not in noisy]
    source = validation.source or f"log {index}"
    run = validation.log.run_index
    return Case(
        source if run == 1 else f"{source} run {run}",
        topo,
        inference.ranks,
        get_collective(validation.collective),
        inference.gpus_per_thread,
        inference.algorithms,
        inference.protocols,
        tuple(r.nbytes for r in rows),
        np.array([r.measured_time_s for r in rows]),
        machine_key(inference.facts),
        inference.nccl_model(base),
        tuple(sorted(noisy)),
        inference.cuda_graph,
    )


def _unique_keys(cases: list[Case]) -> list[Case]:
    """The cases, with ``#2``, ``#3`` ... appended to names still repeated (a file given twice; the
    runs of one file are already told apart by ``run N``)."""
    seen: dict[str, int] = {}
    out = []
    for case in cases:
        seen[case.key] = seen.get(case.key, 0) + 1
        out.append(case if seen[case.key] == 1 else replace(case, key=f"{case.key} #{seen[case.key]}"))
    return out


def _check_request(requested: list[str] | None) -> list[str]:
    if requested is None:
        return list(FITTABLE)
    for name in requested:
        if name not in FITTABLE:
            raise UnknownNameError("fittable parameter", name, FITTABLE)
    return [name for name in FITTABLE if name in set(requested)]


def fit(
    logs: Sequence[tuple[NcclTestsLog, str] | Validation],
    *,
    topology: Topology | None = None,
    nic: str | None = None,
    base: NcclParams | None = None,
    fit: list[str] | None = None,
    keep: Sequence[str] = (),
    across_machines: bool = False,
    out_of_sample: bool = True,
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
    keep : sequence of str
        Parameters never fitted (they keep ``base``'s values) when ``fit`` is
        not given: e.g. ``latency_scale`` and ``launch_s``, which describe
        one host's software stack and do not carry over to another machine.
    across_machines : bool
        Allow logs of different machines: the fitted values are then shared
        by all of them (per link family), a compromise a note points out.
    out_of_sample : bool
        With several logs, also predict each from a fit on the others
        (:attr:`Calibration.out_of_sample`); one more fit per log.

    Returns
    -------
    Calibration

    Raises
    ------
    CalibrationError
        If the logs come from different machines (and ``across_machines`` is
        False), there are no more sizes than parameters, or a parameter asked
        for in ``fit`` is one the logs cannot determine (the message says why).
    UnknownNameError
        If ``fit`` names a parameter that cannot be fitted.

    """
    base = base or NcclParams()
    cases = _unique_keys([case_of(i, item, base, topology, nic) for i, item in enumerate(logs)])
    if not cases:
        raise CalibrationError("no logs to fit")
    candidates = [name for name in _check_request(fit) if name not in set(_check_request(list(keep)))]
    if fit is None:  # a network kind no log's machine has is not even tried
        present = {link.kind for case in cases for link in case.topology.links}
        absent = {f"efficiency.{kind}" for kind in NETWORK_KINDS if kind not in present} | {
            f"ring_channel_net.{kind}" for kind in DEFAULT_RING_CHANNEL_NET_Bps if kind not in present
        }
        candidates = [name for name in candidates if name not in absent]
    if not across_machines:
        check_one_machine([(c.key, c.machine) for c in cases])
    rows = sum(len(c.nbytes) for c in cases)
    if fit is not None:
        _check_rows(rows, candidates)
    everything = Problem(cases, base, candidates)
    theta0 = everything.start()
    kept, dropped = select(everything.jacobian(theta0, everything.residuals(theta0)), candidates, cases)
    if fit is not None and dropped:
        raise CalibrationError("cannot fit " + "; ".join(f"{n}: {why}" for n, why in dropped.items()))
    names = [candidates[i] for i in kept]
    _check_rows(rows, names)
    problem, theta, r, log_sigmas = _fit_determined(cases, base, names, dropped, fit is not None, rows)
    notes = bound_notes(problem, everything, theta, log_sigmas, dropped)
    notes += pooled_note(cases) + noise_notes(cases)
    before = Problem(cases, base, []).residuals(np.zeros(0))
    calibration = _calibration(problem, theta, r, log_sigmas, before, dropped, notes, problem.jacobians)
    calibration = replace(calibration, notes=[*calibration.notes, *metric_note(calibration, before, r)])
    if out_of_sample and len(cases) > 1:
        calibration = replace(calibration, out_of_sample=_leave_one_out(cases, base, names))
    return calibration


def _fit_determined(
    cases: list[Case], base: NcclParams, names: list[str], dropped: dict[str, str], asked: bool, rows: int
) -> tuple[Problem, np.ndarray, np.ndarray, np.ndarray]:
    """Fit ``names``, dropping (or, if ``asked``, refusing) the least determined until all are."""
    while True:
        problem = Problem(cases, base, names)
        theta, r, log_sigmas, _ = _solve(problem)
        worst = least_determined(log_sigmas)
        if worst is None:
            return problem, theta, r, log_sigmas
        value = value_text(names[worst], math.exp(theta[worst]))
        reason = (
            f"not determined by these logs: the fit gives {value} "
            f"with a 1-sigma uncertainty of {log_sigmas[worst]:.0%} of its value"
        )
        if asked:
            raise CalibrationError(f"cannot fit {names[worst]}: {reason}")
        dropped[names.pop(worst)] = reason
        _check_rows(rows, names)


def _leave_one_out(
    cases: list[Case], base: NcclParams, names: list[str]
) -> dict[str, dict[str, dict[str, float | int | None]]]:
    """Each log's error summary when predicted by a fit on the other logs.

    The other logs fit those of ``names`` they determine (as :func:`fit`
    selects them); the rest keep their starting values, as they would for
    a user who has only those logs.
    """
    out = {}
    for k, held_out in enumerate(cases):
        rest = cases[:k] + cases[k + 1 :]
        probe = Problem(rest, base, names)
        start = probe.start()
        kept, _ = select(probe.jacobian(start, probe.residuals(start)), names, rest)
        others = Problem(rest, base, [names[i] for i in kept])  # the rest at their starting values
        params = others.params(solve(others))
        errors = held_out.predicted(params) / held_out.measured_s - 1
        out[held_out.key] = error_summary(zip(held_out.nbytes, (float(e) for e in errors)))
    return out


def _check_rows(rows: int, names: list[str]) -> None:
    if not names:
        raise CalibrationError("no parameter of the NCCL model changes any predicted time of these logs")
    if rows <= len(names):
        raise CalibrationError(
            f"{rows} measured sizes cannot determine {len(names)} parameters "
            f"({', '.join(names)}) and their uncertainty; give more sizes or logs"
        )


def _solve(problem: Problem) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(log-parameters, residuals, their 1-sigma, Jacobian evaluations) at the least-squares solution."""
    theta = solve(problem)
    r = problem.residuals(theta)
    return theta, r, parameter_sigmas(problem.jacobian(theta, r), r), problem.jacobians


def _calibration(
    problem: Problem,
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
        implausible(
            fitted,
            {n: (math.exp(lo), math.exp(hi)) for n, lo, hi in zip(problem.names, problem.low, problem.high)},
        ),
    )
