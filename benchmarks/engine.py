"""Engine benchmark: plan + replay wall time, simulated sends per second, peak memory.

Run from the repository root::

    python benchmarks/engine.py            # the full benchmark (about 10 s)
    python benchmarks/engine.py --quick    # a smoke run on small rings (a few s)
    python benchmarks/engine.py --only ring_1024

Cases (all ring all-reduce: the ``ring`` algorithm over every GPU of the
machine in rank order, with the routes it gets by default, exactly as
``make_algorithm("ring").plan(Problem(t, tuple(t.gpus), ...))`` plans it):

``dgx1_160MB``
    one 160 MB all-reduce on ``dgx1_v100`` (median of many runs);
``dgx1_sweep``
    30 sizes, 8 B to 4 GiB by factors of 2, on ``dgx1_v100``, plan and
    replay of each size; the time is the whole sweep, on a freshly loaded
    topology so that route finding is included (median of a few sweeps);
``ring_256``, ``ring_1024``
    a 1 GB all-reduce on ``ring(n)`` (``commsim.topology.builders``), plan
    and replay timed separately. ``--quick`` uses 32 and 64 GPUs instead.

Each case runs in a fresh Python process, so its peak memory is that
process's maximum resident set size (``resource.getrusage().ru_maxrss``):
interpreter, imports and the case together, comparable to what
``/usr/bin/time -v`` reports for a peer tool. The resident size after the
imports, before the case, is printed as well.

Times are wall clock (``time.perf_counter``) on one core, median over the
repetitions; ``cpu s`` is the process CPU time of plan + replay, which the
other processes of a shared machine disturb less. Loading or building the
topology is not timed; route finding is (it happens in ``replay``). The
load average is printed because a busy machine slows every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

SWEEP_SIZES = [8 * 2**k for k in range(30)]  # 8 B .. 4 GiB
LARGE_NBYTES = 1e9  # 1 GB, the size of the peer figure in DESIGN.md
QUICK_GPUS = {"ring_256": 32, "ring_1024": 64}  # ring sizes in --quick mode

# targets (DESIGN.md "Speed")
SWEEP_TARGET_S = 1.0
LARGE_TARGET_S = 10.0
SENDS_PER_S_TARGET = 100_000
PEAK_TARGET_BYTES = 1e9  # 1 GB


@dataclass
class Run:
    """One measurement: wall seconds of plan and replay, CPU seconds, sends, simulated makespan."""

    plan_s: float
    replay_s: float
    cpu_s: float
    sends: int
    makespan_s: float


@dataclass
class CaseResult:
    """What one case measured (medians over its repetitions)."""

    name: str
    label: str
    description: str
    repeats: int
    sends: int
    plan_s: float
    replay_s: float
    cpu_s: float
    makespan_s: float
    rss_import_bytes: int
    rss_peak_bytes: int

    @property
    def total_s(self) -> float:
        return self.plan_s + self.replay_s

    @property
    def sends_per_s(self) -> float:
        return self.sends / self.total_s if self.total_s > 0 else float("inf")


# -- the cases (run inside a child process) ---------------------------------


def ring_allreduce(topology: Any, nbytes: float, algorithm: str = "ring") -> Run:
    """Plan and replay one all-reduce (the ring by default), timing both."""
    from commsim.algorithms import Problem, make_algorithm
    from commsim.collectives import Collective
    from commsim.engine import replay

    problem = Problem(topology, tuple(topology.gpus), Collective.ALL_REDUCE, nbytes)
    cpu0, t0 = time.process_time(), time.perf_counter()
    schedule = make_algorithm(algorithm, {}).plan(problem)
    t1 = time.perf_counter()
    record = replay(schedule, topology)
    t2, cpu2 = time.perf_counter(), time.process_time()
    return Run(t1 - t0, t2 - t1, cpu2 - cpu0, schedule.n_ops, record.makespan_s)


def median_run(run: Callable[[], Run], repeats: int) -> Run:
    runs = [run() for _ in range(repeats)]
    return Run(
        statistics.median(r.plan_s for r in runs),
        statistics.median(r.replay_s for r in runs),
        statistics.median(r.cpu_s for r in runs),
        runs[0].sends,
        runs[0].makespan_s,
    )


def case_dgx1_160mb(quick: bool) -> tuple[str, int, Run]:
    from commsim.topology import get_topology

    topology = get_topology("dgx1_v100")
    ring_allreduce(topology, 160e6)  # routes found once, as in a sweep
    repeats = 5 if quick else 50
    description = "ring all-reduce, 160 MB, 8 GPUs of dgx1_v100 (median run)"
    return description, repeats, median_run(lambda: ring_allreduce(topology, 160e6), repeats)


def case_dgx1_sweep(quick: bool) -> tuple[str, int, Run]:
    from commsim.topology import get_topology

    def sweep() -> Run:
        topology = get_topology("dgx1_v100")  # fresh: routes are found inside the sweep
        runs = [ring_allreduce(topology, nbytes) for nbytes in SWEEP_SIZES]
        return Run(
            sum(r.plan_s for r in runs),
            sum(r.replay_s for r in runs),
            sum(r.cpu_s for r in runs),
            sum(r.sends for r in runs),
            runs[-1].makespan_s,
        )

    repeats = 3 if quick else 7
    description = "30 sizes 8 B..4 GiB, ring all-reduce, dgx1_v100 (whole sweep; makespan of 4 GiB)"
    return description, repeats, median_run(sweep, repeats)


def case_ring(gpus: int, repeats: int) -> tuple[str, int, Run]:
    from commsim.topology import ring

    description = f"ring all-reduce, 1 GB, ring({gpus}) topology"
    return description, repeats, median_run(lambda: ring_allreduce(ring(gpus), LARGE_NBYTES), repeats)


def case_cluster(boxes: int, repeats: int) -> tuple[str, int, Run]:
    from commsim.topology import get_topology

    def run() -> Run:
        t0 = time.perf_counter()
        topology = get_topology("cluster", box="dgx_a100", nodes=boxes, nic="ib_hdr")
        built = time.perf_counter() - t0
        measured = ring_allreduce(topology, LARGE_NBYTES, "hierarchical")
        return Run(
            built + measured.plan_s, measured.replay_s, measured.cpu_s, measured.sends, measured.makespan_s
        )

    description = (
        f"hierarchical all-reduce, 1 GB, cluster of {boxes} dgx_a100 boxes ({8 * boxes} GPUs), "
        "topology build counted in plan"
    )
    return description, repeats, median_run(run, repeats)


def case_direct_fat_tree(boxes: int) -> tuple[str, int, Run]:
    from commsim.algorithms import Problem, make_algorithm
    from commsim.collectives import Collective
    from commsim.engine import replay
    from commsim.topology import get_topology

    topology = get_topology(
        "cluster", box="dgx_a100", nodes=boxes, nic="ib_hdr", fabric="fat_tree", oversubscription=4.0
    )
    problem = Problem(topology, tuple(topology.gpus), Collective.ALL_TO_ALL, LARGE_NBYTES)
    cpu0, t0 = time.process_time(), time.perf_counter()
    schedule = make_algorithm("direct", {}).plan(problem)
    t1 = time.perf_counter()
    record = replay(schedule, topology)
    t2, cpu2 = time.perf_counter(), time.process_time()
    description = f"direct all-to-all, 1 GB, {boxes} dgx_a100 boxes on a 4:1 fat tree ({8 * boxes} GPUs)"
    return description, 1, Run(t1 - t0, t2 - t1, cpu2 - cpu0, schedule.n_ops, record.makespan_s)


def case_nccl_cluster(boxes: int) -> tuple[str, int, Run]:
    from commsim.algorithms import Problem, make_algorithm
    from commsim.collectives import Collective
    from commsim.engine import replay
    from commsim.topology import get_topology

    topology = get_topology("cluster", box="dgx_a100", nodes=boxes, nic="ib_hdr")
    problem = Problem(topology, tuple(topology.gpus), Collective.ALL_REDUCE, LARGE_NBYTES)
    cpu0, t0 = time.process_time(), time.perf_counter()
    schedule = make_algorithm("nccl", {}).plan(problem)
    t1 = time.perf_counter()
    record = replay(schedule, topology)
    t2, cpu2 = time.perf_counter(), time.process_time()
    description = f"nccl all-reduce (its plan and replay), 1 GB, {boxes} dgx_a100 boxes ({8 * boxes} GPUs)"
    return description, 1, Run(t1 - t0, t2 - t1, cpu2 - cpu0, schedule.n_ops, record.makespan_s)


CASES: dict[str, Callable[[bool], tuple[str, int, Run]]] = {
    "dgx1_160MB": case_dgx1_160mb,
    "dgx1_sweep": case_dgx1_sweep,
    "ring_256": lambda quick: case_ring(QUICK_GPUS["ring_256"] if quick else 256, 3),
    "ring_1024": lambda quick: case_ring(QUICK_GPUS["ring_1024"] if quick else 1024, 3 if quick else 1),
    "cluster_1024": lambda quick: case_cluster(4 if quick else 128, 3 if quick else 1),
}

# The "Engine v2" scale targets: run only with --scale or --only (seconds to
# minutes each; cluster_512, cluster_1024 and cluster_2048 give the growth of
# cluster_4096, see docs/performance.md).
SCALE_CASES: dict[str, Callable[[bool], tuple[str, int, Run]]] = {
    "ring_2048": lambda quick: case_ring(2048, 1),
    "ring_4096": lambda quick: case_ring(4096, 1),
    "ring_8192": lambda quick: case_ring(8192, 1),
    "ring_16384": lambda quick: case_ring(16384, 1),
    "cluster_512": lambda quick: case_cluster(64, 1),
    "cluster_2048": lambda quick: case_cluster(256, 1),
    "cluster_4096": lambda quick: case_cluster(512, 1),
    "direct_fat_tree_512": lambda quick: case_direct_fat_tree(64),
    "nccl_4096": lambda quick: case_nccl_cluster(512),
}
ALL_CASES = {**CASES, **SCALE_CASES}

# "Engine v2" targets per scale case: (wall seconds, peak bytes or None)
SCALE_TARGETS: dict[str, tuple[float, float | None]] = {
    "ring_8192": (10.0, 2e9),
    "ring_16384": (30.0, None),
    "cluster_4096": (5.0, 2e9),
    "direct_fat_tree_512": (10.0, None),
    "nccl_4096": (2.0, None),
}


def rss_bytes() -> int:
    """This process's peak resident set size (ru_maxrss is KiB on Linux, bytes on macOS)."""
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


def run_child(name: str, quick: bool) -> None:
    """Run one case in this process and print its result as one JSON line."""
    import commsim.algorithms
    import commsim.engine
    import commsim.topology  # noqa: F401  (the imports count in the baseline)

    rss_import = rss_bytes()
    description, repeats, run = ALL_CASES[name](quick)
    label = f"{name} (quick: {QUICK_GPUS[name]} GPUs)" if quick and name in QUICK_GPUS else name
    result = CaseResult(
        name, label, description, repeats, run.sends, run.plan_s, run.replay_s, run.cpu_s,
        run.makespan_s, rss_import, rss_bytes(),
    )  # fmt: skip
    print(json.dumps(asdict(result)))


def run_case(name: str, quick: bool, memory_limit_gb: float | None = None) -> CaseResult | str:
    """Run one case in a fresh Python process; a scale case that fails gives its error line."""
    command = [sys.executable, os.path.abspath(__file__), "--child", name]
    if quick:
        command.append("--quick")
    if memory_limit_gb is not None:
        command += ["--memory-limit", str(memory_limit_gb)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        if name in SCALE_CASES:
            last = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
            return f"{name} failed: {last}"
        raise RuntimeError(f"benchmark case {name} failed:\n{done.stderr}")
    return CaseResult(**json.loads(done.stdout.strip().splitlines()[-1]))


# -- reporting ----------------------------------------------------------------


def cpu_model() -> str:
    """The CPU model, family and model number from /proc/cpuinfo (Linux), else platform's guess."""
    try:
        with open("/proc/cpuinfo") as info:
            first_cpu = info.read().split("\n\n")[0]
    except OSError:
        return platform.processor() or "unknown CPU"
    fields = {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in first_cpu.splitlines())}
    family = f" (family {fields.get('cpu family', '?')}, model {fields.get('model', '?')})"
    return fields.get("model name", platform.processor() or "unknown CPU") + family


def machine() -> list[str]:
    import numpy
    import simpy

    load = ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    return [
        f"machine: {cpu_model()}, {os.cpu_count()} logical CPUs (the benchmark uses one)",
        f"python {platform.python_version()}, numpy {numpy.__version__}, simpy {simpy.__version__}",
        f"load average (1, 5, 15 min) at start: {load}",
    ]


def table(results: list[CaseResult]) -> str:
    header = ("case", "sends", "plan s", "replay s", "total s", "cpu s", "sends/s", "RSS imports MiB",
              "peak RSS MiB")  # fmt: skip
    rows = [
        (
            r.label,
            f"{r.sends:,}",
            f"{r.plan_s:.4f}",
            f"{r.replay_s:.4f}",
            f"{r.total_s:.4f}",
            f"{r.cpu_s:.4f}",
            f"{r.sends_per_s:,.0f}",
            f"{r.rss_import_bytes / 2**20:.0f}",
            f"{r.rss_peak_bytes / 2**20:.0f}",
        )
        for r in results
    ]
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]

    def line(cells: tuple[str, ...]) -> str:
        padded = [c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))]
        return "| " + " | ".join(padded) + " |"

    rule = "|" + "|".join("-" * (w + 1) + (":" if i else "-") for i, w in enumerate(widths)) + "|"
    return "\n".join([line(header), rule, *(line(r) for r in rows)])


def targets(results: list[CaseResult], quick: bool) -> list[tuple[str, str, bool | None]]:
    """(target, measured, met?), with None where the case did not run at full size."""
    by_name = {r.name: r for r in results}
    checks: list[tuple[str, str, bool | None]] = []
    sweep = by_name.get("dgx1_sweep")
    if sweep:
        target = f"30-size sweep on dgx1_v100 under {SWEEP_TARGET_S:g} s"
        checks.append((target, f"{sweep.total_s:.3f} s", sweep.total_s < SWEEP_TARGET_S))
    large = by_name.get("ring_1024")
    if large:
        target = f"1024 GPUs (plan + replay) under {LARGE_TARGET_S:g} s"
        checks.append((target, f"{large.total_s:.3f} s", None if quick else large.total_s < LARGE_TARGET_S))
        target = f"at least {SENDS_PER_S_TARGET:,} simulated sends/s (1024 GPUs, plan + replay)"
        met = None if quick else large.sends_per_s >= SENDS_PER_S_TARGET
        checks.append((target, f"{large.sends_per_s:,.0f} /s", met))
    cluster = by_name.get("cluster_1024")
    if cluster:
        target = f"hierarchical all-reduce on 128 DGX A100 boxes under {LARGE_TARGET_S:g} s"
        met = None if quick else cluster.total_s < LARGE_TARGET_S
        checks.append((target, f"{cluster.total_s:.3f} s", met))
    for name, (seconds, peak_bytes) in SCALE_TARGETS.items():
        case = by_name.get(name)
        if case:
            checks.append((f"{name} under {seconds:g} s", f"{case.total_s:.3f} s", case.total_s < seconds))
            if peak_bytes is not None:
                measured = f"{case.rss_peak_bytes / 2**20:.0f} MiB"
                checks.append((f"{name} peak memory under {peak_bytes / 1e9:g} GB", measured,
                               case.rss_peak_bytes < peak_bytes))  # fmt: skip
    results = [r for r in results if r.name in CASES]  # the 1 GB bound is for the default cases
    if results:
        peak = max(results, key=lambda r: r.rss_peak_bytes)
        met = None if quick else peak.rss_peak_bytes < PEAK_TARGET_BYTES
        measured = f"{peak.rss_peak_bytes / 2**20:.0f} MiB ({peak.name})"
        checks.append(("peak memory under 1 GB (largest case, process max RSS)", measured, met))
    return checks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="smoke mode: rings of 32 and 64 GPUs, few repeats"
    )
    parser.add_argument(
        "--only", choices=sorted(ALL_CASES), metavar="NAME", help=f"one case: {', '.join(ALL_CASES)}"
    )
    parser.add_argument(
        "--scale", action="store_true", help=f"also the Engine v2 scale cases: {', '.join(SCALE_CASES)}"
    )
    parser.add_argument(
        "--memory-limit",
        type=float,
        metavar="GB",
        help="address-space limit of each case's process (a case too large fails fast, not by swapping)",
    )
    parser.add_argument("--child", choices=sorted(ALL_CASES), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        if args.memory_limit is not None:
            limit = int(args.memory_limit * 1e9)
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        run_child(args.child, args.quick)
        return 0
    print("\n".join(machine()))
    given = argv if argv is not None else sys.argv[1:]
    print("command: " + " ".join(["python", "benchmarks/engine.py", *given]))
    if args.quick:
        print("quick mode: ring_256 runs on 32 GPUs and ring_1024 on 64; their targets are not judged")
    print()
    names = [args.only] if args.only else list(CASES) + (list(SCALE_CASES) if args.scale else [])
    outcomes = [run_case(name, args.quick, args.memory_limit) for name in names]
    results = [r for r in outcomes if isinstance(r, CaseResult)]
    if results:
        print(table(results))
        print()
    for r in results:
        print(f"  {r.label}: {r.description}, {r.repeats} run(s), simulated makespan {r.makespan_s:.6g} s")
    print()
    for failure in (r for r in outcomes if isinstance(r, str)):
        print(f"  {failure}")
    for target, measured, met in targets(results, args.quick):
        verdict = "n/a in quick mode" if met is None else ("MET" if met else "NOT MET")
        print(f"  [{verdict}] {target}: {measured}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
