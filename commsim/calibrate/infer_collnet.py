"""Whether a run used CollNet (InfiniBand SHARP, the network switch's reduction), from what its log
shows: NCCL's connection lines, an NCCL_ALGO that leaves only CollNet, NCCL's warning that it ignored
one, or ``--collnet``; :func:`infer_collnet` says how each is read and why a plugin alone is not.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from commsim.calibrate.evidence import Evidence, Fact
from commsim.calibrate.settings import RunSettings, setting, setting_value
from commsim.nccl.tuning import parse_version

__all__ = ["COLLNET_ONLY", "COLLNET_OPTION", "collnet_algo_ignored", "infer_collnet"]

COLLNET_OPTION = "--collnet"


_CHAINS = re.compile(r"\bConnected Collnet Chains\b")
"""NCCL 2.23+'s ``ncclCollNetChainBufferSetup`` line, printed only when CollNet is enabled and set up."""

COLLNET_ONLY = frozenset({"collnet_direct", "collnet_chain"})

_PROBE = re.compile(r"Failed to find ncclCollNetPlugin")
"""NCCL's probe for a newer CollNet plugin symbol before it loads an older one: no word on CollNet."""


def infer_collnet(
    settings: RunSettings,
    option: bool | None,
    *,
    version: str | None = None,
    lines: Sequence[str] = (),
    first_line: int = 1,
    forced: tuple[tuple[str, ...], Fact] | None = None,
) -> Fact | None:
    """Whether the run used CollNet (the network switch's reduction, InfiniBand SHARP), or None when
    nothing says so (NCCL's default is off: ``NCCL_COLLNET_ENABLE=0``).

    ``--collnet`` wins; then NCCL's ``rank 0 Connected CollNet``, printed once the whole CollNet setup
    succeeded. Before NCCL 2.23, ``Connected collnet + chain`` came before Direct's setup, which could
    still fail and turn CollNet off; from 2.23 (``version``) the chain's buffers are set up on their
    own, after CollNet's setup succeeded and only if CollNet is enabled, so its ``Connected Collnet
    Chains`` line (in ``lines``, the run's own lines, from ``first_line``) says CollNet ran. So does a
    log whose NCCL_ALGO (``forced``: the algorithms it leaves and the fact read from the log) leaves
    only CollNet algorithms and that printed rows with no NCCL line saying CollNet is unsupported, if
    NCCL's own INFO line says NCCL_ALGO was set (so its warnings are printed too: releases that fall
    back to ring and tree warn 'CollNet is not supported or fails to initialize, ignoring
    NCCL_ALGO=COLLNET'; the others fail a call no allowed algorithm can run). A missing plugin does not
    settle it either way: NCCL probes plugin versions (``Failed to find ncclCollNetPlugin_v7``) before
    loading an older one. ``NCCL_COLLNET_ENABLE=1`` alone is not enough: without a SHARP plugin and
    fabric NCCL falls back to its other algorithms (outside log 180 sets it and its channels run over
    plain IB), so the fact is then assumed off, naming the option.
    """
    if option is not None:
        return Fact("collnet", option, (Evidence(option, f"option {COLLNET_OPTION}"),), option=COLLNET_OPTION)
    seen = settings.collnet
    if seen is not None and seen.value:
        return Fact("collnet", True, (seen,), option=COLLNET_OPTION, note="NCCL connected CollNet")
    enable = setting(settings, "NCCL_COLLNET_ENABLE")
    refuted = any(
        not e.value and not _PROBE.search(e.text or "") for e in settings.evidence.get("collnet", ())
    )
    if not refuted and setting_value(enable) != "0":
        chains = _chains_line(version, lines, first_line)
        if chains is not None:
            return Fact(
                "collnet", True, (chains,), option=COLLNET_OPTION, note="NCCL connected CollNet chains"
            )
        if forced is not None and set(forced[0]) <= COLLNET_ONLY and _info_line(forced[1]):
            note = "NCCL_ALGO leaves only CollNet algorithms and the run printed rows"
            return Fact("collnet", True, forced[1].evidence, option=COLLNET_OPTION, note=note)
    if setting_value(enable) == "1":
        assert enable is not None
        note = (
            "the log sets NCCL_COLLNET_ENABLE=1 but shows no NCCL 'Connected CollNet' line (NCCL_DEBUG=INFO "
            "prints it once CollNet is set up; without a working SHARP plugin and fabric NCCL falls back to "
            "ring and tree), so CollNet is assumed unused"
        )
        return Fact("collnet", False, (enable,), assumed=True, option=COLLNET_OPTION, note=note)
    return None


def _info_line(fact: Fact) -> bool:
    """The fact rests on NCCL's own INFO line (so NCCL_DEBUG=INFO printed its warnings too)."""
    return any("NCCL INFO" in e.source for e in fact.evidence)


def _chains_line(version: str | None, lines: Sequence[str], first_line: int = 1) -> Evidence | None:
    """NCCL 2.23+'s ``Connected Collnet Chains`` line, as evidence that CollNet ran, or None."""
    release = parse_version(version)
    if release is None or release < (2, 23):
        return None
    for number, text in enumerate(lines, start=first_line):
        if _CHAINS.search(text):
            return Evidence.at(
                True, "NCCL INFO line (NCCL 2.23+ sets up CollNet chains only with CollNet)", number, text
            )
    return None


def collnet_algo_ignored(settings: RunSettings) -> Evidence | None:
    """NCCL's warning that it ignored an NCCL_ALGO of CollNet (CollNet failed to set up), or None."""
    return next(
        (e for e in settings.evidence.get("collnet", ()) if "ignoring NCCL_ALGO" in (e.text or "")), None
    )
