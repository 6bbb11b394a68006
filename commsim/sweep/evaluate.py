"""Simulating a chunk of sweep scenarios: the unit of work a runner ships to a worker.

A chunk is many consecutive scenarios (one scenario per task was measured
slower than running serially). Topologies are built once per chunk and
reused by its scenarios, which share them in expansion order; the cache
lives only as long as the chunk, so no state outlives a task.

Each scenario becomes a :class:`~commsim.scenario.case.Case` on its machine
(the sweep file already checked it as a case without the machine). One that
cannot run (ranks the machine does not have, an algorithm that does not
apply to it, a builder field out of range) gives a row whose ``error``
column holds the one-line message; the sweep goes on. An unexpected exception is recorded
too, prefixed ``internal error:``, and such rows are recomputed on resume.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from commsim.api import simulate_case
from commsim.errors import CommsimError
from commsim.results import Result
from commsim.scenario.case import Case
from commsim.scenario.machine import build_machine
from commsim.topology.model import Topology
from commsim.units import parse_size

if TYPE_CHECKING:
    from commsim.sweep.grid import SweepScenario

__all__ = ["INTERNAL_ERROR", "RESULT_COLUMNS", "Chunk", "evaluate", "evaluate_chunk"]

RESULT_COLUMNS = ("nbytes", "n_ranks", "time_s", "algbw_Bps", "busbw_Bps", "bottleneck", "error")
"""Columns every row ends with (see :func:`evaluate`)."""

INTERNAL_ERROR = "internal error: "
"""Prefix of the ``error`` of a scenario that failed by a bug rather than by its input."""


@dataclass(frozen=True)
class Chunk:
    """Scenarios to simulate in one task, and the directory relative paths start from."""

    base_dir: str
    scenarios: tuple[SweepScenario, ...]


def evaluate_chunk(chunk: Chunk) -> list[tuple[int, dict[str, Any]]]:
    """Simulate every scenario of a chunk: ``(index, row)`` pairs in chunk order.

    A row is ``key``, the scenario's value columns, then :data:`RESULT_COLUMNS`.
    """
    cache: dict[str, Topology] = {}
    rows = []
    for item in chunk.scenarios:
        results = evaluate(item.scenario, chunk.base_dir, cache)
        rows.append((item.index, {"key": item.key, **item.values, **results}))
    return rows


def evaluate(scenario: dict[str, Any], base_dir: str, cache: dict[str, Topology]) -> dict[str, Any]:
    """The result columns of one scenario (never raises for a scenario's own problems).

    Parameters
    ----------
    scenario : dict
        Topology, algorithm, collective, size, params, overrides, ranks, root.
    base_dir : str
        Directory that relative topology paths start from.
    cache : dict
        Topologies already built, by their parameters; filled as needed.

    Returns
    -------
    dict
        ``nbytes`` (B), ``n_ranks``, ``time_s`` (s), ``algbw_Bps``,
        ``busbw_Bps`` (B/s), ``bottleneck`` (``link:utilisation;...``) and
        ``error`` (None, or the one-line reason the scenario could not run).
    """
    try:
        case = Case.of(
            topology=topology_for(scenario, base_dir, cache),
            collective=scenario["collective"],
            algorithm=scenario["algorithm"],
            params=scenario.get("params") or {},
            nbytes=scenario["size"],
            ranks=scenario.get("ranks"),
            root=scenario.get("root") or 0,
        )
        result = simulate_case(case)
    except CommsimError as exc:
        return _failed(scenario, str(exc))
    except Exception as exc:  # a bug: record it, keep sweeping, recompute on resume
        return _failed(scenario, f"{INTERNAL_ERROR}{type(exc).__name__}: {exc}")
    return {
        "nbytes": result.nbytes,
        "n_ranks": result.ranks,
        "time_s": result.time_s,
        "algbw_Bps": result.algbw_Bps,
        "busbw_Bps": result.busbw_Bps,
        "bottleneck": bottleneck_text(result),
        "error": None,
    }


def _failed(scenario: dict[str, Any], message: str) -> dict[str, Any]:
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    return {
        "nbytes": parse_size(scenario["size"]),
        "n_ranks": None,
        "time_s": None,
        "algbw_Bps": None,
        "busbw_Bps": None,
        "bottleneck": None,
        "error": " ".join(lines) or "failed",
    }


def bottleneck_text(result: Result) -> str:
    """The bottleneck links as ``link:utilisation;...`` (utilisation to 4 decimals)."""
    return ";".join(f"{load.link}:{load.utilisation:.4f}" for load in result.bottleneck)


def topology_for(scenario: dict[str, Any], base_dir: str, cache: dict[str, Topology]) -> Topology:
    """The scenario's topology with its overrides applied, built once per cache."""
    spec = {"topology": scenario["topology"], "overrides": scenario.get("overrides") or {}}
    name = json.dumps(spec, sort_keys=True)
    if name not in cache:
        cache[name] = build_machine(spec["topology"], spec["overrides"], base=Path(base_dir))
    return cache[name]
