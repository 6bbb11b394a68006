"""The ``commsim`` command: a thin typer layer over the Python API.

Results go to stdout; errors to stderr with exit code 2 (bad input) and no
traceback.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from commsim.errors import CommsimError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Predict and explain the time of collective communication on GPU machines.",
)
topo_app = typer.Typer(no_args_is_help=True, help="List, show and describe machine topologies.")
app.add_typer(topo_app, name="topo")

out = Console() if sys.stdout.isatty() else Console(width=200)
err = Console(stderr=True, soft_wrap=True)


def _fail(message: str) -> None:
    """Stop with a usage error (exit code 2)."""
    raise CommsimError(message)


@app.command()
def run(
    scenario: Annotated[Path | None, typer.Argument(help="Scenario YAML file.")] = None,
    topology: Annotated[str | None, typer.Option(help="Topology name, builder or YAML path.")] = None,
    gpus: Annotated[int | None, typer.Option(help="GPU count for builders (ring, fully_connected).")] = None,
    algorithm: Annotated[list[str] | None, typer.Option(help="Algorithm name (repeatable).")] = None,
    collective: Annotated[str, typer.Option(help="Collective, e.g. all_reduce.")] = "all_reduce",
    size: Annotated[list[str] | None, typer.Option(help="Message size, e.g. '160 MB' (repeatable).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON records.")] = False,
    csv_out: Annotated[bool, typer.Option("--csv", help="Print CSV.")] = False,
    verify: Annotated[bool, typer.Option(help="Prove each schedule correct symbolically.")] = False,
) -> None:
    """Simulate a scenario file, or one built from flags, and print the results."""
    from commsim.api import run_scenario, simulate
    from commsim.config import load_scenario
    from commsim.report import results_csv, results_json, results_table, winners_table

    if json_out and csv_out:
        _fail("choose one of --json and --csv")
    title: str | None = None
    if scenario is not None:
        if topology or algorithm or size:
            _fail("give a scenario file or --topology/--algorithm/--size flags, not both")
        loaded = load_scenario(scenario)
        results = run_scenario(loaded, verify=verify)
        title = f"{loaded.scenario.name}: {loaded.collective} on {loaded.topology.name}"
    else:
        if not topology or not algorithm:
            _fail("give a scenario file, or --topology and --algorithm (and --size)")
        assert topology is not None and algorithm is not None
        sizes = size or ["160 MB"]
        results = [
            simulate(topology, a, collective, s, gpus=gpus, verify=verify) for a in algorithm for s in sizes
        ]
        title = f"{collective} on {results[0].topology}" if results else None
    if json_out:
        print(results_json(results))
    elif csv_out:
        sys.stdout.write(results_csv(results))
    else:
        out.print(results_table(results, title=title))
        if len({r.label for r in results}) > 1 and len({r.nbytes for r in results}) > 1:
            out.print(winners_table(results))


@app.command()
def recommend(
    topology: Annotated[str, typer.Option(help="Topology name, builder or YAML path.")],
    collective: Annotated[str, typer.Option(help="Collective, e.g. all_reduce.")] = "all_reduce",
    size: Annotated[str, typer.Option(help="Message size, e.g. '160 MB'.")] = "160 MB",
    gpus: Annotated[int | None, typer.Option(help="GPU count for builders.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Rank every applicable algorithm for one case and say why the winner wins."""
    import json

    from commsim.recommend import recommend as rank
    from commsim.report import results_table
    from commsim.topology import get_topology

    ranking = rank(get_topology(topology, gpus=gpus), collective, size)
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
    for name, builder in BUILDERS.items():
        doc = (builder.__doc__ or "").strip().splitlines()[0]
        table.add_row(f"{name} (builder)", "--gpus N", doc)
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


@topo_app.command("schema")
def topo_schema() -> None:
    """Print the JSON Schema of the topology YAML format."""
    from commsim.topology import topology_json_schema

    print(topology_json_schema())


def main() -> None:
    """Entry point: run the app, turning input errors into exit code 2."""
    try:
        code = app(standalone_mode=False)
        if isinstance(code, int) and code:
            sys.exit(code)
    except CommsimError as exc:
        err.print(f"[bold red]error:[/] {exc}", highlight=False)
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.exit(1)
    except Exception as exc:  # click usage errors
        import click

        if isinstance(exc, click.ClickException):
            exc.show()
            sys.exit(2)
        raise


if __name__ == "__main__":
    main()
