"""What a calibration found: fitted parameters, residuals, and the calibrated topology file.

:class:`Calibration` is the result of :func:`commsim.calibrate.fit.fit`: the
fitted parameters with their 1-sigma uncertainties, the ones the logs cannot
determine, the error of every size before and after (:class:`Residual`), a
short description, and the topology YAML with a top-level ``nccl:`` mapping.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from commsim.calibrate.fit_checks import scaled
from commsim.calibrate.fit_problem import value_text
from commsim.calibrate.validate import error_summary
from commsim.nccl.params import NcclParams
from commsim.textfile import write_whole
from commsim.topology.io import topology_to_dict
from commsim.topology.model import Topology

__all__ = ["Calibration", "Residual"]


@dataclass(frozen=True)
class Residual:
    """One size of one log: measured, and predicted before and after the fit (s)."""

    nbytes: int
    measured_time_s: float
    before_time_s: float
    after_time_s: float

    @property
    def before_error(self) -> float:
        """Relative time error with the starting parameters (positive: predicted slower)."""
        return self.before_time_s / self.measured_time_s - 1

    @property
    def error(self) -> float:
        """Relative time error with the fitted parameters."""
        return self.after_time_s / self.measured_time_s - 1

    @property
    def log_residual(self) -> float:
        """``log(predicted / measured)`` after the fit: what was minimised."""
        return math.log(self.after_time_s / self.measured_time_s)


@dataclass(frozen=True)
class Calibration:
    """What :func:`~commsim.calibrate.fit.fit` found.

    Attributes
    ----------
    params : NcclParams
        The starting parameters with the fitted ones replaced.
    fitted : dict
        ``{name: (value, sigma)}``: fitted value and its 1-sigma uncertainty
        (seconds for ``launch_s``, else dimensionless).
    dropped : dict
        ``{name: reason}`` of candidate parameters the data cannot determine.
    residuals : dict
        ``{log: [Residual per size]}``; logs keyed by their source name.
    before, after : dict
        Median and max absolute time error over all logs, as
        :meth:`Validation.summary`, with the starting and fitted parameters.
    notes : list of str
        Fitted parameters the logs only bound, logs pooled across machines.
    iterations : int
        Jacobian evaluations the solver took.
    warnings : list of str
        Fitted values a real machine does not give, or that ended on their
        bounds (:func:`commsim.calibrate.fit_checks.implausible`): the model,
        not the parameter, misses these logs.
    out_of_sample : dict or None
        ``{log: summary}``: each log's error (as :meth:`log_summary`) when
        predicted by a fit of the same parameters on the other logs; None
        for a single log. What a new log of the machine should expect.
    """

    params: NcclParams
    fitted: dict[str, tuple[float, float]]
    dropped: dict[str, str]
    residuals: dict[str, list[Residual]]
    before: dict[str, dict[str, float | int | None]]
    after: dict[str, dict[str, float | int | None]]
    notes: list[str] = field(default_factory=list)
    iterations: int = 0
    warnings: list[str] = field(default_factory=list)
    out_of_sample: dict[str, dict[str, dict[str, float | int | None]]] | None = None

    def log_summary(self, key: str, after: bool = True) -> dict[str, dict[str, float | int | None]]:
        """The error summary of one log (after the fit, or before it)."""
        return error_summary((r.nbytes, r.error if after else r.before_error) for r in self.residuals[key])

    def nccl_mapping(self) -> dict[str, Any]:
        """The ``nccl:`` mapping of a calibrated topology file: every NcclParams field."""
        return self.params.model_dump(mode="json")

    def describe(self) -> str:
        """A few lines: fitted values with sigma, dropped parameters, errors before and after."""
        lines = [f"{name} = {_format(name, value, sigma)}" for name, (value, sigma) in self.fitted.items()]
        lines += [f"not fitted: {name}: {reason}" for name, reason in self.dropped.items()]
        lines += self.notes
        lines += [f"warning: {warning}" for warning in self.warnings]
        for label, summary in (("before", self.before), ("after", self.after)):
            lines.append(f"median |error| {label}: {_regimes(summary)}")
        if self.out_of_sample:
            lines.append(
                f"median |error| out of sample (each log predicted by a fit on the others): "
                f"{self.out_of_sample_median():.1%}"
            )
            lines += [f"  {key}: {_regimes(summary)}" for key, summary in self.out_of_sample.items()]
        return "\n".join(lines)

    def out_of_sample_median(self) -> float:
        """Median over logs of each log's out-of-sample median |error| (all sizes); nan for one log."""
        if not self.out_of_sample:
            return math.nan
        values = [s["all"]["median_abs_error"] for s in self.out_of_sample.values()]
        return float(statistics.median(float(v) for v in values if v is not None))

    def to_topology_yaml(self, topology: Topology) -> str:
        """``topology`` as YAML, plus a top-level ``nccl:`` mapping of the fitted parameters."""
        data = topology_to_dict(topology)
        data["nccl"] = self.nccl_mapping()
        header = [f"# calibrated by commsim.calibrate.fit on {', '.join(self.residuals)}"]
        header += [f"#   {name} = {_format(name, v, s)}" for name, (v, s) in self.fitted.items()]
        header.append(f"#   median |time error| {_median(self.before)} before, {_median(self.after)} after")
        return "\n".join(header) + "\n" + yaml.safe_dump(data, sort_keys=False, width=100)

    def save(self, path: str | Path, topology: Topology) -> None:
        """Write :meth:`to_topology_yaml` to ``path``, whole or not at all (an existing file stays as it
        was if the write fails)."""
        write_whole(path, self.to_topology_yaml(topology))


def _regimes(summary: dict[str, dict[str, float | int | None]]) -> str:
    """``all 3.1%, bandwidth_bound 1.2%, ...`` (regimes without sizes left out)."""
    return ", ".join(
        f"{regime} {float(s['median_abs_error']):.1%}"
        for regime, s in summary.items()
        if s["median_abs_error"] is not None
    )


def _format(name: str, value: float, sigma: float) -> str:
    """``0.78 +- 0.02`` (``3.1 us +- 0.4 us`` for launch_s, ``19.6 GB/s +- 1.4 GB/s`` for a channel rate)."""
    spread, unit = scaled(name, sigma)
    return f"{value_text(name, value)} +- {spread:.2g}{unit}"


def _median(summary: dict[str, dict[str, float | int | None]]) -> str:
    value = summary["all"]["median_abs_error"]
    return "-" if value is None else f"{float(value):.1%}"
