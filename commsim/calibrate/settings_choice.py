"""Choosing among sources of a setting: the most trusted is used, disagreements are warnings.

Every source's word on a fact is kept with its rank (lower is more
trusted: NCCL's own lines first, command lines last). Values that NCCL
reads alike agree (``NCCL_NET_GDR_LEVEL=1`` and ``PIX``); a more specific
network refines a generic one (IB -> RoCE).
"""

from __future__ import annotations

import re
from typing import Any

from commsim.calibrate.evidence import Evidence

__all__ = ["Found", "choose"]

_REFINES = {("ib", "roce"), ("efa", "slingshot")} | {("ofi", k) for k in ("efa", "slingshot", "socket")}
"""(generic, specific) networks: no conflict. aws-ofi-nccl ("ofi") drives EFA, Slingshot (cxi) or TCP."""


class Found:
    """Evidence gathered so far: fact -> [(rank, Evidence)], lower rank more trusted."""

    def __init__(self) -> None:
        self.items: dict[str, list[tuple[int, Evidence]]] = {}

    def add(self, fact: str, rank: int, evidence: Evidence) -> None:
        """Keep ``evidence`` for ``fact`` at ``rank`` unless that source said the same at that rank."""
        entries = self.items.setdefault(fact, [])
        if not any(
            r == rank and e.source == evidence.source and e.value == evidence.value for r, e in entries
        ):
            entries.append((rank, evidence))


def choose(found: Found) -> tuple[dict[str, Evidence], dict[str, tuple[Evidence, ...]], list[str]]:
    """The evidence used for each fact, every source's word on it (the one used first), and warnings."""
    chosen: dict[str, Evidence] = {}
    evidence: dict[str, tuple[Evidence, ...]] = {}
    warnings: list[str] = []
    for fact, entries in found.items.items():
        ordered = [e for _, e in sorted(entries, key=lambda item: item[0])]
        if fact == "p2p":
            ordered, mixed = _p2p_mixed(ordered)
            warnings += mixed
        best = _refined(ordered) if fact == "network" else ordered[0]
        chosen[fact] = best
        evidence[fact] = (best, *[e for e in ordered if e is not best])
        warnings += _conflicts(fact, best, ordered)
    return chosen, evidence, warnings


def _p2p_mixed(ordered: list[Evidence]) -> tuple[list[Evidence], list[str]]:
    """Channel lines that join some GPU pairs of a host via P2P and others via SHM are no conflict:
    NCCL picks the transport per pair (a two-socket PCIe host often has P2P within a socket and SHM
    across). The P2P lines stand (peer-to-peer exists), one of each kind cited; the others are dropped
    from the conflict check, and a warning says the model prices one transport for the whole host."""
    channel = [e for e in ordered if e.source == "NCCL INFO channel line"]
    on = next((e for e in channel if e.value), None)
    off = next((e for e in channel if not e.value), None)
    if on is None or off is None:
        return ordered, []
    kept = [e for e in ordered if e.source != "NCCL INFO channel line" or e is on]
    warning = (
        f"NCCL joins some GPU pairs of a host via P2P (line {on.line}) and others via SHM, through host "
        f"memory (line {off.line}), as on a two-socket PCIe host; the model prices one transport for the "
        "whole host: peer-to-peer"
    )
    return kept, [warning]


def _refined(ordered: list[Evidence]) -> Evidence:
    """The most trusted network evidence, or a more specific one it allows (IB -> RoCE)."""
    best = ordered[0]
    for other in ordered[1:]:
        if (best.value, other.value) in _REFINES:
            return other
    return best


_PATH_LEVELS = ("LOC", "PIX", "PXB", "PHB", "SYS", "SYS")
"""NCCL's old numeric path levels 0-5 by name: ``levelsOldToNew`` in NCCL ``src/graph/paths.cc``
(``ncclGetLevel``; a number above 5 is SYS)."""
_LEVEL_SETTINGS = {"NCCL_NET_GDR_LEVEL", "NCCL_IB_GDR_LEVEL", "NCCL_P2P_LEVEL"}


def _path_level(value: str) -> str:
    """A path level as NCCL reads it: ``"1"`` and ``"PIX"`` are both ``"PIX"``.

    A name is compared as it is; a value starting with an ASCII digit is an old-style number, read
    as C's ``strtol(value, NULL, 0)`` does (``"0x2"`` is 2, ``"2abc"`` is 2) and capped at 5
    (``src/graph/paths.cc``).
    """
    text = value.strip().upper()
    return _PATH_LEVELS[min(_strtol(text), 5)] if text[:1] in "0123456789" and text else text


def _strtol(text: str) -> int:
    """C's ``strtol(text, NULL, 0)`` for a string that starts with an ASCII digit (at most 8 digits
    are read: anything larger is capped by the caller anyway)."""
    hexadecimal = re.match(r"0X([0-9A-F]{1,8})", text)
    if hexadecimal:
        return int(hexadecimal.group(1), 16)
    if text.startswith("0"):
        octal = re.match(r"0([0-7]{0,8})", text)
        return int(octal.group(1) or "0", 8) if octal else 0
    decimal = re.match(r"[0-9]{1,8}", text)
    return int(decimal.group(0)) if decimal else 0


def _same(a: Any, b: Any, fact: str = "") -> bool:
    if isinstance(a, str) and isinstance(b, str):
        if fact in _LEVEL_SETTINGS:
            return _path_level(a) == _path_level(b)
        return a.strip().lower() == b.strip().lower()
    return bool(a == b)


def _conflicts(fact: str, best: Evidence, ordered: list[Evidence]) -> list[str]:
    warnings = []
    for other in ordered:
        agree = _same(other.value, best.value, fact) or (other.value, best.value) in _REFINES
        if not agree and fact not in ("gdr", "nics"):
            warnings.append(
                f"{fact}: {other.describe()} says {other.value!r} but {best.describe()} says "
                f"{best.value!r}; using {best.value!r}"
            )
    return warnings
