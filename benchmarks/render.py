"""Rendering benchmark: traces and plots of a 1024-GPU ring all-reduce, wall time and peak memory.

Run from the repository root::

    python benchmarks/render.py              # every case (about a minute)
    python benchmarks/render.py --quick      # 64 GPUs instead of 1024 (a few s)
    python benchmarks/render.py --only trace

The run is ``simulate("ring", "ring", "all_reduce", "1 GB", gpus=1024)``:
2,095,104 sends. Each case simulates it in a fresh Python process, then
renders one thing into a temporary directory:

``simulate``
    nothing: the baseline the other cases add to;
``trace``
    ``write_trace`` with the default ``max_transfers`` (100,000: the sends of
    an evenly spaced sample of GPUs, every link they cross, every step);
``trace_gz``
    the same, gzip-compressed (``.json.gz``);
``trace_full``
    ``write_trace(..., max_transfers=None)``: every send (slow: about eight
    million JSON events; not in the default set, ask with ``--only``);
``timeline``
    ``plot_timeline`` (the 24 busiest links) to PNG;
``heatmap``
    ``plot_utilisation_heatmap`` (64 links x 100 bins) to PNG;
``topology``
    ``draw_topology`` of the 1024-GPU ring to PNG.

Peak memory is the child process's maximum resident set size
(``resource.getrusage(RUSAGE_SELF).ru_maxrss``): interpreter, imports,
simulation and rendering together. The target is 2 GB per case.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

GPUS, QUICK_GPUS = 1024, 64
PEAK_TARGET_BYTES = 2e9


def rss_bytes() -> int:
    """Peak resident set size of this process (ru_maxrss: KiB on Linux, bytes on macOS)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)


def _trace(result: Any, out: Path, suffix: str = ".json", **kwargs: Any) -> Path:
    from commsim.report.trace import write_trace

    return write_trace([result], out / f"trace{suffix}", **kwargs)


def _timeline(result: Any, out: Path) -> Path:
    from commsim.report.plots import plot_timeline

    plot_timeline(result, out / "timeline.png")
    return out / "timeline.png"


def _heatmap(result: Any, out: Path) -> Path:
    from commsim.report.plots import plot_utilisation_heatmap

    plot_utilisation_heatmap(result, out / "heatmap.png")
    return out / "heatmap.png"


def _topology(result: Any, out: Path) -> Path:
    from commsim.report.draw import draw_topology

    draw_topology(result.topology_obj, out / "topology.png")
    return out / "topology.png"


CASES: dict[str, Callable[[Any, Path], Path | None]] = {
    "simulate": lambda result, out: None,
    "trace": _trace,
    "trace_gz": lambda result, out: _trace(result, out, ".json.gz"),
    "trace_full": lambda result, out: _trace(result, out, ".json.gz", max_transfers=None),
    "timeline": _timeline,
    "heatmap": _heatmap,
    "topology": _topology,
}
DEFAULT_CASES = [name for name in CASES if name != "trace_full"]


def run_child(name: str, gpus: int) -> None:
    """Simulate, render one case, print one JSON line."""
    import matplotlib

    matplotlib.use("Agg")
    from commsim.api import simulate

    started = time.perf_counter()
    result = simulate("ring", "ring", "all_reduce", "1 GB", gpus=gpus)
    simulated = time.perf_counter()
    rss_simulated = rss_bytes()
    with tempfile.TemporaryDirectory() as tmp:
        path = CASES[name](result, Path(tmp))
        rendered = time.perf_counter()
        size = path.stat().st_size if path is not None else 0
    print(
        json.dumps(
            {
                "case": name,
                "sends": result.schedule.n_ops if result.schedule is not None else 0,
                "simulate_s": simulated - started,
                "render_s": rendered - simulated,
                "file_bytes": size,
                "rss_simulated": rss_simulated,
                "rss_peak": rss_bytes(),
            }
        )
    )


def run_case(name: str, gpus: int) -> dict[str, Any]:
    command = [sys.executable, os.path.abspath(__file__), "--child", name, "--gpus", str(gpus)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"render case {name} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_GPUS} GPUs instead of {GPUS}")
    parser.add_argument("--only", choices=sorted(CASES), action="append", help="a case (repeatable)")
    parser.add_argument("--child", choices=sorted(CASES), help=argparse.SUPPRESS)
    parser.add_argument("--gpus", type=int, default=GPUS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        run_child(args.child, args.gpus)
        return 0
    gpus = QUICK_GPUS if args.quick else GPUS
    python = sys.version.split()[0]
    print(f"ring all-reduce of 1 GB on ring({gpus}); one fresh process per case; python {python}")
    header = "| case | sends | simulate s | render s | file MB | peak RSS MiB (after simulate) |"
    print(header)
    print("|---|---:|---:|---:|---:|---:|")
    worst = 0
    for name in args.only or DEFAULT_CASES:
        r = run_case(name, gpus)
        worst = max(worst, r["rss_peak"])
        print(
            f"| {name} | {r['sends']:,} | {r['simulate_s']:.2f} | {r['render_s']:.2f} | "
            f"{r['file_bytes'] / 1e6:.1f} | {r['rss_peak'] / 2**20:.0f} ({r['rss_simulated'] / 2**20:.0f}) |"
        )
    met = "MET" if worst < PEAK_TARGET_BYTES else "NOT MET"
    print(f"\n[{met}] peak memory under 2 GB in every case: largest {worst / 2**20:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
