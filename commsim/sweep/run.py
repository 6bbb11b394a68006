"""Running a sweep: chunks to a runner, rows to the output in scenario order, resumable."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from commsim.sweep.errors import SweepError
from commsim.sweep.evaluate import Chunk, evaluate_chunk
from commsim.sweep.runners import Runner, SerialRunner, choose_runner
from commsim.sweep.spec import Sweep, load_sweep
from commsim.sweep.store import LineStore, ParquetStore, open_store, output_format

__all__ = ["Progress", "SweepSummary", "run_sweep"]

Progress = Callable[[int, int], None]
"""Called with (rows done, rows to do) before the run and after every chunk written."""


@dataclass(frozen=True)
class SweepSummary:
    """What a sweep run did.

    Attributes
    ----------
    output : Path
    format : str
    scenarios : int
        Scenarios in the sweep.
    computed : int
        Scenarios simulated by this run.
    resumed : int
        Scenarios whose rows were already in the output (not recomputed).
    rows : int
        Rows in the output now (one per scenario when ``complete``).
    errors : int
        Rows whose scenario could not run (see their ``error`` column).
    dropped : int
        Rows of scenarios no longer in the sweep, removed from the output.
    runner : str
        Where the scenarios ran.
    wall_s : float
        Wall time of the run, in seconds.
    """

    output: Path
    format: str
    scenarios: int
    computed: int
    resumed: int
    rows: int
    errors: int
    dropped: int
    runner: str
    wall_s: float

    @property
    def complete(self) -> bool:
        """Whether the output holds a row for every scenario."""
        return self.rows == self.scenarios


def run_sweep(
    sweep: Sweep | str | Path,
    output: str | Path,
    *,
    format: str | None = None,
    runner: Runner | None = None,
    resume: bool = True,
    limit: int | None = None,
    progress: Progress | None = None,
) -> SweepSummary:
    """Simulate every scenario of a sweep and write one row per scenario to ``output``.

    Parameters
    ----------
    sweep : Sweep or path
        A loaded sweep, or a sweep file.
    output : path
        CSV, JSON Lines or Parquet file (see ``format``).
    format : {"csv", "jsonl", "parquet"}, optional
        Default: from the suffix of ``output``.
    runner : Runner, optional
        Default: :func:`~commsim.sweep.runners.choose_runner` for the
        scenarios still to compute (serial, or a process pool on 4+ cores).
    resume : bool
        Keep rows already in ``output`` and compute only the missing
        scenarios (matched by key); False starts the file afresh.
    limit : int, optional
        Compute at most this many scenarios, then stop (the rest resume later).
    progress : callable, optional
        ``progress(done, total)``; an exception it raises interrupts the sweep
        with every finished row kept.

    Returns
    -------
    SweepSummary

    Raises
    ------
    ScenarioError
        If the sweep file is invalid.
    SweepError
        If the output cannot be resumed (other columns), the format needs a
        missing package, or the runner cannot start.

    Examples
    --------
    >>> from commsim.sweep import SerialRunner, parse_sweep
    >>> sweep = parse_sweep("topology: dgx1_v100\\nalgorithm: ring\\ngrid: {size: [1 MB, 1 GB]}")
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "rows.csv"
    >>> run_sweep(sweep, out, runner=SerialRunner()).rows
    2
    """
    started = time.perf_counter()
    loaded = sweep if isinstance(sweep, Sweep) else load_sweep(sweep)
    fmt = output_format(output, format)
    if limit is not None and limit < 0:
        raise SweepError(f"limit must be >= 0, got {limit}")
    index_of = {key: i for i, key in enumerate(loaded.keys)}
    target = Path(output)
    first_file = target.with_name(target.name + ".partial.jsonl") if fmt == "parquet" else target
    fresh = not first_file.exists()
    store = open_store(target, fmt, loaded.columns, index_of, resume)
    try:
        resumed = len(store.done)
        todo = len(loaded) - resumed if limit is None else min(limit, len(loaded) - resumed)
        runner = runner or (choose_runner(todo) if todo else SerialRunner())
        computed = _compute(loaded, store, runner, todo, progress) if todo else 0
        report = store.finish()
    except BaseException:
        store.close()
        if fresh and not store.written:  # failed before its first row: leave nothing behind
            first_file.unlink(missing_ok=True)
        raise
    finally:
        store.close()
    return SweepSummary(
        Path(output),
        fmt,
        len(loaded),
        computed,
        resumed,
        report.rows,
        report.errors,
        report.dropped,
        runner.description,
        time.perf_counter() - started,
    )


def _compute(
    sweep: Sweep, store: LineStore | ParquetStore, runner: Runner, todo: int, progress: Progress | None
) -> int:
    done = len(store.done)
    with runner:
        chunks = _chunks(sweep, store.done, todo, runner.chunk_size(todo))
        results = runner.run(evaluate_chunk, chunks)
        try:
            return _write_in_order(results, store, progress, done, done + todo)
        finally:
            close = getattr(results, "close", None)
            if close is not None:
                close()


def _chunks(sweep: Sweep, done: set[str], todo: int, size: int) -> Iterator[Chunk]:
    batch: list[Any] = []
    taken = 0
    for item in sweep.scenarios():
        if taken == todo:
            break
        if item.key in done:
            continue
        batch.append(item)
        taken += 1
        if len(batch) == size:
            yield Chunk(sweep.base_dir, tuple(batch))
            batch = []
    if batch:
        yield Chunk(sweep.base_dir, tuple(batch))


def _write_in_order(
    results: Iterator[tuple[int, list[tuple[int, dict[str, Any]]]]],
    store: LineStore | ParquetStore,
    progress: Progress | None,
    done: int,
    total: int,
) -> int:
    """Write chunks in sequence (a reorder buffer); on interruption keep what finished."""
    waiting: dict[int, list[tuple[int, dict[str, Any]]]] = {}
    next_chunk = 0
    computed = 0
    if progress is not None:
        progress(done, total)
    try:
        for sequence, rows in results:
            waiting[sequence] = rows
            while next_chunk in waiting:
                batch = waiting.pop(next_chunk)
                store.write(batch)
                next_chunk += 1
                computed += len(batch)
                if progress is not None:
                    progress(done + computed, total)
    finally:
        for sequence in sorted(waiting):
            store.write(waiting[sequence])
    return computed
