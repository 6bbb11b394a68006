"""Training steps as Chrome trace-event JSON (Perfetto, chrome://tracing).

One process per step (named by its description), with three threads:
``compute`` (forward and backward of every layer), ``communication`` (one
slice per bucket collective; ``args`` hold its bytes, layers and ready
time) and ``optimizer``. Times in microseconds, rounded to nanoseconds.
A path ending in ``.gz`` is written gzip-compressed (as for collective
traces, :func:`commsim.report.trace.write_trace`).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from commsim.textfile import write_whole
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
    """Write :func:`step_trace` of ``results`` to ``path`` as JSON (gzip if it ends in ``.gz``).

    The file is written to a temporary file beside it and renamed into place,
    so a failed write never leaves half a file.

    Returns
    -------
    Path
        The written file.
    """
    path = Path(path)
    data = json.dumps(step_trace(results)).encode("utf-8")
    if path.suffix == ".gz":
        data = gzip.compress(data, mtime=0)  # no timestamp: the same steps give the same bytes
    return write_whole(path, data)
