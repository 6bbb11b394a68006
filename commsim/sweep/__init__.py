"""Sweeps: grids of scenarios run on all cores or a Dask cluster, resumable, one row each.

>>> from commsim.sweep import load_sweep, run_sweep
>>> sweep = load_sweep("sweeps/dgx1_vs_a100.yaml")          # doctest: +SKIP
>>> run_sweep(sweep, "results.csv")                           # doctest: +SKIP

Modules: :mod:`~commsim.sweep.spec` (sweep files), :mod:`~commsim.sweep.checks`
(their grammar; every point checked as a case), :mod:`~commsim.sweep.grid`
(expansion and keys), :mod:`~commsim.sweep.evaluate` (one chunk of
scenarios), :mod:`~commsim.sweep.runners` (which runner: serial, process
pool or Dask; re-exports them), :mod:`~commsim.sweep.runner_base` (the
runner interface, the serial runner), :mod:`~commsim.sweep.runner_pool`
(the process pool), :mod:`~commsim.sweep.runner_dask` (Dask),
:mod:`~commsim.sweep.store` (CSV / JSON Lines / Parquet output and resume),
:mod:`~commsim.sweep.run` (:func:`run_sweep`), :mod:`~commsim.sweep.plot`
(winners heat map), :mod:`~commsim.sweep.errors` (:class:`SweepError`).
"""

from commsim.sweep.checks import PARAMETERS, range_values
from commsim.sweep.errors import SweepError
from commsim.sweep.evaluate import RESULT_COLUMNS, Chunk, evaluate_chunk
from commsim.sweep.grid import scenario_key
from commsim.sweep.plot import Winners, plot_winners, winners
from commsim.sweep.run import SweepSummary, run_sweep
from commsim.sweep.runners import (
    DaskRunner,
    ProcessPoolRunner,
    Runner,
    SerialRunner,
    choose_runner,
    make_runner,
    usable_cpus,
)
from commsim.sweep.spec import Sweep, SweepScenario, load_sweep, parse_sweep
from commsim.sweep.store import FORMATS, output_format, read_rows

__all__ = [
    "FORMATS",
    "PARAMETERS",
    "RESULT_COLUMNS",
    "Chunk",
    "DaskRunner",
    "ProcessPoolRunner",
    "Runner",
    "SerialRunner",
    "Sweep",
    "SweepError",
    "SweepScenario",
    "SweepSummary",
    "Winners",
    "choose_runner",
    "evaluate_chunk",
    "load_sweep",
    "make_runner",
    "output_format",
    "parse_sweep",
    "plot_winners",
    "range_values",
    "read_rows",
    "run_sweep",
    "scenario_key",
    "usable_cpus",
    "winners",
]
