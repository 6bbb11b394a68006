"""The ``commsim sweep`` and ``commsim measure`` commands (registered by :mod:`commsim.cli`).

Thin: they parse options and call :func:`commsim.sweep.run_sweep` and
:func:`commsim.measure.measure`. Heavy modules are imported inside the
commands so that ``commsim --help`` stays fast. Progress and summaries go to
stderr; ``measure`` prints the next commands to stdout.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from commsim.cli.console import err, escape
from commsim.units import SIZE_HELP

if TYPE_CHECKING:
    from commsim.sweep import SweepSummary

__all__ = ["measure", "sweep"]


def sweep(
    spec: Annotated[Path, typer.Argument(help="Sweep YAML file (see sweeps/).")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Results file: .csv, .jsonl or .parquet.")],
    output_format: Annotated[
        str | None, typer.Option("--format", help="csv, jsonl or parquet (default: from the suffix).")
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(min=1, help="Start a local Dask cluster of N workers instead of the process pool."),
    ] = None,
    scheduler: Annotated[
        str | None,
        typer.Option(help="Dask scheduler, e.g. tcp://HOST:8786 (default: $DASK_SCHEDULER_ADDRESS)."),
    ] = None,
    serial: Annotated[bool, typer.Option("--serial", help="Run in this process, one by one.")] = False,
    pool: Annotated[
        bool,
        typer.Option("--pool", help="Run on a process pool of all usable cores, however small the sweep."),
    ] = False,
    plot: Annotated[
        Path | None, typer.Option(help="Draw the winner per (topology, size) as a heat map (PNG/SVG).")
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar and no summary.")] = False,
    limit: Annotated[
        int | None, typer.Option(min=0, help="Compute at most N scenarios now; rerun to resume.")
    ] = None,
    resume: Annotated[
        bool,
        typer.Option("--resume/--no-resume", help="Keep rows already in the output, or start it afresh."),
    ] = True,
) -> None:
    """Run every scenario of a sweep file's grid and write one row per scenario.

    Rows already in the output (matched by scenario key) are kept, so an
    interrupted sweep continues where it stopped. Without --serial, --pool,
    --workers or --scheduler, the sweep runs on a process pool when at least
    2 cores are idle (usable cores minus the load average) and there are at
    least 100 scenarios per idle core, else serially; the progress line and
    the summary say which.
    """
    from commsim.cli.options import check_writable, wrote
    from commsim.sweep import load_sweep, make_runner, plot_winners, read_rows, run_sweep

    check_writable(output, "--output")
    if plot is not None:
        from commsim.report.figures import check_output

        plot = check_output(plot)
        check_writable(plot, "--plot")
    loaded = load_sweep(spec)
    runner = make_runner(
        serial=serial, pool=pool, workers=workers, scheduler=scheduler, scenarios=len(loaded)
    )
    bar = _ProgressBar(err, enabled=not quiet and err.is_terminal, runner=runner.description)
    try:
        summary = run_sweep(
            loaded, output, format=output_format, runner=runner, resume=resume, limit=limit, progress=bar
        )
    except KeyboardInterrupt:
        bar.stop()
        message = (
            f"interrupted: the rows finished so far are in {output}; run the same command to resume"
            if output.exists()
            else f"interrupted before any row was finished: {output} was not written; run the same command"
        )
        err.print(escape(message), highlight=False)
        raise
    finally:
        bar.stop()
    if not quiet:
        err.print(escape(_describe(summary)), highlight=False)
    if plot is not None:
        plot_winners(
            read_rows(summary.output, summary.format), plot, title=f"{loaded.name}: fastest algorithm"
        )
        if not quiet:
            err.print(escape(wrote(plot)), highlight=False)


def _describe(summary: SweepSummary) -> str:
    parts = [f"{summary.computed} computed", f"{summary.resumed} already there"]
    if summary.errors:
        parts.append(f"{summary.errors} could not run (see the error column)")
    if summary.dropped:
        parts.append(f"{summary.dropped} rows of scenarios no longer in the sweep dropped")
    text = (
        f"wrote {summary.rows} of {summary.scenarios} rows to {summary.output} ({', '.join(parts)}) "
        f"in {summary.wall_s:.1f} s on {summary.runner}"
    )
    if not summary.complete:
        text += f"; {summary.scenarios - summary.rows} scenarios to go: run the same command again"
    return text


class _ProgressBar:
    """A rich progress bar on stderr, started at the first update (after the workers started)."""

    def __init__(self, console: Console, enabled: bool, runner: str = "") -> None:
        self.console = console
        self.enabled = enabled
        self.runner = runner
        self._progress: Any = None
        self._task: Any = None

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        if self._progress is None:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._progress = Progress(
                escape(f"scenarios on {self.runner}") if self.runner else "scenarios",
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=self.console,
            )
            self._progress.start()
            self._task = self._progress.add_task("sweep", total=total)
        self._progress.update(self._task, completed=done, total=total)

    def stop(self) -> None:
        """Stop drawing (leaves the last state on screen)."""
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def measure(
    nccl_tests: Annotated[
        Path, typer.Option("--nccl-tests", help="nccl-tests directory (its build/ is searched too).")
    ],
    gpus: Annotated[int, typer.Option("--gpus", min=1, help="GPUs per run (nccl-tests -g).")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Directory for the logs.")] = Path("logs"),
    collective: Annotated[
        list[str] | None,
        typer.Option(help="Only this collective (repeatable; default: every one found)."),
    ] = None,
    min_bytes: Annotated[str, typer.Option(help="Smallest size (nccl-tests -b; " + SIZE_HELP + ").")] = "8",
    max_bytes: Annotated[str, typer.Option(help="Largest size (nccl-tests -e; 8G = 8 GiB).")] = "8G",
    factor: Annotated[int, typer.Option(min=2, help="Size step factor (nccl-tests -f).")] = 2,
    timeout: Annotated[float | None, typer.Option(min=0, help="Seconds allowed per run.")] = None,
) -> None:
    """Run nccl-tests on this machine and keep the logs for 'commsim calibrate'."""
    import shlex

    from commsim.measure import measure as run_measure
    from commsim.measure import next_commands

    def started(name: str, command: list[str]) -> None:
        err.print(escape(f"running {name}: {shlex.join(command)}"), highlight=False)

    result = run_measure(
        nccl_tests,
        gpus,
        output,
        collectives=collective or None,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        factor=factor,
        timeout_s=timeout,
        on_start=started,
    )
    for note in result.notes:
        err.print(escape(f"note: {note}"), highlight=False)
    for log in result.logs:
        extra = f" and {log.json}" if log.json else ""
        err.print(
            escape(f"wrote {log.log}{extra}: {log.rows} sizes in {log.elapsed_s:.1f} s"), highlight=False
        )
    if result.topology_matrix is not None:
        err.print(escape(f"wrote {result.topology_matrix}"), highlight=False)
    err.print("next, calibrate a model from these logs:", highlight=False)
    for command in next_commands(result):
        print(command)
