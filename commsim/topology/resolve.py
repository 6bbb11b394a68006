"""Finding a topology from what a user typed: a shipped name, a builder, or a file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from commsim.errors import UnknownNameError
from commsim.topology.builders import BUILDERS, build
from commsim.topology.io import load_shipped, load_topology_file, shipped_topologies
from commsim.topology.model import Topology

__all__ = ["available_topologies", "get_topology"]


def available_topologies() -> list[str]:
    """Names accepted by :func:`get_topology`: shipped files, then builders."""
    return list(shipped_topologies()) + [f"{b} (builder)" for b in BUILDERS]


def get_topology(name_or_path: str, **builder_params: Any) -> Topology:
    """A topology by shipped name, builder name (with ``gpus=`` etc.), or YAML path.

    Raises
    ------
    UnknownNameError
        If the name is none of these; the message lists the valid names.
    """
    if name_or_path in BUILDERS:
        params = {k: v for k, v in builder_params.items() if v is not None}
        return build(name_or_path, **params)
    if name_or_path in shipped_topologies():
        return load_shipped(name_or_path)
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") or path.exists():
        return load_topology_file(path)
    raise UnknownNameError("topology", name_or_path, available_topologies())
