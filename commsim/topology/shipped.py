"""The machines shipped as YAML files (``topologies/``): found by name, read without the file schema.

A shipped file is checked with the full file schema by the tests
(``tests/test_topology.py``), so a run that names one (``--topology
dgx1_v100``) need not import the pydantic schema and its validators (about
10 ms of start-up) to read it again. :func:`load_shipped` reads the plain
subset those files use (``name``, ``description``, ``link_kinds`` with unit
strings, devices with ``name``, ``kind``, ``model``, ``serves``; links with
``between``, ``kind``, ``count``) straight into a
:class:`~commsim.topology.model.Topology`, after light checks of types and
names; a file that uses anything else, or fails a check, is read by
:func:`commsim.topology.io.load_topology_file` instead, with its
errors. A user's file (a path) is always read by the full reader.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from commsim.errors import CommsimError, TopologyError, UnknownNameError
from commsim.topology.linkkinds import LINK_KINDS, kinds_matching
from commsim.topology.model import DEVICE_KINDS, Device, PhysicalLink, Topology
from commsim.units import parse_bandwidth, parse_time

__all__ = ["load_shipped", "plain_topology", "shipped_topologies"]

_TOP = frozenset({"name", "description", "link_kinds", "devices", "links"})
_DEVICE = frozenset({"name", "kind", "model", "serves"})
_LINK = frozenset({"between", "kind", "count"})
_FIGURES = frozenset({"bandwidth", "latency"})


def _data_dir() -> Path:
    """Where the shipped topology files are: in the wheel, or in the source tree."""
    installed = Path(__file__).resolve().parent.parent / "_data" / "topologies"
    if installed.is_dir():
        return installed
    return Path(__file__).resolve().parent.parent.parent / "topologies"


def shipped_topologies() -> dict[str, Path]:
    """Shipped topology files by name (file stem)."""
    folder = _data_dir()
    return {p.stem: p for p in sorted(folder.glob("*.yaml"))} if folder.is_dir() else {}


def load_shipped(name: str) -> Topology:
    """Load a shipped topology file by name (the plain subset directly, else the full reader).

    Raises
    ------
    UnknownNameError
        If no shipped file has that name.
    TopologyError
        If the file is not a valid topology (as the full reader reports it).
    """
    files = shipped_topologies()
    if name not in files:
        raise UnknownNameError("topology", name, list(files))
    import yaml

    text = files[name].read_text(encoding="utf-8")
    try:
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        data = None
    topology = plain_topology(data)
    if topology is not None:
        return topology
    from commsim.topology.io import load_topology_file

    return load_topology_file(files[name])


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _device(d: Any) -> Device | None:
    if not isinstance(d, dict) or not set(d) <= _DEVICE or not {"name", "kind"} <= set(d):
        return None
    name, kind, model, serves = d["name"], d["kind"], d.get("model"), d.get("serves", [])
    if not (isinstance(name, str) and isinstance(kind, str) and kind in DEVICE_KINDS):
        return None
    if not isinstance(model, (str, type(None))):
        return None
    return Device(name, kind, 0, model, None, tuple(serves)) if _strings(serves) else None


def _link(link: Any) -> PhysicalLink | None:
    if not isinstance(link, dict) or not set(link) <= _LINK or not {"between", "kind"} <= set(link):
        return None
    between, kind, count = link["between"], link["kind"], link.get("count", 1)
    if not (_strings(between) and len(between) == 2 and between[0] != between[1]):
        return None
    if not isinstance(kind, str) or kind not in LINK_KINDS:
        return None
    if type(count) is not int or count < 1:
        return None
    return PhysicalLink(between[0], between[1], kind, count)


def _overrides(link_kinds: Any) -> dict[str, tuple[float | None, float | None]] | None:
    if not isinstance(link_kinds, dict) or not all(isinstance(k, str) for k in link_kinds):
        return None
    try:
        kinds_matching(tuple(link_kinds))
    except UnknownNameError:
        return None
    overrides: dict[str, tuple[float | None, float | None]] = {}
    for key, figures in link_kinds.items():
        if not isinstance(figures, dict) or not set(figures) <= _FIGURES:
            return None
        bandwidth, latency = figures.get("bandwidth"), figures.get("latency")
        if not isinstance(bandwidth, (str, type(None))) or not isinstance(latency, (str, type(None))):
            return None
        try:
            bandwidth_Bps = None if bandwidth is None else parse_bandwidth(bandwidth, require_unit=True)
            latency_s = None if latency is None else parse_time(latency, require_unit=True)
        except (CommsimError, ValueError):
            return None
        if bandwidth_Bps is not None and bandwidth_Bps <= 0:
            return None
        overrides[key] = (bandwidth_Bps, latency_s)
    return overrides


def plain_topology(data: Any) -> Topology | None:
    """The topology of a file's parsed data if it keeps to the plain subset and passes light checks.

    Returns
    -------
    Topology or None
        None for anything else (other fields, other types, unknown kinds,
        duplicate or unknown device names, bad figures): the caller then
        reads the file with the full reader, which reports the error.
    """
    if not isinstance(data, dict) or not set(data) <= _TOP or not {"name", "devices"} <= set(data):
        return None
    name, description = data["name"], data.get("description", "")
    raw_devices, raw_links = data["devices"], data.get("links", [])
    if not (isinstance(name, str) and isinstance(description, str)):
        return None
    if not (isinstance(raw_devices, list) and raw_devices and isinstance(raw_links, list)):
        return None
    devices = [d for d in map(_device, raw_devices) if d is not None]
    links = [link for link in map(_link, raw_links) if link is not None]
    overrides = _overrides(data.get("link_kinds", {}))
    if overrides is None or len(devices) != len(raw_devices) or len(links) != len(raw_links):
        return None
    names = {d.name for d in devices}
    served = {s for d in devices for s in d.serves}
    ends = {end for link in links for end in (link.a, link.b)}
    if len(names) != len(devices) or not (served | ends) <= names:
        return None
    try:
        return Topology(name, devices, links, overrides, description)
    except TopologyError:
        return None
