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

The runners live in :mod:`~commsim.sweep.runner_base` (the interface and
the serial runner), :mod:`~commsim.sweep.runner_pool` and
:mod:`~commsim.sweep.runner_dask`; this module chooses among them and
re-exports them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from commsim.sweep.errors import SweepError
from commsim.sweep.runner_base import MAX_CHUNK, Runner, SerialRunner, usable_cpus
from commsim.sweep.runner_dask import DASK_INSTALL, DaskRunner, import_distributed
from commsim.sweep.runner_pool import ProcessPoolRunner

__all__ = [
    "DASK_INSTALL",
    "MAX_CHUNK",
    "DaskRunner",
    "ProcessPoolRunner",
    "Runner",
    "SerialRunner",
    "choose_runner",
    "idle_cpus",
    "import_distributed",
    "make_runner",
    "usable_cpus",
]


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
        source = "--scheduler" if scheduler else "$DASK_SCHEDULER_ADDRESS"
        return DaskRunner(address=address or None, workers=workers, processes=processes, source=source)
    if scenarios is None:
        return ProcessPoolRunner()
    return choose_runner(scenarios)
