"""The NICs per host that join a run's network, with evidence.

``--nics-per-node``, else NCCL's device list or channel lines, the EFA NICs
of the AWS instance aws-ofi-nccl names, the HCAs ``NCCL_IB_HCA`` lists, and
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

__all__ = ["hca_list", "infer_nics"]


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
    value = (setting_value(seen) or "").strip("\"'").replace("\\,", ",")  # a shell's escaped comma
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
            f"{value} per host assumed: the transport's usual {per_host} NICs for {host} GPUs, "
            f"shared by the {host_gpus} GPU(s) modelled per host"
        )
    if slots is not None and value > slots:
        value, note = slots, f"{slots} per host assumed: the board has {slots} NIC slots"
    return value, note
