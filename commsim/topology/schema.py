"""The YAML format of a machine description, as pydantic models.

Example::

    name: pcie_4gpu_switch
    description: the textbook's 4-GPU box
    link_kinds:                 # optional defaults per kind or family
      pcie3_x16: {bandwidth: 16 GB/s, latency: 0 s}
    devices:
      - {name: cpu0, kind: cpu}
      - {name: sw0, kind: pcie_switch}
      - {name: gpu0, kind: gpu, model: V100}
    links:
      - {between: [gpu0, sw0], kind: pcie3_x16}
      - {between: [gpu0, gpu1], kind: nvlink2, count: 2}   # NV2: a bonded pair

Bandwidths are per single link and per direction; ``count`` bonds links.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    ValidationInfo,
    field_validator,
)

from commsim.errors import UnknownNameError, known_name
from commsim.topology.linkkinds import LINK_KINDS, kinds_matching
from commsim.topology.model import DEVICE_KINDS
from commsim.units import format_bandwidth, format_time, parse_bandwidth, parse_time

__all__ = ["Bandwidth", "DeviceSpec", "KindFigures", "LinkSpec", "Time", "TopologySpec", "from_file"]


def from_file(info: ValidationInfo) -> bool:
    """True when pydantic validates data read from a file (see :func:`commsim.yamlio.validate_with_lines`).

    A file's figures need units (``bandwidth: 16`` is not 16 B/s); Python
    callers may pass plain numbers in base SI units.
    """
    return bool(info.context and info.context.get("file"))


def _bandwidth(value: Any, info: ValidationInfo) -> float:
    bandwidth_Bps = parse_bandwidth(value, require_unit=from_file(info))
    if bandwidth_Bps <= 0:
        raise ValueError(f"bandwidth must be positive, got {value!r}")
    return bandwidth_Bps


def _time(value: Any, info: ValidationInfo) -> float:
    return parse_time(value, require_unit=from_file(info))


def _exact(value: float, short: str, parse: Any, unit: str) -> str:
    """``short`` if it reads back as exactly ``value``, else the float in base units."""
    return short if parse(short) == value else f"{value!r} {unit}"


Bandwidth = Annotated[
    float,
    BeforeValidator(_bandwidth),
    PlainSerializer(
        lambda v: _exact(v, format_bandwidth(v, digits=12), parse_bandwidth, "B/s"), return_type=str
    ),
    Field(
        description="a rate with its unit, decimal as nccl-tests prints it (1 GB/s = 10**9 B/s; "
        "GiB/s binary; Gbit/s, Gbps in bits); a bare number is refused",
        json_schema_extra={"type": "string", "examples": ["16 GB/s", "100 Gbit/s"]},  # text, not float
    ),
]
"""A bandwidth read from "16 GB/s" and friends, stored in bytes per second."""

Time = Annotated[
    float,
    BeforeValidator(_time),
    PlainSerializer(lambda v: _exact(v, format_time(v, digits=12), parse_time, "s"), return_type=str),
    Field(
        description="a duration with its unit (s, ms, us, ns); a bare number is refused",
        json_schema_extra={"type": "string", "examples": ["5 us", "0 s"]},  # text, not float
    ),
]
"""A duration read from "5 us" and friends, stored in seconds."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class KindFigures(_Strict):
    """Default figures for one link kind or family inside one topology."""

    bandwidth: Bandwidth | None = None
    latency: Time | None = None


_DEVICE_NAME = re.compile(r"[A-Za-z0-9_.\-]+")


class DeviceSpec(_Strict):
    """One device. GPUs are ranked in the order they are listed."""

    name: str
    kind: str
    box: int = Field(0, ge=0)
    model: str | None = None
    reduce_bandwidth: Bandwidth | None = None
    serves: list[str] = Field(default_factory=list, description="for a NIC: the GPUs it belongs to")

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, kind: str) -> str:
        return known_name("device kind", kind, DEVICE_KINDS)

    @field_validator("name")
    @classmethod
    def _plain_name(cls, name: str) -> str:
        # names stand in ranks lists, routes ('a->b') and CSV cells ('a->b:0.5;c->d:0.5')
        if not _DEVICE_NAME.fullmatch(name):
            raise ValueError(
                f"device name {name!r} must be letters, digits and '_', '-' or '.' (no spaces), e.g. 'gpu0'"
            )
        return name


class LinkSpec(_Strict):
    """One full-duplex link (or ``count`` bonded links) between two devices."""

    between: tuple[str, str]
    kind: str
    count: int = Field(1, ge=1)
    bandwidth: Bandwidth | None = None
    latency: Time | None = None

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, kind: str) -> str:
        return known_name("link kind", kind, sorted(LINK_KINDS))


class TopologySpec(_Strict):
    """A machine description file."""

    name: str = Field(min_length=1)
    description: str = ""
    peer_to_peer: bool = True
    nccl: dict[str, Any] | None = None
    multipath: Literal["spray", "hash"] = Field(
        "spray",
        description="equal-cost routes: spray a send over all (adaptive routing) or hash it onto one (ECMP)",
    )
    link_kinds: dict[str, KindFigures] = Field(default_factory=dict)
    devices: list[DeviceSpec] = Field(min_length=1)
    links: list[LinkSpec] = Field(default_factory=list)

    @field_validator("link_kinds")
    @classmethod
    def _known_kinds(cls, value: dict[str, KindFigures]) -> dict[str, KindFigures]:
        try:
            kinds_matching(tuple(value))
        except UnknownNameError as exc:  # pydantic reports ValueErrors with their position
            raise ValueError(str(exc)) from None
        return value

    def semantic_errors(self) -> list[tuple[tuple[str | int, ...], str]]:
        """(location, message) of each device or link that contradicts the others."""
        errors: list[tuple[tuple[str | int, ...], str]] = []
        seen: set[str] = set()
        for i, device in enumerate(self.devices):
            if device.name in seen:
                errors.append((("devices", i, "name"), f"device {device.name!r} is declared twice"))
            seen.add(device.name)
        for i, device in enumerate(self.devices):
            for gpu in device.serves:
                if gpu not in seen:
                    errors.append((("devices", i, "serves"), f"{device.name} serves unknown device {gpu!r}"))
        for i, link in enumerate(self.links):
            a, b = link.between
            for end in (a, b):
                if end not in seen:
                    errors.append(
                        (
                            ("links", i, "between"),
                            f"link {a}-{b} names unknown device {end!r}; devices: {', '.join(sorted(seen))}",
                        )
                    )
            if a == b:
                errors.append((("links", i, "between"), f"link from {a!r} to itself"))
        return errors
