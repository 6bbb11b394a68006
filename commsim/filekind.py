"""Which kind of commsim file a mapping is, so a file given to the wrong command is named as such.

A sweep given to ``run``, a scenario given to ``sweep`` or ``--topology``, or
an ``nvidia-smi topo -m`` matrix given where a topology YAML file is read,
is told apart by its top-level fields (or, for the matrix, its header row),
and the message names the command that reads it instead of listing the
fields the file lacks.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "looks_like_rocm_smi",
    "looks_like_topo_matrix",
    "rocm_smi_message",
    "topo_matrix_message",
    "wrong_kind",
]

_TELLS = (
    (("workload",), "training scenario"),
    (("grid",), "sweep"),
    (("devices",), "topology"),
    (("links",), "topology"),
    (("sizes", "algorithms"), "scenario"),
    (("size", "algorithms"), "scenario"),
)
"""Top-level fields only one kind of file has, and that kind; the first found decides (a
sweep with a stray ``sizes`` is still a sweep with a typo: a scenario has both)."""

_READERS = {
    "training scenario": "run it with commsim run {source} (add --trace STEP.json for its timeline)",
    "sweep": "run it with commsim sweep {source} -o OUT.csv",
    "scenario": "run it with commsim run {source}",
    "topology": (
        "give it as a machine, e.g. commsim run --topology {source} --algorithm ring, or draw it with "
        "commsim topo show {source}"
    ),
}

_MATRIX_HEADER = re.compile(
    r"^[ \t]*(?:\x1b\[[0-9;]*m)*GPU0[ \t]+(?:GPU1|NIC0|mlx|CPU Affinity)", re.MULTILINE
)


def wrong_kind(data: Mapping[str, Any], source: str, expected: str) -> str | None:
    """The message for a file of another kind than ``expected`` (None if it may be one).

    ``expected`` is ``"scenario"``, ``"sweep"`` or ``"topology"``.
    """
    for keys, kind in _TELLS:
        if all(key in data for key in keys):
            key = keys[0]
            if kind == expected:
                return None
            article = "an" if kind[0] in "aeiou" else "a"
            return (
                f"{source}: this is {article} {kind} file (top-level {key!r}), not a {expected} file: "
                + _READERS[kind].format(source=source)
            )
    return None


_ROCM_SMI = re.compile(
    r"ROCm System Management Interface|^=+ (?:Weight|Link Type) between two GPUs =+", re.MULTILINE
)


def looks_like_rocm_smi(text: str) -> bool:
    """Whether ``text`` is ``rocm-smi --showtopo`` output (its banner or a matrix's title line).

    Its matrices have a ``GPU0 GPU1 ...`` header too, so this is asked before
    :func:`looks_like_topo_matrix`.
    """
    return _ROCM_SMI.search(text[:20_000]) is not None


def rocm_smi_message(source: str, expected: str) -> str:
    """What to do with ``rocm-smi --showtopo`` output given where ``expected`` is read."""
    return (
        f"{source}: this is rocm-smi --showtopo output, not {expected}: import it in Python with "
        "commsim.interop.rocm_smi.read_rocm_smi and rocm_smi_to_topology, save it with "
        "commsim.save_topology(topology, 'MACHINE.yaml'), then give MACHINE.yaml"
    )


def looks_like_topo_matrix(text: str) -> bool:
    """Whether ``text`` holds an ``nvidia-smi topo -m`` matrix (a ``GPU0 GPU1 ...`` header row)."""
    return _MATRIX_HEADER.search(text[:20_000]) is not None


def topo_matrix_message(source: str) -> str:
    """What to do with an ``nvidia-smi topo -m`` file given where topology YAML is read."""
    return (
        f"{source}: this is nvidia-smi topo -m output, not a topology YAML file: convert it with "
        f"commsim topo import {source} -o MACHINE.yaml, then give MACHINE.yaml "
        "(validate --topology reads the matrix as it is)"
    )
