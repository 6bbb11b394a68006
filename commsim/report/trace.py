"""Chrome trace-event JSON of replays, for Perfetto (ui.perfetto.dev) and chrome://tracing.

:func:`chrome_trace` gives the trace as a JSON-ready dict, :func:`write_trace`
streams it into a file (gzip-compressed for ``.gz``), whole or not at all.
The events, their layout and the sampling of big runs are
:mod:`commsim.report.trace_events`' (:func:`trace_events`,
:func:`assign_lanes` and :data:`DEFAULT_MAX_TRANSFERS` are re-exported here).
"""

from __future__ import annotations

import gzip
import io
import json
import numbers
import os
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from commsim.report.activity import run_parts
from commsim.report.trace_events import DEFAULT_MAX_TRANSFERS, Event, assign_lanes, sample_sends, trace_events
from commsim.results import Result

__all__ = ["DEFAULT_MAX_TRANSFERS", "assign_lanes", "chrome_trace", "trace_events", "write_trace"]


def _other_data(results: Sequence[Result], max_transfers: int | None) -> dict[str, Any]:
    sampled = {}
    for pid, result in enumerate(results, start=1):
        _, note = sample_sends(run_parts(result), max_transfers)
        if note:
            sampled[str(pid)] = note
    return {"generator": "commsim", "time_unit_of_ts": "us", "sampled": sampled}


def chrome_trace(
    results: Sequence[Result], max_transfers: int | None = DEFAULT_MAX_TRANSFERS
) -> dict[str, Any]:
    """The trace of ``results`` as a JSON-ready dict (``{"traceEvents": [...], ...}``).

    Parameters
    ----------
    results : sequence of Result
        Results of :func:`commsim.api.simulate` or :func:`~commsim.api.run_scenario`
        (they carry their replay record); one trace process each.
    max_transfers : int or None
        Most sends shown per result (see the module docstring); None keeps all.

    Returns
    -------
    dict
        ``traceEvents``, ``displayTimeUnit`` (``"ns"``) and ``otherData``.

    Raises
    ------
    CommsimError
        If a result carries no replay record, or ``max_transfers`` is not
        None or a whole number of at least 1.

    Examples
    --------
    >>> from commsim.api import simulate
    >>> trace = chrome_trace([simulate("pcie_4gpu_switch", "ring", size="160 MB")])
    >>> sum(e["cat"] == "transfer" for e in trace["traceEvents"])
    24
    """
    _check_max_transfers(max_transfers)
    return {
        "traceEvents": list(trace_events(results, max_transfers)),
        "displayTimeUnit": "ns",
        "otherData": _other_data(results, max_transfers),
    }


_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False)


def _dump(event: Event) -> str:
    return _ENCODER.encode(event)


def _write(stream: IO[str], results: Sequence[Result], max_transfers: int | None) -> None:
    stream.write('{"displayTimeUnit":"ns","otherData":')
    stream.write(_dump(_other_data(results, max_transfers)))
    stream.write(',"traceEvents":[\n')
    first = True
    for event in trace_events(results, max_transfers):
        if not first:
            stream.write(",\n")
        stream.write(_dump(event))
        first = False
    stream.write("\n]}\n")


def _check_max_transfers(max_transfers: Any) -> None:
    """Refuse a cap that is no whole number >= 1 (-1 dropped a send silently, 2.5 failed inside)."""
    from commsim.errors import CommsimError

    whole = isinstance(max_transfers, numbers.Integral) and not isinstance(max_transfers, bool)
    if max_transfers is not None and not (whole and int(max_transfers) >= 1):
        raise CommsimError(
            f"max_transfers must be None or a whole number of at least 1, got {max_transfers!r}"
        )


def write_trace(
    results: Sequence[Result], path: str | Path, max_transfers: int | None = DEFAULT_MAX_TRANSFERS
) -> Path:
    """Write the trace of ``results`` to ``path`` (gzip-compressed if it ends in ``.gz``).

    Events are written as they are made, so memory stays small for big runs.
    The file holds the same JSON as :func:`chrome_trace`. Open it at
    https://ui.perfetto.dev or in chrome://tracing.

    Returns
    -------
    Path
        The written file.
    """
    from commsim.errors import check_argument
    from commsim.report.tables import check_results

    check_results(results)  # before the file is opened: nothing half-written
    check_argument(path, (str, os.PathLike), "path", "a file path ending .json or .json.gz")
    _check_max_transfers(max_transfers)
    from commsim.textfile import whole_file

    out = Path(path)
    with whole_file(out) as raw:  # whole or not at all: an interrupted trace leaves no half file
        if out.suffix == ".gz":
            with (
                gzip.GzipFile(fileobj=raw, mode="wb", filename="", mtime=0) as packed,  # no timestamp
                io.TextIOWrapper(packed, encoding="utf-8") as stream,
            ):
                _write(stream, results, max_transfers)
        else:
            with io.TextIOWrapper(raw, encoding="utf-8") as stream:
                _write(stream, results, max_transfers)
    return out
