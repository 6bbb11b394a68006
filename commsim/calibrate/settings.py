"""What an nccl-tests log says about how NCCL ran: library, version, forced settings, network.

Each fact is kept as :class:`~commsim.calibrate.evidence.Evidence` (value,
kind of source, line, text) so a report can show how it is known. Sources,
most trusted first:

* NCCL's own ``NCCL_DEBUG=INFO`` lines: ``NCCL version 2.26.2+cuda12.8``,
  ``NCCL_ALGO set by environment to Ring``, ``Using network IB``,
  ``NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE``,
  ``NET/OFI Selected Provider is efa``, ``NET/OFI Setting NCCL_PROTO to "simple"``
  (the plugin forcing a setting), ``via NET/IB/0/GDRDMA``,
  ``NVLS multicast support is not available on dev 0`` ... (NCCL
  ``src/init.cc``, ``src/transport/net_ib.cc``, ``src/misc/param.cc``;
  aws-ofi-nccl ``src/nccl_ofi_net.c``);
* the ``-J`` JSON's ``env`` list and ``nccl_version`` code;
* nccl-tests' ``# nccl-tests version ... nccl-library=22602`` header, and
  the same code printed by modified builds (``NCCL version: 22602``);
* command lines the log shows: ``mpirun -x NCCL_X=V`` (backslash-continued
  lines joined), ``export NCCL_X=V``, ``NCCL_X=V ./build/...``,
  ``srun --export=ALL,NCCL_X=V``, ``mpiexec -genv NCCL_X V``; the same forms
  (and ``-J`` JSON's ``env``) give ``CUDA_VISIBLE_DEVICES``,
  ``HIP_VISIBLE_DEVICES`` and ``ROCR_VISIBLE_DEVICES``.

When sources disagree every one is kept (``RunSettings.evidence``), the
most trusted is used and a warning says so.

This module holds the record and assembles it; the rules for one log line
are :mod:`~commsim.calibrate.settings_lines`, for command lines
:mod:`~commsim.calibrate.settings_commands`, and the choice among sources
:mod:`~commsim.calibrate.settings_choice`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from commsim.calibrate.evidence import Evidence
from commsim.calibrate.settings_choice import Found, choose
from commsim.calibrate.settings_commands import ASSIGNMENT, read_commands
from commsim.calibrate.settings_lines import DEVICE_VARIABLES, NOT_SETTINGS, decode_version_code, read_line

__all__ = [
    "NETWORKS",
    "RunSettings",
    "inherit_settings",
    "p2p_disabled",
    "read_json_settings",
    "read_settings",
    "setting",
    "setting_value",
    "shm_disabled",
    "split_mask",
]

NETWORKS = ("ib", "roce", "efa", "socket", "tcpxo", "tcpx", "slingshot", "ofi")
"""Values of :attr:`RunSettings.network`."""

_FACTS = ("library", "version", "network", "nics", "gdr", "collnet", "nvls", "p2p", "platform", "nic_speed")


@dataclass(frozen=True)
class RunSettings:
    """How NCCL ran, as far as the log shows; every fact is Evidence or None.

    Attributes
    ----------
    library : Evidence or None
        ``"NCCL"`` or ``"RCCL"``.
    version : Evidence or None
        Library version ``"2.26.2"`` (without the ``+cuda`` suffix).
    env : dict of str to Evidence
        Forced ``NCCL_*`` settings (``NCCL_ALGO``, ``NCCL_PROTO``,
        ``NCCL_NVLS_ENABLE``, ``NCCL_IB_HCA`` ...): the value NCCL was given,
        as a string; also the GPUs a host exposes (``CUDA_VISIBLE_DEVICES``,
        ``HIP_VISIBLE_DEVICES``, ``ROCR_VISIBLE_DEVICES``).
    network : Evidence or None
        The inter-node transport, one of :data:`NETWORKS`.
    nics : Evidence or None
        How many NICs NCCL lists in its ``Using [0]... [1]...`` line (or the
        aws-ofi-nccl device count).
    gdr : Evidence or None
        True when GPUDirect RDMA is used or enabled, False when disabled.
    collnet, nvls : Evidence or None
        True when CollNet (SHARP) / NVLink SHARP is used or available, False
        when NCCL says it is unavailable.
    p2p : Evidence or None
        True when NCCL connects GPUs of a host with its P2P transport
        (``via P2P/...``), False when through host memory (``via SHM/...``).
    platform : Evidence or None
        The AWS instance family aws-ofi-nccl says it runs on (``"p4d"``,
        ``"p5"``, ``"p5en"`` ...), lower case, without the size.
    nic_speed : Evidence or None
        The speed NCCL's topology prints for the NICs its channels use
        (``NET[25.0] - NET/1``), in GB/s; read only when a host lists NICs
        of two kinds (see :func:`read_settings`).
    evidence : dict of str to tuple of Evidence
        Every source's word on each fact (keys: the attribute names above
        and each ``NCCL_*`` name), the one used first.
    warnings : tuple of str
        Disagreements between sources.
    """

    library: Evidence | None = None
    version: Evidence | None = None
    env: dict[str, Evidence] = field(default_factory=dict)
    network: Evidence | None = None
    nics: Evidence | None = None
    gdr: Evidence | None = None
    collnet: Evidence | None = None
    nvls: Evidence | None = None
    p2p: Evidence | None = None
    platform: Evidence | None = None
    nic_speed: Evidence | None = None
    evidence: dict[str, tuple[Evidence, ...]] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()


def read_settings(
    lines: Sequence[str], first_line: int = 1, *, root_prompt: bool = True, ran: int | None = None
) -> RunSettings:
    """The settings the text lines of a log show.

    Parameters
    ----------
    lines : sequence of str
        Log lines with launcher prefixes removed (``clean_lines``).
    first_line : int
        Line number of ``lines[0]`` in its file.
    root_prompt : bool
        Whether ``# `` before a command is root's shell prompt
        (:func:`~commsim.calibrate.parser_command.root_prompt`); when False such a line is a
        shell comment and sets nothing.
    ran : int, optional
        The line of the command that ran the test (:func:`~commsim.calibrate.parser_command.find_command`):
        its settings come before other commands' (a failed one above it, say), which are warned of.

    Returns
    -------
    RunSettings
    """
    found = Found()
    for number, text in enumerate(lines, start=first_line):
        read_line(found, number, text)
    read_commands(found, lines, first_line, root_prompt=root_prompt, ran=ran)
    return _used_nics(lines, first_line, _settle(found))


_NET_LIST = re.compile(r"NET/IB\s*:\s*Using\s+(\[\d+\].*)$")
_NET_ENTRY = re.compile(r"\[(\d+)\][^\s\[]*?/(RoCE|IB)\b")
_VIA_NET = re.compile(r"\bvia NET/IB/(\d+)\b")
_NET_SPEED = re.compile(r"\bNET\[(\d+(?:\.\d+)?)\] - NET/(\d+)\b")
_USED = "channel lines (the NICs NCCL uses)"


def _used_nics(lines: Sequence[str], first_line: int, settings: RunSettings) -> RunSettings:
    """When a host lists NICs of two kinds, the kind, count and speed of those its channels use.

    ``NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_2:1/IB`` lists every port NCCL
    found, but its rings run ``via NET/IB/1/GDRDMA`` (device 1 only) at the
    speed the topology prints for it (``NET[25.0] - NET/1``, GB/s; NCCL
    ``src/graph/topo.cc`` ``ncclTopoPrintRec``). With one kind listed the
    device list stays the evidence (a log often shows one rank's channels).
    """
    kinds: dict[int, str] = {}
    used: dict[int, tuple[int, str]] = {}
    speeds: dict[int, tuple[float, int, str]] = {}
    for number, text in enumerate(lines, start=first_line):
        listing = _NET_LIST.search(text)
        if listing and not kinds:
            kinds = {int(i): kind.lower() for i, kind in _NET_ENTRY.findall(listing.group(1))}
        via = _VIA_NET.search(text)
        if via:
            used.setdefault(int(via.group(1)), (number, text))
        speed = _NET_SPEED.search(text)
        if speed:
            speeds.setdefault(int(speed.group(2)), (float(speed.group(1)), number, text))
    if len(set(kinds.values())) < 2 or not used or not set(used) <= set(kinds):
        return settings
    used_kinds = {kinds[dev] for dev in used}
    if len(used_kinds) != 1:
        return settings
    line, text = min(used.values())
    network = Evidence.at(used_kinds.pop(), _USED, line, text)
    nics = Evidence.at(len(used), _USED, line, text)
    printed = {speeds[dev][0] for dev in used if dev in speeds}
    nic_speed = None
    if len(printed) == 1 and all(dev in speeds for dev in used):
        value, speed_line, speed_text = speeds[min(used)]
        nic_speed = Evidence.at(value, "NCCL topology NET line", speed_line, speed_text)
    evidence = dict(settings.evidence)
    for fact, chosen in (("network", network), ("nics", nics), ("nic_speed", nic_speed)):
        if chosen is not None:
            evidence[fact] = (chosen, *evidence.get(fact, ()))
    return replace(settings, network=network, nics=nics, nic_speed=nic_speed, evidence=evidence)


def read_json_settings(document: Mapping[str, Any], line: int) -> RunSettings:
    """The settings an nccl-tests ``-J`` document shows (``env`` list, ``nccl_version``).

    Parameters
    ----------
    document : mapping
        The parsed JSON object.
    line : int
        Line of the object's opening brace, for the evidence.
    """
    found = Found()
    code = document.get("nccl_version")
    if isinstance(code, int) and not isinstance(code, bool) and code > 0:
        found.add(
            "version",
            1,
            Evidence(decode_version_code(code), "JSON nccl_version", line, f"nccl_version: {code}"),
        )
        found.add("library", 2, Evidence("NCCL", "JSON nccl_version", line, f"nccl_version: {code}"))
    env = document.get("env")
    for entry in env if isinstance(env, list) else []:
        match = ASSIGNMENT.match(entry) if isinstance(entry, str) else None
        if match and match.group(1) not in NOT_SETTINGS:
            found.add(match.group(1), 1, Evidence.at(match.group(2), "JSON env", line, entry))
    return _settle(found)


def _settle(found: Found) -> RunSettings:
    chosen, evidence, warnings = choose(found)
    env = {
        n: chosen[n]
        for n in sorted(chosen)
        if n.startswith(("NCCL_", "FI_", "OFI_NCCL_")) or n in DEVICE_VARIABLES
    }
    facts = {name: chosen.get(name) for name in _FACTS}
    return RunSettings(env=env, evidence=evidence, warnings=tuple(warnings), **facts)


def setting(settings: RunSettings, name: str) -> Evidence | None:
    """The log's evidence for one forced ``NCCL_*`` variable, or None."""
    return settings.env.get(name)


def setting_value(evidence: Evidence | None) -> str | None:
    """The value a setting's evidence holds, as text without surrounding blanks, or None."""
    return None if evidence is None else str(evidence.value).strip()


def p2p_disabled(settings: RunSettings) -> Evidence | None:
    """The log's ``NCCL_P2P_DISABLE=1`` (NCCL's P2P transport off, over NVLink too), or None."""
    disabled = setting(settings, "NCCL_P2P_DISABLE")
    return disabled if setting_value(disabled) == "1" else None


def shm_disabled(settings: RunSettings) -> Evidence | None:
    """The log's ``NCCL_SHM_DISABLE=1`` (NCCL's SHM transport, through host memory, off), or None."""
    disabled = setting(settings, "NCCL_SHM_DISABLE")
    return disabled if setting_value(disabled) == "1" else None


def split_mask(settings: RunSettings) -> tuple[int, Evidence] | None:
    """nccl-tests' ``NCCL_TESTS_SPLIT_MASK`` when it splits the ranks, with its evidence.

    nccl-tests (README "Running multiple operations in parallel", ``src/common.cu``)
    gives each rank the color ``rank & mask`` and splits the ranks into one
    communicator per color; every communicator runs the collective at the
    same time. A mask of 0 (or one that is not a number) splits nothing: None.

    Examples
    --------
    >>> split_mask(read_settings(["export NCCL_TESTS_SPLIT_MASK=0x7"]))[0]
    7
    >>> split_mask(read_settings(["export NCCL_TESTS_SPLIT_MASK=0x0"])) is None
    True
    """
    seen = settings.env.get("NCCL_TESTS_SPLIT_MASK")
    if seen is None:
        return None
    try:
        mask = int(str(seen.value).strip().strip("\"'"), 0)
    except ValueError:
        return None
    return (mask, seen) if mask > 0 else None


def inherit_settings(own: RunSettings, earlier: RunSettings) -> RunSettings:
    """``own`` with the facts it lacks taken from ``earlier`` (text before a run in the same file).

    A script's ``export NCCL_X=V`` or the first run's version line applies to
    every later run of the file; a run's own lines win.
    """
    facts = {name: getattr(own, name) or getattr(earlier, name) for name in _FACTS}
    env = {**earlier.env, **own.env}
    evidence = {**earlier.evidence, **own.evidence}
    return replace(own, env=dict(sorted(env.items())), evidence=evidence, **facts)
