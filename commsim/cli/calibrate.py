"""The ``commsim validate`` and ``commsim calibrate`` commands (registered by :mod:`commsim.cli`).

Thin: they parse options and call
:func:`commsim.calibrate.validate.validate_file` and
:func:`commsim.calibrate.fit.fit`. Heavy modules are imported inside the
commands so that ``commsim --help`` stays fast.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from commsim.cli.console import err, escape, out
from commsim.cli.log_options import (
    Algo,
    Collective,
    Collnet,
    Devices,
    Gpu,
    Gpus,
    GpusPerNode,
    LogTopology,
    NcclTopo,
    NcclVersion,
    NetProtocol,
    Nic,
    NicsPerNode,
    Nodes,
    NvlinkDomain,
    P2p,
    Proto,
    check_nic,
    choice_list,
    with_devices,
    with_net_protocol,
    with_nvlink_domain,
)
from commsim.errors import CommsimError, UnknownNameError

if TYPE_CHECKING:
    from commsim.calibrate.inference import RunOptions
    from commsim.calibrate.validate import Validation
    from commsim.nccl import NcclParams
    from commsim.topology.model import Topology

__all__ = ["calibrate", "validate"]


def validate(
    log: Annotated[Path, typer.Argument(help="nccl-tests or rccl-tests output (text or -J JSON).")],
    topology: LogTopology = None,
    nccl_topo: NcclTopo = None,
    nic: Nic = None,
    gpus: Gpus = None,
    nodes: Nodes = None,
    gpus_per_node: GpusPerNode = None,
    nics_per_node: NicsPerNode = None,
    gpu: Gpu = None,
    p2p: P2p = None,
    algo: Algo = None,
    proto: Proto = None,
    nccl_version: NcclVersion = None,
    nvlink_domain: NvlinkDomain = None,
    net_protocol: NetProtocol = None,
    collnet: Collnet = None,
    devices: Devices = None,
    calibrated: Annotated[
        Path | None, typer.Option(help="Calibrated topology from 'commsim calibrate'.")
    ] = None,
    collective: Collective = None,
    run: Annotated[
        int | None, typer.Option(help="Validate only run N (1-based) of a log that holds several runs.")
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    plot: Annotated[
        Path | None, typer.Option(help="Write measured vs predicted busbw to this PNG/SVG.")
    ] = None,
) -> None:
    """Compare a real nccl-tests log with the NCCL model's prediction for every size.

    Before the table it prints what it knows about the run and the machine and how it knows it
    (a log line, an option, or "assumed"); options always win over the log.
    """
    import json

    from commsim.calibrate.validate import validate_runs

    if plot is not None:
        from commsim.cli.options import check_writable
        from commsim.report.plots import check_output

        check_writable(check_output(plot), "--plot")
    check_logs_are_files([log])
    topo, params = logs_machine(topology, calibrated, nccl_topo, gpu, log)
    options = _options(
        topo, nic, gpus, nodes, gpus_per_node, nics_per_node, gpu, p2p, algo, proto, nccl_version
    )
    options = with_devices(with_nvlink_domain(options, nvlink_domain), devices)
    options = with_net_protocol(options, net_protocol)
    options = replace(options, collnet=collnet)
    options = replace(
        options, board=board_class(topology), topology_option=_machine_option(calibrated, nccl_topo)
    )
    reports = validate_runs(log, options=options, params=params, collective=collective, n_ranks=gpus)
    if run is not None:
        if not 1 <= run <= len(reports):
            from commsim.calibrate.parser import describe_runs

            count, listed = len(reports), describe_runs([report.log for report in reports])
            raise CommsimError(
                f"{log}: --run {run}: the log holds {count} run(s) ({listed}); give 1 to {count}"
            )
        reports = [reports[run - 1]]
    if calibrated is not None and topo is not None:
        from commsim.cli.console import say

        for warning in check_calibrated_gpu(calibrated, topo, reports):
            say(f"warning: {warning}")
    if plot is not None:
        from commsim.report.plots import plot_validation

        plot_validation(reports[0], plot)
    if json_out:
        data = reports[0].to_json() if len(reports) == 1 else {"runs": [r.to_json() for r in reports]}
        print(json.dumps(data, indent=2))
        return
    for index, report in enumerate(reports, start=1):
        if len(reports) > 1:
            out.rule(f"run {index} of {len(reports)}")
        _print_validation(report)


MAX_RANKS = 65_536
"""The most ranks (or hosts, GPUs per host, NICs per host) an option may give: the parser's bound on a run."""


def check_logs_are_files(logs: list[Path]) -> None:
    """Refuse a log that is a pipe (``<(ssh host cat log)``, ``/dev/stdin``): it is read more than once.

    Raises
    ------
    CommsimError
        Naming the log and how to keep it in a file.
    """
    import stat

    for log in logs:
        try:
            mode = log.stat().st_mode
        except OSError:
            continue  # the reader says what is wrong with it
        if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
            raise CommsimError(
                f"{log}: is a pipe or a device, not a file; commsim reads a log more than once, so save "
                "it to a file first (e.g. ssh host cat run.log > run.log)"
            )


def _options(
    topology: Topology | None,
    nic: str | None,
    gpus: int | None,
    nodes: int | None,
    gpus_per_node: int | None,
    nics_per_node: int | None,
    gpu: str | None,
    p2p: bool | None,
    algo: str | None,
    proto: str | None,
    nccl_version: str | None,
) -> RunOptions:
    from commsim.calibrate.infer_settings import ALGO_NAMES, PROTO_NAMES
    from commsim.calibrate.inference import RunOptions

    for flag, value in (
        ("--gpus", gpus),
        ("--nodes", nodes),
        ("--gpus-per-node", gpus_per_node),
        ("--nics-per-node", nics_per_node),
    ):
        if value is not None and value < 1:
            raise CommsimError(f"{flag} must be at least 1, got {value}")
        if value is not None and value > MAX_RANKS:  # 100,000 ranks built a 50,000-host cluster for minutes
            raise CommsimError(f"{flag} {value} is above the limit of {MAX_RANKS:,} ranks")
    if nic is not None:
        check_nic(nic)
    return RunOptions(
        gpus=gpus,
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        nics_per_node=nics_per_node,
        nic=nic,
        p2p=p2p,
        gpu=gpu,
        algorithms=choice_list(algo, "--algo", ALGO_NAMES),
        protocols=choice_list(proto, "--proto", PROTO_NAMES),
        nccl_version=nccl_version,
        topology=topology,
    )


def calibrate(
    logs: Annotated[list[Path], typer.Argument(help="nccl-tests outputs of ONE machine.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Write the calibrated topology YAML here.")],
    topology: LogTopology = None,
    nccl_topo: NcclTopo = None,
    nic: Nic = None,
    gpus: Gpus = None,
    nodes: Nodes = None,
    gpus_per_node: GpusPerNode = None,
    nics_per_node: NicsPerNode = None,
    gpu: Gpu = None,
    p2p: P2p = None,
    algo: Algo = None,
    proto: Proto = None,
    nccl_version: NcclVersion = None,
    nvlink_domain: NvlinkDomain = None,
    net_protocol: NetProtocol = None,
    collnet: Collnet = None,
    devices: Devices = None,
    collective: Collective = None,
    fit_param: Annotated[
        list[str] | None, typer.Option("--fit", help="Fit only these parameters (repeatable).")
    ] = None,
) -> None:
    """Fit the NCCL model's physical parameters to logs and write a calibrated topology."""
    from commsim.calibrate.fit import fit
    from commsim.calibrate.validate import validate_runs
    from commsim.cli.options import check_not_input, check_writable, wrote

    check_writable(output, "--output", (".yaml", ".yml"))  # --topology/--calibrated know a file by it
    check_not_input(output, "--output", logs)
    check_logs_are_files(logs)
    topo, _ = logs_machine(topology, None, nccl_topo, gpu, logs[0] if logs else None)
    options = _options(
        topo, nic, gpus, nodes, gpus_per_node, nics_per_node, gpu, p2p, algo, proto, nccl_version
    )
    options = with_devices(with_nvlink_domain(options, nvlink_domain), devices)
    options = with_net_protocol(options, net_protocol)
    options = replace(options, collnet=collnet)
    options = replace(options, board=board_class(topology), topology_option=_machine_option(None, nccl_topo))
    validations = [
        v for p in logs for v in validate_runs(p, options=options, collective=collective, n_ranks=gpus)
    ]
    calibration = fit(validations, fit=fit_param)
    out.print(escape(calibration.describe()), highlight=False)
    calibration.save(output, validations[0].inference.topology)
    err.print(
        escape(f"{wrote(output)}; use it with: commsim validate LOG --calibrated {output}"), highlight=False
    )


def logs_machine(
    topology: str | None,
    calibrated: Path | None,
    nccl_topo: Path | None = None,
    gpu: str | None = None,
    log: Path | None = None,
) -> tuple[Topology | None, NcclParams | None]:
    """``(topology, NCCL parameters)`` of the logs' machine; None where they are to be inferred.

    A calibrated file (from ``commsim calibrate``) gives both, its parameters
    from its ``nccl:`` mapping; a topology name, builder, YAML path,
    ``nvidia-smi topo -m`` file or NCCL topology dump gives the topology. An
    ``nvidia-smi topo -m`` matrix names no GPU model: it is imported with
    ``--gpu``, else with the GPU the log's device list names (its PCIe
    generation and NVLink speed come from the model).
    """
    given = [
        name
        for name, value in (
            ("--topology", topology),
            ("--nccl-topo", nccl_topo),
            ("--calibrated", calibrated),
        )
        if value is not None
    ]
    if len(given) > 1:
        raise CommsimError(f"{' and '.join(given)} each name the machine; give one of them")
    if nccl_topo is not None:
        from commsim.interop.nccl_topo import read_nccl_topo

        return read_nccl_topo(nccl_topo).topology, None
    if calibrated is not None:
        from commsim.nccl import NcclParams
        from commsim.topology import load_topology_file

        topo = load_topology_file(calibrated)
        if not topo.nccl:  # review27 S7: a plain topology is no calibration
            raise CommsimError(
                f"--calibrated {calibrated}: has no nccl: parameters, so commsim calibrate did not write it; "
                f"give it as --topology {calibrated}, or calibrate first (commsim calibrate LOG -o C.yaml)"
            )
        return topo, NcclParams.of(topo)
    if topology is not None and board_class(topology) is None:
        from commsim.topology import get_topology

        path = Path(topology)
        if path.suffix not in (".yaml", ".yml") and path.is_file():
            from commsim.topology.nvsmi import load_topo_matrix

            model = gpu or _log_gpu(log)
            return (load_topo_matrix(path, gpu_model=model) if model else load_topo_matrix(path)), None
        try:
            return get_topology(topology), None
        except UnknownNameError as error:
            from commsim.calibrate.infer_machine import BOARD_CLASSES

            boards = [f"{b} (board of the log's GPU)" for b in BOARD_CLASSES]
            raise UnknownNameError("topology", topology, [*error.valid, *boards]) from None
    return None, None


def check_calibrated_gpu(calibrated: Path, topo: Topology, reports: list[Validation]) -> list[str]:
    """Refuse a calibration fitted on another GPU than the one the log is validated on.

    The calibration's GPU is the catalogue entry its file's GPUs name (``model:``, as ``commsim
    calibrate`` writes it); the log's is the ``gpu`` fact of its validation (``--gpu``, else the
    device list). The fitted parameters (link efficiencies, latency) are that GPU's machine's: on
    another generation they are a silent wrong answer. What cannot be compared, or another model of
    the same generation (A100 SXM4 40GB against 80GB: the same links), is a warning, returned: a file
    naming no GPU the catalogue knows, or a log that does not say which GPU ran.

    Raises
    ------
    CommsimError
        Naming both GPUs and what to do instead.
    """
    from commsim.hardware import find_gpu

    fitted: set[str] = set()
    for device in topo.devices:
        if device.kind == "gpu" and device.model:
            match = find_gpu(device.model)
            if match.spec is not None and not match.generic:
                fitted.add(match.spec.name)
    if not fitted:
        return [
            f"--calibrated {calibrated}: the file records no GPU model the catalogue knows, so whether "
            "it was calibrated on this log's GPU is not checked"
        ]
    named = " and ".join(sorted(fitted))
    warnings: list[str] = []
    for report in reports:
        fact = report.inference.facts.get("gpu")
        if fact is None:
            warnings.append(
                f"--calibrated {calibrated}: calibrated on {named}, but {report.source} does not say which "
                "GPU ran, so that is not checked; give --gpu MODEL to check it"
            )
        elif str(fact.value) not in fitted and _generation(str(fact.value)) in {
            _generation(f) for f in fitted
        }:
            warnings.append(
                f"--calibrated {calibrated}: calibrated on {named}, {report.source} ran on {fact.value}: "
                f"the same GPU generation ({_generation(str(fact.value))}), so the fit is used; calibrate "
                "on logs of this GPU to be sure"
            )
        elif str(fact.value) not in fitted:
            raise CommsimError(
                f"--calibrated {calibrated}: calibrated on {named}, but {report.source} ran on "
                f"{fact.value} ({fact.evidence[0].describe()}); a calibration holds for the GPU it was "
                "fitted on: calibrate on logs of this GPU (commsim calibrate LOG -o C.yaml), or drop "
                "--calibrated"
            )
    return list(dict.fromkeys(warnings))


def _generation(gpu: str) -> str | None:
    """A GPU's generation (``ampere``, ``hopper`` ...), None when unknown: two models of one generation
    share their links and NCCL's tables (A100 SXM4 40GB and 80GB), so a fit carries over."""
    from commsim.nccl.machine import gpu_arch

    arch = gpu_arch(gpu)
    return None if arch == "unknown" else arch


def _machine_option(calibrated: Path | None, nccl_topo: Path | None) -> str:
    """The option that names the machine, for messages (``logs_machine`` allows only one)."""
    return (
        "--calibrated" if calibrated is not None else "--nccl-topo" if nccl_topo is not None else "--topology"
    )


def board_class(topology: str | None) -> str | None:
    """``--topology`` as a board class of the log's GPU (``nvlink_mesh4``, ``nvswitch8`` ...: the names
    the report's board fact uses), None when it names a machine (a shipped name, builder or file)."""
    from commsim.calibrate.infer_machine import BOARD_CLASSES

    if topology is None or topology not in BOARD_CLASSES or Path(topology).exists():
        return None
    return topology


def _log_gpu(log: Path | None) -> str | None:
    """The GPU model a log's device list names (None when it names none or cannot be read yet: the
    validation that follows reports why)."""
    if log is None:
        return None
    from commsim.calibrate.parser import load_nccl_tests_runs
    from commsim.hardware import find_gpu

    try:
        runs = load_nccl_tests_runs(log)
    except CommsimError:
        return None
    printed = next((run.gpu_model for run in runs if run.gpu_model), None)
    match = find_gpu(printed) if printed else None
    return match.spec.name if match is not None and match.spec is not None and not match.generic else None


def _print_validation(report: Validation) -> None:
    """The validation report as text: machine, one row per size, summary and verdict."""
    from commsim.units import format_bandwidth, format_size, format_time

    data = report.to_json()
    machine = data["machine"]
    out.print(
        f"[bold]{escape(report.source)}[/]: {report.collective}, {machine['gpus']} x "
        f"{escape(str(machine['gpu_model']))}, {machine['nodes']} node(s)",
        highlight=False,
    )
    out.print(f"machine modelled: {escape(data['topology']['description'])}", highlight=False)
    out.print("what the run is, and how it is known:", highlight=False)
    for fact in report.inference.facts.values():
        mark = "[yellow]assumed[/]" if fact.assumed else "[green]known[/]  "
        out.print(f"  {mark} {escape(fact.describe())}", highlight=False)
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
        out.print(f"warning: {escape(warning)}", highlight=False)
    from commsim.calibrate.accuracy import expected_error_sentence

    out.print(f"expected error: {escape(expected_error_sentence())}", highlight=False)
    out.print(f"verdict: {escape(data['verdict'])}", highlight=False)
