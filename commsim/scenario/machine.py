"""A topology reference plus overrides becomes a machine: the one place this happens.

Flags (``--topology ring --gpus 8``), scenario files (``topology:`` and
``overrides:``), training scenarios (``nodes:`` repeated on a builder) and
sweep grid points all name a machine the same ways: a shipped name, a
builder name with its fields, a YAML path, ``{builder: NAME, FIELD: value}``
or ``{file: PATH}``, or a :class:`~commsim.topology.model.Topology` already
built; ``overrides`` replace the figures of link kinds or families.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import pydantic
from pydantic import AfterValidator, ValidationInfo, field_validator

from commsim.errors import AlgorithmError, CommsimError, TopologyError, UnknownNameError
from commsim.topology.model import Topology
from commsim.units import parse_bandwidth, parse_time

__all__ = [
    "OVERRIDE_FIELDS",
    "Figures",
    "Overrides",
    "build_machine",
    "check_reference",
    "parse_overrides",
    "unused_overrides",
]

OVERRIDE_FIELDS = ("bandwidth", "latency")
"""The figures an override of a link kind or family may replace."""


def _known_kind(kind: str) -> str:
    from commsim.topology.linkkinds import kinds_matching

    try:
        kinds_matching((kind,))
    except CommsimError as exc:
        raise ValueError(str(exc)) from None
    return kind


class Figures(pydantic.BaseModel):
    """New figures for a link kind or family: ``{bandwidth: 18 GB/s, latency: 1 us}``.

    Read from a file (validation context ``{"file": ...}``), a figure needs
    its unit: ``bandwidth: 16`` is refused, not read as 16 B/s.
    """

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    bandwidth: str | float | None = None
    latency: str | float | None = None

    @field_validator("bandwidth", "latency", mode="before")
    @classmethod
    def _readable(cls, value: Any, info: ValidationInfo) -> Any:
        if value is not None:
            parse = parse_bandwidth if info.field_name == "bandwidth" else parse_time
            try:
                figure = parse(value, require_unit=bool(info.context and info.context.get("file")))
            except CommsimError as exc:
                raise ValueError(str(exc)) from None
            if info.field_name == "bandwidth" and figure == 0:
                raise ValueError(
                    f"bandwidth {value!r} is zero: a link carries some bytes per second, e.g. '1 GB/s'"
                )
        return value


Overrides = dict[Annotated[str, AfterValidator(_known_kind)], Figures]
"""``{kind or family: Figures}``: the ``overrides:`` of scenario, training and sweep files."""


def parse_overrides(
    overrides: Mapping[str, Mapping[str, Any] | Figures], *, require_unit: bool = False
) -> dict[str, tuple[float | None, float | None]]:
    """``{kind: {bandwidth: "18 GB/s", latency: "0 s"}}`` to SI figures ``{kind: (B/s, s)}``.

    Parameters
    ----------
    overrides : mapping
        Per link kind or family, its new ``bandwidth`` and/or ``latency``.
    require_unit : bool
        Refuse plain numbers (as a file's figures must be: 16 is not 16 B/s).

    Raises
    ------
    AlgorithmError
        For a field other than bandwidth and latency.
    UnitError
        For a figure that cannot be read.
    """
    parsed = {}
    for kind, given in overrides.items():
        figures = given.model_dump(exclude_none=True) if isinstance(given, Figures) else given
        unknown = set(figures) - set(OVERRIDE_FIELDS)
        if unknown:
            raise AlgorithmError(
                f"override of {kind!r}: unknown field(s) {sorted(unknown)}; valid: bandwidth, latency"
            )
        bandwidth = figures.get("bandwidth")
        latency = figures.get("latency")
        parsed[kind] = (
            parse_bandwidth(bandwidth, require_unit=require_unit) if bandwidth is not None else None,
            parse_time(latency, require_unit=require_unit) if latency is not None else None,
        )
    return parsed


def build_machine(
    ref: str | Topology | Mapping[str, Any],
    overrides: Mapping[str, Mapping[str, Any] | Figures] | None = None,
    *,
    base: Path | None = None,
    **builder_options: Any,
) -> Topology:
    """The machine ``ref`` names, with ``overrides`` applied.

    Parameters
    ----------
    ref : str, Topology or mapping
        A shipped name (``"dgx1_v100"``), a builder name (``"ring"``, with
        ``gpus=`` in ``builder_options``), a YAML path (relative to
        ``base``), ``{builder: NAME, FIELD: value ...}``, ``{file: PATH}``
        (relative to ``base``), or a Topology.
    overrides : mapping, optional
        ``{kind or family: {bandwidth: ..., latency: ...}}`` (or :class:`Figures`).
    base : Path, optional
        The directory of the file holding the reference (default: the
        current directory).
    **builder_options
        More builder fields (``gpus=8``, ``nodes=4``); None values are
        dropped. They win over a builder mapping's own fields.

    Raises
    ------
    UnknownNameError
        If a name is neither shipped nor a builder.
    TopologyError
        If the machine cannot be built, or builder options are given for a
        machine that is already built.

    Examples
    --------
    >>> build_machine("ring", {"nvlink": {"bandwidth": "10 GB/s"}}, gpus=4).gpus
    ['gpu0', 'gpu1', 'gpu2', 'gpu3']
    """
    from commsim.topology.resolve import get_topology, resolve_reference

    options = {k: v for k, v in builder_options.items() if v is not None}
    if isinstance(ref, Topology):
        if options:
            raise TopologyError(
                f"{', '.join(f'{k}={v!r}' for k, v in options.items())}: builder options do not apply "
                f"to topology {ref.name!r}, which is already built"
            )
        machine = ref
    elif isinstance(ref, (str, Path)):
        path = Path(ref)
        if base is not None and path.suffix in (".yaml", ".yml"):
            path = base / path
        machine = get_topology(str(path) if path.suffix in (".yaml", ".yml") else str(ref), **options)
    elif isinstance(ref, Mapping):
        try:  # a mapping from Python is checked as one from a scenario file is
            check_reference(ref, base or Path.cwd())
        except ValueError as exc:
            raise TopologyError(f"topology {dict(ref)!r}: {exc}") from None
        machine = resolve_reference(ref, base or Path.cwd(), **options)
    else:
        raise TopologyError(
            f"topology {ref!r}: expected a name, a YAML path, a builder mapping or a Topology, "
            f"got {type(ref).__name__}"
        )
    if overrides:
        machine = machine.with_overrides(parse_overrides(overrides))
    return machine


def unused_overrides(machine: Topology, overrides: Mapping[str, Any]) -> list[str]:
    """The override keys (kinds or families) that match no link of ``machine``: they change nothing."""
    from commsim.topology.linkkinds import LINK_KINDS

    present = {link.kind for link in machine.physical_links}
    present |= {LINK_KINDS[kind].family for kind in present if kind in LINK_KINDS}
    return [key for key in overrides if key not in present]


def check_reference(ref: Any, base: Path) -> None:
    """Check a topology reference without building the machine (a sweep checks every point's).

    Parameters
    ----------
    ref : str or mapping
        As for :func:`build_machine`.
    base : Path
        The directory relative paths start from.

    Raises
    ------
    ValueError
        Saying what is wrong and what would be valid: an unknown name or
        builder (with the nearest), a file that does not exist, a mapping
        that is neither ``{builder: ...}`` nor ``{file: ...}``, a field the
        builder does not take.
    """
    import inspect

    from commsim.topology.builders import BUILDERS
    from commsim.topology.io import shipped_topologies
    from commsim.topology.resolve import available_topologies

    if isinstance(ref, str):
        if ref in BUILDERS or ref in shipped_topologies():
            return
        if Path(ref).suffix in (".yaml", ".yml"):
            _check_file(ref, base)
            return
        raise ValueError(str(UnknownNameError("topology", ref, available_topologies())))
    if not isinstance(ref, Mapping):
        raise ValueError("a topology is a name, a YAML path, {builder: NAME, FIELD: value} or {file: PATH}")
    given = [k for k in ("builder", "file") if k in ref]
    if len(given) != 1:
        raise ValueError(f"a topology mapping has exactly one of builder, file (got {given or 'none'})")
    if "file" in ref:
        if len(ref) > 1:
            raise ValueError("a {file: PATH} topology has no other fields")
        _check_file(ref["file"], base)
        return
    name = ref["builder"]
    if not isinstance(name, str) or name not in BUILDERS:
        raise ValueError(str(UnknownNameError("topology builder", str(name), list(BUILDERS))))
    accepted = set(inspect.signature(BUILDERS[name]).parameters)
    unknown = sorted(set(ref) - accepted - {"builder"})
    if unknown:
        valid = ", ".join(sorted(accepted))
        raise ValueError(f"builder {name!r} has no field {unknown[0]!r}; valid: {valid}")


def _check_file(value: Any, base: Path) -> None:
    if not isinstance(value, str):
        raise ValueError(f"expected a file path, got {value!r}")
    if not (base / value).is_file():
        raise ValueError(f"topology file {base / value} does not exist")
