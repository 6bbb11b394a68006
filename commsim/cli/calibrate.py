"""The ``commsim validate`` and ``commsim calibrate`` commands (registered by :mod:`commsim.cli`).

Thin: they parse options and call
:func:`commsim.calibrate.validate.validate_file` and
:func:`commsim.calibrate.fit.fit`. Heavy modules are imported inside the
commands so that ``commsim --help`` stays fast.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from commsim.cli.console import err, escape, out
from commsim.errors import CommsimError, UnknownNameError

if TYPE_CHECKING:
    from commsim.calibrate.inference import RunOptions
    from commsim.calibrate.validate import Validation
    from commsim.nccl import NcclParams
    from commsim.topology.model import Topology

__all__ = ["calibrate", "validate"]

LogTopology = Annotated[
    str | None,
    typer.Option(
        help="Machine of one host: a shipped name, a builder (with its defaults), a topology YAML, an "
        "nvidia-smi topo -m file, or a board class the report names (nvswitch8, nvlink_mesh4, dgx1_cube, "
        "xgmi8, pcie ...: that board of the log's GPU) (default: inferred from the log). The YAML "
        "describes a machine or names a builder with its fields, e.g. 'builder: nvswitch_box' and "
        "'gpus: 16' on two lines (--gpus is the run's rank count here, not a builder's)."
    ),
]
Nic = Annotated[
    str | None,
    typer.Option(help="Network link kind between hosts, e.g. ib_ndr, roce_400g, efa_v2, tcp_100g."),
]
Gpus = Annotated[
    int | None,
    typer.Option(help="Total ranks of the run (wins over the log; without it, --nodes x --gpus-per-node)."),
]
Nodes = Annotated[int | None, typer.Option(help="Hosts the run spans (wins over the log).")]
GpusPerNode = Annotated[
    int | None, typer.Option("--gpus-per-node", help="Ranks per host (wins over the log).")
]
NicsPerNode = Annotated[int | None, typer.Option("--nics-per-node", help="NICs per host that carry traffic.")]
Gpu = Annotated[str | None, typer.Option(help="GPU model, e.g. 'H100 SXM' or 'MI300X' (see commsim gpus).")]
P2p = Annotated[
    bool | None, typer.Option("--p2p/--no-p2p", help="Whether GPU peer-to-peer works (default: inferred).")
]
Algo = Annotated[
    str | None, typer.Option(help="Restrict NCCL's algorithms like NCCL_ALGO, e.g. ring or ring,tree.")
]
Proto = Annotated[
    str | None, typer.Option(help="Restrict NCCL's protocols like NCCL_PROTO, e.g. Simple or LL,LL128.")
]
NcclVersion = Annotated[
    str | None, typer.Option("--nccl-version", help="NCCL version of the run, e.g. 2.21.5.")
]
NvlinkDomain = Annotated[
    str | None,
    typer.Option(
        "--nvlink-domain",
        help="Whether the hosts of a GB200/GB300 run share NVLink domains: shared (NVL72 racks) or separate "
        "(each host its own, reaching the others over its NICs). Default: NCCL's INFO lines, else shared "
        "(assumed).",
    ),
]
NetProtocol = Annotated[
    str | None,
    typer.Option(
        "--net-protocol",
        help="The protocol aws-ofi-nccl ran AWS EFA with: sendrecv or rdma (p5/p6 since plugin 1.7). "
        "Default: what the log shows (the plugin's protocol line, OFI_NCCL_PROTOCOL, the instance it "
        "names; a plugin before 1.7, NCCL before 2.12 or efa_v1: sendrecv), else the GPU generation's "
        "default (assumed).",
    ),
]
Devices = Annotated[
    str | None,
    typer.Option(
        "--devices",
        help="The board's GPUs (nvidia-smi indices) each host's ranks run on, in local rank order, e.g. "
        "0,2,4,6, when the log does not say (no device list or CUDA_VISIBLE_DEVICES) and the choice "
        "changes the NICs or links reached.",
    ),
]
Collective = Annotated[
    str | None,
    typer.Option(
        help="Collective, if neither the log's binary nor its table (busbw/algbw, redop, root) settles it."
    ),
]
NcclTopo = Annotated[
    Path | None,
    typer.Option(
        "--nccl-topo",
        help="NCCL's own topology dump of one host (the XML NCCL_TOPO_DUMP_FILE writes): the machine NCCL "
        "detected, used instead of inferring it (not with --topology).",
    ),
]


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
    options = _with_devices(_with_nvlink_domain(options, nvlink_domain), devices)
    options = _with_net_protocol(options, net_protocol)
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
        _check_nic(nic)
    return RunOptions(
        gpus=gpus,
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        nics_per_node=nics_per_node,
        nic=nic,
        p2p=p2p,
        gpu=gpu,
        algorithms=_choice_list(algo, "--algo", ALGO_NAMES),
        protocols=_choice_list(proto, "--proto", PROTO_NAMES),
        nccl_version=nccl_version,
        topology=topology,
    )


def _with_net_protocol(options: RunOptions, net_protocol: str | None) -> RunOptions:
    """``options`` with ``--net-protocol``, refused unless it names one of aws-ofi-nccl's protocols."""
    from commsim.calibrate.infer_ofi import OFI_PROTOCOLS

    if _checked("--net-protocol", net_protocol, OFI_PROTOCOLS) is None:
        return options
    return replace(options, net_protocol=net_protocol)


def _with_nvlink_domain(options: RunOptions, nvlink_domain: str | None) -> RunOptions:
    """``options`` with ``--nvlink-domain``, refused unless it names one of its values."""
    from commsim.calibrate.infer_domain import DOMAIN_CHOICES

    if _checked("--nvlink-domain", nvlink_domain, DOMAIN_CHOICES) is None:
        return options
    return replace(options, nvlink_domain=nvlink_domain)


def _checked(flag: str, value: str | None, choices: Sequence[str]) -> str | None:
    """``value`` (None when not given), refused unless it is one of ``choices``."""
    if value is not None and value not in choices:
        raise CommsimError(f"{flag} {value!r}: valid: {', '.join(choices)}")
    return value


def _with_devices(options: RunOptions, devices: str | None) -> RunOptions:
    """``options`` with ``--devices``: distinct GPU indices, comma-separated, refused otherwise."""
    from dataclasses import replace

    if devices is None:
        return options
    parts = [p.strip() for p in devices.split(",")]
    if not all(re.fullmatch(r"[0-9]+", p) for p in parts) or len(set(parts)) != len(parts):
        raise CommsimError(
            f"--devices {devices!r}: give distinct GPU indices of a host, comma-separated (e.g. 0,2,4,6)"
        )
    return replace(options, devices=tuple(int(p) for p in parts))


def _check_nic(nic: str) -> None:
    """Refuse a ``--nic`` that names no network link kind, even for a run on one host."""
    from commsim.errors import did_you_mean
    from commsim.topology.linkkinds import LINK_KINDS

    valid = sorted(k for k, v in LINK_KINDS.items() if v.family in ("infiniband", "ethernet"))
    if nic not in valid:
        raise CommsimError(
            f"--nic {nic!r} is no network link kind; valid: {', '.join(valid)}{did_you_mean(nic, valid)}"
        )


def _choice_list(text: str | None, option: str, valid: dict[str, str]) -> tuple[str, ...] | None:
    if text is None:
        return None
    names = [t.strip().lower().replace("_", "") for t in text.split(",") if t.strip()]
    unknown = [n for n in names if n not in valid]
    if unknown or not names:
        raise CommsimError(
            f"{option} {text!r}: unknown {', '.join(map(repr, unknown)) or 'empty list'}; "
            f"valid: {', '.join(sorted(set(valid.values())))} (comma-separated)"
        )
    return tuple(dict.fromkeys(valid[n] for n in names))


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
    devices: Devices = None,
    collective: Collective = None,
    fit_param: Annotated[
        list[str] | None, typer.Option("--fit", help="Fit only these parameters (repeatable).")
    ] = None,
) -> None:
    """Fit the NCCL model's physical parameters to logs and write a calibrated topology."""
    from commsim.calibrate.fit import fit
    from commsim.calibrate.validate import validate_runs
    from commsim.cli.options import check_not_input, check_writable

    check_writable(output, "--output", (".yaml", ".yml"))  # --topology/--calibrated know a file by it
    check_not_input(output, "--output", logs)
    check_logs_are_files(logs)
    topo, _ = logs_machine(topology, None, nccl_topo, gpu, logs[0] if logs else None)
    options = _options(
        topo, nic, gpus, nodes, gpus_per_node, nics_per_node, gpu, p2p, algo, proto, nccl_version
    )
    options = _with_devices(_with_nvlink_domain(options, nvlink_domain), devices)
    options = _with_net_protocol(options, net_protocol)
    options = replace(options, board=board_class(topology), topology_option=_machine_option(None, nccl_topo))
    validations = [
        v for p in logs for v in validate_runs(p, options=options, collective=collective, n_ranks=gpus)
    ]
    calibration = fit(validations, fit=fit_param)
    out.print(escape(calibration.describe()), highlight=False)
    calibration.save(output, validations[0].inference.topology)
    err.print(
        escape(f"wrote {output}; use it with: commsim validate LOG --calibrated {output}"), highlight=False
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
