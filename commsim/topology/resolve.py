"""Finding a topology from what a user typed or a scenario file refers to: a name, builder or file."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from commsim.errors import TopologyError, UnknownNameError
from commsim.topology.builders import BUILDERS, build, is_whole_number
from commsim.topology.model import Topology

__all__ = [
    "MAX_FULLY_CONNECTED_GPUS",
    "MAX_GPUS",
    "MAX_NODES",
    "available_topologies",
    "check_builder_sizes",
    "get_topology",
    "resolve_reference",
]

MAX_GPUS = 16_384
"""The most GPUs a builder makes (``gpus=``): far above any one NCCL job simulated here."""
MAX_FULLY_CONNECTED_GPUS = 256
"""The most GPUs ``fully_connected`` makes: a link per pair, n(n-1)/2 of them (32,640 at 256,
built in under a second and simulated by every algorithm in seconds; 1,024 GPUs took 20 s to
build and ``direct`` did not finish in a minute)."""
MAX_NODES = 1_024
"""The most boxes a cluster builder joins (``nodes=``)."""

_LIMITS = {"gpus": MAX_GPUS, "nodes": MAX_NODES}


def check_builder_sizes(name: str, params: Mapping[str, Any]) -> None:
    """Refuse GPU and node counts over the limits before building (the builders check the rest).

    Raises
    ------
    TopologyError
        ``builder 'ring': gpus 1000000000 is above the limit of 16,384``.
    """
    counts = {key: int(value) for key, value in params.items() if is_whole_number(value)}  # numpy.int64 too
    for key, limit in _LIMITS.items():
        value = counts.get(key)
        if value is not None and value > limit:
            raise TopologyError(f"builder {name!r}: {key} {value} is above the limit of {limit:,}")
    gpus = counts.get("gpus")
    if name == "fully_connected" and gpus is not None and gpus > MAX_FULLY_CONNECTED_GPUS:
        raise TopologyError(
            f"builder 'fully_connected': gpus {gpus} is above its limit of {MAX_FULLY_CONNECTED_GPUS} "
            f"(it links every pair: {gpus * (gpus - 1) // 2:,} links); for more GPUs on one switch "
            "use nvswitch_box"
        )


def available_topologies() -> list[str]:
    """Names accepted by :func:`get_topology`: shipped files, then builders."""
    from commsim.topology.shipped import shipped_topologies

    return list(shipped_topologies()) + [f"{b} (builder)" for b in BUILDERS]


def get_topology(name_or_path: str, **builder_params: Any) -> Topology:
    """A topology by shipped name, builder name (with ``gpus=`` etc.), or YAML path.

    Raises
    ------
    UnknownNameError
        If the name is none of these; the message lists the valid names.
    TopologyError
        If builder options (``gpus=``, ``nodes=``, ...) are given for a
        shipped name or a file, or a count is over the limits.
    """
    if not isinstance(name_or_path, (str, Path)):  # the API's misuse, said as the CLI would
        given = "nothing" if name_or_path is None else f"a {type(name_or_path).__name__}"
        raise TopologyError(f"topology: expected a name or a YAML path, e.g. 'dgx1_v100', got {given}")
    name_or_path = str(name_or_path)
    params = {k: v for k, v in builder_params.items() if v is not None}
    if name_or_path in BUILDERS:
        check_builder_sizes(name_or_path, params)
        return build(name_or_path, **params)
    if params:  # options a built machine takes are not silently dropped for a finished one
        options = ", ".join(f"{k}={v!r}" for k, v in params.items())
        raise TopologyError(
            f"{options} {'applies' if len(params) == 1 else 'apply'} to builders ({', '.join(BUILDERS)}), "
            f"not to {name_or_path!r}, which is a finished machine"
        )
    from commsim.topology.shipped import load_shipped, shipped_topologies

    if name_or_path in shipped_topologies():
        return load_shipped(name_or_path)  # PyYAML; the file schema only if the file needs it
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") or path.exists():
        from commsim.topology.io import load_topology_file  # PyYAML and the file schema

        return load_topology_file(path)
    raise UnknownNameError("topology", name_or_path, available_topologies())


def resolve_reference(ref: str | Mapping[str, Any], base: Path, **builder_options: Any) -> Topology:
    """The topology a scenario or sweep file refers to.

    Parameters
    ----------
    ref : str or mapping
        A shipped or builder name; a YAML path, relative to ``base``;
        ``{builder: NAME, field: value ...}``; or ``{file: PATH}``, relative
        to ``base`` (other fields of a file mapping are ignored).
    base : Path
        The directory of the file that holds the reference.
    **builder_options
        More fields for a builder mapping (e.g. ``nodes=4``); they win over
        the mapping's own.

    Raises
    ------
    UnknownNameError
        If a name is neither shipped nor a builder.
    TopologyError
        If the builder or the file cannot make the machine.
    """
    if isinstance(ref, str):
        candidate = base / ref
        return get_topology(str(candidate) if candidate.suffix in (".yaml", ".yml") else ref)
    if "builder" in ref:
        params = {k: v for k, v in ref.items() if k != "builder"}
        check_builder_sizes(str(ref["builder"]), {**params, **builder_options})
        return build(ref["builder"], **{**params, **builder_options})
    return get_topology(str(base / ref["file"]))
