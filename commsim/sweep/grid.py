"""Grid expansion: ``product`` and ``zip`` groups of parameter values, and scenario keys.

A grid is a tree of groups. A leaf is an :class:`Axis`: one scenario
parameter (``size``, ``topology.nodes``, ``overrides.nvlink.bandwidth``) and
its values. A :class:`Group` combines its members either as a cartesian
``product`` (the first member outermost, so the last varies fastest) or as a
``zip`` (members of equal length, taken in step). Expansion yields, per
scenario, the settings to apply to the base scenario; :func:`build_scenario`
applies them (shallow paths first, so ``topology`` is set before
``topology.nodes``) and :func:`scenario_key` names the result by a hash of
its canonical JSON.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from commsim.collectives import get_collective
from commsim.scenario.machine import parse_overrides
from commsim.topology.builders import BUILDERS
from commsim.units import parse_size

__all__ = [
    "Axis",
    "Group",
    "Setting",
    "SpecIssue",
    "SweepScenario",
    "build_scenario",
    "display_value",
    "scenario_key",
]

Loc = tuple[int | str, ...]
"""A path of keys and list indices into the sweep file's YAML tree."""


class SpecIssue(Exception):  # noqa: N818 - collected, not raised to users
    """A problem with the sweep file at ``loc`` (collected, then reported with lines)."""

    def __init__(self, loc: Loc, message: str) -> None:
        super().__init__(message)
        self.loc = loc
        self.message = message


@dataclass(frozen=True)
class Setting:
    """One parameter value to set in a scenario, and where the sweep file gave it."""

    path: str
    value: Any
    loc: Loc


@dataclass(frozen=True)
class Axis:
    """One grid parameter (a dotted path such as ``params.chunks``) and its values."""

    path: str
    values: tuple[Any, ...]
    loc: Loc
    per_value_loc: bool = True

    def __len__(self) -> int:
        return len(self.values)

    @property
    def paths(self) -> tuple[str, ...]:
        """The parameter this axis sets."""
        return (self.path,)

    def expand(self) -> list[tuple[Setting, ...]]:
        """One single-setting tuple per value."""
        return [
            (Setting(self.path, value, (*self.loc, i) if self.per_value_loc else self.loc),)
            for i, value in enumerate(self.values)
        ]


@dataclass(frozen=True)
class Group:
    """Members combined as a cartesian ``product`` or a ``zip`` of equal lengths."""

    kind: Literal["product", "zip"]
    members: tuple[Axis | Group, ...]
    loc: Loc

    def __len__(self) -> int:
        lengths = [len(m) for m in self.members]
        if self.kind == "zip":
            return lengths[0] if lengths else 0
        count = 1
        for length in lengths:
            count *= length
        return count

    @property
    def paths(self) -> tuple[str, ...]:
        """Every parameter set by this group, in first-appearance order."""
        return tuple(p for m in self.members for p in m.paths)

    def expand(self) -> list[tuple[Setting, ...]]:
        """Every combination, as the settings it makes (materialised)."""
        return list(self.iter_expand())

    def iter_expand(self) -> Iterator[tuple[Setting, ...]]:
        """Every combination, lazily at this level (members are materialised)."""
        parts = [m.expand() for m in self.members]
        combos = itertools.product(*parts) if self.kind == "product" else zip(*parts)
        for combo in combos:
            yield tuple(s for settings in combo for s in settings)


def build_scenario(base: dict[str, Any], settings: tuple[Setting, ...]) -> dict[str, Any]:
    """The base scenario with ``settings`` applied (shallow paths first).

    Raises
    ------
    SpecIssue
        If a nested path cannot be set, e.g. ``topology.nodes`` on a
        topology given by name.
    """
    scenario = copy.deepcopy(base)
    for setting in sorted(settings, key=lambda s: s.path.count(".")):
        _assign(scenario, setting)
    return scenario


def _assign(scenario: dict[str, Any], setting: Setting) -> None:
    parts = setting.path.split(".")
    target = scenario
    for depth, part in enumerate(parts[:-1]):
        child = target.get(part)
        if child is None:
            child = target[part] = {}
        elif depth == 0 and part == "topology" and isinstance(child, str) and child in BUILDERS:
            child = target[part] = {"builder": child}
        elif not isinstance(child, dict):
            raise SpecIssue(setting.loc, _not_a_mapping(parts[: depth + 1], child))
        target = child
    target[parts[-1]] = copy.deepcopy(setting.value)


def _not_a_mapping(prefix: list[str], value: Any) -> str:
    where = ".".join(prefix)
    if prefix == ["topology"]:
        return (
            f"cannot set a field inside topology {value!r}: a builder's fields need the topology "
            f"as a mapping, e.g. {{builder: cluster, box: {value}}}"
        )
    return f"cannot set a field inside {where} = {value!r}, which is not a mapping"


def scenario_key(scenario: dict[str, Any]) -> str:
    """A stable 16-hex-digit name of a scenario: a hash of its canonical JSON.

    Sizes are compared in bytes, collectives by canonical name and overrides
    in SI figures, so ``"1 MB"`` and ``1000000`` give the same key; mapping
    order never matters. A topology is named as written (a file's contents
    are not hashed).
    """
    overrides = parse_overrides(scenario.get("overrides") or {})
    canonical = {
        "topology": scenario["topology"],
        "algorithm": scenario["algorithm"],
        "collective": get_collective(scenario["collective"]).value,
        "nbytes": float(parse_size(scenario["size"])),  # a float, as keys of earlier stores were
        "params": scenario.get("params") or {},
        "overrides": {kind: list(figures) for kind, figures in overrides.items()},
        "ranks": scenario.get("ranks"),
        "root": scenario.get("root", 0),
    }
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def lookup(scenario: dict[str, Any], path: str) -> Any:
    """The value at a dotted ``path`` of a scenario (None where absent)."""
    value: Any = scenario
    for part in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def display_value(value: Any) -> str | int | float | bool | None:
    """A column value: scalars as they are, mappings and lists as compact JSON."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return json.dumps(value, separators=(",", ":"))


@dataclass(frozen=True)
class SweepScenario:
    """One scenario of a sweep.

    Attributes
    ----------
    index : int
        Position in the expansion (the row order of the output).
    key : str
        :func:`~commsim.sweep.grid.scenario_key` of ``scenario``.
    scenario : dict
        Every parameter: topology, algorithm, collective, size, params,
        overrides, ranks, root.
    values : dict
        The row's descriptive and grid columns (mappings as JSON text).
    """

    index: int
    key: str
    scenario: dict[str, Any]
    values: dict[str, Any]
