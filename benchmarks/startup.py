"""Start-up benchmark: small ``commsim`` commands end to end, each in many fresh processes.

Run from the repository root::

    python benchmarks/startup.py              # 11 rounds (about 25 s)
    python benchmarks/startup.py --rounds 21
    python benchmarks/startup.py --json       # one JSON object instead of the table

The target (issue "Engine v2"): an 8-GPU ``commsim run`` under 0.35 s end
to end. Commands (each round runs every command once, in turn, so a burst
of load elsewhere on the machine touches all of them alike):

``run ring 8``
    ``python -m commsim.cli run --topology ring --gpus 8 --algorithm ring --size 1G``
    (a machine made by a builder);
``run dgx1_v100``
    ``python -m commsim.cli run --topology dgx1_v100 --algorithm ring --size 1G``
    (a shipped machine: a YAML file);
``run scenario``
    ``python -m commsim.cli run scenarios/pcie_4gpu_sync_strategies.yaml``;
``script run ring 8``
    the installed ``commsim`` console script (next to this interpreter), same
    arguments as ``run ring 8``;
``script --help``
    ``commsim --help``.

And for the floor: ``python -c pass``, and importing numpy, typer and
``rich.table`` and defining one pydantic model (what any ``run`` needs
before commsim's own code: the first model imports pydantic's schema
machinery, about as costly as ``import pydantic`` itself), run as the
``commsim`` command runs numpy: with ``OPENBLAS_NUM_THREADS=1`` unless the
environment sets it (``commsim.cli.main`` does the same).

Wall time is ``time.perf_counter`` from spawning the child to reaping it;
CPU time is the child's user + system time (``os.wait4``), every thread
counted (OpenBLAS's spinning threads too), which other load on the machine
changes much less than wall time. The load average is
printed. Bytecode: the children write and read compiled modules under a
temporary ``PYTHONPYCACHEPREFIX`` (one unmeasured warm-up run of each
command fills it), as an installed package runs from its ``__pycache__``;
an environment with ``PYTHONDONTWRITEBYTECODE`` would otherwise recompile
commsim's modules in every process (about 80 ms). ``--no-bytecode-cache``
keeps the environment as it is. The children run with this repository first
on ``PYTHONPATH``, so they measure this checkout.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 0.35
"""The issue's target for an 8-GPU ``commsim run``, end to end (wall)."""

RUN_RING = ["run", "--topology", "ring", "--gpus", "8", "--algorithm", "ring", "--size", "1G"]
PYTHON = [sys.executable]
MODULE = [*PYTHON, "-m", "commsim.cli"]

COMMANDS: dict[str, list[str]] = {
    "run ring 8": [*MODULE, *RUN_RING],
    "run dgx1_v100": [*MODULE, "run", "--topology", "dgx1_v100", "--algorithm", "ring", "--size", "1G"],
    "run scenario": [*MODULE, "run", "scenarios/pcie_4gpu_sync_strategies.yaml"],
}
"""Label -> argv; the console-script commands are added when the script is installed."""

FLOOR: dict[str, list[str]] = {
    "python -c pass": [*PYTHON, "-c", "pass"],
    "numpy, typer, rich.table, one pydantic model": [
        *PYTHON,
        "-c",
        "import numpy, pydantic, typer, rich.table\nclass M(pydantic.BaseModel):\n    x: int = 0",
    ],
}
"""Label -> argv: what every ``run`` pays before commsim's own code."""

TARGETED = ("run ring 8", "run dgx1_v100", "run scenario", "script run ring 8")
"""The 8-GPU runs the target applies to (the floor and ``--help`` are context)."""


def console_script() -> Path | None:
    """The ``commsim`` script installed next to this interpreter (not a pyenv shim), if any."""
    script = Path(sys.executable).parent / "commsim"
    return script if script.is_file() else None


def child_env(root: Path, cache_dir: str | None) -> dict[str, str]:
    """The children's environment: ``root`` first on the path; bytecode cached under ``cache_dir``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH", "")) if p)
    env["COLUMNS"] = "120"
    if cache_dir is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = cache_dir
    return env


Case = tuple[list[str], Path, dict[str, str]]
"""argv, working directory, environment."""


def time_once(case: Case) -> tuple[float, float]:
    """(wall s, CPU s) of one fresh process; raises if it fails."""
    argv, cwd, env = case
    start = time.perf_counter()
    child = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    stderr = child.stderr.read().decode() if child.stderr else ""
    if child.stderr:
        child.stderr.close()
    if child.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited with {child.returncode}:\n{stderr}")
    return wall, usage.ru_utime + usage.ru_stime


def measure(cases: dict[str, Case], rounds: int) -> dict[str, dict[str, float]]:
    """Best and median wall and CPU per case over ``rounds`` alternating rounds (after one warm-up)."""
    for case in cases.values():
        time_once(case)
    samples: dict[str, list[tuple[float, float]]] = {label: [] for label in cases}
    for _ in range(rounds):
        for label, case in cases.items():
            samples[label].append(time_once(case))
    figures = {}
    for label, runs in samples.items():
        walls, cpus = [w for w, _ in runs], [c for _, c in runs]
        figures[label] = {
            "wall_best_s": min(walls),
            "wall_median_s": statistics.median(walls),
            "cpu_best_s": min(cpus),
            "cpu_median_s": statistics.median(cpus),
        }
    return figures


def verdict(label: str, figure: dict[str, float]) -> str:
    """MET / NOT MET on the median wall time for the targeted commands, blank for the others."""
    if label not in TARGETED:  # the baseline's labels end in "(baseline)"
        return ""
    return "MET" if figure["wall_median_s"] < TARGET_S else "NOT MET"


def table(figures: dict[str, dict[str, float]]) -> str:
    """A markdown table of the figures, in ms."""
    lines = [
        "| command | wall best ms | wall median ms | CPU best ms | CPU median ms "
        f"| < {TARGET_S} s (median wall) |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for label, f in figures.items():
        cells = [
            f"{f[key] * 1e3:.0f}" for key in ("wall_best_s", "wall_median_s", "cpu_best_s", "cpu_median_s")
        ]
        lines.append(f"| {label} | {' | '.join(cells)} | {verdict(label, f)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Measure, print the table (or JSON); exit 1 if a targeted command misses the target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=11, help="fresh processes per command (default 11)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--no-floor", action="store_true", help="skip the python/numpy floor")
    parser.add_argument(
        "--no-bytecode-cache", action="store_true", help="keep PYTHONDONTWRITEBYTECODE etc. as they are"
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="DIR",
        help="another checkout (e.g. a git archive of an older commit) measured in the same rounds",
    )
    args = parser.parse_args(argv)
    commands = dict(COMMANDS)
    script = console_script()
    if script is not None:
        commands["script run ring 8"] = [str(script), *RUN_RING]
        commands["script --help"] = [str(script), "--help"]
    with tempfile.TemporaryDirectory(prefix="commsim-pycache-") as cache_dir:
        cache = None if args.no_bytecode_cache else cache_dir
        cases: dict[str, Case] = {}
        for label, command in commands.items():
            if args.baseline is not None:
                cases[f"{label} (baseline)"] = (command, args.baseline, child_env(args.baseline, cache))
            cases[label] = (command, ROOT, child_env(ROOT, cache))
        if not args.no_floor:
            floor_env = {"OPENBLAS_NUM_THREADS": "1", **child_env(ROOT, cache)}
            cases.update({label: (command, ROOT, floor_env) for label, command in FLOOR.items()})
        figures = measure(cases, args.rounds)
    load = os.getloadavg()[0]
    met = all(verdict(label, f) != "NOT MET" for label, f in figures.items())
    if args.json:
        print(
            json.dumps(
                {"rounds": args.rounds, "load_average": load, "target_s": TARGET_S, "figures": figures}
            )
        )
    else:
        print(f"python {platform.python_version()}, {args.rounds} rounds, load average {load:.2f}")
        print(table(figures))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
