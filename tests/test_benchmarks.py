"""The benchmarks run (quick mode) and print their tables; their figures live in docs/performance.md."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_engine_benchmark_quick_mode_runs() -> None:
    proc = subprocess.run(
        [sys.executable, "benchmarks/engine.py", "--quick"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    for case in ("dgx1_160MB", "dgx1_sweep", "ring_256", "ring_1024", "cluster_1024"):
        assert case in proc.stdout
    assert "[MET] 30-size sweep on dgx1_v100" in proc.stdout
