"""``commsim plot ...``: figures of results and machines, as PNG, SVG or PDF.

A thin typer sub-app over :mod:`commsim.report.plots` and
:mod:`commsim.report.draw`; mounted by :mod:`commsim.cli` as ``plot``.
Runs come from a scenario file or from ``--topology``/``--algorithm``/
``--size`` flags, as for ``commsim run``; flags that describe a case are
refused beside a scenario file. Bad input raises
:class:`~commsim.errors.CommsimError`, which the CLI turns into exit code 2.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from commsim.cli.console import say
from commsim.cli.options import GPUS_HELP, check_writable, parse_params, wrote
from commsim.errors import CommsimError
from commsim.units import SIZE_HELP

if TYPE_CHECKING:
    from commsim.results import Result
    from commsim.topology.model import Topology

__all__ = ["plot_app", "simulate_runs", "size_range"]

plot_app = typer.Typer(
    no_args_is_help=True,
    help="Draw bandwidth curves, link timelines, utilisation heat maps and machines (PNG, SVG, PDF).",
)

MAX_PANELS = 8
"""Most runs one timeline figure shows (one panel each)."""

Scenario = Annotated[Path | None, typer.Argument(help="Scenario YAML file (or use the flags).")]
TopologyName = Annotated[str | None, typer.Option(help="Topology name, builder or YAML path.")]
Gpus = Annotated[int | None, typer.Option(help=GPUS_HELP)]
Algorithms = Annotated[list[str] | None, typer.Option(help="Algorithm name (repeatable).")]
CollectiveName = Annotated[str | None, typer.Option(help="Collective, e.g. all_reduce (default).")]
Sizes = Annotated[
    list[str] | None,
    typer.Option(
        metavar="SIZE",
        help="Message size, e.g. '160 MB' or '1M' (repeatable; with a scenario: show only these sizes; "
        + SIZE_HELP
        + ").",
    ),
]
Params = Annotated[
    list[str] | None,
    typer.Option(metavar="KEY=VALUE", help="Algorithm parameter; VALUE is YAML, e.g. chunks=8 (repeatable)."),
]
Select = Annotated[list[str] | None, typer.Option(help="Show only runs with this label (repeatable).")]
Output = Annotated[Path, typer.Option("-o", "--output", help="Output file: .png, .svg or .pdf.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]

Subject = TypeVar("Subject")


def size_range(text: str, factor: float = 2.0, flag: str = "--sizes") -> list[int]:
    """Sizes from ``"8..1G"``: the first, then times ``factor`` while not above the last.

    Like nccl-tests' ``-b 8 -e 1G -f 2`` (``1G`` is 2^30 bytes there and
    here; ``1GB`` is 10^9 bytes), rounded to whole bytes.

    Raises
    ------
    CommsimError
        If the text is not ``FIRST..LAST`` with FIRST <= LAST, or ``factor`` <= 1.
    """
    from commsim.units import parse_size

    first_text, sep, last_text = text.partition("..")
    if not sep:
        raise CommsimError(f"{flag} {text!r}: a size range must look like FIRST..LAST, e.g. 8B..1GB")
    try:
        first, last = parse_size(first_text.strip()), parse_size(last_text.strip())
    except CommsimError as exc:
        raise CommsimError(f"{flag} {text!r}: {exc}") from None
    if not 0 < first <= last:
        raise CommsimError(f"{flag} {text!r}: the first size must be positive and at most the last")
    if not factor > 1:
        raise CommsimError(f"size factor must be above 1, got {factor}")
    count = math.floor(math.log(last / first, factor) + 1e-9) + 1
    return [round(first * factor**k) for k in range(count)]


def simulate_runs(
    scenario: Path | None,
    topology: str | None,
    gpus: int | None,
    algorithms: Sequence[str],
    collective: str | None,
    sizes: Sequence[float | str],
    params: dict[str, object],
    quiet: bool,
) -> list[Result]:
    """Every run of a scenario, or of the flags (algorithms outer, sizes inner), with a progress bar."""
    from commsim.api import run_scenario
    from commsim.report.progress import progress_iter

    if scenario is not None:
        given = {
            "--topology": topology,
            "--gpus": gpus,
            "--algorithm": algorithms or None,
            "--collective": collective,
            "--param": params or None,
        }
        flags = [flag for flag, value in given.items() if value is not None]
        if flags:
            raise CommsimError(
                f"{', '.join(flags)} {'does' if len(flags) == 1 else 'do'} not apply to a scenario file: "
                "the file gives the case (give a file or flags, not both)"
            )
        from commsim.config import load_scenario

        loaded = load_scenario(scenario)
        return run_scenario(loaded, progress=lambda cases: progress_iter(cases, "simulating", not quiet))
    if not topology or not algorithms:
        raise CommsimError("give a scenario file, or --topology and --algorithm (and --size)")
    from commsim.api import simulate_case
    from commsim.cli.options import machine_from_flags
    from commsim.scenario.flags import flag_cases

    machine = machine_from_flags(topology, gpus=gpus)
    cases = flag_cases(machine, algorithms, collective or "all_reduce", sizes, params)
    return [simulate_case(case) for case in progress_iter(cases, "simulating", not quiet)]


def _runs(
    scenario: Path | None,
    topology: str | None,
    gpus: int | None,
    algorithm: list[str] | None,
    collective: str | None,
    size: list[str] | None,
    param: list[str] | None,
    select: list[str] | None,
    quiet: bool,
) -> list[Result]:
    """Runs from a scenario or flags, narrowed to the selected labels and sizes."""
    from commsim.units import parse_size

    sizes = [parse_size(s) for s in size or []]
    results = simulate_runs(
        scenario,
        topology,
        gpus,
        algorithm or [],
        collective,
        sizes or [160_000_000],
        parse_params(param or []),
        quiet,
    )
    if scenario is not None and sizes:
        results = [r for r in results if r.nbytes in sizes]
    if select:
        unknown = sorted(set(select) - {r.label for r in results})
        if unknown:
            labels = ", ".join(dict.fromkeys(r.label for r in results))
            raise CommsimError(f"--select {', '.join(unknown)}: no such run; labels: {labels}")
        results = [r for r in results if r.label in select]
    if not results:
        raise CommsimError("no run left to plot (check --size against the scenario's sizes)")
    return results


def _describe(results: Sequence[Result]) -> str:
    """``labels: a, b; sizes: 1 kB, 1 MB``: what --select and --size can pick."""
    from commsim.units import format_size

    labels = ", ".join(dict.fromkeys(r.label for r in results))
    sizes = ", ".join(format_size(n) for n in sorted({r.nbytes for r in results}))
    return f"labels: {labels}; sizes: {sizes}"


def _headless() -> None:
    """Render without a display: the command line only writes files."""
    import matplotlib

    matplotlib.use("Agg")


def _done(path: Path) -> None:
    say(wrote(path))


def _draw(output: Path, make: Callable[[], Subject], draw: Callable[[Subject, Path], object]) -> None:
    """Check the output's format, make what to draw, draw it without a display and say where.

    ``make`` runs after the output is checked, so a bad suffix is reported
    before anything is simulated.
    """
    from commsim.report.figures import check_output

    out = check_output(output)
    check_writable(out, "--output")
    subject = make()
    _headless()
    draw(subject, out)
    _done(out)


@plot_app.command("busbw")
def busbw(
    output: Output,
    scenario: Scenario = None,
    topology: TopologyName = None,
    gpus: Gpus = None,
    algorithm: Algorithms = None,
    collective: CollectiveName = None,
    sizes: Annotated[
        str | None,
        typer.Option(
            metavar="FIRST..LAST",
            help="Size range FIRST..LAST, doubling, e.g. 8..1G (default 8B..1GiB; " + SIZE_HELP + ").",
        ),
    ] = None,
    size: Sizes = None,
    param: Params = None,
    log: Annotated[Path | None, typer.Option(help="nccl-tests log whose measurements to add.")] = None,
    run: Annotated[
        int | None,
        typer.Option(min=1, help="With --log: run N (1-based) of a log of several runs or series."),
    ] = None,
    metric: Annotated[str, typer.Option(help="busbw (GB/s) or time (us).")] = "busbw",
    quiet: Quiet = False,
) -> None:
    """Bus bandwidth (or time) against message size, one line per algorithm, nccl-tests style."""
    from commsim.calibrate import load_nccl_tests
    from commsim.report.plots import plot_busbw

    if run is not None and log is None:
        raise CommsimError("--run N picks a run of the --log file; give --log too")
    if metric not in ("busbw", "time"):
        raise CommsimError(f"--metric {metric!r}: unknown metric; valid: busbw, time")
    measured = load_nccl_tests(log, run=run) if log is not None else None

    def runs() -> list[Result]:
        if sizes and size:
            raise CommsimError("give --sizes FIRST..LAST or --size (repeatable), not both")
        if sizes and scenario is not None:  # it was ignored: the file's sizes were drawn
            raise CommsimError(
                "--sizes does not apply to a scenario file: the file gives the sizes "
                "(--size, repeatable, shows only some of them)"
            )
        chosen = size if scenario is not None else size or [str(s) for s in size_range(sizes or "8B..1GiB")]
        return _runs(scenario, topology, gpus, algorithm, collective, chosen, param, None, quiet)

    _draw(output, runs, lambda results, out: plot_busbw(results, measured=measured, path=out, metric=metric))


@plot_app.command("timeline")
def timeline(
    output: Output,
    scenario: Scenario = None,
    topology: TopologyName = None,
    gpus: Gpus = None,
    algorithm: Algorithms = None,
    collective: CollectiveName = None,
    size: Sizes = None,
    param: Params = None,
    select: Select = None,
    max_links: Annotated[int, typer.Option(min=1, max=10_000, help="Most links per run (the busiest).")] = 24,
    quiet: Quiet = False,
) -> None:
    """When each link carried data (Gantt), one panel per run, bottleneck links in red."""
    from commsim.report.plots import plot_timeline

    def runs() -> list[Result]:
        results = _runs(scenario, topology, gpus, algorithm, collective, size, param, select, quiet)
        if len(results) > MAX_PANELS:
            raise CommsimError(
                f"{len(results)} runs are too many for one timeline (at most {MAX_PANELS}); "
                f"narrow them with --select LABEL and --size: {_describe(results)}"
            )
        return results

    _draw(output, runs, lambda results, out: plot_timeline(results, out, max_links=max_links))


@plot_app.command("heatmap")
def heatmap(
    output: Output,
    scenario: Scenario = None,
    topology: TopologyName = None,
    gpus: Gpus = None,
    algorithm: Algorithms = None,
    collective: CollectiveName = None,
    size: Sizes = None,
    param: Params = None,
    select: Select = None,
    bins: Annotated[int, typer.Option(min=1, max=10_000, help="Number of time bins.")] = 100,
    max_links: Annotated[int, typer.Option(min=1, max=10_000, help="Most links shown (the busiest).")] = 64,
    quiet: Quiet = False,
) -> None:
    """Link utilisation over time as a heat map (links x time bins) for one run."""
    from commsim.report.plots import plot_utilisation_heatmap

    def run() -> Result:
        results = _runs(scenario, topology, gpus, algorithm, collective, size, param, select, quiet)
        if len(results) != 1:
            raise CommsimError(
                f"a heat map shows one run, got {len(results)}; choose with --select LABEL and --size: "
                f"{_describe(results)}"
            )
        return results[0]

    _draw(
        output, run, lambda result, out: plot_utilisation_heatmap(result, out, bins=bins, max_links=max_links)
    )


@plot_app.command("topology")
def topology_drawing(
    name: Annotated[str, typer.Argument(help="Topology name, builder or YAML path.")],
    output: Output,
    gpus: Gpus = None,
    labels: Annotated[
        bool | None,
        typer.Option("--labels/--no-labels", help="Label every link with its bandwidth (default: auto)."),
    ] = None,
) -> None:
    """Draw a machine: devices by kind, links coloured by family with their bandwidths."""
    from commsim.cli.options import machine_from_flags
    from commsim.report.draw import draw_topology

    _draw(
        output,
        lambda: _drawable(machine_from_flags(name, gpus=gpus)),
        lambda topo, out: draw_topology(topo, out, edge_labels=labels),
    )


MAX_DRAWN_DEVICES = 2_048
"""The most devices ``plot topology`` draws (a ring of 4,096 GPUs takes 4 s and is a grey disc)."""


def _drawable(topology: Topology) -> Topology:
    """``topology``, if a drawing of it can be read."""
    if len(topology.devices) > MAX_DRAWN_DEVICES:
        raise CommsimError(
            f"topology {topology.name!r} has {len(topology.devices):,} devices, more than the limit of "
            f"{MAX_DRAWN_DEVICES:,} for a drawing; draw a smaller machine of the same shape"
        )
    return topology
