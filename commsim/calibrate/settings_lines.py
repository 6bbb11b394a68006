"""Facts and forced settings read from one log line: NCCL's own lines, its plugin's, version headers.

The lines (most trusted first, by each rule's rank): ``NCCL_DEBUG=INFO``
lines such as ``NCCL version 2.26.2+cuda12.8``, ``NCCL_ALGO set by
environment to Ring``, ``Using network IB``, ``NET/IB : Using [0]mlx5_0:1/IB``,
``via NET/IB/0/GDRDMA`` (NCCL ``src/init.cc``, ``src/transport/net_ib.cc``,
``src/misc/param.cc``); aws-ofi-nccl's ``NET/OFI ...`` lines (``src/nccl_ofi_net.c``);
nccl-tests' ``# nccl-tests version ... nccl-library=22602`` header and the
same code printed by modified builds (``NCCL version: 22602``). How the
sources are weighed against each other is :mod:`commsim.calibrate.settings_choice`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from commsim.calibrate.evidence import Evidence
from commsim.calibrate.settings_choice import Found

__all__ = [
    "DEVICE_VARIABLES",
    "LIBFABRIC_VARIABLES",
    "NOT_SETTINGS",
    "decode_version_code",
    "network_name",
    "read_line",
    "version_in_code_line",
]

NOT_SETTINGS = {"NCCL_VERSION"}  # set by NVIDIA containers to the packaged version, not read by NCCL

DEVICE_VARIABLES = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")
"""Variables that choose which GPUs of a host a process sees (CUDA, HIP, the ROCm runtime): read as
settings beside the ``NCCL_*`` ones (:mod:`commsim.calibrate.infer_devices` uses them)."""

LIBFABRIC_VARIABLES = r"FI_PROVIDER|FI_CXI_[A-Z0-9_]+|OFI_NCCL_PROTOCOL"
"""Libfabric's provider choice (``FI_PROVIDER=cxi``) and its cxi provider's settings (``FI_CXI_*``,
libfabric's fi_cxi(7)): which network aws-ofi-nccl ("AWS Libfabric") drives, read as settings; and
aws-ofi-nccl's own protocol choice (``OFI_NCCL_PROTOCOL=RDMA``, :mod:`commsim.calibrate.infer_ofi`)."""


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
    # nccl-tests' old header names the NCCL its headers were: no sign of the NCCL 2 library that ran
    # (any later 2.x loads), but NCCL 1 (libnccl.so.1) is no NCCL 2, so a test built with it ran on it
    (
        "version",
        2,
        "nccl-tests header 'compiled with NCCL'",
        re.compile(r"^#\s*NCCL Tests compiled with NCCL (1\.\d+(?:\.\d+)?)\b"),
        _first,
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
        lambda m: network_name(m.group(1)),
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
        # NCCL's 'rank 0 Connected CollNet', 'Connected collnet + chain'. Not 'NET/Plugin: Loaded coll
        # plugin SHARP': NCCL loads HPC-X's SHARP plugin wherever it is installed (NGC containers),
        # whether or not NCCL_COLLNET_ENABLE=1 asks for CollNet (nccl-tests #329 loads it and never sets it)
        re.compile(
            r"(?i)\bcollnet\b.*\b(?:connected|enabled|setup done)\b"
            r"|\bConnected collnet\b(?!\s*(?:\+|chains?\b))"  # not the chain's (see infer_collnet)
        ),
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


_NETWORK_NAMES = {
    "ib": "ib",
    "socket": "socket",
    "aws libfabric": "ofi",
    "libfabric": "ofi",
    "ofi": "ofi",
    "gib": "roce",
}
"""Network names NCCL prints (``Using network X``) or ``NCCL_NET`` takes, lower case: NCCL's IB verbs
and socket transports; aws-ofi-nccl ('AWS Libfabric'), which drives EFA (AWS) and HPE Slingshot (its
cxi provider): "ofi" until a provider line or setting says which; Google's gIB plugin, GPUDirect RDMA
over the RoCE NICs of GKE/Compute Engine A3 Ultra, A4 and A4X (NVIDIA AICR "GKE GB200 (A4X)
Networking": NCCL_NET=gIB for "GPUDirect-RDMA over RoCE"; cluster-toolkit v1.44.1: A3 Ultra's
"CX-7 networking with RDMA support via RoCE")."""
_IBEXT = re.compile(r"ibext(?:_v\d+)?")
"""The external IB verbs plugin's names (nccl-rdma-sharp-plugins: ``IBext``, ``IBext_v8`` ...)."""


def network_name(name: str) -> str | None:
    """The transport a network's name means, as NCCL's ``Using network X`` line or ``NCCL_NET`` gives it
    ('IB', 'Socket', 'AWS Libfabric', 'IBext_v8', 'gIB', 'GPUDirectTCPX', 'FasTrak', a cxi provider),
    else None.

    The whole name is matched without regard to case, as NCCL compares ``NCCL_NET`` with its
    networks' names (``strcasecmp``): 'AWS Libfabric' contains 'ib' but is not IB, and 'I_B' or
    'Socket2' name nothing. 'AWS Libfabric' is "ofi": EFA or Slingshot, as its provider says.

    Examples
    --------
    >>> [network_name(n) for n in ("IB", "IBext_v8", "gIB", "AWS Libfabric", "I_B", "Socket2")]
    ['ib', 'ib', 'roce', 'ofi', None, None]
    """
    key = name.strip().strip("\"'").strip().lower()
    if key in _NETWORK_NAMES:
        return _NETWORK_NAMES[key]
    if _IBEXT.fullmatch(key):
        return "ib"
    if "tcpxo" in key or "fastrak" in key:
        return "tcpxo"
    if "tcpx" in key:
        return "tcpx"
    return "slingshot" if "cxi" in key or "slingshot" in key else None


def _ib_kind(line: str) -> str:
    return "roce" if "/RoCE" in line else "ib"


def _count_nics(listing: str) -> int:
    return len(re.findall(r"\[\d+\]", listing))


def read_line(found: Found, number: int, text: str) -> None:
    """Add to ``found`` every fact and forced ``NCCL_*`` setting that line ``number``, ``text``, shows."""
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
        if match and match.group(1) not in NOT_SETTINGS:
            found.add(match.group(1), 0, Evidence.at(match.group(2).strip(), source, number, text))
    if _OFI_NVLS_OFF.search(text):
        found.add("NCCL_NVLS_ENABLE", 0, Evidence.at("0", _PLUGIN, number, text))
