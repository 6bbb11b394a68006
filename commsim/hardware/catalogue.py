"""The GPU catalogue: every known GPU's links, host interface and names, as data.

The entries live in ``gpus.yaml`` beside this module (shipped with the wheel and
read with :mod:`importlib.resources`); each names its source (datasheet,
whitepaper, vendor page, the ``pci.ids`` database) and says in ``notes`` which
figures are derived or uncertain. Loading validates the file with pydantic and
raises :class:`CatalogueError` naming the entry, the field and the line.

Units: bandwidths in bytes per second, per link and per direction (decimal SI);
memory in GB as the vendor states it.

References
----------
.. [1] NVIDIA datasheets and architecture whitepapers (P100 to B300), cited per entry.
.. [2] AMD Instinct product pages and the ROCm GPU architecture documents, cited per entry.
.. [3] The PCI ID repository, ``pci.ids`` (https://github.com/pciutils/pciids).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

import pydantic

from commsim.errors import CommsimError, UnknownNameError
from commsim.hardware.schema import AMD_ARCHS, NVIDIA_ARCHS, CatalogueFile, GpuEntry, bare_name
from commsim.yamlio import read_yaml, validation_message

__all__ = [
    "ARCHS",
    "Board",
    "Bridge",
    "CatalogueError",
    "GpuCatalogue",
    "GpuSpec",
    "catalogue_markdown",
    "get_gpu",
    "gpu_arch",
    "gpu_catalogue",
    "load_gpu_catalogue",
    "parse_gpu_catalogue",
]

ARCHS = NVIDIA_ARCHS + AMD_ARCHS
"""GPU generations of the catalogue: NVIDIA oldest first, then AMD."""

_SOURCE = "commsim/hardware/gpus.yaml"


class CatalogueError(CommsimError):
    """The GPU catalogue file is invalid; the message names the entry, field and line."""


@dataclass(frozen=True)
class Board:
    """A machine class a GPU ships in, with its usual GPU count.

    Attributes
    ----------
    machine_class : str
        One of ``nvswitch8``, ``nvswitch16`` (DGX-2 / HGX-2), ``nvlink_mesh4``,
        ``dgx1_cube``, ``nvl72``, ``nvl_superchip``, ``xgmi8``, ``bridged_pairs``, ``pcie``.
    gpus : int
        GPUs in one such machine (72 for a whole NVL72 rack).
    """

    machine_class: str
    gpus: int


@dataclass(frozen=True)
class Bridge:
    """An optional GPU-to-GPU bridge of a PCIe card (NVLink or Infinity Fabric bridge).

    Attributes
    ----------
    fabric : str
        Link kind, e.g. ``"nvlink3"`` or ``"xgmi_gpu"``.
    links : int
        Links the bridge(s) give one GPU.
    link_Bps : float
        Bandwidth of one link, per direction, in bytes per second.
    """

    fabric: str
    links: int
    link_Bps: float

    @property
    def Bps(self) -> float:
        """Bridge bandwidth of one GPU, per direction, in bytes per second (links x per-link)."""
        return self.links * self.link_Bps


@dataclass(frozen=True)
class GpuSpec:
    """One catalogue entry: a GPU product and the facts a communication model needs.

    Attributes
    ----------
    key : str
        Catalogue key, e.g. ``"h100_sxm"``.
    vendor : str
        ``"nvidia"`` or ``"amd"``.
    name : str
        Marketing name.
    arch : str
        Generation, one of :data:`ARCHS`.
    form : str
        ``"sxm"``, ``"pcie"``, ``"oam"``, ``"superchip"`` or ``"nvl"`` (NVL PCIe cards).
    names : tuple of str
        Names drivers and tools print for this GPU alone (whole names).
    shared_names : tuple of str
        Names printed by this GPU and others (a lookup by them is ambiguous).
    patterns : tuple of str
        Regexes for names not listed, searched case-insensitively.
    pci_ids : tuple of str
        PCI device IDs, ``"0x2330"`` style.
    fabric : str or None
        GPU-to-GPU link kind (``nvlink1`` ... ``nvlink5``, ``xgmi_gpu``), None without one.
    fabric_links : int or None
        Fabric links of one GPU.
    fabric_link_Bps : float or None
        Bandwidth of one fabric link, per direction, in bytes per second.
    bridge : Bridge or None
        Optional bridge of a PCIe card.
    pcie : str or None
        Host interface as a link kind (``pcie5_x16`` ...); None where the host
        link is NVLink-C2C (superchips).
    p2p_default : bool or None
        Whether PCIe peer-to-peer works with the stock driver; None if unknown.
    memory_GB : float
    memory_Bps : float or None
        Peak memory bandwidth of one GPU (datasheet), in bytes per second; None where not recorded.
        Memory per GPU, in GB.
    boards : tuple of Board
        Machine classes the GPU ships in.
    host_tokens : tuple of str
        Model tokens that stand for this entry in free text (host names).
    source : str
        Where the figures come from.
    notes : str
        Caveats: derived or uncertain figures.
    """

    key: str
    vendor: str
    name: str
    arch: str
    form: str
    names: tuple[str, ...]
    shared_names: tuple[str, ...]
    patterns: tuple[str, ...]
    pci_ids: tuple[str, ...]
    fabric: str | None
    fabric_links: int | None
    fabric_link_Bps: float | None
    bridge: Bridge | None
    pcie: str | None
    p2p_default: bool | None
    memory_GB: float
    memory_Bps: float | None
    boards: tuple[Board, ...]
    host_tokens: tuple[str, ...]
    source: str
    notes: str

    @property
    def fabric_Bps(self) -> float:
        """GPU-to-GPU fabric bandwidth of one GPU, per direction, in B/s (0 without a fabric)."""
        if self.fabric_links is None or self.fabric_link_Bps is None:
            return 0.0
        return self.fabric_links * self.fabric_link_Bps

    def describe(self) -> str:
        """One line, e.g. ``H100 SXM5 80GB (hopper, sxm): nvlink4 x 18 = 450 GB/s per direction``."""
        text = f"{self.name} ({self.arch}, {self.form})"
        if self.fabric:
            text += f": {self.fabric} x {self.fabric_links} = {self.fabric_Bps / 1e9:.4g} GB/s per direction"
        elif self.bridge:
            text += f": optional {self.bridge.fabric} bridge, {self.bridge.Bps / 1e9:.4g} GB/s per direction"
        else:
            text += f": {self.pcie or 'no PCIe'} only"
        return text


@dataclass(frozen=True)
class GpuCatalogue:
    """A validated catalogue: the entries by key and the generic-name regexes.

    Attributes
    ----------
    gpus : dict of str to GpuSpec
        Entries by key, in file order.
    generic_names : tuple of str
        Regexes of names that identify no product ("NVIDIA Graphics Device").
    names : dict of str to str
        Every printed name, normalised (:func:`~commsim.hardware.schema.bare_name`), to its key.
    shared : dict of str to tuple of str
        Every shared name, normalised, to the keys of the GPUs that print it.
    patterns : tuple of (re.Pattern, str)
        Every entry's compiled regexes (case-insensitive) with its key.
    pci : dict of str to tuple of str
        PCI device ID (``"0x2330"``) to the keys that have it (one per vendor at most).
    tokens : dict of str to str
        Host-name model token to key.
    """

    gpus: dict[str, GpuSpec]
    generic_names: tuple[str, ...]
    names: dict[str, str]
    shared: dict[str, tuple[str, ...]]
    patterns: tuple[tuple[re.Pattern[str], str], ...]
    pci: dict[str, tuple[str, ...]]
    tokens: dict[str, str]


def parse_gpu_catalogue(text: str, source: str = "<string>") -> GpuCatalogue:
    """Validate a catalogue document (the text of a ``gpus.yaml``).

    Parameters
    ----------
    text : str
        YAML text with ``generic_names`` and ``gpus``.
    source : str
        File name for error messages.

    Returns
    -------
    GpuCatalogue

    Raises
    ------
    CatalogueError
        With ``source:line:col``, the entry and field, for any invalid value,
        duplicate key or name, or ambiguous PCI ID.
    """
    data, node = read_yaml(text, source, CatalogueError)
    try:
        model = CatalogueFile.model_validate(data)
    except pydantic.ValidationError as exc:
        raise CatalogueError(_name_entries(validation_message(exc, node, source), data)) from None
    gpus = {entry.key: _spec(entry) for entry in model.gpus}
    specs = list(gpus.values())
    shared: dict[str, tuple[str, ...]] = {}
    pci: dict[str, tuple[str, ...]] = {}
    for spec in specs:
        for name in spec.shared_names:
            shared[bare_name(name)] = (*shared.get(bare_name(name), ()), spec.key)
        for device in spec.pci_ids:
            pci[device] = (*pci.get(device, ()), spec.key)
    return GpuCatalogue(
        gpus=gpus,
        generic_names=tuple(model.generic_names),
        names={bare_name(name): spec.key for spec in specs for name in spec.names},
        shared={name: tuple(dict.fromkeys(keys)) for name, keys in shared.items()},
        patterns=tuple((re.compile(p, re.IGNORECASE), spec.key) for spec in specs for p in spec.patterns),
        pci=pci,
        tokens={token: spec.key for spec in specs for token in spec.host_tokens},
    )


@functools.cache
def load_gpu_catalogue() -> GpuCatalogue:
    """The packaged catalogue, read and validated once per process.

    Raises
    ------
    CatalogueError
        If the packaged ``gpus.yaml`` is invalid.
    """
    text = resources.files("commsim.hardware").joinpath("gpus.yaml").read_text(encoding="utf-8")
    return parse_gpu_catalogue(text, _SOURCE)


def gpu_catalogue() -> dict[str, GpuSpec]:
    """Every catalogue entry by key (a new dict each call; the entries are frozen).

    Examples
    --------
    >>> gpu_catalogue()["h100_sxm"].fabric_Bps
    450000000000.0
    """
    return dict(load_gpu_catalogue().gpus)


def get_gpu(key: str) -> GpuSpec:
    """The entry with catalogue key ``key``.

    Raises
    ------
    UnknownNameError
        If there is no such key; the message lists the valid ones.
    """
    gpus = load_gpu_catalogue().gpus
    if key not in gpus:
        raise UnknownNameError("GPU catalogue key", key, list(gpus))
    return gpus[key]


def gpu_arch(spec: GpuSpec | None) -> str:
    """The generation of a catalogue entry (one of :data:`ARCHS`), ``"unknown"`` for None."""
    return spec.arch if spec is not None else "unknown"


def catalogue_markdown() -> str:
    """The catalogue as a Markdown table for the documentation, one row per entry."""
    rows = [
        "| key | name | arch | form | GPU-GPU link | host | P2P | memory | boards |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    rows += [_markdown_row(spec) for spec in load_gpu_catalogue().gpus.values()]
    return "\n".join(rows) + "\n"


def _markdown_row(spec: GpuSpec) -> str:
    if spec.fabric:
        link = f"{spec.fabric} x {spec.fabric_links} ({spec.fabric_Bps / 1e9:.4g} GB/s)"
    elif spec.bridge:
        link = f"bridge {spec.bridge.fabric} x {spec.bridge.links} ({spec.bridge.Bps / 1e9:.4g} GB/s)"
    else:
        link = "-"
    p2p = {True: "yes", False: "no", None: "?"}[spec.p2p_default]
    boards = ", ".join(f"{b.machine_class}:{b.gpus}" for b in spec.boards) or "-"
    cells = [spec.key, spec.name, spec.arch, spec.form, link, spec.pcie or "C2C", p2p]
    cells += [f"{spec.memory_GB:g} GB", boards]
    return "| " + " | ".join(cells) + " |"


def _name_entries(message: str, data: Any) -> str:
    """``gpus.3.pcie`` in pydantic's message becomes ``gpus.3 (a100_sxm).pcie``."""
    entries = data.get("gpus") if isinstance(data, dict) else None

    def key_of(hit: re.Match[str]) -> str:
        index = int(hit.group(1))
        entry = entries[index] if isinstance(entries, list) and index < len(entries) else None
        key = entry.get("key") if isinstance(entry, dict) else None
        return f"gpus.{index} ({key})" if key else hit.group(0)

    return re.sub(r"gpus\.(\d+)", key_of, message)


def _spec(entry: GpuEntry) -> GpuSpec:
    bridge = None
    if entry.bridge is not None:
        bridge = Bridge(entry.bridge.fabric, entry.bridge.links, entry.bridge.link_Bps)
    return GpuSpec(
        key=entry.key,
        vendor=entry.vendor,
        name=entry.name,
        arch=entry.arch,
        form=entry.form,
        names=tuple(entry.names),
        shared_names=tuple(entry.shared_names),
        patterns=tuple(entry.patterns),
        pci_ids=tuple(entry.pci_ids),
        fabric=entry.fabric,
        fabric_links=entry.fabric_links,
        fabric_link_Bps=entry.fabric_link_Bps,
        bridge=bridge,
        pcie=entry.pcie,
        p2p_default=entry.p2p_default,
        memory_GB=entry.memory_GB,
        memory_Bps=entry.memory_Bps,
        boards=tuple(Board(b.machine_class, b.gpus) for b in entry.boards),
        host_tokens=tuple(entry.host_tokens),
        source=entry.source,
        notes=entry.notes,
    )
