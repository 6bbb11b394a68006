"""The least-squares problem of :func:`commsim.calibrate.fit.fit`: logs, log-parameters, SciPy's solver.

:class:`Case` is one log ready to predict; :class:`Problem` maps the
logarithms of the fitted parameters to ``log(predicted / measured)`` of
every size, with central finite-difference Jacobians in log space;
:func:`solve` minimises its sum of squares within bounds with
:func:`scipy.optimize.least_squares` (trust-region reflective).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import least_squares

from commsim.algorithms.base import Problem as ModelProblem
from commsim.calibrate.fit_checks import MachineKey, scaled
from commsim.collectives import Collective
from commsim.nccl.model import NcclModel
from commsim.nccl.params import NcclParams
from commsim.topology.linkkinds import LINK_KINDS
from commsim.topology.model import Topology

__all__ = ["Case", "Problem", "get_value", "log_bounds", "solve", "value_text", "with_values"]

_BOUNDS = {"latency_scale": (1e-2, 1e2), "launch_s": (1e-9, 1e-3)}
_RATE_BOUNDS = (1e8, 1e12)  # a ring channel's network rate (B/s): 0.1 GB/s to 1 TB/s
_EFFICIENCY_BOUNDS = (1e-3, 1.0)
_STEP = 1e-5  # finite-difference step in log-parameter space
_TOLERANCE = 1e-10  # least_squares' ftol, xtol and gtol
_MAX_EVALUATIONS = 200  # least_squares' max_nfev


@dataclass(frozen=True)
class Case:
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
    machine: MachineKey
    model: NcclModel | None = field(default=None, compare=False)
    noisy: tuple[int, ...] = ()
    """Sizes left out of the fit: measured slower than the next larger size by more than 20 %."""
    cuda_graph: bool = False
    """The calls were replayed from CUDA graphs (nccl-tests ``-G``): no host issue per call."""

    def predicted(self, params: NcclParams) -> np.ndarray:
        """Predicted time of every size (s); one model keeps the box's replayed bandwidths across calls."""
        model = (self.model or NcclModel(self.topology, params)).with_params(params)
        problem = ModelProblem(self.topology, self.ranks, self.collective, float(self.nbytes[0]))
        sizes = [float(n) for n in self.nbytes]
        times = model.times(
            problem, sizes, self.gpus_per_thread, self.algorithms, self.protocols, cuda_graph=self.cuda_graph
        )
        return np.array(times)


def value_text(name: str, value: float) -> str:
    number, unit = scaled(name, value)
    return f"{number:.{3 if name == 'launch_s' else 4}g}{unit}"


def get_value(params: NcclParams, name: str) -> float:
    """The value ``name`` has in ``params``: for a network kind, the efficiency its links run at
    (the kind's, else its transport's, else its family's)."""
    if name.startswith("efficiency."):
        key = name.split(".", 1)[1]
        entry = LINK_KINDS.get(key)
        if entry is not None and entry.family in ("infiniband", "ethernet"):
            return params.network_efficiency(key, entry.transport, entry.family)
        return params.family_efficiency(key)
    if name.startswith("ring_channel_net."):
        rate = params.ring_channel_net(name.split(".", 1)[1])
        if rate is None:
            raise ValueError(f"{name} has no value to start from")
        return rate
    return float(getattr(params, name))


def with_values(params: NcclParams, values: dict[str, float]) -> NcclParams:
    """``params`` with the named parameters replaced (validated)."""
    data = params.model_dump()
    data["efficiency"] = dict(data["efficiency"])
    data["ring_channel_net_Bps"] = dict(data["ring_channel_net_Bps"])
    for name, value in values.items():
        if name.startswith("efficiency."):
            data["efficiency"][name.split(".", 1)[1]] = value
        elif name.startswith("ring_channel_net."):
            data["ring_channel_net_Bps"][name.split(".", 1)[1]] = value
        else:
            data[name] = value
    return NcclParams.model_validate(data)


def log_bounds(name: str) -> tuple[float, float]:
    low, high = (
        _RATE_BOUNDS if name.startswith("ring_channel_net.") else _BOUNDS.get(name, _EFFICIENCY_BOUNDS)
    )
    return math.log(low), math.log(high)


class Problem:
    """The least-squares problem: log-parameters in, log time ratios out."""

    def __init__(self, cases: list[Case], base: NcclParams, names: list[str]) -> None:
        self.cases, self.base, self.names = cases, base, names
        self.log_measured = np.concatenate([np.log(c.measured_s) for c in cases])
        bounds = [log_bounds(n) for n in names]
        self.low, self.high = np.array([b[0] for b in bounds]), np.array([b[1] for b in bounds])
        self.jacobians = 0

    def start(self) -> np.ndarray:
        values = [
            min(max(get_value(self.base, n), math.exp(lo)), math.exp(hi))
            for n, lo, hi in zip(self.names, self.low, self.high)
        ]
        return np.log(np.array(values))

    def params(self, theta: np.ndarray) -> NcclParams:
        return with_values(self.base, {n: float(math.exp(t)) for n, t in zip(self.names, theta)})

    def residuals(self, theta: np.ndarray) -> np.ndarray:
        params = self.params(theta)
        return np.log(np.concatenate([c.predicted(params) for c in self.cases])) - self.log_measured

    def jacobian(self, theta: np.ndarray, r0: np.ndarray) -> np.ndarray:
        """Central differences in log space; one-sided at a bound, and at a jump.

        A predicted time jumps where a parameter flips NCCL's choice (onto a ring LL call it then runs
        on few channels: :mod:`commsim.nccl.channel_cut`); a difference across the jump is no slope
        (a 1e-5 step gave latency_scale a 1-sigma of 4e-5). Where the two one-sided differences of a
        size disagree by more than half, the one of smaller magnitude, the side without the jump, is
        its slope (away from a bound, where a side's step is cut short)."""
        self.jacobians += 1
        columns = []
        for i in range(len(theta)):
            up, down = theta.copy(), theta.copy()
            up[i] = min(theta[i] + _STEP, self.high[i])
            down[i] = max(theta[i] - _STEP, self.low[i])
            r_up = self.residuals(up) if up[i] != theta[i] else r0
            r_down = self.residuals(down) if down[i] != theta[i] else r0
            column = (r_up - r_down) / (up[i] - down[i])
            if min(up[i] - theta[i], theta[i] - down[i]) > 0.5 * _STEP:  # a full step each side
                forward, backward = (r_up - r0) / (up[i] - theta[i]), (r0 - r_down) / (theta[i] - down[i])
                larger = np.maximum(np.abs(forward), np.abs(backward))
                jump = np.abs(forward - backward) > 0.5 * larger + 1e-12
                smaller = np.where(np.abs(forward) < np.abs(backward), forward, backward)
                column = np.where(jump, smaller, column)
            columns.append(column)
        return np.column_stack(columns) if columns else np.zeros((len(r0), 0))


def solve(problem: Problem) -> np.ndarray:
    """SciPy's bounded trust-region least squares from :meth:`Problem.start`."""
    if not problem.names:
        return np.zeros(0)
    start = problem.start()
    result = least_squares(
        problem.residuals,
        start,
        jac=lambda theta: problem.jacobian(theta, problem.residuals(theta)),
        bounds=(problem.low, problem.high),
        method="trf",
        max_nfev=_MAX_EVALUATIONS,
        ftol=_TOLERANCE,
        xtol=_TOLERANCE,
        gtol=_TOLERANCE,
    )
    return np.clip(np.asarray(result.x, dtype=float), problem.low, problem.high)
