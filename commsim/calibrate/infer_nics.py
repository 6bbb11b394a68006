"""The NICs per host that join a run's network, with evidence.

``--nics-per-node``, else NCCL's device list or channel lines, the EFA NICs
of the AWS instance aws-ofi-nccl names, the HCA ports ``NCCL_IB_HCA`` lists, and
last the transport's usual count (assumed; see
:mod:`~commsim.calibrate.infer_network` for the defaults).
"""

from __future__ import annotations

import math
import re

from commsim.calibrate.evidence import Evidence, Fact
from commsim.calibrate.infer_layout import InferenceError, given
from commsim.calibrate.infer_network import EFA_BY_PLATFORM, efa_platform
from commsim.calibrate.settings import RunSettings, setting, setting_value

__all__ = ["MAX_NICS_PER_NODE", "hca_list", "infer_nics"]

MAX_NICS_PER_NODE = 256
"""The most NICs per host taken from an option or a log line (hosts have up to 32 net devices): a
garbled ``(found 99999 nics)`` built a network of 10^5 NICs per host for minutes."""


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
        if not 1 <= option <= MAX_NICS_PER_NODE:
            raise InferenceError(f"--nics-per-node must be 1 to {MAX_NICS_PER_NODE}, not {option}")
        return given("nics_per_node", option, "--nics-per-node")
    from commsim.topology.linkkinds import LINK_KINDS

    listed, platform = settings.nics, efa_platform(settings)
    kind = LINK_KINDS.get(network_kind) if network_kind else None
    efa = kind is None or kind.transport == "efa"
    if platform is not None and efa and (listed is None or listed.source != "NET device list"):
        name, per_host = EFA_BY_PLATFORM[str(platform.value)]
        note = f"{platform.value} has {per_host} {name} NICs (AWS instance page)"
        return Fact("nics_per_node", per_host, (platform,), option="--nics-per-node", note=note)
    if listed is not None:
        used = listed.source.startswith("channel lines")
        return Fact(
            "nics_per_node",
            _bounded(listed),
            (listed,),
            option="--nics-per-node",
            note="the NICs NCCL's channels use on a host" if used else "the NICs NCCL lists on a host",
        )
    hcas = hca_list(settings) if kind is not None and kind.transport in ("ib", "roce") else None
    if hcas is not None:
        note = "NCCL's IB transport opens a net device per HCA port it is given"
        return Fact("nics_per_node", _bounded(hcas), (hcas,), option="--nics-per-node", note=note)
    value, note = _assumed_nics(per_host_default, host_gpus, network_kind, slots)
    return Fact("nics_per_node", value, (), assumed=True, option="--nics-per-node", note=note)


def _bounded(read: Evidence) -> int:
    """The NIC count a log line gives, if at most :data:`MAX_NICS_PER_NODE`."""
    if int(read.value) > MAX_NICS_PER_NODE:
        raise InferenceError(
            f"the {read.source} gives {read.value} NICs per host, above the {MAX_NICS_PER_NODE} "
            "commsim models; if the line is garbled, pass --nics-per-node N",
            line=read.line,
        )
    return int(read.value)


_HCA_NAME = re.compile(r"[A-Za-z][\w.-]*_\d+|(?:bnxt_re|irdma|qedr)\d+|(?:ib|roce)(?:P\d+)?p\d+s\d+(?:f\d+)?")
"""One device of ``NCCL_IB_HCA`` as a whole name: a driver's name and index (``mlx5_0``,
``mlx5_bond_0``, ``ionic_0``; Broadcom's, Intel's and QLogic's drivers register theirs without the
underscore: ``bnxt_re0``, ``irdma0``, ``qedr0``) or the kernel's PCI-based RDMA name (``ibp12s0``,
``rocep1s0f0``, and ``roceP2p1s0f1`` for a card in PCI domain 2: rdma-core's udev naming puts
``P<domain>`` first for any domain but 0, as systemd does for ``enP2p1s0f1np1``); not a family prefix
(``mlx5``), which NCCL matches against every card it begins."""

_HCA_ENTRY = re.compile(r"(?P<name>[^:]+)(?::(?P<port>[1-9]\d*))?")
"""One ``NCCL_IB_HCA`` entry: a device name, and the port after ``:`` when one is given."""


def hca_list(settings: RunSettings) -> Evidence | None:
    """How many NCCL net devices an ``NCCL_IB_HCA`` list names, when it is a plain list of whole device names.

    NCCL's env docs (NCCL_IB_HCA): a comma-separated list, a port after ``:``
    (``mlx5_0:1``); a leading ``^`` makes it an exclusion list, a ``=`` (after
    any ``^``) makes the tokens exact names, "otherwise by default NCCL would
    treat each token as a prefix". An exclusion list (``^mlx5_2``, ``^=mlx5_3:1``)
    says nothing of the NICs used, nor does a family prefix (``mlx5``: every card
    it begins). NCCL's IB transport (``ncclIbInit``) opens one net device per
    active port it matches, so ``mlx5_0:1,mlx5_0:2`` is two devices (NCCL prints
    ``NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_0:2/IB``): the list counts its
    distinct (device, port) entries. A name without a port takes all the
    device's active ports, which the log does not tell: one each is assumed
    (mlx5 and most RDMA drivers give each port a device of its own), and the
    source says so. Without ``=`` NCCL reads a name as a prefix, so ``mlx5_1``
    also takes an ``mlx5_10`` a host has and the list leaves out: none is
    assumed, and the source says so where the list names an ``X_1`` without
    its ``X_10``.

    Examples
    --------
    >>> from commsim.calibrate.settings import read_settings
    >>> hca_list(read_settings(["export NCCL_IB_HCA==mlx5_0:1,mlx5_3:1,mlx5_3:2"])).value
    3
    >>> hca_list(read_settings(["export NCCL_IB_HCA=^mlx5_2"])) is None
    True
    >>> hca_list(read_settings(["export NCCL_IB_HCA=mlx5"])) is None
    True
    >>> hca_list(read_settings(["export NCCL_IB_HCA==rocep1s0f1,roceP2p1s0f1"])).value
    2
    >>> hca_list(read_settings(["export NCCL_IB_HCA=bnxt_re0:1,bnxt_re1:1,bnxt_re8:1"])).value
    3
    >>> hca_list(read_settings(['export NCCL_IB_HCA="=bnxt_re_benic1b,bnxt_re_benic2b"'])).value
    2
    >>> hca_list(read_settings(["export NCCL_IB_HCA=bnxt_re_benic1b,bnxt_re_benic2b"])) is None
    True
    """
    seen = setting(settings, "NCCL_IB_HCA")
    value = (setting_value(seen) or "").strip("\"'").replace("\\,", ",")  # a shell's escaped comma
    if seen is None or not value or value.startswith("^"):
        return None
    ports = _hca_ports(value.removeprefix("="), exact=value.startswith("="))
    if ports is None:
        return None
    count = sum(max(1, len(p - {None})) for p in ports.values())
    bare = [name for name, p in ports.items() if None in p]
    if not bare:
        source = f"NCCL_IB_HCA ({seen.source}) names {count} HCA port(s)"
    else:
        each = "each" if len(bare) == len(ports) else f"of {_listed(bare)}"
        named = f"{count} HCA(s)" if len(bare) == len(ports) else f"{count} HCA port(s)"
        source = (
            f"NCCL_IB_HCA ({seen.source}) names {named}, one active port {each} assumed "
            "(NCCL takes every active port of a name without ':port')"
        )
    for name in [] if value.startswith("=") else list(ports):
        if re.search(r"(?:_|bnxt_re|irdma|qedr)1$", name) and f"{name}0" not in ports:
            source += f"; NCCL reads {name} as a prefix (no '='): no {name}0-{name}9 on the host assumed"
    return Evidence(count, source, seen.line, seen.text)


def _hca_ports(listing: str, exact: bool = False) -> dict[str, set[int | None]] | None:
    """The ports each device of an ``NCCL_IB_HCA`` list (after its ``^``/``=``) names (None: no port
    given), or None when an entry is no whole device name. In an ``=`` list (``exact``) NCCL matches
    every token as an exact name, so a name renamed by udev is whole too (``bnxt_re_benic1b``: see
    :func:`_exact_name`)."""
    ports: dict[str, set[int | None]] = {}
    for token in listing.split(","):
        entry = _HCA_ENTRY.fullmatch(token.strip())
        if entry is None or not (
            _HCA_NAME.fullmatch(entry["name"]) or (exact and _exact_name(entry["name"]))
        ):
            return None
        ports.setdefault(entry["name"], set()).add(int(entry["port"]) if entry["port"] else None)
    return ports


def _exact_name(name: str) -> bool:
    """Whether ``name`` reads as one renamed RDMA device's own name in an ``=`` list: underscore-joined
    parts of letters and digits with an index digit among them (``bnxt_re_benic1b``), not a family
    (``bnxt_re``, ``mlx5``), a '^' NCCL reads only first, nor a cut PCI name (``roceP2``)."""
    return bool(re.fullmatch(r"[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+", name)) and any(
        c.isdigit() for c in name
    )


def _listed(names: list[str]) -> str:
    """``mlx5_0, mlx5_1`` or, for more than three, ``16: mlx5_0 ... mlx5_17`` (first and last listed)."""
    return ", ".join(names) if len(names) <= 3 else f"{len(names)}: {names[0]} ... {names[-1]}"


_TRANSPORT_HOST_GPUS = {"slingshot": 4, "efa": 8, "tcpxo": 8, "tcpx": 8}
"""GPUs of the hosts a transport's usual NIC count describes (:mod:`~commsim.calibrate.infer_network`):
HPE Cray EX nodes (4 GPUs, 4 Slingshot NICs), AWS p4d/p5 and GCP A3 (8 GPUs). A host modelled with
fewer GPUs gets their share of those NICs: NCCL uses the NICs near the GPUs it runs on."""


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
            f"{value} per host assumed: this transport's hosts usually have {per_host} NICs for {host} "
            f"GPUs, and a host modelled with {host_gpus} GPU(s) gets its share"
        )
    if slots is not None and value > slots:
        value, note = slots, f"{slots} per host assumed: the board has {slots} NIC slots"
    return value, note
