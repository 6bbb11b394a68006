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

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import pydantic
import yaml
from pydantic import AfterValidator, Field, field_validator, model_validator

from commsim.algorithms import algorithm_names
from commsim.api import parse_overrides
from commsim.collectives import Collective, get_collective
from commsim.errors import CommsimError, ScenarioError
from commsim.topology.builders import BUILDERS, build
from commsim.topology.io import topology_from_data
from commsim.topology.model import Topology
from commsim.topology.resolve import get_topology
from commsim.units import parse_size
from commsim.yamlio import locate, read_text, read_yaml, validate_with_lines

__all__ = ["AlgorithmEntry", "LoadedScenario", "Scenario", "load_scenario", "parse_scenario"]


def _check_size(value: str | float) -> str | float:
    parse_size(value)
    return value


SizeText = Annotated[str | float, AfterValidator(_check_size)]
"""A size as written ("160 MB"), checked to be readable."""


class _Strict(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")


class AlgorithmEntry(_Strict):
    """One algorithm to run, with its parameters and a display label."""

    algorithm: str
    label: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)

    @field_validator("algorithm")
    @classmethod
    def _known(cls, name: str) -> str:
        names = algorithm_names()
        if name not in names:
            raise ValueError(f"unknown algorithm {name!r}; valid: {', '.join(names)}")
        return name


class TopologyRef(_Strict):
    """A topology given by builder, file or inline data."""

    builder: str | None = None
    file: str | None = None
    inline: dict[str, Any] | None = None
    gpus: int | None = Field(None, ge=2)
    kind: str | None = None
    bandwidth: str | None = None
    latency: str | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> TopologyRef:
        given = [k for k in ("builder", "file", "inline") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of builder, file, inline (got {given or 'none'})")
        if self.builder is not None and self.builder not in BUILDERS:
            raise ValueError(f"unknown builder {self.builder!r}; valid: {', '.join(BUILDERS)}")
        return self


class Scenario(_Strict):
    """A scenario file."""

    name: str
    description: str = ""
    topology: str | TopologyRef
    overrides: dict[str, dict[str, str | float]] = Field(default_factory=dict)
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

    @field_validator("collective")
    @classmethod
    def _collective(cls, value: str) -> str:
        return get_collective(value).value

    @field_validator("overrides")
    @classmethod
    def _overrides(cls, value: dict[str, dict[str, str | float]]) -> dict[str, dict[str, str | float]]:
        parse_overrides(value)
        from commsim.topology.linkkinds import kinds_matching

        kinds_matching(tuple(value))
        return value


@dataclass(frozen=True)
class LoadedScenario:
    """A validated scenario with its topology built and sizes in bytes."""

    scenario: Scenario
    topology: Topology
    collective: Collective
    sizes_nbytes: list[float]
    source: str


def _build_topology(scenario: Scenario, node: yaml.Node | None, source: str, base: Path) -> Topology:
    ref = scenario.topology
    where = locate(node, ("topology",))
    prefix = f"{source}:{where[0]}:{where[1]}" if where else source
    try:
        if isinstance(ref, str):
            candidate = base / ref
            topo = get_topology(str(candidate) if candidate.suffix in (".yaml", ".yml") else ref)
        elif ref.builder is not None:
            params = {k: getattr(ref, k) for k in ("gpus", "kind", "bandwidth", "latency")}
            topo = build(ref.builder, **{k: v for k, v in params.items() if v is not None})
        elif ref.file is not None:
            topo = get_topology(str(base / ref.file))
        else:
            inline_node = _child_node(node, ("topology", "inline"))
            topo = topology_from_data(ref.inline, inline_node, source)
        if scenario.overrides:
            topo = topo.with_overrides(parse_overrides(scenario.overrides))
    except ScenarioError:
        raise
    except CommsimError as exc:
        raise ScenarioError(f"{prefix}: topology: {exc}") from None
    return topo


def _child_node(node: yaml.Node | None, loc: tuple[str, ...]) -> yaml.Node | None:
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
    data, node = read_yaml(text, source, ScenarioError)
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: expected a mapping of scenario fields, got {type(data).__name__}")
    if "workload" in data:
        raise ScenarioError(
            f"{source}: this is a training scenario (top-level 'workload'); "
            "load it with commsim.training.load_training_scenario"
        )
    scenario = validate_with_lines(Scenario, data, node, source, ScenarioError)
    topology = _build_topology(scenario, node, source, base or Path.cwd())
    return LoadedScenario(
        scenario=scenario,
        topology=topology,
        collective=get_collective(scenario.collective),
        sizes_nbytes=[parse_size(s) for s in scenario.sizes],
        source=source,
    )


def load_scenario(path: str | Path) -> LoadedScenario:
    """Read and validate a scenario file."""
    path = Path(path)
    return parse_scenario(read_text(path, ScenarioError), str(path), path.parent)
