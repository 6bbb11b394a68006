"""The ``commsim validate`` and ``commsim calibrate`` commands (registered by :mod:`commsim.cli`).

Thin: they parse options and call
:func:`commsim.calibrate.validate.validate_file` and
:func:`commsim.calibrate.fit.fit`. Heavy modules are imported inside the
commands so that ``commsim --help`` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from commsim.cli_console import err, out

if TYPE_CHECKING:
    from commsim.calibrate.validate import Validation
    from commsim.nccl import NcclParams
    from commsim.topology.model import Topology

__all__ = ["calibrate", "validate"]

LogTopology = Annotated[str | None, typer.Option(help="Topology name or YAML path (default: inferred).")]
Nic = Annotated[str | None, typer.Option(help="Network link kind for multi-node logs, e.g. ib_hdr.")]


def validate(
    log: Annotated[Path, typer.Argument(help="nccl-tests output (text or -J JSON).")],
    topology: LogTopology = None,
    nic: Nic = None,
    calibrated: Annotated[
        Path | None, typer.Option(help="Calibrated topology from 'commsim calibrate'.")
    ] = None,
    collective: Annotated[str | None, typer.Option(help="Collective, if the log does not name it.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    plot: Annotated[
        Path | None, typer.Option(help="Write measured vs predicted busbw to this PNG/SVG.")
    ] = None,
) -> None:
    """Compare a real nccl-tests log with the NCCL model's prediction for every size."""
    import json

    from commsim.calibrate.validate import validate_file

    topo, params = _machine(topology, calibrated)
    report = validate_file(log, topology=topo, nic=nic, params=params, collective=collective)
    if plot is not None:
        from commsim.report.plots import plot_validation

        plot_validation(report, plot)
    if json_out:
        print(json.dumps(report.to_json(), indent=2))
        return
    _print_validation(report)


def calibrate(
    logs: Annotated[list[Path], typer.Argument(help="nccl-tests outputs of ONE machine.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Write the calibrated topology YAML here.")],
    topology: LogTopology = None,
    nic: Nic = None,
    collective: Annotated[str | None, typer.Option(help="Collective, if the logs do not name it.")] = None,
    fit_param: Annotated[
        list[str] | None, typer.Option("--fit", help="Fit only these parameters (repeatable).")
    ] = None,
) -> None:
    """Fit the NCCL model's physical parameters to logs and write a calibrated topology."""
    from commsim.calibrate.fit import fit
    from commsim.calibrate.validate import validate_file

    topo, _ = _machine(topology, None)
    validations = [validate_file(p, topology=topo, nic=nic, collective=collective) for p in logs]
    calibration = fit(validations, fit=fit_param)
    out.print(calibration.describe(), highlight=False)
    calibration.save(output, validations[0].inference.topology)
    err.print(f"wrote {output}; use it with: commsim validate LOG --calibrated {output}")


def _machine(topology: str | None, calibrated: Path | None) -> tuple[Topology | None, NcclParams | None]:
    """``(topology, NCCL parameters)`` of the logs' machine; None where they are to be inferred.

    A calibrated file (from ``commsim calibrate``) gives both, its parameters
    from its ``nccl:`` mapping; a topology name or YAML path gives the topology.
    """
    if calibrated is not None:
        from commsim.nccl import NcclParams
        from commsim.topology import load_topology_file

        topo = load_topology_file(calibrated)
        return topo, NcclParams.of(topo)
    if topology is not None:
        from commsim.topology import get_topology

        return get_topology(topology), None
    return None, None


def _print_validation(report: Validation) -> None:
    """The validation report as text: machine, one row per size, summary and verdict."""
    from commsim.units import format_bandwidth, format_size, format_time

    data = report.to_json()
    machine = data["machine"]
    out.print(
        f"[bold]{report.source}[/]: {report.collective}, {machine['gpus']} x {machine['gpu_model']}, "
        f"{machine['nodes']} node(s)",
        highlight=False,
    )
    out.print(f"topology: {data['topology']['name']}", highlight=False)
    for reason in machine["reasons"]:
        out.print(f"  - {reason}", highlight=False)
    table = Table()
    for column in (
        "size",
        "measured",
        "predicted",
        "error",
        "measured busbw",
        "predicted busbw",
        "NCCL choice",
    ):
        table.add_column(column, justify="right")
    for r in report.rows:
        table.add_row(
            format_size(r.nbytes),
            format_time(r.measured_time_s),
            format_time(r.predicted_time_s),
            f"{r.error:+.1%}",
            format_bandwidth(r.measured_busbw_Bps),
            format_bandwidth(r.predicted_busbw_Bps),
            f"{r.algorithm}/{r.protocol}",
        )
    out.print(table)
    for regime, stats in data["summary"].items():
        if stats["median_abs_error"] is not None:
            out.print(
                f"{regime}: {stats['sizes']} sizes, median |error| {stats['median_abs_error']:.1%}, "
                f"max {stats['max_abs_error']:.1%}",
                highlight=False,
            )
    for warning in data["warnings"]:
        out.print(f"log warning: {warning}", highlight=False)
    out.print(f"verdict: {data['verdict']}", highlight=False)
