"""Settings of a run: the network, peer-to-peer, NCCL version and forced choices, with evidence.

Each comes from an option, else from what the log printed (NCCL INFO lines,
environment dumps, command lines: see :mod:`commsim.calibrate.settings`),
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
assumed.
"""

from __future__ import annotations

import math
import re

from commsim.calibrate.evidence import Evidence, Fact
from commsim.calibrate.infer_layout import InferenceError, given
from commsim.calibrate.settings import RunSettings
from commsim.calibrate.settings_lines import network_name
from commsim.hardware import GpuSpec

__all__ = [
    "ALGO_NAMES",
    "PROTO_NAMES",
    "forced_choices",
    "infer_host_transport",
    "infer_network",
    "infer_nics",
    "infer_p2p",
    "infer_version",
    "p2p_disabled",
    "setting",
    "shm_disabled",
]

_IB_BY_ARCH = {
    "pascal": "ib_edr",
    "volta": "ib_edr",
    "turing": "ib_edr",
    "ampere": "ib_hdr",
    "ada": "ib_ndr",
    "hopper": "ib_ndr",
    "blackwell": "ib_ndr",
    "blackwell_ultra": "ib_xdr",
    "cdna2": "ib_hdr",
    "cdna3": "ib_ndr",
    "cdna4": "ib_ndr",
}
_ROCE_BY_ARCH = {"pascal": "roce_100g", "volta": "roce_100g", "turing": "roce_100g", "ampere": "roce_200g"}
_EFA_BY_ARCH = {
    "pascal": ("efa_v1", 1),
    "volta": ("efa_v1", 1),
    "turing": ("efa_v1", 1),  # g4dn (T4): one first-generation EFA (AWS accelerated computing instances)
    "ampere": ("efa_v2", 4),
    "hopper": ("efa_v2", 32),
}
_FIXED = {"tcpxo": ("tcpxo_200g", 8), "tcpx": ("tcpx_200g", 4), "socket": ("tcp_100g", 1)}
_EFA_BY_PLATFORM = {
    "p3dn": ("efa_v1", 1),
    "p4d": ("efa_v2", 4),
    "p5": ("efa_v2", 32),
    "p5en": ("efa_v3", 16),
    "p6-b200": ("efa_v4", 8),
}
"""EFA NICs of the AWS instance families the link kind catalogue names (its sources: the AWS
instance pages, :mod:`commsim.topology.linkkinds`); another family (p4de, p5e ...) is not guessed."""


def setting(settings: RunSettings, name: str) -> Evidence | None:
    """The log's evidence for one forced ``NCCL_*`` variable, or None."""
    return settings.env.get(name)


def p2p_disabled(settings: RunSettings) -> Evidence | None:
    """The log's ``NCCL_P2P_DISABLE=1`` (NCCL's P2P transport off, over NVLink too), or None."""
    disabled = setting(settings, "NCCL_P2P_DISABLE")
    return disabled if _value(disabled) == "1" else None


def shm_disabled(settings: RunSettings) -> Evidence | None:
    """The log's ``NCCL_SHM_DISABLE=1`` (NCCL's SHM transport, through host memory, off), or None."""
    disabled = setting(settings, "NCCL_SHM_DISABLE")
    return disabled if _value(disabled) == "1" else None


def infer_host_transport(settings: RunSettings, p2p: Fact, per_node: int) -> Fact | None:
    """NCCL's transport between GPUs of a host when it is one the model does not price, else None.

    NCCL tries its transports in order, P2P, SHM, NET, for each pair of ranks (``src/transport.cc``);
    ``NCCL_SHM_DISABLE=1`` makes SHM refuse (``src/transport/shm.cc``), so two GPUs of a host without
    peer-to-peer are joined by the network transport: the NIC's loopback (IB verbs) or sockets,
    which the model does not price (it prices such pairs through host memory, SHM). With
    peer-to-peer only assumed on, which transport ran is unknown; known on, SHM is not used anyway.
    """
    shm = shm_disabled(settings)
    if shm is None or per_node < 2 or (p2p.value and not p2p.assumed):
        return None
    why = (
        "NCCL_SHM_DISABLE=1: without GPU peer-to-peer NCCL joins the GPUs of a host over its network "
        "transport (the NIC's loopback or sockets), which the model does not price"
    )
    if p2p.value:
        value = "P2P if peer-to-peer works, else the network transport (not modelled)"
        return Fact("host_transport", value, (shm,), assumed=True, option="--p2p/--no-p2p", note=why)
    value = "the network transport (not modelled: priced as through host memory)"
    return Fact("host_transport", value, (shm, *p2p.evidence[:1]), note=why)


def _value(evidence: Evidence | None) -> str | None:
    return None if evidence is None else str(evidence.value).strip()


def _transport_from_env(settings: RunSettings) -> Evidence | None:
    ib_disable, net = setting(settings, "NCCL_IB_DISABLE"), setting(settings, "NCCL_NET")
    if _value(ib_disable) == "1":
        return Evidence("socket", f"NCCL_IB_DISABLE=1 ({ib_disable.describe()})")  # type: ignore[union-attr]
    transport = network_name(_value(net) or "")
    if net is not None and transport is not None:
        return Evidence(transport, f"NCCL_NET={_value(net)}", net.line, net.text)
    return None


def _transport_asked(settings: RunSettings) -> Evidence | None:
    """The transport the log's ``NCCL_IB_*`` settings ask for: ``"roce"``, ``"ib"`` (IB verbs), or None.

    NCCL's env docs: ``NCCL_IB_HCA`` "specifies which RDMA interfaces to use"
    and ``NCCL_IB_TC`` "defines the InfiniBand traffic class field" (both
    configure the IB verbs transport, InfiniBand or RoCE); ``NCCL_IB_GID_INDEX``
    "defines the Global ID index used in RoCE mode" and
    ``NCCL_IB_ROCE_VERSION_NUM`` the RoCE version of the GID NCCL picks, so
    these mean RoCE (a GID index of 0 or -1 does not: 0 is an InfiniBand
    port's own GID, -1 the default). An exclusion list (``^mlx5_2``) or
    ``NCCL_IB_DISABLE=1`` asks for nothing.
    """
    if _value(setting(settings, "NCCL_IB_DISABLE")) == "1":
        return None
    gid = setting(settings, "NCCL_IB_GID_INDEX")
    roce_version = setting(settings, "NCCL_IB_ROCE_VERSION_NUM")
    for name, seen in (("NCCL_IB_GID_INDEX", gid), ("NCCL_IB_ROCE_VERSION_NUM", roce_version)):
        value = _value(seen) or ""
        if seen is not None and value.isdigit() and (name != "NCCL_IB_GID_INDEX" or int(value) >= 1):
            return Evidence("roce", f"{name}={value} ({seen.source}) asks for RoCE", seen.line, seen.text)
    for name in ("NCCL_IB_HCA", "NCCL_IB_TC"):
        seen = setting(settings, name)
        value = _value(seen) or ""
        if seen is not None and value and not value.startswith("^"):
            source = f"{name}={value} ({seen.source}) asks for NCCL's IB verbs transport"
            return Evidence("ib", source, seen.line, seen.text)
    return None


def _seen_transport(settings: RunSettings) -> tuple[tuple[Evidence, ...], bool]:
    """Evidence of the transport (the one used first), and whether it is only what settings ask for.

    ``NCCL_IB_DISABLE=1`` and ``NCCL_NET`` come first (as they always did),
    then NCCL's INFO lines (proof); a RoCE setting refines an InfiniBand that
    only ``Using network IB`` or ``NCCL_NET=IB`` named (NCCL's IB transport
    covers RoCE too), never one whose device list shows ``/IB`` ports.
    """
    seen = _transport_from_env(settings) or settings.network
    if seen is not None and seen.value == "ofi":
        return (_ofi_provider(settings, seen), seen), False
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
    chosen = named.get((_value(provider) or "").lower())
    if provider is not None and chosen is not None:
        return Evidence(chosen, f"FI_PROVIDER={_value(provider)} ({provider.describe()})", provider.line)
    cxi = next((e for name, e in sorted(settings.env.items()) if name.startswith("FI_CXI_")), None)
    if cxi is not None:
        name = next(n for n, e in settings.env.items() if e is cxi)
        source = f"{name} ({cxi.describe()}) configures libfabric's cxi provider (HPE Slingshot)"
        return Evidence("slingshot", source, cxi.line, cxi.text)
    source = f"{seen.describe()}: aws-ofi-nccl, whose usual provider is EFA (it also drives Slingshot)"
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
    platform = _platform(settings)
    if platform is not None and seen and seen[0].value == "efa":
        efa_kind, count = _EFA_BY_PLATFORM[str(platform.value)]
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


def _platform(settings: RunSettings) -> Evidence | None:
    """The aws-ofi-nccl platform line when it names an instance family of :data:`_EFA_BY_PLATFORM`."""
    seen = settings.platform
    return seen if seen is not None and seen.value in _EFA_BY_PLATFORM else None


def infer_nics(
    settings: RunSettings,
    option: int | None,
    per_host_default: int | None,
    host_gpus: int,
    network_kind: str | None = None,
    slots: int | None = None,
) -> Fact:
    """NICs per host that join the network (``network_kind``: the link kind chosen for it).

    Order: ``--nics-per-node``; NCCL's ``NET/...: Using [0]... [1]...`` list; the
    EFA NICs of the AWS instance aws-ofi-nccl names (when the network is EFA); the
    plugin's ``(found N nics)`` count (per GPU on newer plugins); the transport's default
    (:func:`_assumed_nics`: for the ``host_gpus`` modelled per host, at most a board's ``slots``).
    """
    if option is not None:
        if option < 1:
            raise InferenceError(f"--nics-per-node must be at least 1, not {option}")
        return given("nics_per_node", option, "--nics-per-node")
    from commsim.topology.linkkinds import LINK_KINDS

    listed, platform = settings.nics, _platform(settings)
    kind = LINK_KINDS.get(network_kind) if network_kind else None
    efa = kind is None or kind.transport == "efa"
    if platform is not None and efa and (listed is None or listed.source != "NET device list"):
        name, per_host = _EFA_BY_PLATFORM[str(platform.value)]
        note = f"{platform.value} has {per_host} {name} NICs (AWS instance page)"
        return Fact("nics_per_node", per_host, (platform,), option="--nics-per-node", note=note)
    if listed is not None:
        used = listed.source.startswith("channel lines")
        return Fact(
            "nics_per_node",
            int(listed.value),
            (listed,),
            option="--nics-per-node",
            note="the NICs NCCL's channels use on a host" if used else "the NICs NCCL lists on a host",
        )
    hcas = hca_list(settings) if kind is not None and kind.transport in ("ib", "roce") else None
    if hcas is not None:
        note = "the HCAs NCCL_IB_HCA names for NCCL's IB verbs transport"
        return Fact("nics_per_node", int(hcas.value), (hcas,), option="--nics-per-node", note=note)
    value, note = _assumed_nics(per_host_default, host_gpus, network_kind, slots)
    return Fact("nics_per_node", value, (), assumed=True, option="--nics-per-node", note=note)


_HCA_NAME = re.compile(r"[A-Za-z][\w.-]*_\d+|(?:ib|roce)p\d+s\d+(?:f\d+)?")
"""One device of ``NCCL_IB_HCA`` as a whole name: a driver's name and index (``mlx5_0``,
``bnxt_re_3``, ``mlx5_bond_0``) or the kernel's PCI-based RDMA name (``ibp12s0``, ``rocep1s0f0``);
not a family prefix (``mlx5``), which NCCL matches against every card it begins."""


def hca_list(settings: RunSettings) -> Evidence | None:
    """How many devices an ``NCCL_IB_HCA`` list names, when it is a plain list of whole device names.

    NCCL's env docs (NCCL_IB_HCA): a comma-separated list, a port after ``:``
    (``mlx5_0:1``); a leading ``^`` makes it an exclusion list, a ``=`` (after
    any ``^``) makes the tokens exact names, "otherwise by default NCCL would
    treat each token as a prefix". An exclusion list (``^mlx5_2``) says nothing
    of the NICs used, nor does a family prefix (``mlx5``: every card it begins);
    a plain list of whole names (``mlx5_0,...,mlx5_17``) names the HCAs used, as
    many as its distinct names (two ports of one card count once). NCCL reads a
    name without ``=`` as a prefix, so ``mlx5_1`` also takes an ``mlx5_10`` a
    host has and the list leaves out: commonly the list names them all.

    Examples
    --------
    >>> from commsim.calibrate.settings import read_settings
    >>> hca_list(read_settings(["export NCCL_IB_HCA==mlx5_0:1,mlx5_3:1,mlx5_3:2"])).value
    2
    >>> hca_list(read_settings(["export NCCL_IB_HCA=^mlx5_2"])) is None
    True
    >>> hca_list(read_settings(["export NCCL_IB_HCA=mlx5"])) is None
    True
    """
    seen = setting(settings, "NCCL_IB_HCA")
    value = (_value(seen) or "").strip("\"'").replace("\\,", ",")  # a shell's escaped comma
    if seen is None or not value or value.startswith("^"):
        return None
    tokens = [t.strip() for t in value.removeprefix("=").split(",")]
    names = [t.split(":", 1)[0] for t in tokens]
    if not names or not all(_HCA_NAME.fullmatch(n) for n in names):
        return None
    count = len(set(names))
    source = f"NCCL_IB_HCA ({seen.source}) names {count} HCA(s)"
    return Evidence(count, source, seen.line, seen.text)


_TRANSPORT_HOST_GPUS = {"slingshot": 4, "efa": 8, "tcpxo": 8, "tcpx": 8}
"""GPUs of the hosts a transport's usual NIC count describes (:func:`_kind_for`): HPE Cray EX nodes
(4 GPUs, 4 Slingshot NICs), AWS p4d/p5 and GCP A3 (8 GPUs). A host modelled with fewer GPUs gets
their share of those NICs: NCCL uses the NICs near the GPUs it runs on."""


def _assumed_nics(
    per_host: int | None, host_gpus: int, network_kind: str | None, slots: int | None
) -> tuple[int, str]:
    """The NICs per host to assume, and why: the transport's usual count (its share for a host
    modelled with fewer GPUs than the transport's hosts have), else one per GPU; never more than a
    board's fixed ``slots`` (a DGX-1 has 4)."""
    from commsim.topology.linkkinds import LINK_KINDS

    value = per_host if per_host is not None else host_gpus
    note = f"{value} per host assumed ({'the transport' if per_host else 'one per GPU'})"
    kind = LINK_KINDS.get(network_kind) if network_kind else None
    host = _TRANSPORT_HOST_GPUS.get(kind.transport or "") if kind is not None else None
    if per_host is not None and host is not None and host_gpus < host:
        value = max(1, math.ceil(per_host * host_gpus / host))
        note = (
            f"{value} per host assumed: the transport's usual {per_host} NICs for {host} GPUs, "
            f"shared by the {host_gpus} GPU(s) modelled per host"
        )
    if slots is not None and value > slots:
        value, note = slots, f"{slots} per host assumed: the board has {slots} NIC slots"
    return value, note


def infer_p2p(
    settings: RunSettings,
    option: bool | None,
    raw: str,
    spec: GpuSpec | None,
    has_fabric: bool,
    topology_p2p: bool | None = None,
) -> Fact:
    """Whether GPUs of a host reach each other's memory over PCIe (NCCL's P2P transport).

    Order: ``--p2p/--no-p2p``; NCCL's channel lines between GPUs of a host
    (``via P2P/...`` or ``via SHM/...``: what NCCL did); ``NCCL_P2P_DISABLE=1``;
    an ``nvidia-smi topo -p2p`` matrix; ``topology_p2p``, what a topology given
    with ``--topology`` says; an NVLink/xGMI fabric; the catalogue's default.
    """
    from commsim.topology.nvsmi_parse import find_p2p_status

    if option is not None:
        return given("p2p", option, "--p2p/--no-p2p")
    if settings.p2p is not None:
        used = bool(settings.p2p.value)
        how = "its P2P transport" if used else "SHM (through host memory): no peer-to-peer"
        evidence = settings.evidence.get("p2p", (settings.p2p,))
        note = f"NCCL joins GPUs of a host with {how}"
        return Fact("p2p", used, evidence, option="--p2p/--no-p2p", note=note)
    disabled = p2p_disabled(settings)
    if disabled is not None:
        return Fact(
            "p2p", False, (disabled,), option="--p2p/--no-p2p", note="NCCL_P2P_DISABLE=1 forces it off"
        )
    status = find_p2p_status(raw)
    if status is not None:
        return Fact(
            "p2p",
            status,
            (Evidence(status, "nvidia-smi topo -p2p matrix in the log"),),
            option="--p2p/--no-p2p",
        )
    if topology_p2p is not None:
        evidence = (Evidence(topology_p2p, "the topology given with --topology"),)
        return Fact("p2p", topology_p2p, evidence, option="--p2p/--no-p2p")
    default = bool(spec.p2p_default) if spec is not None else True
    if has_fabric:
        return Fact("p2p", True, (), note="GPUs of a host talk over their NVLink/xGMI fabric")
    name = spec.name if spec is not None else "this GPU"
    note = f"{name} with a stock driver: peer-to-peer {'on' if default else 'off'}"
    return Fact("p2p", default, (), assumed=True, option="--p2p/--no-p2p", note=note)


_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?")


def infer_version(settings: RunSettings, option: str | None, log_version: str | None) -> Fact:
    """The NCCL version the prediction follows."""
    if option is not None:
        if not _VERSION.match(option):
            raise InferenceError(f"--nccl-version {option!r} should look like 2.21 or 2.26.2")
        return given("nccl_version", option, "--nccl-version")
    seen = settings.version
    if seen is not None:
        return Fact("nccl_version", str(seen.value), (seen,), option="--nccl-version")
    if log_version:
        return Fact(
            "nccl_version",
            log_version,
            (Evidence(log_version, "NCCL version line"),),
            option="--nccl-version",
        )
    return Fact(
        "nccl_version",
        None,
        (),
        assumed=True,
        option="--nccl-version",
        note="the log does not print it; the newest modelled version is used",
    )


ALGO_NAMES: dict[str, str] = {
    "ring": "ring",
    "tree": "tree",
    "nvls": "nvls",
    "nvlstree": "nvls_tree",
    "collnetdirect": "collnet_direct",
    "collnetchain": "collnet_chain",
    "collnet": "collnet_direct",
    "pat": "pat",
}
"""NCCL_ALGO names (lower-case, no underscores) to the model's algorithm names."""
PROTO_NAMES: dict[str, str] = {"ll": "LL", "ll128": "LL128", "simple": "Simple"}
"""NCCL_PROTO names (lower-case) to the model's protocol names."""


def _names(value: str, table: dict[str, str]) -> tuple[set[str], bool]:
    """Names listed in an NCCL_ALGO / NCCL_PROTO value, and whether the list excludes (``^``)."""
    text = value.strip()
    if ";" in text or ":" in text:  # per-collective form "allreduce:tree,ring;..."; take the all-reduce part
        parts = dict(p.split(":", 1) for p in text.split(";") if ":" in p)
        text = parts.get("allreduce", text.split(":", 1)[-1])
    exclude = text.startswith("^")
    names = {table[t.strip().lower()] for t in text.lstrip("^").split(",") if t.strip().lower() in table}
    return names, exclude


def forced_choices(
    settings: RunSettings,
    options_algorithms: tuple[str, ...] | None,
    options_protocols: tuple[str, ...] | None,
) -> tuple[dict[str, Fact], tuple[str, ...] | None, tuple[str, ...] | None, list[str]]:
    """Forced algorithms and protocols: options, else NCCL_ALGO / NCCL_PROTO / NCCL_TREE_THRESHOLD / NVLS."""
    facts: dict[str, Fact] = {}
    excluded: set[str] = set()
    algorithms = options_algorithms
    if algorithms is not None:
        facts["algorithms"] = given("algorithms", list(algorithms), "--algo")
    else:
        algo = setting(settings, "NCCL_ALGO")
        threshold = setting(settings, "NCCL_TREE_THRESHOLD")
        if algo is not None:
            names, exclude = _names(str(algo.value), ALGO_NAMES)
            if exclude:
                excluded |= names
            elif names:
                algorithms = tuple(sorted(names))
            facts["algorithms"] = Fact(
                "algorithms",
                str(algo.value),
                (algo,),
                option="--algo",
                note="NCCL_ALGO restricts NCCL's choice",
            )
        elif _value(threshold) == "0":
            assert threshold is not None
            algorithms = ("ring",)
            facts["algorithms"] = Fact(
                "algorithms",
                ["ring"],
                (threshold,),
                option="--algo",
                note="NCCL_TREE_THRESHOLD=0: ring only (NCCL before 2.13)",
            )
    nvls = setting(settings, "NCCL_NVLS_ENABLE")
    if _value(nvls) == "0":
        assert nvls is not None
        excluded |= {"nvls", "nvls_tree"}
        facts["nvls"] = Fact("nvls", False, (nvls,), note="NCCL_NVLS_ENABLE=0")
    protocols = options_protocols
    if protocols is not None:
        facts["protocols"] = given("protocols", list(protocols), "--proto")
    else:
        proto = setting(settings, "NCCL_PROTO")
        if proto is not None:
            names, exclude = _names(str(proto.value), PROTO_NAMES)
            protocols = tuple(sorted(set(PROTO_NAMES.values()) - names if exclude else names)) or None
            facts["protocols"] = Fact(
                "protocols",
                str(proto.value),
                (proto,),
                option="--proto",
                note="NCCL_PROTO restricts NCCL's choice",
            )
    if excluded:
        from commsim.nccl.tuning import ALGORITHMS

        algorithms = tuple(a for a in (algorithms or ALGORITHMS) if a not in excluded)
    return facts, algorithms, protocols, _unmodelled(settings)


def _unmodelled(settings: RunSettings) -> list[str]:
    out = []
    for name in ("NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_COLLNET_ENABLE"):
        seen = setting(settings, name)
        if seen is not None:
            out.append(
                f"the log sets {name}={seen.value} ({seen.describe()}); the model does not follow it yet"
            )
    return out
