"""Checks of sweep parameters: paths, values, ranges, and expanded scenarios.

Each check raises ``ValueError`` or a :class:`~commsim.errors.CommsimError`
saying what is wrong and what would be valid; :mod:`commsim.sweep.spec`
collects them with their place in the YAML file.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

from commsim.algorithms import algorithm_names
from commsim.collectives import get_collective
from commsim.errors import UnknownNameError
from commsim.scenario.machine import parse_overrides
from commsim.sweep.grid import Setting, SpecIssue
from commsim.topology.builders import BUILDERS
from commsim.topology.io import shipped_topologies
from commsim.topology.linkkinds import kinds_matching
from commsim.topology.resolve import available_topologies
from commsim.units import parse_bandwidth, parse_size, parse_time

__all__ = ["PARAMETERS", "check_path", "check_scenario", "check_value", "range_values"]

PARAMETERS = ("topology", "algorithm", "collective", "size", "params", "overrides", "ranks", "root")
"""Scenario parameters a sweep may set (nested ones by dotted path)."""

_SCALARS = ("algorithm", "collective", "size", "ranks", "root")
_VALID_PATHS = (
    "topology, topology.FIELD, algorithm, collective, size, params, params.NAME, "
    "overrides.KIND.bandwidth, overrides.KIND.latency, ranks, root"
)
_MAX_RANGE = 10_000


def range_values(spec: dict[str, Any]) -> list[int | float]:
    """The values of ``{from, to, factor}`` (geometric) or ``{from, to, step}`` (arithmetic).

    Strings are sizes (``"8 B"``, ``"8 GiB"``) and give bytes; whole numbers
    come out as ints. ``to`` is included when the series reaches it.

    Examples
    --------
    >>> range_values({"from": "1 KiB", "to": "8 KiB", "factor": 2})
    [1024, 2048, 4096, 8192]
    """
    unknown = set(spec) - {"from", "to", "factor", "step"}
    if unknown or "to" not in spec or ("factor" in spec) == ("step" in spec):
        raise ValueError("a range is {from: A, to: B, factor: F} or {from: A, to: B, step: S}")
    start, stop = (_range_number(spec[k]) for k in ("from", "to"))
    factor, step = spec.get("factor"), spec.get("step")
    if factor is not None and (not isinstance(factor, (int, float)) or factor <= 1 or start <= 0):
        raise ValueError(f"a geometric range needs factor > 1 and from > 0; got factor {factor!r}")
    if step is not None and (not isinstance(step, (int, float)) or step <= 0):
        raise ValueError(f"a range needs step > 0; got {step!r}")
    values: list[int | float] = []
    value = start
    while value <= stop * (1 + 1e-12) and len(values) <= _MAX_RANGE:
        values.append(int(value) if float(value).is_integer() else value)
        k = len(values)
        value = start * factor**k if factor is not None else start + (step or 0) * k
    if not values or len(values) > _MAX_RANGE:
        raise ValueError(f"the range gives {'no' if not values else 'over ' + str(_MAX_RANGE)} values")
    return values


def _range_number(value: Any) -> float:
    if isinstance(value, str):
        return parse_size(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"a range bound is a number or a size, got {value!r}")
    return float(value)


def check_scenario(scenario: dict[str, Any], settings: tuple[Setting, ...]) -> None:
    """Check an expanded scenario: required parameters given, builder fields known.

    Raises
    ------
    SpecIssue
        At the setting responsible (or the document).
    """
    for name in ("topology", "algorithm", "size"):
        if scenario.get(name) is None:
            raise SpecIssue((), f"{name} is not given: set it in the base fields or in the grid")
    topology = scenario["topology"]
    if isinstance(topology, dict) and isinstance(topology.get("builder"), str):
        builder = BUILDERS.get(topology["builder"])
        accepted = set(inspect.signature(builder).parameters) if builder else set()
        unknown = sorted(set(topology) - accepted - {"builder"})
        if builder is not None and unknown:
            loc = next((s.loc for s in settings if s.path in (f"topology.{unknown[0]}", "topology")), ())
            raise SpecIssue(
                loc or ("topology",),
                f"builder {topology['builder']!r} has no field {unknown[0]!r}; "
                f"valid: {', '.join(sorted(accepted))}",
            )


def check_path(path: str) -> None:
    """Check that ``path`` names a scenario parameter.

    Raises
    ------
    ValueError
        Naming the valid parameters.
    UnknownNameError
        For an unknown link kind in ``overrides.KIND...``.
    """
    parts = path.split(".")
    head = parts[0]
    if head not in PARAMETERS or not all(parts):
        raise ValueError(f"unknown parameter {path!r}; valid: {_VALID_PATHS}")
    if head in _SCALARS and len(parts) > 1:
        raise ValueError(f"{head} has no fields; write {head} alone")
    if head == "topology" and len(parts) > 2:
        raise ValueError("topology fields are one level deep, e.g. topology.nodes")
    if head == "overrides":
        if len(parts) > 3 or (len(parts) == 3 and parts[2] not in ("bandwidth", "latency")):
            raise ValueError("override paths are overrides.KIND.bandwidth or overrides.KIND.latency")
        if len(parts) > 1:
            kinds_matching((parts[1],))


def check_value(path: str, value: Any, base_dir: Path) -> None:
    """Check one value of the parameter at ``path``.

    Raises
    ------
    ValueError, CommsimError
        Saying what is wrong and what would be valid.
    """
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        raise ValueError(f"{value!r} is not plain data (write it as a string?)") from None
    parts = path.split(".")
    checker = _CHECKS.get(path) or _CHECKS.get(f"{parts[0]}.*")
    if checker is not None:
        checker(value, parts, base_dir)


def _check_algorithm(value: Any, parts: list[str], base_dir: Path) -> None:
    names = algorithm_names()
    if not isinstance(value, str) or value not in names:
        raise UnknownNameError("algorithm", str(value), names)


def _check_collective(value: Any, parts: list[str], base_dir: Path) -> None:
    get_collective(_text(value, "a collective name"))


def _check_size(value: Any, parts: list[str], base_dir: Path) -> None:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f"a size is a number of bytes or a string like '160 MB', got {value!r}")
    if not parse_size(value) > 0:
        raise ValueError(f"a size must be positive, got {value!r}")


def _check_ranks(value: Any, parts: list[str], base_dir: Path) -> None:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 2:
        return
    if isinstance(value, list) and value and all(isinstance(r, str) for r in value):
        return
    raise ValueError(f"ranks is a GPU count >= 2 or a list of GPU names, got {value!r}")


def _check_root(value: Any, parts: list[str], base_dir: Path) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"root is a rank number >= 0, got {value!r}")


def _check_topology(value: Any, parts: list[str], base_dir: Path) -> None:
    if isinstance(value, str):
        if value in BUILDERS or value in shipped_topologies():
            return
        if Path(value).suffix in (".yaml", ".yml"):
            _check_file(value, parts, base_dir)
            return
        raise UnknownNameError("topology", value, available_topologies())
    if not isinstance(value, dict):
        raise ValueError("a topology is a name, a YAML path, {builder: NAME, FIELD: value} or {file: PATH}")
    given = [k for k in ("builder", "file") if k in value]
    if len(given) != 1:
        raise ValueError(f"a topology mapping has exactly one of builder, file (got {given or 'none'})")
    if "file" in value:
        if len(value) > 1:
            raise ValueError("a {file: PATH} topology has no other fields")
        _check_file(value["file"], parts, base_dir)
    else:
        _check_builder(value["builder"], parts, base_dir)


def _check_builder(value: Any, parts: list[str], base_dir: Path) -> None:
    if not isinstance(value, str) or value not in BUILDERS:
        raise UnknownNameError("topology builder", str(value), list(BUILDERS))


def _check_file(value: Any, parts: list[str], base_dir: Path) -> None:
    path = base_dir / _text(value, "a file path")
    if not path.is_file():
        raise ValueError(f"topology file {path} does not exist")


def _check_params(value: Any, parts: list[str], base_dir: Path) -> None:
    if len(parts) == 1 and not isinstance(value, dict):
        raise ValueError(f"params is a mapping of algorithm parameters, got {value!r}")


def _check_overrides(value: Any, parts: list[str], base_dir: Path) -> None:
    if len(parts) == 3:
        (parse_bandwidth if parts[2] == "bandwidth" else parse_time)(value, require_unit=True)
        return
    overrides = value if len(parts) == 1 else {parts[1]: value}
    if not isinstance(overrides, dict) or not all(isinstance(v, dict) for v in overrides.values()):
        raise ValueError("overrides are {KIND: {bandwidth: ..., latency: ...}}")
    parse_overrides(overrides, require_unit=True)
    kinds_matching(tuple(overrides))


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected {what}, got {value!r}")
    return value


_CHECKS = {
    "algorithm": _check_algorithm,
    "collective": _check_collective,
    "size": _check_size,
    "ranks": _check_ranks,
    "root": _check_root,
    "topology": _check_topology,
    "topology.builder": _check_builder,
    "topology.file": _check_file,
    "params": _check_params,
    "overrides": _check_overrides,
    "overrides.*": _check_overrides,
}
