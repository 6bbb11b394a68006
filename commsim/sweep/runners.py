"""Runners: where the chunks of a sweep run (this process, a process pool, or Dask).

Every runner has one interface: used as a context manager, its
:meth:`Runner.run` takes a function and an iterable of tasks and yields
``(sequence number, result)`` pairs as tasks finish, keeping at most
``window`` tasks in flight so memory stays flat however long the sweep.

- :class:`SerialRunner`: in this process, in order.
- :class:`ProcessPoolRunner`: ``concurrent.futures`` on all
  usable cores. Workers are forked, all at start, while this process has a
  single thread (no progress-bar thread yet); otherwise they start from a
  fork server that has already imported commsim (spawn where neither exists).
- :class:`DaskRunner`: ``distributed.Client(address)`` for an existing
  cluster, or a local cluster on the loopback interface. Dask is an
  optional extra; the workers, and the scheduler, must be able to import
  the same version of commsim, and topology files named by a sweep must
  exist at the same path on the workers (shipped names and builders need
  nothing).

Without a choice on the command line, :func:`choose_runner` picks serial or
the pool from the number of scenarios and the idle cores (see its rule);
Dask only runs when asked for. Every runner stops its workers when the
sweep ends, is interrupted (Ctrl-C) or fails: pool workers ignore SIGINT
(the parent handles it) and are terminated on an abnormal exit, so no
process outlives the command.
"""

from __future__ import annotations

import logging
import math
import multiprocessing
import os
import signal
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from types import ModuleType, TracebackType
from typing import Any, TypeVar

from commsim.sweep.errors import SweepError

__all__ = [
    "DaskRunner",
    "ProcessPoolRunner",
    "Runner",
    "SerialRunner",
    "choose_runner",
    "idle_cpus",
    "make_runner",
    "usable_cpus",
]

T = TypeVar("T")
R = TypeVar("R")

MAX_CHUNK = 256
"""Most scenarios per task: keeps progress moving and results small."""

DASK_INSTALL = 'pip install "commsim[dask]"'


POOL_MIN_IDLE_CORES = 2
"""Fewest idle cores for which :func:`choose_runner` picks the process pool.

With one idle core a pool only adds start-up, pickling and the parent's
share (it merges and writes rows in order) to the same work: on this
project's 2-core machines, loaded by other jobs (load average about 3), the
pool was as slow as serial or slower on the shipped sweeps, while on an idle
2-core machine it ran a 1,080-scenario sweep 1.9x faster (docs/performance.md,
"Sweeps").
"""

POOL_MIN_SCENARIOS_PER_CORE = 100
"""Fewest scenarios per idle core for which :func:`choose_runner` picks the pool.

Below it the pool's start-up (about 0.1 s to fork and warm each worker) and
the tail of the last chunks outweigh the work shared out.
"""


def idle_cpus(cores: int | None = None, load: float | None = None) -> int:
    """Usable cores not busy with other work: ``cores - round(load)``, at least 0.

    ``load`` defaults to the 1-minute load average (``os.getloadavg``; 0 where
    the OS has none), ``cores`` to :func:`usable_cpus`.
    """
    cores = usable_cpus() if cores is None else cores
    if load is None:
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    return max(0, cores - round(load))


def usable_cpus() -> int:
    """Cores this process may run on.

    ``os.process_cpu_count()`` (Python 3.13+, honours ``PYTHON_CPU_COUNT``),
    else the affinity mask (``os.sched_getaffinity``), else ``os.cpu_count()``.
    """
    count = getattr(os, "process_cpu_count", None)
    if count is not None:
        return max(1, count() or 1)
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


class Runner:
    """Runs tasks and yields ``(sequence number, result)`` as they finish.

    Subclasses override :meth:`run`, and :meth:`start` / :meth:`close` when
    they hold resources; ``with runner:`` starts and closes.
    """

    description = "runner"
    workers = 1

    def __enter__(self) -> Runner:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if kind is None:
            self.close()
        else:
            self.abort()

    def start(self) -> None:
        """Acquire workers (nothing by default)."""

    def close(self) -> None:
        """Release workers (nothing by default)."""

    def abort(self) -> None:
        """Release workers at once after an error or an interrupt (by default as :meth:`close`)."""
        self.close()

    def chunk_size(self, scenarios: int) -> int:
        """Scenarios per task: about four tasks per worker, at most :data:`MAX_CHUNK`."""
        return max(1, min(MAX_CHUNK, math.ceil(scenarios / (4 * self.workers))))

    def run(
        self, fn: Callable[[T], R], tasks: Iterable[T], window: int | None = None
    ) -> Iterator[tuple[int, R]]:
        """Apply ``fn`` to every task; yield ``(i, fn(tasks[i]))`` in completion order."""
        raise NotImplementedError


class SerialRunner(Runner):
    """Every task in this process, in order (the reference for determinism)."""

    description = "serial (this process)"

    def chunk_size(self, scenarios: int) -> int:
        """Small chunks: only the progress bar cares."""
        return max(1, min(32, scenarios))

    def run(
        self, fn: Callable[[T], R], tasks: Iterable[T], window: int | None = None
    ) -> Iterator[tuple[int, R]]:
        """``fn`` on each task in turn."""
        for i, task in enumerate(tasks):
            yield i, fn(task)


class ProcessPoolRunner(Runner):
    """A ``concurrent.futures.ProcessPoolExecutor`` of ``workers`` processes (default: all cores)."""

    def __init__(self, workers: int | None = None) -> None:
        if workers is not None and workers < 1:
            raise SweepError(f"a process pool needs at least 1 worker, got {workers}")
        self.workers = workers or usable_cpus()
        self.description = f"process pool of {self.workers} worker(s)"
        self._pool: ProcessPoolExecutor | None = None

    def start(self) -> None:
        """Start the pool and its workers (before any progress-bar thread exists, ideally)."""
        self._pool = ProcessPoolExecutor(self.workers, mp_context=_mp_context(), initializer=_ignore_sigint)
        try:
            wait([self._pool.submit(_ready) for _ in range(self.workers)])  # start every worker now
        except BaseException:
            self.abort()
            raise

    def close(self) -> None:
        """Stop the pool, dropping tasks not yet started; wait for the workers to exit."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def abort(self) -> None:
        """Terminate the workers (running tasks are lost) and wait for them to exit."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        processes = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            if process.is_alive():
                process.terminate()
        for process in processes:
            process.join(timeout=5)
            if process.is_alive():
                process.kill()
                process.join()

    def run(
        self, fn: Callable[[T], R], tasks: Iterable[T], window: int | None = None
    ) -> Iterator[tuple[int, R]]:
        """Submit up to ``window`` (default 2 per worker) tasks at a time; yield as they finish."""
        if self._pool is None:
            raise RuntimeError("ProcessPoolRunner.run outside 'with runner:'")
        pool = self._pool
        try:
            yield from _windowed(lambda task: pool.submit(fn, task), tasks, window or 2 * self.workers)
        except BrokenProcessPool:
            raise SweepError(
                "a worker process of the pool died (killed, out of memory, or unable to re-import the "
                "main script: guard a script's code with 'if __name__ == \"__main__\":'); "
                "run with --serial to see the scenario's own error"
            ) from None


def _ready() -> None:
    """A task that does nothing: submitted to start the pool's workers."""


def _ignore_sigint() -> None:
    """Pool workers leave Ctrl-C to the parent, which stops them (no traceback per worker)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _windowed(submit: Callable[[T], Future[R]], tasks: Iterable[T], window: int) -> Iterator[tuple[int, R]]:
    pending: dict[Future[R], int] = {}
    numbered = enumerate(tasks)
    try:
        _fill(pending, numbered, submit, window)
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in sorted(done, key=pending.__getitem__):
                yield pending.pop(future), future.result()
            _fill(pending, numbered, submit, window)
    finally:
        for future in pending:
            future.cancel()


def _fill(
    pending: dict[Future[R], int],
    numbered: Iterator[tuple[int, T]],
    submit: Callable[[T], Future[R]],
    window: int,
) -> None:
    while len(pending) < window:
        item = next(numbered, None)
        if item is None:
            return
        pending[submit(item[1])] = item[0]


def _mp_context() -> Any:
    """How workers start: by fork, fork server or spawn.

    Fork while this process has a single thread (instant, and safe then);
    else a fork server that has imported commsim already; else spawn.
    """
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    if "forkserver" in methods:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["commsim.sweep.evaluate"])
        return context
    return multiprocessing.get_context("spawn")


class DaskRunner(Runner):
    """Tasks on a Dask distributed cluster: an existing one, or a local one on loopback.

    Parameters
    ----------
    address : str, optional
        Scheduler address, e.g. ``tcp://10.0.0.5:8786``. Without it, a local
        cluster of ``workers`` single-threaded workers starts on 127.0.0.1.
    workers : int, optional
        Size of the local cluster (default: all usable cores).
    processes : bool
        Local cluster only: worker processes (True; needed for speed, the
        simulation holds the GIL) or threads in this process (False; starts
        in milliseconds, for tests).
    timeout_s : float
        How long to wait for the scheduler, and for at least one worker.
    """

    def __init__(
        self,
        address: str | None = None,
        workers: int | None = None,
        processes: bool = True,
        timeout_s: float = 5.0,
    ) -> None:
        if workers is not None and workers < 1:
            raise SweepError(f"a Dask cluster needs at least 1 worker, got {workers}")
        self.address = address
        self.local_workers = workers or usable_cpus()
        self.processes = processes
        self.timeout_s = timeout_s
        self.workers = 1 if address else self.local_workers
        self.description = f"Dask scheduler {address}" if address else "local Dask cluster"
        self._client: Any = None
        self._cluster: Any = None

    def start(self) -> None:
        """Connect to the scheduler, or start the local cluster."""
        distributed = import_distributed()
        if self.address:
            self._client = _connect(distributed, self.address, self.timeout_s)
        else:
            self._cluster = distributed.LocalCluster(
                n_workers=self.local_workers,
                threads_per_worker=1,
                processes=self.processes,
                host="127.0.0.1" if self.processes else None,
                dashboard_address=None,
                silence_logs=logging.ERROR,
            )
            self._client = distributed.Client(self._cluster, set_as_default=False)
        self.workers = max(1, sum(self._client.nthreads().values()))
        self.description = f"{self.description} ({self.workers} worker thread(s))"

    def close(self) -> None:
        """Disconnect, and stop the local cluster if this runner started it."""
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None

    def run(
        self, fn: Callable[[T], R], tasks: Iterable[T], window: int | None = None
    ) -> Iterator[tuple[int, R]]:
        """Submit up to ``window`` tasks at a time; yield results as they finish."""
        if self._client is None:
            raise RuntimeError("DaskRunner.run outside 'with runner:'")
        distributed = import_distributed()
        client = self._client
        window = window or 2 * self.workers
        numbered = enumerate(tasks)
        in_flight: dict[str, tuple[int, Any]] = {}
        finished = distributed.as_completed(loop=client.loop)

        def submit_more() -> None:
            while len(in_flight) < window:
                item = next(numbered, None)
                if item is None:
                    return
                future = client.submit(fn, item[1], pure=False)
                in_flight[future.key] = (item[0], future)
                finished.add(future)

        try:
            submit_more()
            for future in finished:
                seq, _ = in_flight.pop(future.key)
                yield seq, future.result()
                submit_more()
        finally:
            finished.clear()
            if in_flight:
                client.cancel([future for _, future in in_flight.values()])


def _connect(distributed: ModuleType, address: str, timeout_s: float) -> Any:
    try:
        client = distributed.Client(address, timeout=timeout_s, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise SweepError(
            f"cannot reach the Dask scheduler at {address} within {timeout_s:g} s ({exc}); "
            "check the address and port, that the scheduler is running, and that this machine can reach it"
        ) from None
    try:
        client.wait_for_workers(1, timeout=timeout_s)
    except (OSError, TimeoutError):
        client.close()
        raise SweepError(
            f"the Dask scheduler at {address} has no workers (waited {timeout_s:g} s); "
            "start some with 'dask worker ADDRESS'"
        ) from None
    return client


def import_distributed() -> ModuleType:
    """The ``distributed`` package, or a :class:`SweepError` saying how to install it."""
    try:
        import distributed
    except ImportError:
        raise SweepError(
            f"running on Dask needs the optional Dask packages, which are not installed: {DASK_INSTALL}"
        ) from None
    return distributed


def choose_runner(scenarios: int, cores: int | None = None, load: float | None = None) -> Runner:
    """Serial or a process pool, from the number of scenarios and the idle cores.

    The rule: with ``idle`` = usable cores minus the rounded 1-minute load
    average (:func:`idle_cpus`), a pool of ``idle`` workers when
    ``idle >= POOL_MIN_IDLE_CORES`` (2) and ``scenarios >=
    POOL_MIN_SCENARIOS_PER_CORE * idle`` (100 per idle core); otherwise
    serial. A local Dask cluster is never chosen: on one machine it is slower
    than both at every size measured (docs/performance.md, "Sweeps"); Dask
    runs when asked for (``--workers``, ``--scheduler``,
    ``DASK_SCHEDULER_ADDRESS``). The runner's description says why.

    Parameters
    ----------
    scenarios : int
        Scenarios to compute.
    cores : int, optional
        Usable cores (default :func:`usable_cpus`).
    load : float, optional
        Cores' worth of other work running (default the 1-minute load average).
    """
    cores = usable_cpus() if cores is None else cores
    idle = idle_cpus(cores, load)
    seen = f"{idle} of {cores} core(s) idle"
    if idle < POOL_MIN_IDLE_CORES:
        why = f"{seen}, a pool needs {POOL_MIN_IDLE_CORES}"
    elif scenarios < POOL_MIN_SCENARIOS_PER_CORE * idle:
        why = f"{scenarios} scenarios < {POOL_MIN_SCENARIOS_PER_CORE} per idle core ({seen})"
    else:
        pool = ProcessPoolRunner(idle)
        pool.description += f"; chosen: {scenarios} scenarios, {seen}"
        return pool
    serial = SerialRunner()
    serial.description = f"serial (this process; chosen: {why})"
    return serial


def make_runner(
    *,
    serial: bool = False,
    workers: int | None = None,
    scheduler: str | None = None,
    environ: Mapping[str, str] | None = None,
    processes: bool = True,
    pool: bool = False,
    scenarios: int | None = None,
) -> Runner:
    """The runner for a command line's choices.

    ``serial`` runs in this process; ``pool`` in a process pool on all
    cores; ``scheduler`` (or, when none of these nor ``workers`` is given,
    ``DASK_SCHEDULER_ADDRESS`` in ``environ``) an existing Dask cluster;
    ``workers`` a local Dask cluster of that many workers; otherwise
    :func:`choose_runner` for ``scenarios`` (a pool when it is not known).

    Raises
    ------
    SweepError
        If the choices contradict each other, or Dask is needed and missing.
    """
    environ = os.environ if environ is None else environ
    if workers is not None and scheduler:
        raise SweepError(
            "--workers starts a local Dask cluster and --scheduler uses an existing one: choose one"
        )
    if sum((serial, pool, workers is not None, bool(scheduler))) > 1:
        raise SweepError("choose one of --serial, --pool, --workers and --scheduler")
    if serial:
        return SerialRunner()
    if pool:
        return ProcessPoolRunner()
    address = scheduler or (environ.get("DASK_SCHEDULER_ADDRESS") if workers is None else None)
    if address or workers is not None:
        import_distributed()
        return DaskRunner(address=address or None, workers=workers, processes=processes)
    if scenarios is None:
        return ProcessPoolRunner()
    return choose_runner(scenarios)
