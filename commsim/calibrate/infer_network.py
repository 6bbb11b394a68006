"""The network between hosts of a run: its link kind from options, NCCL's lines and settings, with evidence.

The link kind comes from ``--nic``, else from what the log printed (NCCL INFO
lines, environment dumps, command lines: see :mod:`commsim.calibrate.settings`),
else from a stated default that the report marks as assumed.

Network defaults by transport and GPU generation (assumed, override with
``--nic`` and ``--nics-per-node``): InfiniBand EDR for Pascal/Volta, HDR for
Ampere, NDR for Hopper and Blackwell, XDR for Blackwell Ultra, one NIC per
GPU on NVLink boards (NVIDIA DGX reference designs); AWS EFA one 100 Gb/s
NIC on p3dn (Volta), four on p4d (Ampere), 32 on p5 (Hopper) (AWS instance
pages); GCP TCPXO 8 x 200 Gb/s (a3-megagpu-8g), TCPX 4 x 200 Gb/s
(a3-highgpu-8g); TCP sockets one NIC of unknown speed (100 Gb/s assumed);
Slingshot 4 per host. A kind given with ``--nic`` brings the same NICs per
host as its transport read from the log. When aws-ofi-nccl names the
instance (``NET/OFI Running on P4d platform``) and the link catalogue names
that family (p3dn, p4d, p5, p5en, p6-b200), kind and NICs are known, not
assumed. The NICs per host are :mod:`~commsim.calibrate.infer_nics`.
"""

from __future__ import annotations

from commsim.calibrate.evidence import Evidence, Fact
from commsim.calibrate.infer_layout import InferenceError, given
from commsim.calibrate.settings import RunSettings, setting, setting_value
from commsim.calibrate.settings_lines import network_name

__all__ = ["EFA_BY_PLATFORM", "efa_platform", "infer_network"]


_IB_BY_ARCH = {
    "kepler": "ib_edr",  # the oldest InfiniBand kind modelled (K80 clusters also ran FDR)
    "pascal": "ib_edr",
    "volta": "ib_edr",
    "turing": "ib_edr",
    "ampere": "ib_hdr",
    "ada": "ib_ndr",
    "hopper": "ib_ndr",
    "blackwell": "ib_ndr",
    "blackwell_ultra": "ib_xdr",
    "cdna1": "ib_hdr",
    "cdna2": "ib_hdr",
    "cdna3": "ib_ndr",
    "cdna4": "ib_ndr",
}


_ROCE_BY_ARCH = {
    "kepler": "roce_40g",
    "pascal": "roce_100g",
    "volta": "roce_100g",
    "turing": "roce_100g",
    "ampere": "roce_200g",
    "cdna1": "roce_100g",
}


_EFA_BY_ARCH = {
    "kepler": ("efa_v1", 1),  # no Kepler instance had EFA: the first generation, at least not 32 NICs
    "pascal": ("efa_v1", 1),
    "volta": ("efa_v1", 1),
    "turing": ("efa_v1", 1),  # g4dn (T4): one first-generation EFA (AWS accelerated computing instances)
    "ampere": ("efa_v2", 4),
    "hopper": ("efa_v2", 32),
}


_FIXED = {"tcpxo": ("tcpxo_200g", 8), "tcpx": ("tcpx_200g", 4), "socket": ("tcp_100g", 1)}


EFA_BY_PLATFORM = {
    "p3dn": ("efa_v1", 1),
    "p4d": ("efa_v2", 4),
    "p5": ("efa_v2", 32),
    "p5en": ("efa_v3", 16),
    "p6-b200": ("efa_v4", 8),
}
"""EFA NICs of the AWS instance families the link kind catalogue names (its sources: the AWS
instance pages, :mod:`commsim.topology.linkkinds`); another family (p4de, p5e ...) is not guessed."""


def _transport_from_env(settings: RunSettings) -> Evidence | None:
    ib_disable, net = setting(settings, "NCCL_IB_DISABLE"), setting(settings, "NCCL_NET")
    if setting_value(ib_disable) == "1":
        return Evidence("socket", f"NCCL_IB_DISABLE=1 ({ib_disable.describe()})")  # type: ignore[union-attr]
    transport = network_name(setting_value(net) or "")
    if net is not None and transport is not None:
        return Evidence(transport, f"NCCL_NET={setting_value(net)}", net.line, net.text)
    return None


def _transport_asked(settings: RunSettings) -> Evidence | None:
    """The transport the log's settings ask for: ``"roce"``, ``"ib"`` (IB verbs), ``"efa"``, or None.

    NCCL's env docs: ``NCCL_IB_HCA`` "specifies which RDMA interfaces to use"
    and ``NCCL_IB_TC`` "defines the InfiniBand traffic class field" (both
    configure the IB verbs transport, InfiniBand or RoCE); ``NCCL_IB_GID_INDEX``
    "defines the Global ID index used in RoCE mode" and
    ``NCCL_IB_ROCE_VERSION_NUM`` the RoCE version of the GID NCCL picks, so
    these mean RoCE (a GID index of 0 or -1 does not: 0 is an InfiniBand
    port's own GID, -1 the default). An exclusion list (``^mlx5_2``) or
    ``NCCL_IB_DISABLE=1`` asks for nothing. ``FI_PROVIDER=efa`` asks libfabric for AWS EFA, which
    NCCL uses through the aws-ofi-nccl plugin: ``"efa"``.
    """
    if setting_value(setting(settings, "NCCL_IB_DISABLE")) == "1":
        return None
    gid = setting(settings, "NCCL_IB_GID_INDEX")
    roce_version = setting(settings, "NCCL_IB_ROCE_VERSION_NUM")
    for name, seen in (("NCCL_IB_GID_INDEX", gid), ("NCCL_IB_ROCE_VERSION_NUM", roce_version)):
        value = setting_value(seen) or ""
        if seen is not None and value.isdigit() and (name != "NCCL_IB_GID_INDEX" or int(value) >= 1):
            return Evidence("roce", f"{name}={value} ({seen.source}) asks for RoCE", seen.line, seen.text)
    provider = setting(settings, "FI_PROVIDER")
    if (setting_value(provider) or "").lower() == "efa" and provider is not None:
        source = f"FI_PROVIDER=efa ({provider.source}) asks libfabric for EFA (NCCL's aws-ofi-nccl plugin)"
        return Evidence("efa", source, provider.line, provider.text)
    for name in ("NCCL_IB_HCA", "NCCL_IB_TC"):
        seen = setting(settings, name)
        value = setting_value(seen) or ""
        if seen is not None and value and not value.startswith("^"):
            source = f"{name}={value} ({seen.source}) asks for NCCL's IB verbs transport"
            return Evidence("ib", source, seen.line, seen.text)
    return None


def _seen_transport(settings: RunSettings) -> tuple[tuple[Evidence, ...], bool]:
    """Evidence of the transport (the one used first), and whether the log only suggests it (what
    settings ask for, or aws-ofi-nccl's usual provider where nothing names one).

    ``NCCL_IB_DISABLE=1`` and ``NCCL_NET`` come first (as they always did),
    then NCCL's INFO lines (proof); a RoCE setting refines an InfiniBand that
    only ``Using network IB`` or ``NCCL_NET=IB`` named (NCCL's IB transport
    covers RoCE too), never one whose device list shows ``/IB`` ports.
    """
    seen = _transport_from_env(settings) or settings.network
    if seen is not None and seen.value == "ofi":
        provider = _ofi_provider(settings, seen)
        return (provider, seen), "aws-ofi-nccl names no provider" in provider.source
    asked = _transport_asked(settings)
    if seen is None:
        return ((), False) if asked is None else ((asked,), True)
    if (
        asked is not None
        and (seen.value, asked.value) == ("ib", "roce")
        and seen.source != "NET/IB device list"
    ):
        return (asked, seen), True
    return (seen,), False


def _ofi_provider(settings: RunSettings, seen: Evidence) -> Evidence:
    """The network aws-ofi-nccl (``seen``: 'AWS Libfabric') drives: its provider line (``NET/OFI
    Selected provider is cxi``) or platform line, else libfabric's provider settings (``FI_PROVIDER``;
    any ``FI_CXI_*`` setting configures the cxi provider, HPE Slingshot), else EFA, its usual one."""
    named = {"efa": "efa", "cxi": "slingshot", "tcp": "socket", "sockets": "socket"}
    for line in settings.evidence.get("network", ()):
        if line.value in ("efa", "slingshot", "socket") and line.source.startswith("NET/OFI"):
            return line
    provider = setting(settings, "FI_PROVIDER")
    value = setting_value(provider)
    chosen = named.get((value or "").lower())
    if provider is not None and chosen is not None:
        return Evidence(chosen, f"FI_PROVIDER={value} ({provider.describe()})", provider.line)
    cxi = next((e for name, e in sorted(settings.env.items()) if name.startswith("FI_CXI_")), None)
    if cxi is not None:
        name = next(n for n, e in settings.env.items() if e is cxi)
        source = f"{name} ({cxi.describe()}) configures libfabric's cxi provider (HPE Slingshot)"
        return Evidence("slingshot", source, cxi.line, cxi.text)
    source = (
        f"{seen.source}: aws-ofi-nccl names no provider: EFA, its usual one, assumed (it also drives "
        "Slingshot, whose cxi provider a FI_PROVIDER=cxi or FI_CXI_* setting would show)"
    )
    return Evidence("efa", source, seen.line, seen.text)


def _kind_for(transport: str, arch: str) -> tuple[str, int | None]:
    """Default (link kind, NICs per host; None: one per GPU) of a transport on a GPU generation."""
    if transport == "ib":
        return _IB_BY_ARCH.get(arch, "ib_ndr"), None
    if transport == "roce":
        return _ROCE_BY_ARCH.get(arch, "roce_400g"), None
    if transport == "efa":
        return _EFA_BY_ARCH.get(arch, ("efa_v2", 32))
    if transport == "slingshot":
        return "slingshot_200g", 4
    return _FIXED.get(transport, ("tcp_100g", 1))


def _per_host_of_kind(kind: str, arch: str) -> int | None:
    """NICs per host of a link kind given with ``--nic``: what its transport has when read from the log.

    Slingshot 4, TCPXO 8, TCPX 4, TCP sockets 1 (any speed), EFA by GPU
    generation when the kind is that generation's; None (one per GPU) else.
    """
    for transport in ("slingshot", "efa", "tcpxo", "tcpx", "socket"):
        name, per_host = _kind_for(transport, arch)
        if name == kind:
            return per_host
    return _FIXED["socket"][1] if kind.startswith("tcp_") else None


def infer_network(
    settings: RunSettings, option_nic: str | None, arch: str, nvlink_board: bool
) -> tuple[Fact, int | None]:
    """The network link kind between hosts, and the transport's usual NICs per host (None: one per GPU).

    Raises
    ------
    InferenceError
        If ``--nic`` names no network link kind.
    """
    from commsim.topology.linkkinds import LINK_KINDS

    if option_nic is not None:
        kind = LINK_KINDS.get(option_nic)
        if kind is None or kind.family not in ("infiniband", "ethernet"):
            valid = sorted(k for k, v in LINK_KINDS.items() if v.family in ("infiniband", "ethernet"))
            raise InferenceError(f"--nic {option_nic!r} is no network link kind; valid: {', '.join(valid)}")
        return given("network", option_nic, "--nic"), _per_host_of_kind(option_nic, arch)
    seen, asked = _seen_transport(settings)
    platform = efa_platform(settings)
    if platform is not None and seen and seen[0].value == "efa":
        efa_kind, count = EFA_BY_PLATFORM[str(platform.value)]
        note = f"aws-ofi-nccl runs on {platform.value}: {count} x {efa_kind} per host (AWS instance page)"
        others = tuple(e for e in seen if (e.source, e.line) != (platform.source, platform.line))
        return Fact("network", efa_kind, (platform, *others), option="--nic", note=note), count
    printed = _printed_kind(settings, seen, arch)
    if printed is not None:
        return printed, None
    if seen:
        transport = str(seen[0].value)
        name, per_host = _kind_for(transport, arch)
        shows = seen[0].describe() if asked else f"the log shows {transport}"
        note = f"{shows}; its speed is not printed: {name} assumed for {arch} GPUs"
        return Fact("network", name, seen, assumed=True, option="--nic", note=note), per_host
    transport = "ib" if nvlink_board else "socket"
    name, per_host = _kind_for(transport, arch)
    note = f"the log names no network; {name} assumed ({'InfiniBand' if transport == 'ib' else 'TCP'})"
    return Fact("network", name, (), assumed=True, option="--nic", note=note), per_host


def _printed_kind(settings: RunSettings, seen: tuple[Evidence, ...], arch: str) -> Fact | None:
    """The link kind of the transport whose rate is the NIC speed NCCL printed (within 5 %).

    Of several at that rate (ib_hdr and ib_ndr200 are both 25 GB/s) the GPU
    generation's default is taken when it is one of them, else the first by
    name: they differ in latency only.
    """
    from commsim.topology.linkkinds import LINK_KINDS

    speed = settings.nic_speed
    if speed is None or not seen:
        return None
    rate_Bps = float(speed.value) * 1e9
    kinds = sorted(
        name
        for name, kind in LINK_KINDS.items()
        if kind.transport == seen[0].value and abs(kind.bandwidth_Bps - rate_Bps) <= 0.05 * rate_Bps
    )
    if not kinds:
        return None
    usual = _kind_for(str(seen[0].value), arch)[0]
    name = usual if usual in kinds else kinds[0]
    note = f"NCCL prints {speed.value:g} GB/s for the NIC its channels use: {name}"
    return Fact("network", name, (*seen, speed), option="--nic", note=note)


def efa_platform(settings: RunSettings) -> Evidence | None:
    """The aws-ofi-nccl platform line when it names an instance family of :data:`EFA_BY_PLATFORM`."""
    seen = settings.platform
    return seen if seen is not None and seen.value in EFA_BY_PLATFORM else None
