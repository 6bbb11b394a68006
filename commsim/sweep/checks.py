"""Checks of a sweep file: its parameter paths and ranges, and every grid point as a case.

The grammar (which parameters a grid may set, ranges, plain data) is the
sweep's own; every point is checked as the same case model files and flags
make (:class:`~commsim.scenario.point.CaseSpec`), each problem placed at
the setting that gave the value. :mod:`commsim.sweep.spec` collects them
with their place in the YAML file.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from commsim.errors import CommsimError
from commsim.scenario.case import CaseError, Loc, parse_nbytes
from commsim.scenario.machine import unused_overrides
from commsim.scenario.point import CaseSpec
from commsim.sweep.grid import Setting, SpecIssue
from commsim.topology.linkkinds import kinds_matching
from commsim.topology.model import Topology
from commsim.units import parse_size

__all__ = ["PARAMETERS", "PointChecker", "check_given", "check_path", "check_plain", "range_values"]

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
    if factor is not None and (not _finite_number(factor) or factor <= 1 or start <= 0):
        raise ValueError(f"a geometric range needs a finite factor > 1 and from > 0; got factor {factor!r}")
    if step is not None and (not _finite_number(step) or step <= 0):
        raise ValueError(f"a range needs a finite step > 0; got {step!r}")
    values: list[int | float] = []
    value = start
    while value <= stop * (1 + 1e-12) and len(values) <= _MAX_RANGE:
        values.append(int(value) if float(value).is_integer() else value)
        k = len(values)
        try:
            value = start * factor**k if factor is not None else start + (step or 0) * k
        except OverflowError:  # past the largest float, so past ``to`` as well
            break
    if not values:
        raise ValueError(f"the range gives no values: 'from' ({spec['from']}) is above 'to' ({spec['to']})")
    if len(values) > _MAX_RANGE:
        how = f"factor {factor}" if factor is not None else f"step {step}"
        raise ValueError(
            f"the range from {spec['from']} to {spec['to']} by {how} gives over {_MAX_RANGE:,} values, "
            "the limit; use a larger step, or factor (e.g. factor: 2) for sizes"
        )
    return values


def _range_number(value: Any) -> float:
    if isinstance(value, str):
        return parse_size(value)
    if not _finite_number(value):
        raise ValueError(f"a range bound is a finite number or a size, got {value!r}")
    return float(value)


def _finite_number(value: Any) -> bool:
    """Whether ``value`` is an int or a float other than nan and +-inf (a bool is no number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int beyond the largest float
        return False


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
        from commsim.errors import did_you_mean

        hint = did_you_mean(path, [*PARAMETERS, "product", "zip"])  # a group's word mistyped too
        raise ValueError(
            f"unknown parameter {path!r}; valid: {_VALID_PATHS} (or a group: product, zip){hint}"
        )
    if head in _SCALARS and len(parts) > 1:
        raise ValueError(f"{head} has no fields; write {head} alone")
    if head == "topology" and len(parts) > 2:
        raise ValueError("topology fields are one level deep, e.g. topology.nodes")
    if head == "overrides":
        if len(parts) > 3 or (len(parts) == 3 and parts[2] not in ("bandwidth", "latency")):
            raise ValueError("override paths are overrides.KIND.bandwidth or overrides.KIND.latency")
        if len(parts) > 1:
            kinds_matching((parts[1],))


def check_plain(value: Any) -> None:
    """Refuse a value that is not plain data (keys hash a point's canonical JSON).

    Raises
    ------
    ValueError
    """
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        if isinstance(value, float):  # .nan or .inf: a value no axis takes
            word = "a number" if value != value else "a finite number"
            raise ValueError(f"must be {word}, got {value!r} (e.g. 2.5, or a quantity like '1 MB')") from None
        raise ValueError(f"{value!r} is not plain data (write it as a string?)") from None


def check_given(scenario: dict[str, Any]) -> None:
    """Refuse a point without a topology, algorithm or size.

    Raises
    ------
    SpecIssue
        At the document: neither the base fields nor the grid give it.
    """
    for name in ("topology", "algorithm", "size"):
        if scenario.get(name) is None:
            raise SpecIssue((), f"{name} is not given: set it in the base fields or in the grid")


class PointChecker:
    """Checks grid points as cases, each distinct value once.

    A point is a :class:`~commsim.scenario.point.CaseSpec`; its machine is
    built (once per distinct topology and overrides) so that ranks and a root
    the machine lacks, and a machine that cannot be built, are refused at the
    grid's line before any point runs. Points that differ only in size share
    the check of everything else; each size is read once, by the same
    function a case's size is.

    Parameters
    ----------
    base : Path
        The directory relative topology paths start from.
    """

    def __init__(self, base: Path) -> None:
        self.base = base
        self._cases: dict[str, list[tuple[Loc, str]]] = {}
        self._sizes: dict[str, list[tuple[Loc, str]]] = {}
        self._machines: dict[str, Topology | str] = {}
        self._overrides: dict[str, list[Any]] = {}  # kind or family: [matched a link?, where it is set]
        self._kinds: set[str] = set()

    def problems(self, scenario: dict[str, Any], settings: tuple[Setting, ...]) -> list[SpecIssue]:
        """The problems of one point, each at the setting (or base field) that gave the value."""
        fields = {name: scenario.get(name) for name in _CASE_FIELDS}
        fields = {**fields, "params": fields["params"] or {}, "overrides": fields["overrides"] or {}}
        fields["root"] = 0 if fields["root"] is None else fields["root"]
        key = json.dumps(fields, sort_keys=True)
        if key not in self._cases:
            self._cases[key] = self._check(fields)
        self._note_overrides(fields, settings)
        size_key = json.dumps(scenario["size"])
        if size_key not in self._sizes:
            self._sizes[size_key] = _size_problems(scenario["size"])
        return [
            SpecIssue(_setting_loc(loc, settings), message)
            for loc, message in self._cases[key] + self._sizes[size_key]
        ]

    def _note_overrides(self, fields: dict[str, Any], settings: tuple[Setting, ...]) -> None:
        """Note which overrides match a link of this point's machine (if it could be built)."""
        machine = self._machines.get(json.dumps([fields["topology"], fields["overrides"]], sort_keys=True))
        if not isinstance(machine, Topology):
            return
        unused = set(unused_overrides(machine, fields["overrides"]))
        self._kinds |= {link.kind for link in machine.physical_links}
        for key in fields["overrides"]:
            noted = self._overrides.setdefault(key, [False, _setting_loc(("overrides", key), settings)])
            noted[0] = noted[0] or key not in unused

    def unused_overrides(self) -> list[SpecIssue]:
        """Overrides that matched no link of any point's machine: every row would ignore them.

        A scenario file refuses them (:func:`commsim.config.check_overrides_used`); an override that
        matches some machines of the grid and not others is kept.
        """
        kinds = ", ".join(sorted(self._kinds))
        return [
            SpecIssue(
                loc,
                f"no machine of the sweep has {key} links, so the override would change nothing; their "
                f"link kinds are {kinds} (remove the override, or name one of those)",
            )
            for key, (used, loc) in self._overrides.items()
            if not used
        ]

    def _check(self, fields: dict[str, Any]) -> list[tuple[Loc, str]]:
        try:
            spec = CaseSpec.of({**fields, "nbytes": 1}, self.base)  # the size is checked alone
        except CaseError as exc:
            return exc.problems
        machine = self._machine(spec, fields)
        if isinstance(machine, str):
            return [(("topology",), machine)]
        try:  # the ranks and root against the machine the point names (built once per machine)
            spec.case(machine)
        except CaseError as exc:
            return exc.problems
        return []

    def _machine(self, spec: CaseSpec, fields: dict[str, Any]) -> Topology | str:
        """The point's machine, or why it cannot be built (kept per topology and overrides)."""
        key = json.dumps([fields["topology"], fields["overrides"]], sort_keys=True)
        if key not in self._machines:
            try:
                self._machines[key] = spec.machine(self.base)
            except CommsimError as exc:
                self._machines[key] = str(exc)
        return self._machines[key]


_CASE_FIELDS = ("topology", "overrides", "ranks", "root", "collective", "algorithm", "params")


def _size_problems(size: Any) -> list[tuple[Loc, str]]:
    try:
        parse_nbytes(size)
    except ValueError as exc:
        return [(("nbytes",), str(exc))]
    return []


def _setting_loc(loc: Loc, settings: tuple[Setting, ...]) -> Loc:
    """Where a case field's value came from: the grid setting of it (the most specific), else the base."""
    path = ["size" if loc[0] == "nbytes" else str(loc[0]), *map(str, loc[1:])]
    best: Setting | None = None
    for setting in settings:
        parts = setting.path.split(".")
        related = parts == path[: len(parts)] or path == parts[: len(path)]
        if related and (best is None or len(parts) > best.path.count(".") + 1):
            best = setting
    return best.loc if best is not None else ("size" if loc[0] == "nbytes" else loc[0], *loc[1:])
