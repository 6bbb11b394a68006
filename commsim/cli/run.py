"""``commsim run`` and ``commsim recommend``: parse, call the API, render.

The decisions live in the API: :func:`commsim.api.load_file` reads a
scenario file once and tells collective from training scenarios,
:func:`commsim.scenario.flags.flag_cases` makes the flags' cases (checked
as a file's are), :func:`commsim.api.simulate_case` runs one,
:func:`commsim.explain` says what a model chose. Flags that do not apply to
the input given are refused by name.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from commsim.cli.console import err, escape, out, say
from commsim.cli.options import (
    Box,
    Gpus,
    Nic,
    Nodes,
    OutputFormat,
    Params,
    SizeList,
    TopologyName,
    choose_format,
    parse_params,
    reject_flags,
    wrote,
)
from commsim.errors import CommsimError
from commsim.units import SIZE_HELP

if TYPE_CHECKING:  # imported when used: `commsim --help` needs no engine
    from commsim.results import Result

__all__ = ["recommend", "run"]

_CASE_FLAGS = ("topology", "gpus", "box", "nodes", "nic", "algorithm", "collective", "size", "param")
_BUILDER_FLAGS = ("gpus", "box", "nodes", "nic")
_WITH_FILE = "to a scenario file: the file gives the case (give a file or flags, not both)"


def run(
    ctx: typer.Context,
    scenario: Annotated[Path | None, typer.Argument(metavar="SCENARIO", help="Scenario YAML file.")] = None,
    topology: TopologyName = None,
    gpus: Gpus = None,
    box: Box = None,
    nodes: Nodes = None,
    nic: Nic = None,
    algorithm: Annotated[
        list[str] | None, typer.Option(metavar="TEXT", help="Algorithm name (repeatable).")
    ] = None,
    collective: Annotated[
        str, typer.Option(metavar="TEXT", help="Collective, e.g. all_reduce.")
    ] = "all_reduce",
    size: SizeList = None,
    output_format: OutputFormat = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON records (= --format json).")] = False,
    csv_out: Annotated[bool, typer.Option("--csv", help="Print CSV (= --format csv).")] = False,
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
    param: Params = None,
    trace: Annotated[
        Path | None,
        typer.Option(
            metavar="PATH",
            help="Write a Chrome trace-event file (open in ui.perfetto.dev); .json or .json.gz.",
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Simulate a scenario file, or one built from flags, and print the results."""
    import commsim
    from commsim.report.progress import progress_iter

    form = choose_format(output_format, json_out, csv_out)
    if trace is not None:
        from commsim.cli.options import check_writable

        check_writable(trace, "--trace", (".json", ".json.gz"))

    def progress(cases: list[Any]) -> Any:
        return progress_iter(cases, "simulating", not quiet)

    if scenario is not None:
        reject_flags(ctx, _CASE_FLAGS, _WITH_FILE)
        from commsim.api import load_file

        loaded = load_file(scenario)  # read once: a collective or a training scenario
        if loaded.kind == "training":
            reject_flags(ctx, ("verify", "explain"), "to a training scenario")
            _run_training(loaded, form, trace)
            return
        run_ = commsim.run_file(loaded, verify=verify, progress=progress)
        results, title = run_.results, run_.title
    else:
        if not topology or not algorithm:
            raise CommsimError(
                "give a scenario file, or --topology and --algorithm (--size is 160 MB unless given)"
            )
        from commsim.api import simulate_case
        from commsim.scenario.flags import flag_cases

        machine = _topology(ctx, topology, gpus=gpus, box=box, nodes=nodes, nic=nic)
        cases = flag_cases(machine, algorithm, collective, size or ["160 MB"], parse_params(param or []))
        results = [simulate_case(case, verify=verify) for case in progress(cases)]
        title = f"{cases[0].collective} on {machine.name}" if cases else None
    if explain:
        _explain(results, to_stderr=form != "table")
    if verify:  # only when asked for explicitly; by default small plans are verified silently
        say(f"verified: all {len(results)} schedule(s) achieve their collective (symbolic check)")
    if trace is not None:
        from commsim.report.trace import write_trace

        write_trace(results, trace)
        say(f"{wrote(trace)} (open it at https://ui.perfetto.dev)")
    _render(results, form, title)


def _render(results: list[Result], form: str, title: str | None) -> None:
    from commsim.report import results_csv, results_json, results_table, winners_table

    if form == "json":
        print(results_json(results))
    elif form == "csv":
        sys.stdout.write(results_csv(results))
    else:
        out.print(results_table(results, title=title))
        if len({r.label for r in results}) > 1 and len({r.nbytes for r in results}) > 1:
            out.print(winners_table(results))


def _run_training(loaded: Any, form: str, trace: Path | None) -> None:
    """A training scenario (top-level ``workload:``), loaded: steps, best bucket sizes, scaling."""
    import commsim
    from commsim.training import training_json, training_report

    if form == "csv":
        raise CommsimError("--format csv is not available for training scenarios; use --format json")
    run_ = commsim.run_file(loaded)
    if trace is not None:
        from commsim.training import write_step_trace

        write_step_trace(run_.steps, trace)
        say(f"{wrote(trace)}: one process per step (open it at https://ui.perfetto.dev)")
    if form == "json":
        print(training_json(run_.steps))
    else:
        out.print(training_report(run_.steps, title=run_.title))


def _topology(ctx: typer.Context, name: str, **builder: Any) -> Any:
    """A topology by name with builder options; options a plain name cannot take are refused."""
    from commsim.cli.options import machine_from_flags
    from commsim.topology import BUILDERS

    if name not in BUILDERS:
        reject_flags(
            ctx, _BUILDER_FLAGS, f"to {name!r}: they are options of builders ({', '.join(BUILDERS)})"
        )
    return machine_from_flags(name, **builder)


def _explain(results: list[Result], to_stderr: bool = False) -> None:
    import commsim
    from commsim.units import format_size

    console = err if to_stderr else out
    for r in results:
        text = commsim.explain(r)
        if text is None:
            console.print(escape(f"{r.label}: {r.algorithm} has no model choice to explain"), highlight=False)
            continue
        console.print(f"[bold]{escape(r.label)}, {format_size(r.nbytes)}[/]", highlight=False)
        console.print(escape(text), highlight=False)


def recommend(
    ctx: typer.Context,
    topology: Annotated[str, typer.Option(metavar="TEXT", help="Topology name, builder or YAML path.")],
    collective: Annotated[
        str, typer.Option(metavar="TEXT", help="Collective, e.g. all_reduce.")
    ] = "all_reduce",
    size: Annotated[
        str, typer.Option(metavar="SIZE", help=f"Message size, e.g. '160 MB' or '1M' ({SIZE_HELP}).")
    ] = "160 MB",
    gpus: Gpus = None,
    box: Box = None,
    nodes: Nodes = None,
    nic: Nic = None,
    output_format: OutputFormat = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON (= --format json).")] = False,
    threshold: Annotated[
        float,
        typer.Option(
            min=0,
            help="Report a tuned choice that beats NCCL's default by more than this many percent.",
        ),
    ] = 10.0,
    tuned_sizes: Annotated[
        str,
        typer.Option(
            metavar="RANGE",
            help="Sizes compared with NCCL's default, FIRST..LAST in steps of x4 (e.g. 1K..1G).",
        ),
    ] = "1K..1G",
) -> None:
    """Rank every applicable algorithm for one case and say why the winner wins.

    Then, over --tuned-sizes, name the size ranges where a tuned choice (the
    NCCL model's best algorithm and protocol on this machine, or a commsim
    algorithm) beats NCCL's default by more than --threshold percent.
    """
    import json

    from commsim.cli.plot import size_range
    from commsim.recommend import recommend as rank

    form = choose_format(output_format, json_out)
    sizes = size_range(tuned_sizes, factor=4.0, flag="--tuned-sizes")
    if not math.isfinite(threshold):
        raise CommsimError(f"--threshold {threshold}: expected a finite percentage, e.g. 10")
    machine = _topology(ctx, topology, gpus=gpus, box=box, nodes=nodes, nic=nic)
    ranking = rank(machine, collective, size)
    tuned, note = _tuned(machine, collective, sizes, threshold / 100) if form != "csv" else ([], "")
    if form == "json":
        record = {
            "ranking": [r.to_record() for r in ranking.results],
            "not_applicable": ranking.not_applicable,
            "explanation": ranking.explanation(),
            "tuned": {
                "threshold": threshold / 100,
                "sizes": sizes,
                "ranges": [r.to_record() for r in tuned],
                "note": note,
            },
        }
        print(json.dumps(record, indent=2))
        return
    _print_ranking(ranking, collective, size, topology, form)
    if form != "csv":
        out.print(escape(f"tuned vs NCCL's default (more than {threshold:g} % faster):"), highlight=False)
        for line in [r.describe() for r in tuned] or [note]:
            out.print(escape(f"  {line}"), highlight=False)


def _tuned(machine: Any, collective: str, sizes: list[int], threshold: float) -> tuple[list[Any], str]:
    """The size ranges where tuning beats NCCL's default, and a sentence for when there are none."""
    from commsim.errors import AlgorithmError, TopologyError
    from commsim.recommend import tuned_gains, tuned_ranges
    from commsim.units import format_size

    span = f"between {format_size(sizes[0])} and {format_size(sizes[-1])}"
    try:
        ranges = tuned_ranges(tuned_gains(machine, collective, sizes), threshold)
    except (AlgorithmError, TopologyError) as exc:
        return [], f"tuned vs NCCL's default: the NCCL model does not apply here ({exc})"
    if ranges:
        return ranges, ""
    return [], f"no tuned choice beats NCCL's default by more than {100 * threshold:g} % {span}"


def _print_ranking(ranking: Any, collective: str, size: str, topology: str, form: str) -> None:
    from commsim.report import results_csv, results_table

    if form == "csv":
        sys.stdout.write(results_csv(ranking.results))
        return
    title = f"{collective} of {size} on {topology}, fastest first"
    out.print(results_table(ranking.results, title=title))
    out.print(escape(ranking.explanation()), highlight=False)
    for name, reason in ranking.not_applicable.items():
        out.print(escape(f"  not applicable: {name}: {reason}"), highlight=False)
