"""The ``commsim`` command: a thin typer layer over the Python API.

Results go to stdout; errors to stderr with exit code 2 (bad input) and no
traceback.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from commsim.cli_calibrate import calibrate, validate
from commsim.cli_console import err, out
from commsim.cli_plot import plot_app
from commsim.cli_sweep import measure as measure_command
from commsim.cli_sweep import sweep as sweep_command
from commsim.errors import CommsimError
from commsim.units import SIZE_HELP

if TYPE_CHECKING:  # imported when used: `commsim --help` and `topo` need no engine
    from commsim.results import Result
    from commsim.topology.model import Topology

app = typer.Typer(
    pretty_exceptions_enable=False,
    add_completion=False,
    no_args_is_help=True,
    help="Predict and explain the time of collective communication on GPU machines.",
)


def _version(value: bool) -> None:
    if value:
        from commsim import __version__

        print(f"commsim {__version__}")
        raise typer.Exit()


@app.callback()
def _main_options(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Predict and explain the time of collective communication on GPU machines."""


topo_app = typer.Typer(no_args_is_help=True, help="List, show and describe machine topologies.")
app.add_typer(topo_app, name="topo")
app.add_typer(plot_app, name="plot")
app.command("sweep")(sweep_command)
app.command("measure")(measure_command)


def _fail(message: str) -> None:
    """Stop with a usage error (exit code 2)."""
    raise CommsimError(message)


@app.command()
def run(
    scenario: Annotated[Path | None, typer.Argument(help="Scenario YAML file.")] = None,
    topology: Annotated[str | None, typer.Option(help="Topology name, builder or YAML path.")] = None,
    gpus: Annotated[int | None, typer.Option(help="GPU count for builders (ring, fully_connected).")] = None,
    box: Annotated[str | None, typer.Option(help="Box of a cluster topology, e.g. dgx_a100.")] = None,
    nodes: Annotated[int | None, typer.Option(help="Boxes in a cluster topology.")] = None,
    nic: Annotated[str | None, typer.Option(help="Network link kind of a cluster, e.g. ib_hdr.")] = None,
    algorithm: Annotated[list[str] | None, typer.Option(help="Algorithm name (repeatable).")] = None,
    collective: Annotated[str, typer.Option(help="Collective, e.g. all_reduce.")] = "all_reduce",
    size: Annotated[
        list[str] | None,
        typer.Option(help="Message size, e.g. '160 MB' or '1M' (repeatable; " + SIZE_HELP + ")."),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON records.")] = False,
    csv_out: Annotated[bool, typer.Option("--csv", help="Print CSV.")] = False,
    verify: Annotated[
        bool | None,
        typer.Option(
            "--verify/--no-verify",
            help="Prove each schedule correct symbolically (default: every plan of at most 50,000 sends).",
        ),
    ] = None,
    explain: Annotated[
        bool, typer.Option(help="Show each model's choice (e.g. NCCL's algorithm and protocol).")
    ] = False,
    param: Annotated[
        list[str] | None, typer.Option(help="Algorithm parameter KEY=VALUE (YAML value; repeatable).")
    ] = None,
    trace: Annotated[
        Path | None,
        typer.Option(help="Write a Chrome trace-event file (open in ui.perfetto.dev); .json or .json.gz."),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Simulate a scenario file, or one built from flags, and print the results."""
    from commsim.api import run_scenario, simulate
    from commsim.config import load_scenario
    from commsim.report import results_csv, results_json, results_table, winners_table
    from commsim.report.progress import progress_iter

    def progress(cases: list[Any]) -> Any:
        return progress_iter(cases, "simulating", not quiet)

    if json_out and csv_out:
        _fail("choose one of --json and --csv")
    title: str | None = None
    if scenario is not None:
        if topology or algorithm or size:
            _fail("give a scenario file or --topology/--algorithm/--size flags, not both")
        from commsim.training import is_training_scenario

        if is_training_scenario(scenario):
            if verify is not None or explain:
                _fail("--verify and --explain apply to collective scenarios, not training scenarios")
            _run_training(scenario, json_out=json_out, csv_out=csv_out, trace=trace)
            return
        loaded = load_scenario(scenario)
        results = run_scenario(loaded, verify=verify, progress=progress)
        title = f"{loaded.scenario.name}: {loaded.collective} on {loaded.topology.name}"
    else:
        if not topology or not algorithm:
            _fail("give a scenario file, or --topology and --algorithm (and --size)")
        assert topology is not None and algorithm is not None
        sizes = size or ["160 MB"]
        params = _parse_params(param or [])
        topo = _topology(topology, gpus=gpus, box=box, nodes=nodes, nic=nic)
        cases = [(a, s) for a in algorithm for s in sizes]
        results = [simulate(topo, a, collective, s, verify=verify, params=params) for a, s in progress(cases)]
        title = f"{collective} on {results[0].topology}" if results else None
    if explain:
        _explain(results, to_stderr=json_out or csv_out)
    if verify:  # only when asked for explicitly; by default small plans are verified silently
        err.print(
            f"verified: all {len(results)} schedule(s) achieve their collective (symbolic check)",
            highlight=False,
        )
    if trace is not None:
        from commsim.report.trace import write_trace

        write_trace(results, trace)
        err.print(f"wrote {trace} (open it at https://ui.perfetto.dev)", highlight=False)
    if json_out:
        print(results_json(results))
    elif csv_out:
        sys.stdout.write(results_csv(results))
    else:
        out.print(results_table(results, title=title))
        if len({r.label for r in results}) > 1 and len({r.nbytes for r in results}) > 1:
            out.print(winners_table(results))


def _run_training(path: Path, json_out: bool, csv_out: bool, trace: Path | None = None) -> None:
    """A training scenario (top-level ``workload:``): steps, best bucket sizes, scaling."""
    from commsim.training import load_training_scenario, run_loaded_training, training_json, training_report

    if csv_out:
        _fail("--csv is not available for training scenarios; use --json")
    loaded = load_training_scenario(path)
    results = run_loaded_training(loaded)
    if trace is not None:
        from commsim.training import write_step_trace

        write_step_trace(results, trace)
        err.print(
            f"wrote {trace}: one process per step (open it at https://ui.perfetto.dev)", highlight=False
        )
    if json_out:
        print(training_json(results))
    else:
        out.print(training_report(results, title=loaded.title))


def _topology(name: str, **builder: object) -> Topology:
    """A topology by name with builder options; options a plain name cannot take are an error."""
    from commsim.topology import BUILDERS, get_topology

    given = {k: v for k, v in builder.items() if v is not None}
    if given and name not in BUILDERS:
        _fail(
            f"options {', '.join('--' + k for k in given)} apply to builders ({', '.join(BUILDERS)}), "
            f"not to {name!r}"
        )
    return get_topology(name, **given)


def _parse_params(items: list[str]) -> dict[str, object]:
    import yaml

    params: dict[str, object] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            _fail(f"--param {item!r} must look like KEY=VALUE, e.g. --param gpus_per_thread=8")
        params[key.strip()] = yaml.safe_load(value)
    return params


def _explain(results: list[Result], to_stderr: bool = False) -> None:
    from commsim.algorithms import Problem, make_algorithm
    from commsim.units import format_size

    console = err if to_stderr else out
    for r in results:
        algorithm = make_algorithm(r.algorithm, r.params)
        explain = getattr(algorithm, "explain", None)
        if explain is None or r.schedule is None or r.topology_obj is None:
            console.print(f"{r.label}: {r.algorithm} has no model choice to explain", highlight=False)
            continue
        problem = Problem(r.topology_obj, r.schedule.ranks, r.collective, r.nbytes, r.schedule.root or 0)
        console.print(f"[bold]{r.label}, {format_size(r.nbytes)}[/]", highlight=False)
        console.print(explain(problem), highlight=False)


# registered here, between run and recommend, to keep the order of ``commsim --help``
app.command("validate")(validate)
app.command("calibrate")(calibrate)


@app.command()
def recommend(
    topology: Annotated[str, typer.Option(help="Topology name, builder or YAML path.")],
    collective: Annotated[str, typer.Option(help="Collective, e.g. all_reduce.")] = "all_reduce",
    size: Annotated[
        str, typer.Option(help="Message size, e.g. '160 MB' or '1M' (" + SIZE_HELP + ").")
    ] = "160 MB",
    gpus: Annotated[int | None, typer.Option(help="GPU count for builders.")] = None,
    box: Annotated[str | None, typer.Option(help="Box of a cluster topology, e.g. dgx_a100.")] = None,
    nodes: Annotated[int | None, typer.Option(help="Boxes in a cluster topology.")] = None,
    nic: Annotated[str | None, typer.Option(help="Network link kind of a cluster, e.g. ib_hdr.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Rank every applicable algorithm for one case and say why the winner wins."""
    import json

    from commsim.recommend import recommend as rank
    from commsim.report import results_table

    ranking = rank(_topology(topology, gpus=gpus, box=box, nodes=nodes, nic=nic), collective, size)
    if json_out:
        print(
            json.dumps(
                {
                    "ranking": [r.to_record() for r in ranking.results],
                    "not_applicable": ranking.not_applicable,
                    "explanation": ranking.explanation(),
                },
                indent=2,
            )
        )
        return
    out.print(results_table(ranking.results, title=f"{collective} of {size} on {topology}, fastest first"))
    out.print(ranking.explanation())
    for name, reason in ranking.not_applicable.items():
        out.print(f"  not applicable: {name}: {reason}", highlight=False)


@app.command()
def gpus(
    name: Annotated[str | None, typer.Argument(help="Show how a printed GPU name is resolved.")] = None,
) -> None:
    """List the GPU catalogue (links, host interface, boards), or resolve one printed name."""
    from rich.markup import escape

    from commsim.hardware import find_gpu, gpu_catalogue

    if name is not None:
        match = find_gpu(name)
        out.print(escape(match.why), highlight=False)
        if match.spec is None:
            raise typer.Exit(2)
        out.print(escape(match.spec.describe()), highlight=False)
        return
    table = Table(title="GPU catalogue")
    for column in ("key", "name", "arch", "form", "GPU-GPU links", "host", "boards"):
        table.add_column(column)
    for spec in gpu_catalogue().values():
        links = f"{spec.fabric} x {spec.fabric_links}" if spec.fabric else "-"
        boards = ", ".join(f"{b.machine_class}:{b.gpus}" for b in spec.boards) or "-"
        table.add_row(spec.key, spec.name, spec.arch, spec.form, links, spec.pcie or "-", boards)
    out.print(table)


@app.command()
def algos() -> None:
    """List the registered algorithms and the collectives each implements."""
    from commsim.algorithms import algorithm_names, get_algorithm

    table = Table(title="algorithms")
    for column in ("name", "collectives", "parameters", "what it does"):
        table.add_column(column)
    for name in algorithm_names():
        cls = get_algorithm(name)
        table.add_row(
            name,
            ", ".join(sorted(c.value for c in cls.collectives)),
            ", ".join(cls.Params.model_fields) or "-",
            cls.summary,
        )
    out.print(table)


@topo_app.command("list")
def topo_list() -> None:
    """List shipped topologies and builders."""
    from commsim.topology import BUILDERS, get_topology, shipped_topologies

    table = Table(title="topologies")
    for column in ("name", "GPUs", "description"):
        table.add_column(column)
    for name in shipped_topologies():
        topo = get_topology(name)
        table.add_row(name, str(len(topo.gpus)), topo.description)
    options = {"cluster": "--box B --nodes K --nic KIND"}
    for name, builder in BUILDERS.items():
        doc = (builder.__doc__ or "").strip().splitlines()[0].replace("``", "")
        doc = doc.split(" (SEED_FACTS")[0]
        table.add_row(f"{name} (builder)", options.get(name, "--gpus N"), doc)
    out.print(table)


@topo_app.command("show")
def topo_show(
    name: Annotated[str, typer.Argument(help="Topology name, builder or YAML path.")],
    gpus: Annotated[int | None, typer.Option(help="GPU count for builders.")] = None,
    yaml_out: Annotated[bool, typer.Option("--yaml", help="Print the topology as YAML.")] = False,
) -> None:
    """Show a topology's devices and links."""
    import yaml

    from commsim.topology import get_topology, topology_to_dict

    topo = get_topology(name, gpus=gpus)
    if yaml_out:
        print(yaml.safe_dump(topology_to_dict(topo), sort_keys=False, width=100), end="")
        return
    out.print(f"[bold]{topo.name}[/]: {topo.description}")
    out.print(f"GPUs (rank order): {', '.join(topo.gpus)}")
    table = Table()
    for column in ("link", "kind", "count", "bandwidth per direction", "latency"):
        table.add_column(column)
    from commsim.units import format_bandwidth, format_time

    for link in topo.links[::2]:
        table.add_row(
            f"{link.src} <-> {link.dst}",
            link.kind,
            str(link.count),
            format_bandwidth(link.bandwidth_Bps),
            format_time(link.latency_s),
        )
    out.print(table)


@topo_app.command("import")
def topo_import(
    matrix: Annotated[Path, typer.Argument(help="Text holding 'nvidia-smi topo -m' output.")],
    gpu_model: Annotated[
        str | None, typer.Option("--gpu", "--gpu-model", help="GPU model, e.g. A100-SXM4-80GB.")
    ] = None,
    cpu_model: Annotated[
        str | None, typer.Option(help="CPU model (AMD selects xGMI between sockets).")
    ] = None,
    name: Annotated[str | None, typer.Option(help="Name of the topology.")] = None,
    nvlink_kind: Annotated[str | None, typer.Option(help="NVLink kind, e.g. nvlink3.")] = None,
    pcie_kind: Annotated[str | None, typer.Option(help="PCIe kind, e.g. pcie4_x16.")] = None,
    nic_kind: Annotated[str | None, typer.Option(help="Network kind of the NICs, e.g. ib_hdr.")] = None,
    p2p: Annotated[
        bool | None,
        typer.Option("--p2p/--no-p2p", help="GPU peer-to-peer (default: from a topo -p2p matrix, else yes)."),
    ] = None,
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Write the topology YAML here.")
    ] = None,
) -> None:
    """Build a topology from a real machine's 'nvidia-smi topo -m' output."""
    import yaml

    from commsim.topology import load_topo_matrix, save_topology, topology_to_dict

    given = {
        "gpu_model": gpu_model,
        "cpu_model": cpu_model,
        "name": name,
        "nvlink_kind": nvlink_kind,
        "pcie_kind": pcie_kind,
        "nic_kind": nic_kind,
        "p2p": p2p,
    }
    topo = load_topo_matrix(matrix, **{k: v for k, v in given.items() if v is not None})
    if output is not None:
        save_topology(topo, output)
        err.print(
            f"wrote {output}: {len(topo.gpus)} GPUs, {len(topo.physical_links)} links. {topo.description}"
        )
    else:
        print(yaml.safe_dump(topology_to_dict(topo), sort_keys=False, width=100), end="")


@topo_app.command("schema")
def topo_schema() -> None:
    """Print the JSON Schema of the topology YAML format."""
    from commsim.topology import topology_json_schema

    print(topology_json_schema())


def _is_click_error(exc: BaseException) -> bool:
    """Usage errors of click, whichever copy raised them (typer may bundle its own)."""
    return any(cls.__name__ == "ClickException" for cls in type(exc).__mro__) and hasattr(exc, "show")


def main() -> None:
    """Entry point: run the app, turning input errors into one message and exit code 2."""
    try:
        code = app(standalone_mode=False)
        if isinstance(code, int) and code:
            sys.exit(code)
    except CommsimError as exc:
        err.print(f"[bold red]error:[/] {exc}", highlight=False)
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        err.print("aborted", highlight=False)
        sys.exit(1)
    except OSError as exc:
        where = f" {exc.filename}" if exc.filename else ""
        err.print(f"[bold red]error:[/] cannot use{where}: {exc.strerror or exc}", highlight=False)
        sys.exit(2)
    except MemoryError:
        err.print(
            "[bold red]error:[/] out of memory: the case is too large for this machine "
            "(fewer GPUs, or a smaller schedule)",
            highlight=False,
        )
        sys.exit(2)
    except Exception as exc:
        if _is_click_error(exc):
            exc.show()  # type: ignore[attr-defined]
            sys.exit(2)
        raise


if __name__ == "__main__":
    main()
