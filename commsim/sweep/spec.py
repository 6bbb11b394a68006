"""Sweep files: a base scenario and a grid of values, checked with ``file:line:col`` errors.

Example::

    name: nvlink_speed
    topology: dgx1_v100              # base fields: any scenario parameter
    collective: all_reduce
    grid:                            # a list of groups, combined as a product
      - product:                     # cartesian: the first key outermost
          algorithm: [ring, tree]
          size: {from: 1 MB, to: 1 GB, factor: 10}
      - zip:                         # parallel lists of equal length
          overrides.nvlink.bandwidth: [25 GB/s, 50 GB/s]
          overrides.nvlink.latency: [1 us, 0.5 us]

Parameters are ``topology`` (a shipped name, a builder name, a YAML path
relative to the sweep file, or a mapping ``{builder: cluster, box: dgx_a100,
nodes: 2, nic: ib_hdr}`` / ``{file: path.yaml}``), ``topology.FIELD`` (a
builder's field), ``algorithm``, ``collective``, ``size``, ``params`` and
``params.NAME`` (algorithm parameters), ``overrides.KIND.bandwidth`` /
``overrides.KIND.latency`` (link figures by kind or family), ``ranks`` and
``root``. A group's body is a mapping of parameter to values (a list, or a
range ``{from, to, factor}`` / ``{from, to, step}``; sizes with units give
bytes) or a list of nested groups; a list item without ``product``/``zip``
is a product of its parameters. ``grid`` itself may be one group or a bare
mapping of parameters (a product).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pydantic
import yaml
from pydantic import Field

from commsim.errors import CommsimError, ScenarioError
from commsim.sweep.checks import PARAMETERS, PointChecker, check_given, check_path, check_plain, range_values
from commsim.sweep.evaluate import RESULT_COLUMNS
from commsim.sweep.grid import (
    Axis,
    Group,
    Loc,
    SpecIssue,
    SweepScenario,
    build_scenario,
    display_value,
    lookup,
    scenario_key,
)
from commsim.yamlio import kind_of, position, read_text, read_yaml, validate_with_lines

__all__ = ["MAX_SCENARIOS", "Sweep", "SweepScenario", "load_sweep", "parse_sweep"]

DESCRIPTIVE = ("topology", "algorithm", "collective", "size")
"""Columns every row has, whether or not the grid varies them."""

_MAX_ISSUES = 5
MAX_SCENARIOS = 100_000
"""The most scenarios one sweep file's grid may expand to (each is checked, then simulated)."""


class SweepFile(pydantic.BaseModel):
    """The top level of a sweep file (values are checked as cases, point by point, afterwards)."""

    model_config = pydantic.ConfigDict(extra="forbid")

    name: str | None = None
    description: str = ""
    topology: Any = None
    algorithm: Any = None
    collective: Any = "all_reduce"
    size: Any = None
    params: Any = Field(default_factory=dict)
    overrides: Any = Field(default_factory=dict)
    ranks: Any = None
    root: Any = 0
    grid: list[Any] | dict[str, Any] | None = None


@dataclass(frozen=True, eq=False)
class Sweep:
    """A validated sweep: its base scenario, its grid, and every scenario's key.

    Iterate with :meth:`scenarios` (lazy); ``len(sweep)`` is the scenario count.
    """

    name: str
    description: str
    base: dict[str, Any]
    grid: Group
    keys: tuple[str, ...]
    source: str
    base_dir: str

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def value_columns(self) -> tuple[str, ...]:
        """Descriptive columns, then every other grid parameter in first-appearance order."""
        return tuple(dict.fromkeys(DESCRIPTIVE + self.grid.paths))

    @property
    def columns(self) -> tuple[str, ...]:
        """Every output column: ``key``, the value columns, then the result columns."""
        return ("key", *self.value_columns, *RESULT_COLUMNS)

    def scenarios(self) -> Iterator[SweepScenario]:
        """Every scenario in expansion order (first group outermost)."""
        columns = self.value_columns
        for index, settings in enumerate(self.grid.iter_expand()):
            scenario = build_scenario(self.base, settings)
            values = {c: display_value(lookup(scenario, c)) for c in columns}
            yield SweepScenario(index, self.keys[index], scenario, values)


# -- loading -------------------------------------------------------------------------------------


def load_sweep(path: str | Path) -> Sweep:
    """Read and validate a sweep file; relative topology paths are relative to it.

    Raises
    ------
    ScenarioError
        With ``file:line:col: parameter: message`` for every problem found
        (the first five).
    """
    path = Path(path)
    return parse_sweep(read_text(path, ScenarioError), str(path), path.parent)


def parse_sweep(text: str, source: str = "<sweep>", base_dir: str | Path | None = None) -> Sweep:
    """Validate sweep YAML text and expand its grid once (checking every scenario).

    Raises
    ------
    ScenarioError
        With ``source:line:col`` for every problem: unknown parameters or
        names, unreadable sizes, zip groups of unequal lengths, a parameter
        set twice, nested fields on a topology given by name, duplicate
        scenarios.
    """
    data, node = read_yaml(text, source, ScenarioError)
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: expected a mapping of sweep fields, got {kind_of(data)}")
    from commsim.filekind import wrong_kind

    if message := wrong_kind(data, source, "sweep"):
        raise ScenarioError(message)
    spec = validate_with_lines(SweepFile, data, node, source, ScenarioError)
    base_path = Path(base_dir) if base_dir is not None else Path.cwd()
    issues: list[SpecIssue] = []
    base = _check_base(spec, issues)
    grid = _parse_grid(spec.grid, issues)
    if issues:
        raise ScenarioError(_report(issues, node, source))
    if len(grid) > MAX_SCENARIOS:
        raise ScenarioError(
            f"{position(node, ('grid',), source)}: grid: {len(grid):,} scenarios is more than the limit of "
            f"{MAX_SCENARIOS:,}; split the sweep into several files"
        )
    checker = PointChecker(base_path)
    keys = _expand_keys(base, grid, checker, issues)
    if not issues:
        issues.extend(checker.unused_overrides())
    if issues:
        raise ScenarioError(_report(issues, node, source))
    name = spec.name or Path(source).stem
    return Sweep(name, spec.description, base, grid, keys, source, str(base_path.resolve()))


def _report(issues: list[SpecIssue], node: yaml.Node | None, source: str) -> str:
    lines = []
    for issue in issues[:_MAX_ISSUES]:
        prefix = position(node, issue.loc, source)
        field = ".".join(str(p) for p in issue.loc) or "(document)"
        lines.append(f"{prefix}: {field}: {issue.message}")
    if len(issues) > _MAX_ISSUES:
        lines.append(f"... and {len(issues) - _MAX_ISSUES} more error(s)")
    return "\n".join(lines)


def _check_base(spec: SweepFile, issues: list[SpecIssue]) -> dict[str, Any]:
    base = {name: getattr(spec, name) for name in PARAMETERS}
    for name, value in base.items():
        _collect(issues, (name,), lambda v=value: check_plain(v))
    return base


def _collect(issues: list[SpecIssue], loc: Loc, check: Any) -> bool:
    try:
        check()
    except (ValueError, TypeError, CommsimError) as exc:
        issues.append(SpecIssue(loc, str(exc)))
        return False
    return True


# -- the grid ------------------------------------------------------------------------------------


def _parse_grid(grid: Any, issues: list[SpecIssue]) -> Group:
    loc: Loc = ("grid",)
    if grid is None:
        return Group("product", (), loc)
    try:
        if isinstance(grid, list):
            members = tuple(_parse_group(item, (*loc, i), issues) for i, item in enumerate(grid))
            return _checked(Group("product", members, loc))
        return _parse_group(grid, loc, issues)
    except SpecIssue as issue:
        issues.append(issue)
        return Group("product", (), loc)


def _parse_group(data: Any, loc: Loc, issues: list[SpecIssue]) -> Group:
    if not isinstance(data, dict) or not data:
        raise SpecIssue(loc, "a grid group is {product: ...}, {zip: ...} or a mapping of parameter: [values]")
    kinds = [k for k in data if k in ("product", "zip")]
    if not kinds:
        return _checked(Group("product", _parse_axes(data, loc, issues), loc))
    if len(data) != 1:
        raise SpecIssue(loc, f"a group has one key, product or zip; got {', '.join(map(str, data))}")
    kind = kinds[0]
    body, here = data[kind], (*loc, kind)
    if isinstance(body, dict) and body:
        members: tuple[Axis | Group, ...] = _parse_axes(body, here, issues)
    elif isinstance(body, list) and body:
        members = tuple(_parse_group(item, (*here, i), issues) for i, item in enumerate(body))
    else:
        raise SpecIssue(here, "give a non-empty mapping of parameter: [values] or a list of groups")
    return _checked(Group(kind, members, here))


def _checked(group: Group) -> Group:
    if group.kind == "zip":
        lengths = {len(m) for m in group.members}
        if len(lengths) > 1:
            sizes = ", ".join(f"{_where(m.loc, group.loc)}: {len(m)}" for m in group.members)
            raise SpecIssue(group.loc, f"zip needs members of equal length; got {sizes}")
    seen: set[str] = set()
    for member in group.members:
        twice = seen.intersection(member.paths)
        if twice:
            raise SpecIssue(member.loc, f"{', '.join(sorted(twice))} is set twice in the grid")
        seen.update(member.paths)
    return group


def _where(loc: Loc, parent: Loc) -> str:
    return ".".join(map(str, loc[len(parent) :]))


def _parse_axes(body: dict[str, Any], loc: Loc, issues: list[SpecIssue]) -> tuple[Axis, ...]:
    axes = []
    for path, raw in body.items():
        here = (*loc, path)
        if not _collect(issues, here, lambda p=path: check_path(str(p))):
            continue
        axis = _parse_axis(str(path), raw, here)
        for setting in axis.expand():
            _collect(issues, setting[0].loc, lambda s=setting[0]: check_plain(s.value))
        axes.append(axis)
    return tuple(axes)


def _parse_axis(path: str, raw: Any, loc: Loc) -> Axis:
    if isinstance(raw, list):
        if not raw:
            raise SpecIssue(loc, "give at least one value")
        return Axis(path, tuple(raw), loc)
    if isinstance(raw, dict) and "from" in raw:
        try:
            return Axis(path, tuple(range_values(raw)), loc, per_value_loc=False)
        except (ValueError, CommsimError) as exc:
            raise SpecIssue(loc, str(exc)) from None
    raise SpecIssue(loc, "give a list of values or a range {from: ..., to: ..., factor: ...}")


# -- expansion check -----------------------------------------------------------------------------


def _expand_keys(
    base: dict[str, Any], grid: Group, checker: PointChecker, issues: list[SpecIssue]
) -> tuple[str, ...]:
    """Every point checked as a case (each problem at the setting that gave it) and keyed once."""
    keys: dict[str, int] = {}
    seen_issues: set[tuple[Loc, str]] = set()

    def add(issue: SpecIssue) -> None:  # each problem once, however many points repeat it
        if (issue.loc, issue.message) not in seen_issues:
            seen_issues.add((issue.loc, issue.message))
            issues.append(issue)

    for index, settings in enumerate(grid.iter_expand()):
        try:
            scenario = build_scenario(base, settings)
            check_given(scenario)
            problems = checker.problems(scenario, settings)
            for problem in problems:
                add(problem)
            if len(issues) > _MAX_ISSUES:
                break
            if problems:
                continue
            key = scenario_key(scenario)
            if key in keys:
                described = ", ".join(f"{s.path}={display_value(s.value)}" for s in settings)
                raise SpecIssue(
                    settings[-1].loc if settings else ("grid",),
                    f"scenarios {keys[key]} and {index} are the same ({described}); remove the repeat",
                )
            keys[key] = index
        except SpecIssue as issue:
            add(issue)
            if len(issues) > _MAX_ISSUES:
                break
    return tuple(keys)
