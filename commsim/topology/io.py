"""Reading and writing machine descriptions (YAML); the shipped ones are found by :mod:`.shipped`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from commsim.errors import TopologyError, UnknownNameError
from commsim.textfile import write_whole
from commsim.topology.elements import Device, PhysicalLink
from commsim.topology.model import Topology
from commsim.topology.schema import DeviceSpec, KindFigures, LinkSpec, TopologySpec
from commsim.topology.shipped import load_shipped, shipped_topologies
from commsim.yamlio import MAX_MACHINE_NODES, kind_of, position, read_text, read_yaml, validate_with_lines

__all__ = [
    "from_spec",
    "load_shipped",
    "load_topology_file",
    "parse_topology",
    "save_topology",
    "shipped_topologies",
    "topology_json_schema",
    "topology_to_dict",
]


def from_spec(spec: TopologySpec) -> Topology:
    """Build a :class:`Topology` from a validated spec."""
    devices = [
        Device(d.name, d.kind, d.box, d.model, d.reduce_bandwidth, tuple(d.serves)) for d in spec.devices
    ]
    links = [
        PhysicalLink(l.between[0], l.between[1], l.kind, l.count, l.bandwidth, l.latency) for l in spec.links
    ]
    overrides = {k: (f.bandwidth, f.latency) for k, f in spec.link_kinds.items()}
    return Topology(
        spec.name, devices, links, overrides, spec.description, spec.peer_to_peer, spec.nccl, spec.multipath
    )


def parse_topology(text: str, source: str = "<topology>") -> Topology:
    """Read a topology from YAML text; errors carry ``source:line:col``.

    The text describes a machine (``name``, ``devices``, ``links``, ...) or
    names a builder and its fields, as a scenario's ``topology:`` mapping
    does: ``{builder: nvswitch_box, gpus: 16, fabric: nvlink2, links: 6}``
    (``commsim topo list`` names the builders; a field a builder does not
    take is refused with the fields it takes).
    """
    from commsim.filekind import wrong_kind

    try:
        data, node = read_yaml(text, source, TopologyError, MAX_MACHINE_NODES)
    except TopologyError:
        _refuse_tool_output(text, source)
        raise
    if not isinstance(data, dict):
        _refuse_tool_output(text, source)
        raise TopologyError(f"{source}: expected a mapping of fields at the top level, got {kind_of(data)}")
    if message := wrong_kind(data, source, "topology"):
        raise TopologyError(message)
    if "builder" in data:
        return _built(data, node, source)
    return topology_from_data(data, node, source)


def _refuse_tool_output(text: str, source: str) -> None:
    """Name a machine tool's output given as topology YAML, and what reads it (no-op for other text)."""
    from commsim.filekind import (
        looks_like_rocm_smi,
        looks_like_topo_matrix,
        rocm_smi_message,
        topo_matrix_message,
    )

    if looks_like_rocm_smi(text):  # before the matrix test: its tables have a GPU0 GPU1 header too
        raise TopologyError(rocm_smi_message(source, "a topology YAML file")) from None
    if looks_like_topo_matrix(text):  # what validate --topology reads, not YAML
        raise TopologyError(topo_matrix_message(source)) from None


def _built(data: dict[str, Any], node: yaml.Node | None, source: str) -> Topology:
    """The machine a builder makes from a file's ``{builder: NAME, FIELD: value ...}``.

    Raises
    ------
    TopologyError
        At ``source:line:col``: an unknown builder (with the valid ones), a
        field the builder does not take (with those it takes), a value it
        refuses (at the ``builder:`` line).
    """
    import inspect

    from commsim.topology.builders import BUILDERS, build
    from commsim.topology.resolve import check_builder_sizes

    name = data["builder"]
    if not isinstance(name, str):
        raise TopologyError(
            f"{position(node, ('builder',), source)}: builder: expected a builder name, e.g. 'nvswitch_box', "
            f"got {kind_of(name)}"
        )
    if name not in BUILDERS:
        unknown = UnknownNameError("topology builder", str(name), list(BUILDERS))
        raise TopologyError(f"{position(node, ('builder',), source)}: builder: {unknown}")
    accepted = [p for p in inspect.signature(BUILDERS[name]).parameters if p != "kwargs"]
    params = {k: v for k, v in data.items() if k != "builder"}
    for key in params:
        if key not in accepted:
            raise TopologyError(
                f"{_key_position(node, key, source)}: {key}: builder {name!r} has no field {key!r}; "
                f"valid: {', '.join(accepted)} (a file that names a builder gives only its fields; "
                "a machine of its own has name, devices and links, and no builder)"
            )
    try:
        check_builder_sizes(name, params)
        return build(name, **params)
    except (TopologyError, UnknownNameError) as exc:
        import re

        named = [k for k in params if re.search(rf"\b{re.escape(k)}\b", str(exc))]  # at the field it names
        raise TopologyError(f"{position(node, (named[0] if named else 'builder',), source)}: {exc}") from None


def _key_position(node: yaml.Node | None, key: str, source: str) -> str:
    """``source:line:col`` of a top-level key (where the unwanted field is written)."""
    if isinstance(node, yaml.MappingNode):
        for key_node, _ in node.value:
            if key_node.value == key:
                mark = key_node.start_mark
                return f"{source}:{mark.line + 1}:{mark.column + 1}"
    return source


def _nccl_errors(nccl: dict[str, Any]) -> list[tuple[tuple[str | int, ...], str]]:
    """Check a calibrated ``nccl:`` mapping against the NCCL model's parameters."""
    import pydantic

    from commsim.nccl.params import NcclParams
    from commsim.scenario.messages import problems

    try:
        NcclParams.model_validate(nccl)
    except pydantic.ValidationError as exc:  # in the user's words, an unknown field with the valid ones
        return [(("nccl", *loc), message) for loc, message in problems(exc, nccl, NcclParams)]
    return _efficiency_errors(nccl.get("efficiency") or {})


def _efficiency_errors(efficiency: dict[str, Any]) -> list[tuple[tuple[str | int, ...], str]]:
    """``nccl.efficiency``: each key a link kind, family or NCCL transport, each value in (0, 1].

    An unknown key would be ignored by the model (a calibration silently not
    applied), a value above 1 would run a link faster than its datasheet.
    """
    from commsim.errors import did_you_mean
    from commsim.topology.linkkinds import FAMILIES, LINK_KINDS, TRANSPORTS

    valid = sorted({*LINK_KINDS, *FAMILIES, *TRANSPORTS})
    errors: list[tuple[tuple[str | int, ...], str]] = []
    for key, value in efficiency.items():
        loc: tuple[str | int, ...] = ("nccl", "efficiency", key)
        if key not in valid:
            message = f"unknown link kind, family or transport {key!r}; valid: {', '.join(valid)}"
            errors.append((loc, message + did_you_mean(key, valid)))
        elif not 0 < value <= 1:
            errors.append((loc, f"must be a fraction of the link's bandwidth in (0, 1], got {value!r}"))
    return errors


def topology_from_data(data: Any, node: yaml.Node | None, source: str) -> Topology:
    """Build a topology from parsed YAML data and its node tree (a file, or inline in a scenario)."""
    spec = validate_with_lines(TopologySpec, data, node, source, TopologyError)
    problems = spec.semantic_errors()
    if spec.nccl is not None:
        problems += _nccl_errors(spec.nccl)
    if problems:
        lines = []
        for loc, message in problems[:5]:
            lines.append(f"{position(node, loc, source)}: {'.'.join(str(p) for p in loc)}: {message}")
        raise TopologyError("\n".join(lines))
    try:
        return from_spec(spec)
    except TopologyError as exc:
        raise TopologyError(f"{source}: {exc}") from None


def load_topology_file(path: str | Path) -> Topology:
    """Read a topology YAML file."""
    return parse_topology(read_text(path, TopologyError), str(path))


def to_spec(topology: Topology) -> TopologySpec:
    """The spec that rebuilds ``topology``."""
    return TopologySpec(
        name=topology.name,
        description=topology.description,
        peer_to_peer=topology.peer_to_peer,
        nccl=dict(topology.nccl) if topology.nccl is not None else None,
        multipath=topology.multipath,
        link_kinds={
            k: KindFigures(bandwidth=bw, latency=lat) for k, (bw, lat) in topology.kind_overrides.items()
        },
        devices=[
            DeviceSpec(
                name=d.name,
                kind=d.kind,
                box=d.box,
                model=d.model,
                reduce_bandwidth=d.reduce_bandwidth_Bps,
                serves=list(d.serves),
            )
            for d in topology.devices
        ],
        links=[
            LinkSpec(
                between=(l.a, l.b), kind=l.kind, count=l.count, bandwidth=l.bandwidth_Bps, latency=l.latency_s
            )
            for l in topology.physical_links
        ],
    )


def topology_to_dict(topology: Topology) -> dict[str, Any]:
    """Plain data (units as strings) that :func:`parse_topology` reads back."""
    return to_spec(topology).model_dump(mode="json", exclude_none=True, exclude_defaults=True)


def save_topology(topology: Topology, path: str | Path) -> None:
    """Write ``topology`` as YAML, whole or not at all; loading it again gives the same machine.

    Raises
    ------
    commsim.errors.ArgumentError
        If ``topology`` is not a :class:`Topology` (e.g. a name: load it with ``get_topology`` first).
    OSError
        If the file cannot be written (the old file, if any, is kept).
    """
    from commsim.errors import check_argument

    check_argument(topology, Topology, "topology", "a Topology (get_topology(name) makes one from a name)")
    write_whole(path, yaml.safe_dump(topology_to_dict(topology), sort_keys=False, width=100))


def topology_json_schema() -> str:
    """The JSON Schema of the topology YAML format, as text."""
    return json.dumps(TopologySpec.model_json_schema(), indent=2)
