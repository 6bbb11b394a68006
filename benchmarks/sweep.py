"""Sweep benchmark: the same 1,080-scenario sweep run serially, on a process pool and on local Dask.

Run from the repository root::

    python benchmarks/sweep.py            # the full benchmark (about a minute on 2 cores)
    python benchmarks/sweep.py --quick    # 4 sizes instead of 30 (a smoke run)
    python benchmarks/sweep.py --json     # one JSON object instead of the table

The sweep: 4 eight-GPU machines (``dgx1_p100``, ``dgx1_v100``, ``dgx_a100``,
``hgx_h100``) x 9 all-reduce algorithms x 30 sizes (8 B to 4 GiB by factors
of 2) = 1,080 scenarios; the algorithms that need direct NVLink cycles or
trees cannot run on the NVSwitch boxes and record an error row instead
(cheaply). Every mode writes a CSV; the benchmark checks that all of them
are byte-identical.

Modes:

``serial``
    :class:`~commsim.sweep.SerialRunner`, this process.
``pool``
    :class:`~commsim.sweep.ProcessPoolRunner` on every usable core (the
    default of ``commsim sweep``); workers are forked when the process has
    one thread.
``dask``
    :class:`~commsim.sweep.DaskRunner`: a local cluster of one single-threaded
    worker process per core on 127.0.0.1 (``commsim sweep --workers N``).
    Its start-up (spawning workers that import commsim) is timed apart.

Every run is a fresh Python process (so one mode's leftovers, such as Dask's
threads, cannot change how the next starts its workers). Wall times are
``time.perf_counter`` around ``run_sweep``, including the runner's start and
stop (the best of ``--repeat`` rounds, modes interleaved);
CPU time is this process's plus its finished children's (``getrusage``), so
``cpu / wall`` is the parallelism reached. The load average is printed
because other processes on a shared machine take cores away from the pool:
CPU time does not depend on them, wall time does.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from commsim.sweep import (
    DaskRunner,
    ProcessPoolRunner,
    Runner,
    SerialRunner,
    parse_sweep,
    run_sweep,
    usable_cpus,
)

SWEEP = """\
name: benchmark
collective: all_reduce
grid:
  - product:
      topology: [dgx1_p100, dgx1_v100, dgx_a100, hgx_h100]
      algorithm: [ring, multi_ring, tree, tree_packing, hybrid, halving_doubling, direct, hierarchical, nccl]
      size: {from: 8 B, to: %s, factor: 2}
"""


MODES = ("serial", "pool", "dask")


def _runner(mode: str, workers: int) -> Runner:
    if mode == "serial":
        return SerialRunner()
    if mode == "pool":
        return ProcessPoolRunner(workers)
    return DaskRunner(workers=workers)


def _has_dask() -> bool:
    try:
        import distributed  # noqa: F401
    except ImportError:
        return False
    return True


def child(mode: str, workers: int, quick: bool, output: str) -> None:
    """One mode in this (fresh) process: print wall and CPU seconds as JSON."""
    sweep = parse_sweep(SWEEP % ("64 B" if quick else "4 GiB"), "benchmark.yaml")
    if mode == "dask_startup":
        started = time.perf_counter()
        with DaskRunner(workers=workers):
            ready = time.perf_counter()
        print(json.dumps({"wall_s": ready - started}))
        return
    cpu_s = _cpu_s()
    summary = run_sweep(sweep, output, runner=_runner(mode, workers), resume=False)
    print(json.dumps({"wall_s": summary.wall_s, "cpu_s": _cpu_s() - cpu_s, "scenarios": summary.scenarios}))


def _run_child(mode: str, args: argparse.Namespace, output: Path) -> dict[str, float]:
    command = [sys.executable, __file__, "--child", mode, "--workers", str(args.workers)]
    command += ["--out", str(output), *(["--quick"] if args.quick else [])]
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{mode} failed:\n{proc.stderr}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 sizes instead of 30")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--workers", type=int, default=usable_cpus(), help="pool and Dask workers")
    parser.add_argument("--repeat", type=int, default=3, help="rounds; the best wall time counts")
    parser.add_argument("--child", choices=[*MODES, "dask_startup"], help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.workers, args.quick, args.out)
        return
    modes = MODES if _has_dask() else MODES[:2]
    if "dask" not in modes:
        print("(dask not installed: pip install 'commsim[dask]' to include it)")
    runs: dict[str, list[dict[str, float]]] = {mode: [] for mode in modes}
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as folder:
        outputs = {mode: Path(folder) / f"{mode}.csv" for mode in modes}
        for _ in range(args.repeat):
            for mode in modes:
                runs[mode].append(_run_child(mode, args, outputs[mode]))
                loads.append(os.getloadavg()[0])
        identical = all(filecmp.cmp(outputs["serial"], path, shallow=False) for path in outputs.values())
        startup = _run_child("dask_startup", args, outputs["serial"]) if "dask" in modes else None
    best = {mode: min(runs[mode], key=lambda r: r["wall_s"]) for mode in modes}
    report = {
        "machine": f"{platform.processor() or platform.machine()}, {usable_cpus()} usable cores",
        "load_average_1min": {"min": min(loads), "max": max(loads)},
        "scenarios": int(best["serial"]["scenarios"]),
        "workers": args.workers,
        "rounds": args.repeat,
        "identical_rows": identical,
        "dask_startup_s": startup["wall_s"] if startup else None,
        "modes": {
            mode: {
                "wall_s": best[mode]["wall_s"],
                "median_wall_s": statistics.median(r["wall_s"] for r in runs[mode]),
                "cpu_s": best[mode]["cpu_s"],
                "speedup": best["serial"]["wall_s"] / best[mode]["wall_s"],
            }
            for mode in modes
        },
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    _print(report)
    if not identical:
        raise SystemExit("the modes wrote different rows")


def _cpu_s() -> float:
    """CPU seconds of this process and its finished children."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _print(report: dict) -> None:
    scenarios = report["scenarios"]
    load = report["load_average_1min"]
    print(
        f"{scenarios} scenarios on {report['machine']}, {report['workers']} workers, best of "
        f"{report['rounds']} round(s); 1-minute load average {load['min']:.2f}..{load['max']:.2f}"
    )
    print(f"{'mode':8} {'wall':>8} {'median':>8} {'cpu':>8} {'cpu/wall':>9} {'scen./s':>8} {'speedup':>8}")
    for name, r in report["modes"].items():
        print(
            f"{name:8} {r['wall_s']:7.2f}s {r['median_wall_s']:7.2f}s {r['cpu_s']:7.2f}s "
            f"{r['cpu_s'] / r['wall_s']:9.2f} {scenarios / r['wall_s']:8.0f} {r['speedup']:7.2f}x"
        )
    if report["dask_startup_s"] is not None:
        dask = report["modes"]["dask"]
        net = dask["wall_s"] - report["dask_startup_s"]
        print(
            f"dask cluster start-up {report['dask_startup_s']:.2f} s; without it {net:.2f} s "
            f"({report['modes']['serial']['wall_s'] / net:.2f}x)"
        )
    print(f"rows identical across modes: {report['identical_rows']}")


if __name__ == "__main__":
    main()
