"""Which catalogue GPU a printed name, a PCI device ID or a host name stands for.

The matching rule, in order (first that decides wins):

1. A name with no product in it (``NVIDIA Graphics Device``, ``Device 2901``,
   ``gfx90a``: the catalogue's ``generic_names`` regexes) is *generic*; the
   PCI device ID (given, or the four hex digits of ``Device 2901``) decides.
2. A catalogue key (``h100_sxm``) is that entry.
3. A whole name: the name is case-folded, white space collapsed and a leading
   ``NVIDIA``/``AMD`` dropped, then looked up among every entry's ``names``
   (unique across the catalogue) and ``shared_names`` (printed by several
   GPUs: ambiguous, every such entry is a candidate).
4. Regexes: the entry whose ``patterns`` match the longest stretch of the
   name is the most specific ("NVIDIA H100 PCIe" matches ``H100.*PCIe`` of
   the PCIe card over the bare ``H100`` of the SXM part); a tie between
   entries is ambiguous.
5. A given PCI device ID, when the name is unknown.

Host names and other free text are weak evidence, read by
:func:`find_gpu_in_text` only where the printed name is generic.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from commsim.errors import CommsimError
from commsim.hardware.catalogue import GpuCatalogue, GpuSpec, load_gpu_catalogue
from commsim.hardware.schema import bare_name, fold_name

__all__ = ["GpuMatch", "PciIdError", "find_gpu", "find_gpu_in_text", "match_gpu", "parse_pci_id"]

_VENDOR_IDS = {"10de": "nvidia", "1002": "amd"}


class PciIdError(CommsimError, ValueError):
    """A PCI device ID could not be read (expected ``0x2330``, ``10de:2330`` or ``0x233010DE``)."""


@dataclass(frozen=True)
class GpuMatch:
    """The outcome of looking a GPU up by name.

    Attributes
    ----------
    spec : GpuSpec or None
        The entry, or None when the name is unknown, generic without a PCI ID, or ambiguous.
    generic : bool
        The printed name identifies no product (e.g. ``NVIDIA Graphics Device``).
    candidates : tuple of GpuSpec
        Entries the name could stand for when it is ambiguous; ``(spec,)`` when found.
    why : str
        One sentence saying how the answer was reached.
    """

    spec: GpuSpec | None
    generic: bool
    candidates: tuple[GpuSpec, ...]
    why: str


def find_gpu(printed: str, pci_id: str | None = None) -> GpuMatch:
    """The catalogue entry for a GPU name as drivers and nccl-tests print it.

    Parameters
    ----------
    printed : str
        The name, e.g. ``"NVIDIA H100 80GB HBM3"``, or a catalogue key.
    pci_id : str, optional
        PCI device ID (``"0x2330"``, ``"10de:2330"`` or nvidia-smi's
        ``"0x233010DE"``); decides when the name is generic or unknown.

    Returns
    -------
    GpuMatch

    Raises
    ------
    PciIdError
        If ``pci_id`` is given and cannot be read.

    Examples
    --------
    >>> find_gpu("NVIDIA H100 PCIe").spec.key
    'h100_pcie'
    >>> find_gpu("NVIDIA Graphics Device", "0x2941").spec.key
    'gb200'
    """
    return match_gpu(load_gpu_catalogue(), printed, pci_id)


def match_gpu(catalogue: GpuCatalogue, printed: str, pci_id: str | None = None) -> GpuMatch:
    """:func:`find_gpu` against a given catalogue (e.g. one parsed from test data)."""
    parsed = parse_pci_id(pci_id) if pci_id is not None else None
    folded = fold_name(printed)
    if not folded or any(re.search(p, folded) for p in catalogue.generic_names):
        parsed = parsed or _pci_in_name(folded)
        return _by_pci(catalogue, printed, parsed, generic=True)
    for step in (_by_key, _by_name, _by_pattern):
        found = step(catalogue, printed)
        if found is not None:
            return found
    if parsed is not None:
        return _by_pci(catalogue, printed, parsed, generic=False)
    return GpuMatch(None, False, (), f"name {printed!r} is not in the GPU catalogue")


def parse_pci_id(text: str) -> tuple[str | None, str]:
    """``(vendor or None, "0x" + 4 hex digits)`` from a PCI device ID as tools print it.

    Accepts ``0x2330`` / ``2330`` (device only), ``10de:2330`` (lspci -n) and
    ``0x233010DE`` (nvidia-smi ``pci.device_id``: device then vendor).

    Raises
    ------
    PciIdError
        If ``text`` is none of these.
    """
    digits = text.strip().casefold()
    digits = digits[2:] if digits.startswith("0x") else digits
    if re.fullmatch(r"[0-9a-f]{4}", digits):
        return None, "0x" + digits
    pair = re.fullmatch(r"([0-9a-f]{4}):([0-9a-f]{4})", digits)
    if pair:
        return _VENDOR_IDS.get(pair.group(1), pair.group(1)), "0x" + pair.group(2)
    if re.fullmatch(r"[0-9a-f]{8}", digits):
        return _VENDOR_IDS.get(digits[4:], digits[4:]), "0x" + digits[:4]
    raise PciIdError(f"cannot read PCI device ID {text!r}; expected e.g. 0x2330, 10de:2330 or 0x233010DE")


def find_gpu_in_text(text: str) -> GpuSpec | None:
    """The entry whose model token appears in free text such as a host name (weak evidence).

    A token (an entry's ``host_tokens``: ``gb200``, ``h100``, ``mi300x``) counts
    when no letter or digit stands before it (except a count such as ``8x``)
    and no digit after it; the longest token found wins, and two different
    entries with equally long tokens give None.

    Examples
    --------
    >>> find_gpu_in_text("slurm-gb200-207-171").key
    'gb200'
    """
    folded = fold_name(text)
    found: dict[str, int] = {}
    for token, key in load_gpu_catalogue().tokens.items():
        if re.search(rf"(?:(?<![a-z0-9])|(?<=\dx)){re.escape(token)}(?![0-9])", folded):
            found[key] = max(found.get(key, 0), len(token))
    if not found:
        return None
    best = max(found.values())
    keys = [key for key, length in found.items() if length == best]
    return load_gpu_catalogue().gpus[keys[0]] if len(keys) == 1 else None


def _by_key(catalogue: GpuCatalogue, printed: str) -> GpuMatch | None:
    spec = catalogue.gpus.get(printed.strip())
    if spec is None:
        return None
    return GpuMatch(spec, False, (spec,), f"{printed.strip()!r} is the catalogue key of the {spec.name}")


def _by_name(catalogue: GpuCatalogue, printed: str) -> GpuMatch | None:
    bare = bare_name(printed)
    if bare in catalogue.names:
        spec = catalogue.gpus[catalogue.names[bare]]
        return GpuMatch(spec, False, (spec,), _found(printed, spec))
    if bare in catalogue.shared:
        specs = tuple(catalogue.gpus[key] for key in catalogue.shared[bare])
        keys = ", ".join(spec.key for spec in specs)
        return GpuMatch(None, False, specs, f"name {printed!r} is printed by several GPUs ({keys})")
    return None


def _by_pattern(catalogue: GpuCatalogue, printed: str) -> GpuMatch | None:
    bare = bare_name(printed)
    scores: dict[str, int] = {}
    for pattern, key in catalogue.patterns:
        hit = pattern.search(bare)
        if hit is not None:
            scores[key] = max(scores.get(key, 0), len(hit.group(0)))
    if not scores:
        return None
    best = max(scores.values())
    specs = tuple(catalogue.gpus[key] for key, score in scores.items() if score == best)
    if len(specs) > 1:
        keys = ", ".join(spec.key for spec in specs)
        return GpuMatch(None, False, specs, f"name {printed!r} matches several GPUs equally ({keys})")
    return GpuMatch(specs[0], False, specs, _found(printed, specs[0]) + ", the most specific pattern match")


def _by_pci(
    catalogue: GpuCatalogue, printed: str, parsed: tuple[str | None, str] | None, generic: bool
) -> GpuMatch:
    kind = "generic (it names no product)" if generic else "not in the GPU catalogue"
    if parsed is None:
        return GpuMatch(None, generic, (), f"name {printed!r} is {kind}; no PCI device ID to decide")
    vendor, device = parsed
    keys = catalogue.pci.get(device, ())
    specs = tuple(catalogue.gpus[k] for k in keys if vendor is None or catalogue.gpus[k].vendor == vendor)
    if len(specs) != 1:
        status = "not in the catalogue" if not specs else "ambiguous without the vendor"
        return GpuMatch(None, generic, specs, f"name {printed!r} is {kind}; PCI ID {device} is {status}")
    spec = specs[0]
    why = f"name {printed!r} is {kind}; PCI ID {device} is the {spec.name} (catalogue entry {spec.key})"
    return GpuMatch(spec, generic, specs, why)


def _pci_in_name(folded: str) -> tuple[str | None, str] | None:
    hit = re.search(r"\bdevice ([0-9a-f]{4})\b", folded)
    return (None, "0x" + hit.group(1)) if hit else None


def _found(printed: str, spec: GpuSpec) -> str:
    return f"name {printed!r} is the {spec.name} (catalogue entry {spec.key})"
