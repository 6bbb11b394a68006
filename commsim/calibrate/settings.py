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
  ``srun --export=ALL,NCCL_X=V``, ``mpiexec -genv NCCL_X V``.

When sources disagree every one is kept (``RunSettings.evidence``), the
most trusted is used and a warning says so.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from commsim.calibrate.evidence import Evidence

__all__ = [
    "NETWORKS",
    "RunSettings",
    "decode_version_code",
    "inherit_settings",
    "read_json_settings",
    "read_settings",
    "split_mask",
    "version_in_code_line",
]

NETWORKS = ("ib", "roce", "efa", "socket", "tcpxo", "tcpx", "slingshot")
"""Values of :attr:`RunSettings.network`."""

_FACTS = ("library", "version", "network", "nics", "gdr", "collnet", "nvls", "p2p", "platform", "nic_speed")
_NOT_SETTINGS = {"NCCL_VERSION"}  # set by NVIDIA containers to the packaged version, not read by NCCL
_REFINES = {("ib", "roce"), ("efa", "slingshot")}  # (generic, specific): no conflict


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
        as a string.
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


def decode_version_code(code: int) -> str:
    """NCCL's ``NCCL_VERSION_CODE`` as ``major.minor.patch``.

    Codes from 2.9 on are ``major*10000 + minor*100 + patch``; older ones
    ``major*1000 + minor*100 + patch``.

    Examples
    --------
    >>> decode_version_code(22602), decode_version_code(2408)
    ('2.26.2', '2.4.8')
    """
    if code >= 10000:
        return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"
    return f"{code // 1000}.{code % 1000 // 100}.{code % 100}"


_COLON = r"(?: ?: ?| )"
"""Between ``NCCL version`` and the number: ``" "``, ``": "`` or rccl-tests' ``" : "``."""
_VERSION_CODE = re.compile(rf"\b([NR]CCL) version{_COLON}\s*(\d{{4,5}})(?![\d.])")


def version_in_code_line(text: str) -> tuple[str, str] | None:
    """``("NCCL", "2.26.2")`` from a line that states the version as a code: ``NCCL version: 22602``.

    Modified nccl-tests builds print ``ncclGetVersion``'s integer this way.
    Only codes of real NCCL/RCCL 2.x releases are read: 2000-2899 (before
    2.9) and 20900-29999, so a build number or a date is not taken for one.
    """
    match = _VERSION_CODE.search(text)
    if match is None:
        return None
    code = int(match.group(2))
    if not (2000 <= code < 2900 or 20900 <= code < 30000):
        return None
    return match.group(1), decode_version_code(code)


# ------------------------------------------------------------ line rules


class _Found:
    """Evidence gathered so far: fact -> [(rank, Evidence)], lower rank more trusted."""

    def __init__(self) -> None:
        self.items: dict[str, list[tuple[int, Evidence]]] = {}

    def add(self, fact: str, rank: int, evidence: Evidence) -> None:
        entries = self.items.setdefault(fact, [])
        if not any(
            r == rank and e.source == evidence.source and e.value == evidence.value for r, e in entries
        ):
            entries.append((rank, evidence))


_Rule = tuple[str, int, str, re.Pattern[str], Callable[[re.Match[str]], Any]]

_INFO = "NCCL INFO line"
_PLUGIN = "NET/OFI plugin"
_OFI_PLATFORM = re.compile(r"NET/OFI Running on (\S+) platform")
_INTRA_CHANNEL = re.compile(
    r"\bChannel \d+(?:/\d+)? : \d+\[[^\]]*\] -> \d+\[[^\]]*\](?: \[\w+\])? via (P2P|SHM)/"
)


def _first(match: re.Match[str]) -> str:
    return match.group(1)


_LINE_RULES: list[_Rule] = [  # fact, rank, source, pattern, value
    ("library", 0, "NCCL version line", re.compile(rf"\bNCCL version{_COLON}\d+\.\d"), lambda m: "NCCL"),
    ("library", 0, "RCCL version line", re.compile(rf"\bRCCL version{_COLON}\d+\.\d"), lambda m: "RCCL"),
    ("library", 1, "rccl-tests line", re.compile(r"^#?\s*rccl-tests\b", re.IGNORECASE), lambda m: "RCCL"),
    ("library", 2, "nccl-tests header", re.compile(r"^#\s*nccl-tests version\s"), lambda m: "NCCL"),
    ("version", 0, "NCCL version line", re.compile(rf"\bNCCL version{_COLON}(\d+\.\d+\.\d+)"), _first),
    ("version", 0, "RCCL version line", re.compile(rf"\bRCCL version{_COLON}(\d+\.\d+\.\d+)"), _first),
    (
        "version",
        1,
        "NCCL version code line",
        _VERSION_CODE,
        lambda m: (version_in_code_line(m.string) or (None, None))[1],
    ),
    (
        "library",
        1,
        "NCCL version code line",
        _VERSION_CODE,
        lambda m: (version_in_code_line(m.string) or (None, None))[0],
    ),
    (
        "version",
        1,
        "nccl-tests header nccl-library",
        re.compile(r"\bnccl-library=(\d+)"),
        lambda m: decode_version_code(int(m.group(1))),
    ),
    (
        "network",
        0,
        _INFO,
        re.compile(r"NCCL INFO Using network (\S.*?)\s*$"),
        lambda m: _network_name(m.group(1)),
    ),
    (
        "network",
        1,
        "NET/IB device list",
        re.compile(r"NET/IB\s*:\s*Using\s+\[\d+\]"),
        lambda m: _ib_kind(m.string),
    ),
    (
        "network",
        1,
        "NET/Socket device list",
        re.compile(r"NET/Socket\s*:\s*Using\s+\[\d+\]"),
        lambda m: "socket",
    ),
    (
        "network",
        1,
        "NET/OFI provider",
        re.compile(r"NET/OFI Selected [Pp]rovider is (\w+)"),
        lambda m: {"efa": "efa", "cxi": "slingshot", "tcp": "socket"}.get(m.group(1).lower()),
    ),
    ("network", 1, _INFO, re.compile(r"NET/(?:GPUDirectTCPX|TCPX)\b"), lambda m: "tcpx"),
    (
        "network",
        1,
        _INFO,
        re.compile(r"NET/(?:FasTrak|TCPXO|GPUDirectTCPXO)\b", re.IGNORECASE),
        lambda m: "tcpxo",
    ),
    (
        "nics",
        0,
        "NET device list",
        re.compile(r"NET/\w+\s*:\s*Using\s+(\[\d+\].*)$"),
        lambda m: _count_nics(m.group(1)),
    ),
    # "NET/OFI Forcing AWS OFI ndev N" counts the plugin's virtual devices (4 on a p3dn with one EFA NIC),
    # not NICs, so it is no evidence of the NIC count.
    ("nics", 1, "NET/OFI device count", re.compile(r"\(found (\d+) nics\)"), lambda m: int(m.group(1))),
    # aws-ofi-nccl names the EC2 instance it found a topology for: "Running on P4d platform" (old
    # plugins), "Running on p5.48xlarge platform" (src/platform-aws.c); only its EFA provider prints it.
    ("platform", 0, "NET/OFI platform line", _OFI_PLATFORM, lambda m: m.group(1).lower().split(".")[0]),
    ("network", 1, "NET/OFI platform line", _OFI_PLATFORM, lambda m: "efa"),
    ("gdr", 0, "channel via GDRDMA", re.compile(r"via NET/\S+/GDRDMA"), lambda m: True),
    # A channel between two GPUs of a host: via P2P/IPC, P2P/CUMEM, P2P/direct pointer (NCCL's P2P
    # transport, src/transport/p2p.cc) or via SHM/... (through host memory, src/transport/shm.cc).
    ("p2p", 0, "NCCL INFO channel line", _INTRA_CHANNEL, lambda m: m.group(1) == "P2P"),
    (
        "gdr",
        1,
        _INFO,
        re.compile(r"GPU ?Direct RDMA (Enabled|Disabled) for"),
        lambda m: m.group(1) == "Enabled",
    ),
    (
        "nvls",
        0,
        _INFO,
        re.compile(r"NVLS multicast support is (not )?available"),
        lambda m: m.group(1) is None,
    ),
    ("nvls", 0, _INFO, re.compile(r"NCCL INFO NVLS comm 0x"), lambda m: True),
    ("nvls", 1, "channel summary", re.compile(r"\b(\d+) nvls channels\b"), lambda m: int(m.group(1)) > 0),
    (
        "collnet",
        0,
        _INFO,
        re.compile(r"(?i)\bcollnet\b.*\b(?:connected|enabled|setup done)\b|loaded coll(?:net)? plugin"),
        lambda m: True,
    ),
    (
        "collnet",
        1,
        _INFO,
        re.compile(
            r"Failed to find ncclCollNetPlugin|(?i:\bcollnet\b.*\b(?:not supported|disabled|unavailable))"
        ),
        lambda m: False,
    ),
]

_ENV_INFO = re.compile(r"\b(NCCL_[A-Z0-9_]+) set (?:by environment )?to (\S.*?)\.?\s*$")
_ENV_PLUGIN = re.compile(r"Setting (NCCL_[A-Z0-9_]+) environment variable to (\S+)")
# aws-ofi-nccl forces a setting NCCL then reads: ``NET/OFI Setting NCCL_PROTO to "simple"`` (when LL/LL128
# are unsafe on the EFA endpoint; src/nccl_ofi_net.c, later src/platform-aws.c configure_nccl_proto) and
# ``NET/OFI Setting NCCL_NVLSTREE_MAX_CHUNKSIZE to 512KiB`` (1.8-1.9 platform_init).
_ENV_OFI = re.compile(r"NET/OFI Setting (NCCL_[A-Z0-9_]+) to \"?([^\"\s]+)\"?")
# aws-ofi-nccl before NCCL 2.18.5 sets NCCL_NVLS_ENABLE=0 itself (platform-aws configure_nvls_option):
# ``NET/OFI Disabling NVLS support due to NCCL version 21803``.
_OFI_NVLS_OFF = re.compile(r"NET/OFI Disabling NVLS support due to NCCL version")
_ASSIGNMENT = re.compile(r"^(NCCL_[A-Z0-9_]+)=(.*)$")
_NCCL_LOG = re.compile(r"\bNCCL (?:INFO|WARN|TRACE)\b")
_PROMPT = re.compile(r"^(?:[>$#]\s+|[\w.@:~/-]+[$#]\s+)")


def _network_name(name: str) -> str | None:
    key = re.sub(r"[^a-z]", "", name.lower())
    names = {"ib": "ib", "socket": "socket", "awslibfabric": "efa", "ofi": "efa", "libfabric": "efa"}
    if key in names:
        return names[key]
    if "tcpxo" in key or "fastrak" in key:
        return "tcpxo"
    if "tcpx" in key:
        return "tcpx"
    return "slingshot" if "cxi" in key or "slingshot" in key else None


def _ib_kind(line: str) -> str:
    return "roce" if "/RoCE" in line else "ib"


def _count_nics(listing: str) -> int:
    return len(re.findall(r"\[\d+\]", listing))


def read_settings(lines: Sequence[str], first_line: int = 1) -> RunSettings:
    """The settings the text lines of a log show.

    Parameters
    ----------
    lines : sequence of str
        Log lines with launcher prefixes removed (``clean_lines``).
    first_line : int
        Line number of ``lines[0]`` in its file.

    Returns
    -------
    RunSettings
    """
    found = _Found()
    for number, text in enumerate(lines, start=first_line):
        _read_line(found, number, text)
    for number, command in _commands(lines, first_line):
        last = {name: (value, source) for name, value, source in _command_settings(command)}
        for name, (value, source) in last.items():  # a command setting one name twice: the last wins
            line = _line_naming(lines, first_line, number, name)
            found.add(name, 2, Evidence.at(value, source, line, command))
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


def _line_naming(lines: Sequence[str], first_line: int, start: int, name: str) -> int:
    """The last of a continued command's lines from ``start`` that names ``name`` (else ``start``)."""
    naming = start
    for number in range(start, first_line + len(lines)):
        text = lines[number - first_line]
        if name in text:
            naming = number
        if not text.rstrip().endswith("\\"):
            break
    return naming


def _read_line(found: _Found, number: int, text: str) -> None:
    if not text.strip():
        return
    for fact, rank, source, pattern, value_of in _LINE_RULES:
        match = pattern.search(text)
        if match:
            value = value_of(match)
            if value is not None:
                found.add(fact, rank, Evidence.at(value, source, number, text))
    for pattern, source in ((_ENV_INFO, _INFO), (_ENV_PLUGIN, _PLUGIN), (_ENV_OFI, _PLUGIN)):
        match = pattern.search(text)
        if match and match.group(1) not in _NOT_SETTINGS:
            found.add(match.group(1), 0, Evidence.at(match.group(2).strip(), source, number, text))
    if _OFI_NVLS_OFF.search(text):
        found.add("NCCL_NVLS_ENABLE", 0, Evidence.at("0", _PLUGIN, number, text))


def _commands(lines: Sequence[str], first_line: int) -> Iterator[tuple[int, str]]:
    """Command lines (backslash continuations joined) with the line they start on."""
    pending, start = "", first_line
    for number, line in enumerate(lines, start=first_line):
        text = _PROMPT.sub("", line.strip(), count=1) if not pending else line.strip().lstrip(">").strip()
        if not pending:
            start = number
        if text.endswith("\\"):
            pending += text[:-1].strip() + " "
            continue
        command, pending = (pending + text).strip(), ""
        if "NCCL_" in command and not _NCCL_LOG.search(command):  # every setting read is NCCL_*
            yield start, command


def _command_settings(command: str) -> Iterator[tuple[str, str, str]]:
    """(name, value, source) of each NCCL_* setting a command line makes."""
    try:
        tokens = shlex.split(command, comments=False)
    except ValueError:
        tokens = command.split()
    leading = True
    for index, token in enumerate(tokens):
        following = tokens[index + 1] if index + 1 < len(tokens) else ""
        assignment = _ASSIGNMENT.match(token)
        if leading and (assignment or token == "env"):
            if assignment:
                yield assignment.group(1), assignment.group(2), "command line"
            continue
        leading = False
        yield from _option_settings(token, following, tokens[index + 2 : index + 3])


def _option_settings(token: str, following: str, after: list[str]) -> Iterator[tuple[str, str, str]]:
    if token == "-x" and _ASSIGNMENT.match(following):
        name, value = following.split("=", 1)
        yield name, value, "mpirun -x"
    elif token == "export":
        match = _ASSIGNMENT.match(following)
        if match:
            yield match.group(1), match.group(2), "export"
    elif token.startswith(("--export=", "--env=")):
        for part in token.split("=", 1)[1].split(","):
            match = _ASSIGNMENT.match(part)
            if match:
                yield match.group(1), match.group(2), "srun --export"
    elif (
        token in ("-genv", "-env", "--env")
        and following.startswith("NCCL_")
        and after
        and "=" not in following
    ):
        yield following, after[0], f"mpiexec {token}"


def _bare_name(token: str) -> bool:
    return token.startswith("NCCL_") and "=" not in token


def read_json_settings(document: Mapping[str, Any], line: int) -> RunSettings:
    """The settings an nccl-tests ``-J`` document shows (``env`` list, ``nccl_version``).

    Parameters
    ----------
    document : mapping
        The parsed JSON object.
    line : int
        Line of the object's opening brace, for the evidence.
    """
    found = _Found()
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
        match = _ASSIGNMENT.match(entry) if isinstance(entry, str) else None
        if match and match.group(1) not in _NOT_SETTINGS:
            found.add(match.group(1), 1, Evidence.at(match.group(2), "JSON env", line, entry))
    return _settle(found)


# ------------------------------------------------------------ choosing


def _settle(found: _Found) -> RunSettings:
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
    env = {name: chosen[name] for name in sorted(chosen) if name.startswith("NCCL_")}
    facts = {name: chosen.get(name) for name in _FACTS}
    return RunSettings(env=env, evidence=evidence, warnings=tuple(warnings), **facts)


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
