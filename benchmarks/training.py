"""Training-step benchmark: ResNet-50 on 1 to 64 DGX A100 boxes, 4 bucket sizes, overlap on and off.

Run from the repository root::

    python benchmarks/training.py             # the full sweep (about 20 s)
    python benchmarks/training.py --quick     # 1 to 8 boxes
    python benchmarks/training.py --profile   # also the 15 most expensive functions (cProfile)

The sweep is what ``scenarios/resnet50_a100_cluster_scaling.yaml`` asks
for: ResNet-50 (64 images per GPU, fp32 gradients, 102.2 MB) on
``cluster(box="dgx_a100", nodes=K, nic="ib_hdr")`` for K in 1, 2, 4, ..., 64,
hierarchical all-reduce, bucket caps 1, 5, 25 and 100 MB, each with and
without overlap (56 steps). One :class:`~commsim.training.CollectiveTimer`
per node count simulates every distinct bucket size once (30 per node
count: 15 + 11 + 4 + 2 distinct sizes, some shared); overlap on or off
reuses them.

Per node count it prints: the wall time to build the cluster, the number
and total wall time of the collective simulations (the first one also
finds the routes), and the time spent in the step logic itself. Wall time
(``time.perf_counter``) on one core, in this process, topology building
included.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import platform
import pstats
import sys
import time
from dataclasses import dataclass

from commsim.topology import get_topology
from commsim.training import CollectiveCost, CollectiveTimer, resnet50, simulate_step

NODES = [1, 2, 4, 8, 16, 32, 64]
QUICK_NODES = [1, 2, 4, 8]
BUCKETS = ["1 MB", "5 MB", "25 MB", "100 MB"]
TARGET_S = 60.0


class TimedTimer(CollectiveTimer):
    """A CollectiveTimer that records the wall time of every simulation it runs."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.wall_s: list[float] = []

    def _simulate(self, nbytes: float) -> CollectiveCost:
        started = time.perf_counter()
        cost = super()._simulate(nbytes)
        self.wall_s.append(time.perf_counter() - started)
        return cost


@dataclass
class Row:
    nodes: int
    build_s: float
    collectives: int
    first_s: float
    collectives_s: float
    steps_s: float
    best_efficiency: float

    @property
    def total_s(self) -> float:
        return self.build_s + self.collectives_s + self.steps_s


def run_nodes(nodes: int) -> Row:
    """Every bucket size and overlap setting on ``nodes`` DGX A100 boxes."""
    workload = resnet50(64, flops_per_s="312 TFLOPS", efficiency=0.2)
    started = time.perf_counter()
    topology = get_topology("cluster", box="dgx_a100", nodes=nodes, nic="ib_hdr")
    built = time.perf_counter()
    timer = TimedTimer(topology, "hierarchical")
    steps = [
        simulate_step(workload, timer, bucket_bytes=bucket, overlap=overlap, nodes=nodes)
        for overlap in (False, True)
        for bucket in BUCKETS
    ]
    done = time.perf_counter()
    collectives_s = sum(timer.wall_s)
    return Row(
        nodes=nodes,
        build_s=built - started,
        collectives=len(timer.wall_s),
        first_s=timer.wall_s[0],
        collectives_s=collectives_s,
        steps_s=done - built - collectives_s,
        best_efficiency=max(s.scaling_efficiency for s in steps),
    )


def table(rows: list[Row]) -> str:
    header = ("nodes", "GPUs", "build s", "collectives", "first s", "collectives s", "steps s", "total s",
              "best efficiency")  # fmt: skip
    lines = [
        (
            str(r.nodes),
            str(8 * r.nodes),
            f"{r.build_s:.3f}",
            str(r.collectives),
            f"{r.first_s:.3f}",
            f"{r.collectives_s:.3f}",
            f"{r.steps_s:.3f}",
            f"{r.total_s:.3f}",
            f"{r.best_efficiency:.2%}",
        )
        for r in rows
    ]
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(header)]

    def fmt(cells: tuple[str, ...]) -> str:
        return "| " + " | ".join(c.rjust(w) for c, w in zip(cells, widths)) + " |"

    rule = "|" + "|".join("-" * (w + 1) + ":" for w in widths) + "|"
    return "\n".join([fmt(header), rule, *(fmt(line) for line in lines)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 to 8 boxes only")
    parser.add_argument("--profile", action="store_true", help="print the most expensive functions")
    args = parser.parse_args(argv)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    print(f"python {platform.python_version()} on {platform.machine()}; load average at start: {load}")
    nodes = QUICK_NODES if args.quick else NODES
    profiler = cProfile.Profile() if args.profile else None
    started = time.perf_counter()
    if profiler is not None:
        profiler.enable()
    rows = [run_nodes(n) for n in nodes]
    if profiler is not None:
        profiler.disable()
    total_s = time.perf_counter() - started
    print(table(rows))
    steps = len(nodes) * len(BUCKETS) * 2
    print(f"sweep: {len(BUCKETS)} bucket sizes x {len(nodes)} node counts x overlap on/off = {steps} steps, "
          f"{sum(r.collectives for r in rows)} collective simulations: {total_s:.2f} s wall")  # fmt: skip
    if not args.quick:
        verdict = "met" if total_s < TARGET_S else "NOT met"
        print(f"target: the full sweep under {TARGET_S:g} s on one core: {verdict}")
    if profiler is not None:
        pstats.Stats(profiler, stream=sys.stdout).sort_stats("tottime").print_stats(15)
    return 0


if __name__ == "__main__":
    sys.exit(main())
