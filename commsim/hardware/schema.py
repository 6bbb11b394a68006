"""The pydantic schema of ``gpus.yaml`` and the checks across its entries.

Field checks run per entry (so an error names the entry's position); the
checks that need the whole file (unique keys, names, host tokens and PCI IDs,
shared names printed by at least two entries) run on the document.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from commsim.errors import known_name

__all__ = [
    "BOARD_CLASSES",
    "FABRICS",
    "FORMS",
    "BoardEntry",
    "BridgeEntry",
    "CatalogueFile",
    "GpuEntry",
    "bare_name",
    "fold_name",
]

NVIDIA_ARCHS = (
    "kepler",
    "pascal",
    "volta",
    "turing",
    "ampere",
    "ada",
    "hopper",
    "blackwell",
    "blackwell_ultra",
)
AMD_ARCHS = ("cdna1", "cdna2", "cdna3", "cdna4", "rdna3", "rdna4")
FORMS = ("sxm", "pcie", "oam", "superchip", "nvl")
FABRICS = ("nvlink1", "nvlink2", "nvlink3", "nvlink4", "nvlink5", "xgmi_gpu")
BOARD_CLASSES = (
    "nvswitch8",
    "nvswitch16",
    "nvlink_mesh4",
    "dgx1_cube",
    "nvl72",
    "nvl_superchip",
    "xgmi8",
    "bridged_pairs",
    "pcie",
)
_PCIE = re.compile(r"^pcie[3-6]_x16$")
_PCI_ID = re.compile(r"^0x[0-9a-f]{4}$")
_KEY = re.compile(r"^[a-z][a-z0-9_]*$")
_TOKEN = re.compile(r"^[a-z0-9]+$")

Positive = Annotated[float, Field(gt=0)]


def fold_name(text: str) -> str:
    """``text`` case-folded with every run of white space made one space, ends stripped."""
    return re.sub(r"\s+", " ", text).strip().casefold()


def bare_name(text: str) -> str:
    """:func:`fold_name` without a leading vendor word (``nvidia``, ``amd``).

    Newer NVIDIA drivers prefix ``NVIDIA`` to names older ones printed bare
    (``A100-SXM4-40GB``); ROCm tools differ the same way with ``AMD``.
    """
    return re.sub(r"^(nvidia|amd) ", "", fold_name(text))


class BoardEntry(BaseModel):
    """A ``boards`` item: ``{class: nvswitch8, gpus: 8}``."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    machine_class: str = Field(alias="class")
    gpus: int = Field(gt=0)

    @field_validator("machine_class")
    @classmethod
    def _known_class(cls, value: str) -> str:
        return known_name("board class", value, BOARD_CLASSES)


class BridgeEntry(BaseModel):
    """A ``bridge`` of a PCIe card: ``{fabric: nvlink3, links: 12, link_Bps: 25.0e+9}``."""

    model_config = ConfigDict(extra="forbid")

    fabric: str
    links: int = Field(gt=0)
    link_Bps: Positive

    @field_validator("fabric")
    @classmethod
    def _known_fabric(cls, value: str) -> str:
        return known_name("fabric link kind", value, FABRICS)


class GpuEntry(BaseModel):
    """One ``gpus`` item of the catalogue file (see :class:`~commsim.hardware.GpuSpec`)."""

    model_config = ConfigDict(extra="forbid")

    key: str
    vendor: str
    name: str = Field(min_length=1)
    arch: str
    form: str
    names: list[str] = Field(default_factory=list)
    shared_names: list[str] = Field(default_factory=list)
    patterns: list[str] = Field(default_factory=list)
    pci_ids: list[str] = Field(default_factory=list)
    fabric: str | None = None
    fabric_links: int | None = Field(default=None, gt=0)
    fabric_link_Bps: Positive | None = None
    bridge: BridgeEntry | None = None
    pcie: str | None = None
    p2p_default: bool | None = None
    memory_GB: Positive
    memory_Bps: Positive | None = None
    boards: list[BoardEntry] = Field(default_factory=list)
    host_tokens: list[str] = Field(default_factory=list)
    source: str = Field(min_length=1)
    notes: str = ""

    @field_validator("key")
    @classmethod
    def _key_form(cls, value: str) -> str:
        if not _KEY.match(value):
            raise ValueError(f"key {value!r} must be lower-case snake_case, e.g. 'h100_sxm'")
        return value

    @field_validator("vendor")
    @classmethod
    def _known_vendor(cls, value: str) -> str:
        return known_name("vendor", value, ("nvidia", "amd"))

    @field_validator("form")
    @classmethod
    def _known_form(cls, value: str) -> str:
        return known_name("form", value, FORMS)

    @field_validator("fabric")
    @classmethod
    def _known_fabric(cls, value: str | None) -> str | None:
        return None if value is None else known_name("fabric link kind", value, FABRICS)

    @field_validator("pcie")
    @classmethod
    def _pcie_kind(cls, value: str | None) -> str | None:
        if value is not None and not _PCIE.match(value):
            raise ValueError(f"pcie {value!r} must be a link kind pcie3_x16 ... pcie6_x16")
        return value

    @field_validator("pci_ids")
    @classmethod
    def _pci_id_form(cls, values: list[str]) -> list[str]:
        for value in values:
            if not _PCI_ID.match(value):
                raise ValueError(f"PCI device ID {value!r} must be written '0x' + 4 lower-case hex digits")
        return values

    @field_validator("patterns")
    @classmethod
    def _patterns_compile(cls, values: list[str]) -> list[str]:
        for value in values:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"pattern {value!r} is not a valid regex: {exc}") from None
        return values

    @field_validator("host_tokens")
    @classmethod
    def _token_form(cls, values: list[str]) -> list[str]:
        for value in values:
            if not _TOKEN.match(value):
                raise ValueError(f"host token {value!r} must be lower-case letters and digits")
        return values

    @field_validator("source")
    @classmethod
    def _cites_something(cls, value: str) -> str:
        if "http" not in value and not re.match(r"^as [a-z0-9_]+\b", value.casefold()):
            raise ValueError("source must give a URL, or begin 'As <key>' to share another entry's")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> GpuEntry:
        valid = NVIDIA_ARCHS if self.vendor == "nvidia" else AMD_ARCHS
        known_name(f"{self.vendor} arch", self.arch, valid)
        if not (self.names or self.shared_names):
            raise ValueError(f"{self.key}: needs at least one printed name in names or shared_names")
        self._check_fabric()
        if self.pcie is None and self.form != "superchip":
            raise ValueError(f"{self.key}: pcie may be null only for a superchip (form {self.form!r})")
        return self

    def _check_fabric(self) -> None:
        parts = (self.fabric, self.fabric_links, self.fabric_link_Bps)
        if any(p is None for p in parts) and any(p is not None for p in parts):
            raise ValueError(f"{self.key}: give fabric, fabric_links and fabric_link_Bps together or none")
        if self.fabric is not None and self.bridge is not None:
            raise ValueError(f"{self.key}: a GPU has a fabric or an optional bridge, not both")


class CatalogueFile(BaseModel):
    """The whole ``gpus.yaml``: generic-name regexes and the entries."""

    model_config = ConfigDict(extra="forbid")

    generic_names: list[str] = Field(default_factory=list)
    gpus: list[GpuEntry] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> CatalogueFile:
        _no_duplicates("key", [(g.key, g.key) for g in self.gpus])
        _no_duplicates("printed name", [(bare_name(n), g.key) for g in self.gpus for n in g.names])
        _no_duplicates("host token", [(t, g.key) for g in self.gpus for t in g.host_tokens])
        _no_duplicates("PCI ID", [(f"{g.vendor}:{p}", g.key) for g in self.gpus for p in g.pci_ids])
        self._check_shared_names()
        self._check_references()
        return self

    def _check_shared_names(self) -> None:
        names = {bare_name(n): g.key for g in self.gpus for n in g.names}
        counts = Counter(bare_name(n) for g in self.gpus for n in set(g.shared_names))
        for g in self.gpus:
            for name in g.shared_names:
                owner = names.get(bare_name(name))
                if owner is not None:
                    raise ValueError(f"{g.key}: shared name {name!r} is also a name of {owner}")
                if counts[bare_name(name)] < 2:
                    raise ValueError(f"{g.key}: shared name {name!r} must be listed by at least two entries")

    def _check_references(self) -> None:
        keys = {g.key for g in self.gpus}
        for g in self.gpus:
            match = re.match(r"^as ([a-z0-9_]+)\b", g.source.casefold())
            if match and "http" not in g.source and match.group(1) not in keys:
                raise ValueError(f"{g.key}: source refers to unknown entry {match.group(1)!r}")


def _no_duplicates(what: str, items: list[tuple[str, str]]) -> None:
    seen: dict[str, str] = {}
    for value, key in items:
        if value in seen and seen[value] != key:
            raise ValueError(f"{what} {value!r} of {key} is already used by {seen[value]}")
        seen[value] = key
