"""Training steps as Chrome trace-event JSON (Perfetto, chrome://tracing).

One process per step (named by its description), with three threads:
``compute`` (forward and backward of every layer), ``communication`` (one
slice per bucket collective; ``args`` hold its bytes, layers and ready
time) and ``optimizer``. Times in microseconds, rounded to nanoseconds.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from commsim.training.step import StepResult

__all__ = ["step_trace", "write_step_trace"]

_TRACKS = ("compute", "communication", "optimizer")


def _us(time_s: float) -> float:
    return round(time_s * 1e9) / 1e3


def step_trace(results: Sequence[StepResult]) -> dict[str, Any]:
    """The trace-event JSON object of ``results`` (one process each)."""
    events: list[dict[str, Any]] = []
    for pid, step in enumerate(results):
        events.append({"ph": "M", "pid": pid, "name": "process_name", "args": {"name": step.describe()}})
        for tid, track in enumerate(_TRACKS):
            events.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_name", "args": {"name": track}})
        for span in step.timeline():
            events.append(
                {
                    "ph": "X",
                    "pid": pid,
                    "tid": _TRACKS.index(span.track),
                    "name": span.name,
                    "ts": _us(span.start_s),
                    "dur": _us(span.end_s) - _us(span.start_s),
                    "args": span.args,
                }
            )
    return {"traceEvents": events, "displayTimeUnit": "ns"}


def write_step_trace(results: Sequence[StepResult], path: str | Path) -> Path:
    """Write :func:`step_trace` of ``results`` to ``path`` as JSON."""
    path = Path(path)
    path.write_text(json.dumps(step_trace(results)), encoding="utf-8")
    return path
