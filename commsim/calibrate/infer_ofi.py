"""Which protocol aws-ofi-nccl runs over AWS EFA: SENDRECV (libfabric send/recv) or RDMA (RDMA writes).

The plugin has two protocols, and a small message costs far less with the
second (``commsim.nccl.params.DEFAULT_TRANSPORT_LATENCY_s``). What the plugin
picks (github.com/aws/aws-ofi-nccl):

- SENDRECV was its only protocol until v1.7.0-aws, which added "RDMA-write
  based transport with support for AWS's new P5 instance" (RELEASENOTES.md;
  pull request #205, 2023-07).
- At start it prints ``NET/OFI Using transport protocol RDMA`` (``... (user
  set)`` when ``OFI_NCCL_PROTOCOL`` chose it; src/nccl_ofi_net.c).
- Unless set, v1.7-v1.8 took RDMA when the provider is EFA and the host has
  fewer GPUs than EFA devices (multi-rail; src/nccl_ofi_net.c): p5.48xlarge
  (8 GPUs, 32 EFA) yes, p4d/p4de (8 GPUs, 4 EFA) and g4dn (one EFA) no.
  Later releases name a default per instance (src/platform-aws.cpp
  ``platform_data_map``): p3dn, p4d, p4de, p5.4xlarge and g5.48xlarge
  SENDRECV; p5/p5e, p5en and p6 and later RDMA.
- An NCCL that loads the plugin through the v4 net API or an older one
  gets SENDRECV: the RDMA protocol's ``connect()`` cannot return at once as
  v4 requires (src/nccl_ofi_interface_nvidia.c, ``init_v4``). NCCL looks for
  ``ncclNetPlugin_v5`` from 2.12 on: tests/data/outside/70 (NCCL 2.12.7)
  prints ``Failed to find ncclCollNetPlugin_v5``, 52 (NCCL 2.8.3)
  ``... _v4``.

So the log settles it by the protocol line, an ``OFI_NCCL_PROTOCOL`` setting,
a plugin release before 1.7.0, an NCCL before 2.12, or a platform line naming
an instance that has one default (p3dn, p4d, p4de: SENDRECV; p5, p5en, p6
with a plugin of 1.7.0 or later: RDMA). Otherwise the instance's GPU
generation gives the default, marked as assumed: Hopper and Blackwell (p5,
p5en, p6) RDMA, older generations SENDRECV.
"""

from __future__ import annotations

import re

from commsim.calibrate.evidence import Evidence, Fact
from commsim.calibrate.infer_layout import InferenceError
from commsim.calibrate.settings import RunSettings, setting, setting_value
from commsim.hardware import GpuSpec

__all__ = [
    "OFI_PROTOCOLS",
    "OPTION",
    "RDMA_SINCE",
    "check_net_protocol",
    "efa_protocol",
    "infer_ofi_protocol",
    "plugin_release",
]

OFI_PROTOCOLS = ("sendrecv", "rdma")
"""aws-ofi-nccl's protocols, as the fact names them."""

OPTION = "--net-protocol"
"""The option that gives the protocol when the log does not show it."""

RDMA_SINCE = (1, 7, 0)
"""The aws-ofi-nccl release that added the RDMA protocol (v1.7.0-aws)."""

_PROTOCOL_LINE = re.compile(r"NET/OFI Using transport protocol (RDMA|SENDRECV)\b", re.IGNORECASE)
# "NET/OFI Using aws-ofi-nccl 1.5.0aws" (1.5-1.8), "NET/OFI Initializing aws-ofi-nccl 1.9.2-aws" (1.9 on)
_RELEASE_LINE = re.compile(r"NET/OFI (?:Using|Initializing) aws-ofi-nccl v?(\d+)\.(\d+)\.(\d+)")
_SENDRECV_PLATFORMS = ("p3dn", "p4d", "p4de")
_RDMA_PLATFORMS = ("p5", "p5e", "p5en", "p6", "p6-b200", "p6e")
_RDMA_ARCHS = ("hopper", "blackwell")
_NO_RDMA_KINDS = {
    "efa_v1": (
        "first-generation EFA (efa_v1: p3dn, g4dn) has no device RDMA (GPUDirect RDMA over EFA came "
        "with p4d), so aws-ofi-nccl runs SENDRECV on it in every release: its RDMA protocol needs RDMA writes"
    ),
}
"""EFA link kinds on which only the SENDRECV protocol can run, and why."""


def plugin_release(raw: str) -> tuple[tuple[int, int, int], Evidence] | None:
    """The aws-ofi-nccl release the log prints (first line), with its evidence, or None."""
    for number, text in enumerate(raw.splitlines(), 1):
        match = _RELEASE_LINE.search(text)
        if match:
            release = (int(match.group(1)), int(match.group(2)), int(match.group(3)))
            return release, Evidence.at(
                ".".join(map(str, release)), "aws-ofi-nccl release line", number, text
            )
    return None


def _protocol_line(raw: str) -> Evidence | None:
    for number, text in enumerate(raw.splitlines(), 1):
        match = _PROTOCOL_LINE.search(text)
        if match:
            return Evidence.at(match.group(1).lower(), "NET/OFI protocol line", number, text)
    return None


def efa_protocol(
    nic: str | None,
    settings: RunSettings,
    raw: str,
    version: Fact | None,
    spec: GpuSpec | None,
    given: str | None = None,
    warnings: list[str] | None = None,
) -> Fact | None:
    """The ``net_protocol`` fact of a run whose hosts talk over EFA (link kind ``nic``), else None.

    ``given`` (``--net-protocol``) wins over the log, which is warned about when it disagrees; given
    for a run that is not on EFA, it is said to be unused.
    """
    from commsim.topology.linkkinds import LINK_KINDS

    check_net_protocol(given)
    if nic is None or LINK_KINDS[nic].transport != "efa":
        if given is not None and warnings is not None:
            why = "the run crosses no network" if nic is None else f"its network ({nic}) is not AWS EFA"
            warnings.append(
                f"{OPTION} {given} is not used: {why} (--nic efa_v1..efa_v4 names an EFA network)"
            )
        return None
    if given == "rdma" and nic in _NO_RDMA_KINDS:
        raise InferenceError(f"{OPTION} rdma on {nic}: {_NO_RDMA_KINDS[nic]}; valid there: sendrecv")
    arch = spec.arch if spec is not None else "unknown"
    found = infer_ofi_protocol(settings, raw, version, arch)
    if found.assumed and nic in _NO_RDMA_KINDS:
        found = Fact(
            "net_protocol",
            "sendrecv",
            (Evidence(nic, "network link kind"),),
            option=OPTION,
            note=_NO_RDMA_KINDS[nic],
        )
    if given is None:
        return found
    if warnings is not None and not found.assumed and found.value != given:
        sources = ", ".join(e.describe() for e in found.evidence[:2])
        warnings.append(
            f"{OPTION} {given} disagrees with the log's {found.value} ({sources}); using {OPTION}"
        )
    return Fact("net_protocol", given, (Evidence(given, f"option {OPTION}"),), option=OPTION)


def check_net_protocol(value: str | None) -> None:
    """Refuse a ``--net-protocol`` that is not one of :data:`OFI_PROTOCOLS`."""
    if value is not None and value not in OFI_PROTOCOLS:
        raise InferenceError(f"{OPTION} {value!r}: valid: {', '.join(OFI_PROTOCOLS)}")


def infer_ofi_protocol(settings: RunSettings, raw: str, version: Fact | None, arch: str) -> Fact:
    """The protocol aws-ofi-nccl ran EFA with (``"sendrecv"`` or ``"rdma"``), from the log or assumed.

    Parameters
    ----------
    settings : RunSettings
        The log's settings (``OFI_NCCL_PROTOCOL``, the platform line).
    raw : str
        The log's text (the plugin's protocol and release lines).
    version : Fact or None
        The NCCL release the run used (not used when only assumed).
    arch : str
        The GPU generation (the default when nothing in the log settles it).
    """
    shown = _protocol_line(raw)
    if shown is not None:
        note = "aws-ofi-nccl prints the protocol it uses"
        return Fact("net_protocol", shown.value, (shown,), option=OPTION, note=note)
    chosen = setting(settings, "OFI_NCCL_PROTOCOL")
    value = (setting_value(chosen) or "").lower()
    if chosen is not None and value in OFI_PROTOCOLS:
        note = "OFI_NCCL_PROTOCOL chooses aws-ofi-nccl's protocol"
        return Fact("net_protocol", value, (chosen,), option=OPTION, note=note)
    release = plugin_release(raw)
    if release is not None and release[0] < RDMA_SINCE:
        note = "aws-ofi-nccl before 1.7.0 has no other protocol (its RDMA protocol came with v1.7.0-aws)"
        return Fact("net_protocol", "sendrecv", (release[1],), note=note, option=OPTION)
    old = _old_nccl(version)
    if old is not None:
        return old
    return _by_platform(settings, release) or _assumed(arch)


def _old_nccl(version: Fact | None) -> Fact | None:
    """SENDRECV when NCCL is older than 2.12 (the v4 net API or older, which RDMA cannot serve)."""
    if version is None or version.assumed or version.value is None:
        return None
    parts = re.match(r"(\d+)\.(\d+)", str(version.value))
    if parts is None or (int(parts.group(1)), int(parts.group(2))) >= (2, 12):
        return None
    note = (
        f"NCCL {version.value} loads aws-ofi-nccl through the v4 net API or an older one, where the "
        "plugin runs SENDRECV only (its RDMA protocol needs v5's connect, NCCL 2.12 on)"
    )
    return Fact("net_protocol", "sendrecv", version.evidence, note=note, option=OPTION)


def _by_platform(settings: RunSettings, release: tuple[tuple[int, int, int], Evidence] | None) -> Fact | None:
    """The protocol of the instance aws-ofi-nccl names when that instance has one default."""
    platform = settings.platform
    name = str(platform.value) if platform is not None else ""
    if platform is None:
        return None
    if name in _SENDRECV_PLATFORMS:
        note = f"aws-ofi-nccl runs SENDRECV on {name} in every release (4 or fewer EFA for 8 GPUs)"
        return Fact("net_protocol", "sendrecv", (platform,), note=note, option=OPTION)
    if name in _RDMA_PLATFORMS and release is not None:
        note = f"aws-ofi-nccl {release[1].value} (1.7.0 or later) runs RDMA on {name} unless told otherwise"
        return Fact("net_protocol", "rdma", (platform, release[1]), note=note, option=OPTION)
    return None


def _assumed(arch: str) -> Fact:
    """The GPU generation's usual instance's default, marked as assumed."""
    if arch in _RDMA_ARCHS:
        note = (
            f"the log shows neither aws-ofi-nccl's protocol nor its release: RDMA assumed, the default on "
            f"{arch} EFA instances (p5, p5en, p6) since aws-ofi-nccl 1.7.0 (with NCCL_DEBUG=INFO the plugin "
            "prints it)"
        )
        return Fact("net_protocol", "rdma", (), assumed=True, note=note, option=OPTION)
    note = (
        "the log shows neither aws-ofi-nccl's protocol nor its release: SENDRECV assumed, the default on "
        "EFA instances before p5 (p3dn, p4d, p4de, g4dn) (with NCCL_DEBUG=INFO the plugin prints it)"
    )
    return Fact("net_protocol", "sendrecv", (), assumed=True, note=note, option=OPTION)
