"""How far the NCCL model's predictions are from real runs, as ``validate`` tells every user.

The figures are written by ``python tools/validation_table.py --write
docs/validation.md`` into ``accuracy.json`` beside this module, from the same
study as that page: the median over the development logs of each log's
median |time error|, with the defaults as shipped and leave-one-machine-out
(each log predicted with the constants fitted on its own machine taken away:
what a machine the project never saw should expect), and the same median over
the public logs from outside the development set (``tests/data/outside``). A model change that
moves them shows up in the page and in this file together.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = ["expected_error", "expected_error_sentence"]

_FILE = Path(__file__).with_name("accuracy.json")
_REGIMES = (("all", "all sizes"), ("bandwidth_bound", ">= 64 MiB"), ("latency_bound", "< 64 KiB"))


@lru_cache(maxsize=1)
def expected_error() -> dict[str, Any]:
    """The figures of ``accuracy.json`` (see the module docstring)."""
    with _FILE.open(encoding="utf-8") as handle:
        data: dict[str, Any] = json.load(handle)
    return data


def expected_error_sentence() -> str:
    """One line for a report: the leave-one-machine-out medians, the outside logs' medians, and where
    they come from."""
    data = expected_error()
    outside = data.get("outside")
    also = ""
    if outside:
        also = (
            f"; on {outside['validated']} public logs from outside the development set, "
            f"{_figures(outside['as_shipped'])}"
        )
    return (
        "on a machine the project never saw, the model's predictions miss by a median of "
        f"{_figures(data['leave_one_machine_out'])} (each log's median |error|, leave-one-machine-out "
        f"over {data['logs']} development logs of {data['machines']} machines{also}: docs/validation.md); "
        "'commsim calibrate' on this machine's logs narrows it"
    )


def _figures(medians: dict[str, float | None]) -> str:
    """``16% all sizes, 11% >= 64 MiB, 20% < 64 KiB`` (regimes without a figure left out)."""
    return ", ".join(f"{medians[key]:.0%} {label}" for key, label in _REGIMES if medians.get(key) is not None)
