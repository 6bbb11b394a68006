"""Training scenario files: a workload, a machine, sync strategies, bucket sizes, overlap.

Example (``scenarios/resnet50_dgx1_overlap.yaml``)::

    name: resnet50_dgx1_overlap
    workload: {model: resnet50, batch: 64, dtype: fp32, device_flops: 125 TFLOPS, efficiency: 0.25}
    topology: dgx1_v100            # shipped name, YAML path, or {builder: ..., ...} / {file: ...}
    sync:
      - {algorithm: multi_ring, label: NVLink rings}
      - {algorithm: parameter_server, label: parameter server on the CPU, params: {server: cpu}}
    bucket_sizes: [1 MB, 5 MB, 25 MB, 100 MB]
    overlap: [false, true]

``workload`` names a shipped model (``resnet50``, ``bert_large`` with
``seq``, ``gpt2_xl`` with ``seq``) with the device's throughput
(``device_flops: "125 TFLOPS"`` or ``flops_per_s: 1.25e14``) and
``efficiency``; or gives ``layers`` directly, each
``{name, params, forward: "1 ms", backward: "2 ms"}``. ``optimizer`` is the
optimizer's time after the last collective. ``nodes: [1, 2, 4]`` repeats
everything on a builder topology (``{builder: cluster, box: dgx_a100, nic:
ib_hdr}``) with that many boxes. A file is a training scenario when it has
a top-level ``workload`` key.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import pydantic
import yaml
from pydantic import AfterValidator, Field, ValidationInfo, field_validator, model_validator

from commsim.collectives import Collective
from commsim.config import AlgorithmEntry, Overrides, SizeText, build_scenario_topology, check_overrides_used
from commsim.errors import CommsimError, ScenarioError, known_name
from commsim.scenario.cases import file_cases
from commsim.topology.builders import BUILDERS
from commsim.topology.model import Topology
from commsim.topology.schema import from_file
from commsim.training.buckets import check_bucket_bytes
from commsim.training.errors import TrainingError
from commsim.training.models import MODELS, SEQUENCE_MODELS, get_model
from commsim.training.workload import DTYPE_BYTES, Layer, Workload, dtype_bytes, parse_flops
from commsim.units import parse_size, parse_time
from commsim.yamlio import kind_of, position, read_text, read_yaml, validate_with_lines

__all__ = [
    "LayerSpec",
    "LoadedTrainingScenario",
    "SyncEntry",
    "TrainingScenario",
    "WorkloadSpec",
    "is_training_scenario",
    "load_training_scenario",
    "parse_training_scenario",
    "training_from_data",
]


def _check_time(value: str | float, info: ValidationInfo) -> str | float:
    parse_time(value, require_unit=from_file(info))
    return value


TimeText = Annotated[str | float, AfterValidator(_check_time)]


def _default_buckets() -> list[str | float]:
    return ["25 MiB"]  # PyTorch DDP's bucket_cap_mb=25, in units of 2**20 B


class _Strict(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")


class LayerSpec(_Strict):
    """A layer with its compute times given directly."""

    name: str
    params: int = Field(ge=0)
    forward: TimeText = 0.0
    backward: TimeText = 0.0

    @field_validator("params", mode="before")
    @classmethod
    def _whole(cls, value: Any) -> Any:
        if isinstance(value, str):  # YAML 1.1 reads 1e6 as text
            try:
                value = float(value)
            except ValueError:
                return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value


class WorkloadSpec(_Strict):
    """The model: a shipped one with a device throughput, or layers with times."""

    model: str | None = None
    layers: list[LayerSpec] | None = None
    name: str | None = None
    batch: int | None = Field(None, ge=1)
    seq: int | None = Field(None, ge=1)
    dtype: str = "fp32"
    device_flops: str | float | None = None
    flops_per_s: float | None = Field(None, gt=0)
    efficiency: float = Field(1.0, gt=0, le=1)
    optimizer: TimeText = 0.0

    @field_validator("model")
    @classmethod
    def _known_model(cls, name: str | None) -> str | None:
        return name if name is None else known_name("model", name, MODELS)

    @field_validator("dtype")
    @classmethod
    def _known_dtype(cls, value: str) -> str:
        return known_name("dtype", value, DTYPE_BYTES)

    @field_validator("device_flops", mode="before")
    @classmethod
    def _readable_flops(cls, value: Any) -> Any:
        if value is not None:
            try:
                parse_flops(value)
            except TrainingError as exc:
                raise ValueError(str(exc)) from None
            if "flop" not in str(value).lower():  # 125 is not 125 FLOP/s: a unit was left out
                raise ValueError(
                    f"device_flops {value!r} has no unit; write it with one, e.g. '125 TFLOPS', "
                    "or give the figure in FLOP/s as flops_per_s (e.g. 1.25e14)"
                )
        return value

    @model_validator(mode="after")
    def _consistent(self) -> WorkloadSpec:
        if (self.model is None) == (self.layers is None):
            raise ValueError("give exactly one of 'model' (a shipped model) or 'layers' (your own)")
        if self.model is not None:
            self._check_model()
        elif any(v is not None for v in (self.device_flops, self.flops_per_s, self.seq)):
            raise ValueError("device_flops, flops_per_s and seq apply to a shipped 'model', not to 'layers'")
        return self

    def _check_model(self) -> None:
        if (self.device_flops is None) == (self.flops_per_s is None):
            raise ValueError(
                f"model {self.model!r} needs the device's throughput: give exactly one of "
                "device_flops (e.g. '125 TFLOPS') or flops_per_s (e.g. 1.25e14)"
            )
        if self.seq is not None and self.model not in SEQUENCE_MODELS:
            raise ValueError(f"seq applies to {', '.join(sorted(SEQUENCE_MODELS))}, not to {self.model!r}")

    def build(self) -> Workload:
        """The :class:`Workload` this spec describes."""
        if self.layers is not None:
            layers = tuple(
                Layer(l.name, l.params, parse_time(l.forward), parse_time(l.backward)) for l in self.layers
            )
            return Workload(self.name or "custom", layers, dtype_bytes(self.dtype), self.batch)
        assert self.model is not None
        options: dict[str, Any] = {
            "flops_per_s": self.flops_per_s if self.flops_per_s is not None else self.device_flops,
            "efficiency": self.efficiency,
            "dtype": self.dtype,
        }
        if self.batch is not None:
            options["batch"] = self.batch
        if self.seq is not None:
            options["seq"] = self.seq
        return get_model(self.model, **options)


class SyncEntry(AlgorithmEntry):
    """One sync strategy: a registered algorithm with parameters and a label."""


class TrainingScenario(_Strict):
    """A training scenario file."""

    name: str = Field(min_length=1)
    description: str = ""
    workload: WorkloadSpec
    topology: str | dict[str, Any]
    overrides: Overrides = Field(default_factory=dict)
    ranks: int | list[str] | None = None
    nodes: list[Annotated[int, Field(ge=1)]] | None = Field(None, min_length=1)
    sync: list[SyncEntry] = Field(min_length=1)
    bucket_sizes: list[SizeText] = Field(default_factory=_default_buckets, min_length=1)
    overlap: list[bool] = Field(default_factory=lambda: [True], min_length=1)

    @field_validator("topology")
    @classmethod
    def _topology(cls, value: str | dict[str, Any]) -> str | dict[str, Any]:
        if isinstance(value, dict):
            given = [k for k in ("builder", "file") if k in value]
            if len(given) != 1:
                raise ValueError(f"give exactly one of builder, file (got {given or 'none'})")
            if "builder" in value:
                known_name("builder", value["builder"], BUILDERS)
            if "file" in value and len(value) > 1:
                raise ValueError(
                    f"a topology file takes no other fields; got {sorted(set(value) - {'file'})}"
                )
        return value

    @field_validator("nodes")
    @classmethod
    def _nodes_need_builder(cls, value: list[int] | None, info: ValidationInfo) -> list[int] | None:
        topology = info.data.get("topology")
        if value is not None and topology is not None:
            if not isinstance(topology, dict) or "builder" not in topology:
                raise ValueError("'nodes' needs a builder topology, e.g. {builder: cluster, box: dgx_a100}")
            if "nodes" in topology:
                raise ValueError("give the node counts in 'nodes' only, not also in the topology")
        return value


@dataclass(frozen=True)
class LoadedTrainingScenario:
    """A validated training scenario with its workload and machines built.

    Attributes
    ----------
    scenario : TrainingScenario
    workload : Workload
    machines : list of (int or None, Topology)
        One per node count (None when ``nodes`` is not given).
    bucket_nbytes : list of int
    optimizer_s : float
    source : str
    """

    scenario: TrainingScenario
    workload: Workload
    machines: list[tuple[int | None, Topology]]
    bucket_nbytes: list[int]
    optimizer_s: float
    source: str
    kind: ClassVar[Literal["collective", "training"]] = "training"

    @property
    def title(self) -> str:
        """``name: workload on machine`` (the node counts for scaling runs), for report titles."""
        where = self.machines[0][1].name
        if len(self.machines) > 1:
            where += f" .. {self.machines[-1][1].name} ({len(self.machines)} node counts)"
        return f"{self.scenario.name}: {self.workload.name} on {where}"


def is_training_scenario(path: str | Path) -> bool:
    """Whether the YAML file at ``path`` has a top-level ``workload`` key (False if unreadable)."""
    try:
        data, _ = read_yaml(read_text(path, ScenarioError), str(path), ScenarioError)
    except ScenarioError:
        return False
    return isinstance(data, dict) and "workload" in data


def _machines(
    scenario: TrainingScenario, node: yaml.Node | None, source: str, base: Path
) -> list[tuple[int | None, Topology]]:
    counts: list[int | None] = list(scenario.nodes) if scenario.nodes is not None else [None]
    machines = []
    for count in counts:
        options = {"nodes": count} if count is not None else {}
        ref, overrides = scenario.topology, scenario.overrides
        machines.append((count, build_scenario_topology(ref, overrides, node, source, base, **options)))
    check_overrides_used([topo for _, topo in machines], scenario.overrides, node, source)
    return machines


def _workload(scenario: TrainingScenario, node: yaml.Node | None, source: str) -> Workload:
    try:
        return scenario.workload.build()
    except CommsimError as exc:
        raise TrainingError(f"{position(node, ('workload',), source)}: workload: {exc}") from None


def _check_steps(
    scenario: TrainingScenario, workload: Workload, sizes: list[int], node: yaml.Node | None, source: str
) -> None:
    """The step-level errors, found before any simulation and reported with their line."""
    for i, nbytes in enumerate(sizes):
        try:
            check_bucket_bytes(workload, nbytes)
        except TrainingError as exc:
            where = position(node, ("bucket_sizes", i), source)
            raise TrainingError(f"{where}: bucket_sizes: {exc}") from None
    if True in scenario.overlap and workload.backward_s == 0:
        where = position(node, ("overlap", scenario.overlap.index(True)), source)
        raise TrainingError(
            f"{where}: overlap: workload {workload.name!r} has zero backward compute time, so there is "
            "nothing for communication to overlap with; use overlap: [false]"
        )


def parse_training_scenario(
    text: str, source: str = "<training scenario>", base: Path | None = None
) -> LoadedTrainingScenario:
    """Validate training-scenario YAML text and build its workload and machines.

    Raises
    ------
    ScenarioError
        With ``source:line:col`` for a malformed file or topology.
    TrainingError
        With ``source:line:col`` for a workload that cannot be built, a
        bucket size that is not positive, or overlap without backward compute.
    """
    data, node = read_yaml(text, source, ScenarioError)
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: expected a mapping of scenario fields, got {kind_of(data)}")
    return training_from_data(data, node, source, base)


def training_from_data(
    data: dict[str, Any], node: yaml.Node | None, source: str, base: Path | None = None
) -> LoadedTrainingScenario:
    """Validate a training scenario file's mapping (read once, with its node tree).

    Raises
    ------
    ScenarioError, TrainingError
        As :func:`parse_training_scenario`.
    """
    scenario = validate_with_lines(TrainingScenario, data, node, source, ScenarioError)
    machines = _machines(scenario, node, source, base or Path.cwd())
    entries = [(entry.algorithm, entry.params, entry.label) for entry in scenario.sync]
    for _, machine in machines:  # gradients are all-reduced: the same cases as a collective scenario's
        file_cases(
            machine,
            Collective.ALL_REDUCE,
            entries,
            scenario.bucket_sizes[:1],
            scenario.ranks,
            0,
            node,
            source,
            entries_at=("sync",),
            sizes_at=("bucket_sizes",),
        )
    workload = _workload(scenario, node, source)
    sizes = [parse_size(s) for s in scenario.bucket_sizes]
    _check_steps(scenario, workload, sizes, node, source)
    return LoadedTrainingScenario(
        scenario=scenario,
        workload=workload,
        machines=machines,
        bucket_nbytes=sizes,
        optimizer_s=parse_time(scenario.workload.optimizer),
        source=source,
    )


def load_training_scenario(path: str | Path) -> LoadedTrainingScenario:
    """Read and validate a training scenario file."""
    from commsim.errors import check_argument

    check_argument(path, (str, Path), "path", "a training scenario file's path (str or Path)")
    path = Path(path)
    return parse_training_scenario(read_text(path, ScenarioError), str(path), path.parent)
