"""Scenario files: which machine, which algorithms, which collective and sizes.

Example (``scenarios/pcie_4gpu_sync_strategies.yaml``)::

    name: pcie_4gpu_sync_strategies
    topology: pcie_4gpu_switch        # shipped name, YAML path, builder or inline
    collective: all_reduce
    sizes: [160 MB]
    algorithms:
      - {algorithm: parameter_server, label: aggregate on one GPU, params: {server: 0}}

``topology`` may also be ``{builder: ring, gpus: 8, kind: nvlink2}``,
``{file: path.yaml}`` (relative to the scenario file) or
``{inline: {...topology YAML...}}``. ``overrides`` replaces the figures of
link kinds or families: ``{nvlink: {bandwidth: 18 GB/s, latency: 0 s}}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

import pydantic
from pydantic import BeforeValidator, Field, field_validator, model_validator

from commsim.collectives import Collective
from commsim.errors import CommsimError, ScenarioError, did_you_mean, known_name
from commsim.scenario.case import MAX_CASES, Case
from commsim.scenario.cases import file_cases
from commsim.scenario.machine import Overrides, build_machine, unused_overrides
from commsim.topology.builders import BUILDERS
from commsim.topology.model import Topology
from commsim.units import SIZE_HELP, parse_bandwidth, parse_size, parse_time

if TYPE_CHECKING:  # PyYAML, the YAML helpers and the topology file reader are imported when a file is read
    import yaml

__all__ = [
    "MAX_CASES",
    "AlgorithmEntry",
    "LoadedScenario",
    "Overrides",
    "Scenario",
    "SizeText",
    "TopologyRef",
    "build_scenario_topology",
    "load_scenario",
    "parse_scenario",
    "scenario_from_data",
]


def _check_size(value: str | float) -> str | float:
    parse_size(value)
    return value


SizeText = Annotated[
    str | float,
    BeforeValidator(_check_size),
    Field(description="a size: " + SIZE_HELP, examples=["160 MB", "1M", "1 GiB", 4096]),
]
"""A size as written ("160 MB", "1M"), checked to be readable (before pydantic turns ``true`` into 1.0)."""


class _Strict(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")


class AlgorithmEntry(_Strict):
    """One algorithm to run, with its parameters and a display label.

    The name, and the parameters against the algorithm's own ``Params``, are
    checked where the entry becomes cases (:class:`~commsim.scenario.case.Case`).
    """

    algorithm: str
    label: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)


class TopologyRef(pydantic.BaseModel):
    """A topology given by builder, file or inline data.

    A builder takes its own fields too (``{builder: cluster, box: dgx_a100,
    nodes: 4, nic: ib_hdr}``), as in training and sweep files; they are
    checked against the builder's signature.
    """

    model_config = pydantic.ConfigDict(extra="allow")

    builder: str | None = None
    file: str | None = None
    inline: dict[str, Any] | None = None
    gpus: int | None = Field(None, ge=2)
    kind: str | None = None
    bandwidth: str | None = None
    latency: str | None = None

    @field_validator("bandwidth", "latency", mode="before")
    @classmethod
    def _with_unit(cls, value: Any, info: pydantic.ValidationInfo) -> Any:
        if value is not None:  # a file's figures need units: 16 is not 16 B/s
            parse = parse_bandwidth if info.field_name == "bandwidth" else parse_time
            parse(value, require_unit=True)
        return value

    @model_validator(mode="after")
    def _exactly_one(self) -> TopologyRef:
        given = [k for k in ("builder", "file", "inline") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of builder, file, inline (got {given or 'none'})")
        extra = sorted(self.model_extra or {})
        if self.builder is None:
            if extra or any(getattr(self, k) is not None for k in ("gpus", "kind", "bandwidth", "latency")):
                fields = extra or [k for k in ("gpus", "kind", "bandwidth", "latency") if getattr(self, k)]
                raise ValueError(
                    f"{', '.join(map(repr, fields))}: builder fields apply to {{builder: NAME, ...}}, "
                    f"not to {{{given[0]}: ...}}"
                )
            return self
        known_name("builder", self.builder, BUILDERS)
        if extra:
            import inspect

            accepted = sorted(set(inspect.signature(BUILDERS[self.builder]).parameters))
            unknown = [k for k in extra if k not in accepted]
            if unknown:
                raise ValueError(
                    f"builder {self.builder!r} has no field {unknown[0]!r}; valid: {', '.join(accepted)}"
                    f"{did_you_mean(unknown[0], accepted)}"
                )
        return self


class Scenario(_Strict):
    """A scenario file."""

    name: str = Field(min_length=1)
    description: str = ""
    topology: str | TopologyRef
    overrides: Overrides = Field(default_factory=dict)
    collective: str = "all_reduce"
    sizes: list[SizeText] = Field(min_length=1)
    ranks: int | list[str] | None = None
    root: int = Field(0, ge=0)
    algorithms: list[AlgorithmEntry] = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _size_alias(cls, data: Any) -> Any:
        if isinstance(data, dict) and "size" in data:
            if "sizes" in data:
                raise ValueError("give 'size' or 'sizes', not both")
            data = {**data, "sizes": [data["size"]]}
            del data["size"]
        return data


@dataclass(frozen=True)
class LoadedScenario:
    """A validated scenario: its topology built, its cases checked (algorithms outer, sizes inner)."""

    kind: ClassVar[Literal["collective", "training"]] = "collective"

    scenario: Scenario
    topology: Topology
    collective: Collective
    sizes_nbytes: list[int]
    source: str
    entry_positions: tuple[str, ...] = ()
    """``file:line:col`` of each algorithm entry, for errors found while running it."""
    cases: tuple[Case, ...] = ()


def build_scenario_topology(
    ref: str | TopologyRef | Mapping[str, Any],
    overrides: Mapping[str, Any],
    node: yaml.Node | None,
    source: str,
    base: Path,
    **builder_options: Any,
) -> Topology:
    """The machine of a scenario file's ``topology:``, with its ``overrides:`` applied.

    Parameters
    ----------
    ref : str, TopologyRef or mapping
        A shipped or builder name, a YAML path, a :class:`TopologyRef`, or a
        ``{builder: NAME, field: value ...}`` or ``{file: PATH}`` mapping.
    overrides : mapping
        ``{kind or family: {bandwidth: ..., latency: ...}}`` (empty: none).
    node : yaml.Node or None
        The file's composed YAML tree, for positions.
    source : str
        The file's name, for messages.
    base : Path
        The directory relative paths are read from (the file's).
    **builder_options
        More builder fields, e.g. ``nodes=4``.

    Raises
    ------
    ScenarioError
        ``source:line:col: topology: ...`` (the position of the ``topology``
        value) if the machine cannot be built; the message about a topology
        file or inline data names its own line too.
    """
    from commsim.topology.io import topology_from_data
    from commsim.yamlio import position

    prefix = position(node, ("topology",), source)
    try:
        if isinstance(ref, TopologyRef) and ref.inline is not None:
            inline = topology_from_data(ref.inline, _child_node(node, ("topology", "inline")), source)
            topo = build_machine(inline, overrides)
        else:
            fields = ref.model_dump(exclude_none=True) if isinstance(ref, TopologyRef) else ref
            topo = build_machine(fields, overrides, base=base, **builder_options)
    except ScenarioError:
        raise
    except CommsimError as exc:
        raise ScenarioError(f"{prefix}: topology: {exc}") from None
    return topo


def check_overrides_used(
    machines: list[Topology], overrides: Mapping[str, Any] | None, node: yaml.Node | None, source: str
) -> None:
    """Refuse an override that matches no link of any of ``machines``: it would change nothing (a
    training scenario's node counts share one ``overrides``: one box has no network link, and an
    override of the network still applies to the larger machines)."""
    from commsim.yamlio import position

    unused = set.intersection(*(set(unused_overrides(topo, overrides or {})) for topo in machines))
    if unused:
        key = next(k for k in (overrides or {}) if k in unused)
        kinds = sorted({link.kind for topo in machines for link in topo.physical_links})
        named = sorted({topo.name for topo in machines})
        names = named[0] if len(named) == 1 else f"none of {', '.join(named)}"
        raise ScenarioError(
            f"{position(node, ('overrides', key), source)}: overrides.{key}: {names} has no {key} link, "
            f"so the override would change nothing; its link kinds are {', '.join(kinds)} "
            "(remove the override, or name one of those)"
        )


def _child_node(node: yaml.Node | None, loc: tuple[str, ...]) -> yaml.Node | None:
    import yaml

    for part in loc:
        if not isinstance(node, yaml.MappingNode):
            return None
        node = next((v for k, v in node.value if k.value == part), None)
    return node


def parse_scenario(text: str, source: str = "<scenario>", base: Path | None = None) -> LoadedScenario:
    """Validate scenario YAML text and build its topology.

    Raises
    ------
    ScenarioError
        With ``source:line:col`` for every problem.
    """
    from commsim.yamlio import kind_of, read_yaml

    data, node = read_yaml(text, source, ScenarioError)
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: expected a mapping of scenario fields, got {kind_of(data)}")
    if "workload" in data:
        raise ScenarioError(
            f"{source}: this is a training scenario (top-level 'workload'): run it with commsim run "
            f"{source} (add --trace STEP.json for its timeline, to open in ui.perfetto.dev); "
            "from Python, load it with commsim.training.load_training_scenario"
        )
    return scenario_from_data(data, node, source, base)


def scenario_from_data(
    data: dict[str, Any], node: yaml.Node | None, source: str, base: Path | None = None
) -> LoadedScenario:
    """Validate a scenario file's mapping (read once, with its node tree) and build its cases.

    Raises
    ------
    ScenarioError
        With ``source:line:col`` for every problem.
    """
    from commsim.filekind import wrong_kind
    from commsim.yamlio import position, validate_with_lines

    if message := wrong_kind(data, source, "scenario"):  # a sweep or topology: name its command
        raise ScenarioError(message)
    scenario = validate_with_lines(Scenario, data, node, source, ScenarioError)
    base = base or Path.cwd()
    topology = build_scenario_topology(scenario.topology, scenario.overrides, node, source, base)
    check_overrides_used([topology], scenario.overrides, node, source)
    count = len(scenario.algorithms) * len(scenario.sizes)
    if count > MAX_CASES:
        raise ScenarioError(
            f"{position(node, ('algorithms',), source)}: {len(scenario.algorithms)} algorithms x "
            f"{len(scenario.sizes)} sizes = {count:,} cases, more than the limit of {MAX_CASES:,} for one "
            "scenario; use a sweep file (commsim sweep) for large grids"
        )
    entries = [(e.algorithm, e.params, e.label) for e in scenario.algorithms]
    sizes_at = ("size",) if "size" in data else ("sizes",)
    cases = file_cases(
        topology,
        scenario.collective,
        entries,
        scenario.sizes,
        scenario.ranks,
        scenario.root,
        node,
        source,
        sizes_at=sizes_at,
    )
    return LoadedScenario(
        scenario=scenario,
        topology=topology,
        collective=cases[0].collective,
        sizes_nbytes=[case.nbytes for case in cases[: len(scenario.sizes)]],
        source=source,
        entry_positions=_entry_positions(node, source, len(scenario.algorithms)),
        cases=tuple(cases),
    )


def _entry_positions(node: yaml.Node | None, source: str, count: int) -> tuple[str, ...]:
    from commsim.yamlio import position

    return tuple(position(node, ("algorithms", i), source) for i in range(count))


def load_scenario(path: str | Path) -> LoadedScenario:
    """Read and validate a scenario file."""
    from commsim.errors import check_argument
    from commsim.yamlio import read_text

    check_argument(path, (str, Path), "path", "a scenario file's path (str or Path)")
    path = Path(path)
    return parse_scenario(read_text(path, ScenarioError), str(path), path.parent)
