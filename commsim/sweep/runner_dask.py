"""The Dask runner: tasks on an existing ``distributed`` cluster, or a local one on loopback.

Dask is an optional extra; the workers, and the scheduler, must be able to
import the same version of commsim, and topology files named by a sweep
must exist at the same path on the workers (shipped names and builders
need nothing).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from types import ModuleType
from typing import Any

from commsim.sweep.errors import SweepError
from commsim.sweep.runner_base import R, Runner, T, usable_cpus

__all__ = ["DASK_INSTALL", "DaskRunner", "import_distributed"]

DASK_INSTALL = 'pip install "commsim[dask]"'


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
    source : str
        Where ``address`` came from, named when it is not a Dask address
        (``--scheduler`` or ``$DASK_SCHEDULER_ADDRESS``).
    """

    def __init__(
        self,
        address: str | None = None,
        workers: int | None = None,
        processes: bool = True,
        timeout_s: float = 5.0,
        source: str = "--scheduler",
    ) -> None:
        if workers is not None and workers < 1:
            raise SweepError(f"a Dask cluster needs at least 1 worker, got {workers}")
        self.address = address
        self.local_workers = workers or usable_cpus()
        self.processes = processes
        self.timeout_s = timeout_s
        self.source = source
        self.workers = 1 if address else self.local_workers
        self.description = f"Dask scheduler {address}" if address else "local Dask cluster"
        self._client: Any = None
        self._cluster: Any = None

    def start(self) -> None:
        """Connect to the scheduler, or start the local cluster."""
        distributed = import_distributed()
        if self.address:
            self._client = _connect(distributed, self.address, self.timeout_s, self.source)
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


def _connect(distributed: ModuleType, address: str, timeout_s: float, source: str) -> Any:
    try:
        client = distributed.Client(address, timeout=timeout_s, set_as_default=False)
    except ValueError as exc:  # distributed's address parsing: no port, bad bracket, unknown scheme
        raise SweepError(
            f"{source} {address!r} is not a Dask scheduler address ({exc}); "
            "write it as tcp://HOST:PORT, e.g. tcp://10.0.0.5:8786"
        ) from None
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
