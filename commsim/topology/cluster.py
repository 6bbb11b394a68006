"""Clusters: K copies of one box joined by an Ethernet or InfiniBand network.

:func:`cluster` copies a box (a shipped machine such as ``dgx_a100``, or any
single-box :class:`~commsim.topology.model.Topology`) ``nodes`` times and
joins the boxes' NICs by a network (DESIGN.md, "Machines to ship"; the
textbook's multi-machine setting, SEED_FACTS.md section 5):

- ``fabric="switch"``: one non-blocking network switch, ``switch0``;
- ``fabric="fat_tree"``: a two-level fat tree (leaf and spine switches) whose
  uplink capacity is the downlink capacity divided by the oversubscription.

Naming: every device of box ``k`` keeps its name behind the prefix ``n{k}_``
(``n1_pcie_switch0``), except GPUs, which are numbered across the cluster
(``gpu0`` .. ``gpu{8K-1}`` for 8-GPU boxes) so that rank order is box-major.
Every copied device has ``box = k``. Network switches belong to no box; they
carry ``box = 0``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from commsim.errors import TopologyError, UnknownNameError
from commsim.topology.io import load_shipped
from commsim.topology.linkkinds import LINK_KINDS, get_link_kind
from commsim.topology.model import Device, PhysicalLink, Topology
from commsim.units import parse_bandwidth, parse_time

__all__ = ["FABRICS", "NIC_PER", "cluster"]

FABRICS = ("switch", "fat_tree")
"""Network shapes :func:`cluster` builds."""

NIC_PER = ("gpu", "box")
"""How many NICs of each box join the network: one per GPU, or one per box."""

NETWORK_FAMILIES = ("ethernet", "infiniband")
"""Link families a cluster network may use."""

FALLBACK_NIC_PCIE = "pcie3_x16"
"""PCIe kind for NICs added to a box that has no PCIe link to copy the kind from."""


@dataclass(frozen=True)
class _Network:
    """The validated network parameters."""

    kind: str
    bandwidth_Bps: float | None
    latency_s: float | None

    def link(self, a: str, b: str, bandwidth_Bps: float | None = None) -> PhysicalLink:
        """A network link from ``a`` to ``b``; ``bandwidth_Bps`` overrides the NIC figure."""
        bandwidth = bandwidth_Bps if bandwidth_Bps is not None else self.bandwidth_Bps
        return PhysicalLink(a, b, self.kind, 1, bandwidth, self.latency_s)

    @property
    def per_link_Bps(self) -> float:
        """Bandwidth of one network link, per direction."""
        return self.bandwidth_Bps if self.bandwidth_Bps is not None else LINK_KINDS[self.kind].bandwidth_Bps


def cluster(
    box: str | Topology = "dgx_a100",
    nodes: int = 2,
    nic: str = "ib_hdr",
    nic_per: str = "gpu",
    fabric: str = "switch",
    oversubscription: float = 1.0,
    leaf_size: int | None = None,
    nic_bandwidth: str | float | None = None,
    nic_latency: str | float | None = None,
) -> Topology:
    """``nodes`` copies of ``box`` joined by a network of ``nic`` links.

    Parameters
    ----------
    box : str or Topology
        A shipped machine name (``"dgx_a100"``, ``"hgx_h100"``, ``"dgx1_v100"``,
        ...) or a single-box Topology.
    nodes : int
        Number of boxes, at least 1.
    nic : str
        Link kind of every network link, of family ethernet or infiniband
        (``"ib_hdr"``, ``"ib_ndr"``, ``"eth_100g"``, ...).
    nic_per : {"gpu", "box"}
        ``"gpu"``: one NIC per GPU joins the network (the box's first NICs,
        or all of them if it has fewer than GPUs); ``"box"``: only the first
        NIC. A box without NICs gets them: on each GPU's PCIe switch (or CPU),
        or, per box, on its first PCIe switch (or CPU).
    fabric : {"switch", "fat_tree"}
        One non-blocking switch ``switch0``, or leaf switches ``leaf{i}`` of
        ``leaf_size`` NICs under spine switches ``spine{j}``.
    oversubscription : float
        Fat tree only: a leaf's downlink capacity over its uplink capacity,
        at least 1 (1 is non-blocking, 2 halves the uplinks).
    leaf_size : int, optional
        Fat tree only: NICs per leaf switch; default the NICs of one box.
    nic_bandwidth, nic_latency : str or float, optional
        Per network link and direction (``"25 GB/s"``, ``"2 us"``); the
        kind's catalogue defaults when omitted.

    Returns
    -------
    Topology
        Named ``cluster_{nodes}x{box}``; the description states the network.

    Raises
    ------
    TopologyError
        On nodes < 1, a box of several boxes, a NIC kind outside ethernet
        and infiniband, oversubscription < 1, leaf_size < 1, fat-tree
        parameters given for a single switch, or a box that cannot host a NIC.
    UnknownNameError
        On an unknown box, link kind, ``nic_per`` or ``fabric``.

    Examples
    --------
    >>> topology = cluster("dgx_a100", nodes=4, nic="ib_hdr")
    >>> len(topology.gpus), list(topology.boxes)
    (32, [0, 1, 2, 3])
    """
    template = _load_box(box)
    _check_nodes(nodes)
    _check_choice(nic_per, NIC_PER, "nic_per")
    _check_choice(fabric, FABRICS, "fabric")
    _check_fabric(fabric, oversubscription, leaf_size)
    network = _network(nic, nic_bandwidth, nic_latency)
    devices: list[Device] = []
    links: list[PhysicalLink] = []
    nics: list[str] = []
    for k in range(nodes):
        box_nics = _copy_box(template, k, nic_per, devices, links)
        nics += box_nics
    per_box = len(nics) // nodes
    if fabric == "switch":
        net_devices, net_links, about = _single_switch(nics, network)
    else:
        net_devices, net_links, about = _fat_tree(nics, network, oversubscription, leaf_size or per_box)
    description = (
        f"{nodes} x {template.name} ({len(template.gpus)} GPUs each), {per_box} {nic} NIC(s) per box "
        f"({'one per GPU' if nic_per == 'gpu' else 'one per box'}); {about}"
    )
    return Topology(
        f"cluster_{nodes}x{template.name}",
        devices + net_devices,
        links + net_links,
        description=description,
    )


# -- validation ------------------------------------------------------------------------------


def _load_box(box: str | Topology) -> Topology:
    template = box if isinstance(box, Topology) else load_shipped(box)
    if len(template.boxes) > 1:
        raise TopologyError(
            f"cluster box {template.name!r} already spans boxes {sorted(template.boxes)}; give a single box"
        )
    return template


def _check_nodes(nodes: int) -> None:
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
        raise TopologyError(f"cluster needs nodes >= 1, got {nodes!r}")


def _check_choice(value: str, valid: Sequence[str], what: str) -> None:
    if value not in valid:
        raise UnknownNameError(f"cluster {what}", value, list(valid))


def _check_fabric(fabric: str, oversubscription: float, leaf_size: int | None) -> None:
    if not oversubscription >= 1:
        raise TopologyError(
            f"cluster oversubscription must be at least 1 (1 = non-blocking), got {oversubscription!r}"
        )
    if leaf_size is not None and (
        isinstance(leaf_size, bool) or not isinstance(leaf_size, int) or leaf_size < 1
    ):
        raise TopologyError(f"cluster leaf_size must be a whole number >= 1, got {leaf_size!r}")
    if fabric == "switch" and (oversubscription != 1 or leaf_size is not None):
        raise TopologyError(
            "cluster oversubscription and leaf_size apply to fabric='fat_tree' only; "
            "fabric='switch' is one non-blocking switch"
        )


def _network(nic: str, bandwidth: str | float | None, latency: str | float | None) -> _Network:
    kind = get_link_kind(nic)
    if kind.family not in NETWORK_FAMILIES:
        valid = sorted(k.name for k in LINK_KINDS.values() if k.family in NETWORK_FAMILIES)
        raise TopologyError(
            f"cluster nic {nic!r} is a {kind.family} link, not a network link; valid: {', '.join(valid)}"
        )
    return _Network(
        kind.name,
        parse_bandwidth(bandwidth) if bandwidth is not None else None,
        parse_time(latency) if latency is not None else None,
    )


# -- copying one box -------------------------------------------------------------------------


def _copy_box(
    template: Topology, k: int, nic_per: str, devices: list[Device], links: list[PhysicalLink]
) -> list[str]:
    """Append box ``k``'s devices and links; return the names of its NICs that join the network."""
    first_gpu = k * len(template.gpus)
    gpu_names = {gpu: f"gpu{first_gpu + i}" for i, gpu in enumerate(template.gpus)}

    def rename(name: str) -> str:
        return gpu_names.get(name) or f"n{k}_{name}"

    devices += [
        replace(d, name=rename(d.name), box=k, serves=tuple(rename(g) for g in d.serves))
        for d in template.devices
    ]
    links += [replace(_resolved(template, p), a=rename(p.a), b=rename(p.b)) for p in template.physical_links]
    own = template.devices_of_kind("nic")
    if own:
        wanted = min(len(own), len(template.gpus)) if nic_per == "gpu" else 1
        return [rename(n) for n in own[:wanted]]
    added = _added_nics(template, nic_per)
    for i, (host, physical) in enumerate(added):
        name = f"n{k}_nic{i}"
        serves = (gpu_names[template.gpus[i]],) if nic_per == "gpu" and i < len(template.gpus) else ()
        devices.append(Device(name, "nic", box=k, serves=serves))
        links.append(replace(physical, a=name, b=rename(host), count=1))
    return [f"n{k}_nic{i}" for i in range(len(added))]


def _resolved(template: Topology, physical: PhysicalLink) -> PhysicalLink:
    """``physical`` with the box's own kind defaults (``link_kinds:``) written into it.

    The cluster has no kind defaults of its own, so the box's must travel
    with its links (e.g. the idealised 16 GB/s of ``pcie_4gpu_switch``).
    """
    kind = LINK_KINDS[physical.kind]
    by_kind = template.kind_overrides.get(kind.name, (None, None))
    by_family = template.kind_overrides.get(kind.family, (None, None))
    bandwidth = next((v for v in (physical.bandwidth_Bps, by_kind[0], by_family[0]) if v is not None), None)
    latency = next((v for v in (physical.latency_s, by_kind[1], by_family[1]) if v is not None), None)
    return replace(physical, bandwidth_Bps=bandwidth, latency_s=latency)


def _added_nics(template: Topology, nic_per: str) -> list[tuple[str, PhysicalLink]]:
    """(host device, PCIe link to copy) for each NIC a NIC-less box gets."""
    if nic_per == "gpu":
        return [_nic_host(template, gpu) for gpu in template.gpus]
    hosts = template.devices_of_kind("pcie_switch") + template.devices_of_kind("cpu")
    if not hosts:
        raise TopologyError(
            f"cluster box {template.name!r} has no NIC, PCIe switch or CPU to put a per-box NIC on; "
            "use nic_per='gpu' (one NIC on each GPU)"
        )
    return [(hosts[0], _pcie_link(template, hosts[0]))]


def _nic_host(template: Topology, gpu: str) -> tuple[str, PhysicalLink]:
    """Where a GPU's added NIC goes: the GPU's PCIe switch, else its CPU, else the GPU itself."""
    for kind in ("pcie_switch", "cpu"):
        for physical in template.physical_links:
            if gpu in (physical.a, physical.b):
                other = physical.b if physical.a == gpu else physical.a
                if template.device(other).kind == kind:
                    return other, _resolved(template, physical)
    return gpu, _pcie_link(template, gpu)


def _pcie_link(template: Topology, host: str) -> PhysicalLink:
    """A PCIe link of ``host`` to copy for a new NIC (the fallback kind if it has none)."""
    for physical in template.physical_links:
        if host in (physical.a, physical.b) and LINK_KINDS[physical.kind].family == "pcie":
            return _resolved(template, physical)
    return PhysicalLink(host, host, FALLBACK_NIC_PCIE)


# -- networks --------------------------------------------------------------------------------


def _single_switch(nics: list[str], network: _Network) -> tuple[list[Device], list[PhysicalLink], str]:
    devices = [Device("switch0", "switch")]
    links = [network.link(n, "switch0") for n in nics]
    return devices, links, f"one non-blocking {network.kind} switch, switch0, joins all {len(nics)} NICs"


def _fat_tree(
    nics: list[str], network: _Network, oversubscription: float, leaf_size: int
) -> tuple[list[Device], list[PhysicalLink], str]:
    """Leaves of ``leaf_size`` NICs; every leaf joined to every spine by one link.

    A leaf with n NICs has n x B of downlinks (B per NIC link) and
    n x B / oversubscription of uplinks, split evenly over
    ceil(leaf_size / oversubscription) spines (one link per leaf and spine,
    at B exactly when the ratio divides; a narrower link otherwise).
    """
    leaves = [nics[i : i + leaf_size] for i in range(0, len(nics), leaf_size)]
    spines = math.ceil(leaf_size / oversubscription)
    devices = [Device(f"leaf{i}", "switch") for i in range(len(leaves))]
    devices += [Device(f"spine{j}", "switch") for j in range(spines)]
    links: list[PhysicalLink] = []
    for i, members in enumerate(leaves):
        links += [network.link(n, f"leaf{i}") for n in members]
        uplink_Bps = len(members) * network.per_link_Bps / oversubscription / spines
        exact = math.isclose(uplink_Bps, network.per_link_Bps, rel_tol=1e-12)
        links += [network.link(f"leaf{i}", f"spine{j}", None if exact else uplink_Bps) for j in range(spines)]
    about = (
        f"two-level {network.kind} fat tree: {len(leaves)} leaf switch(es) of up to {leaf_size} NICs, "
        f"{spines} spine switch(es), each leaf joined to every spine; oversubscription "
        f"{oversubscription:g}:1, so a full leaf's uplinks carry 1/{oversubscription:g} of its downlink "
        f"capacity ({leaf_size * network.per_link_Bps / oversubscription / 1e9:g} of "
        f"{leaf_size * network.per_link_Bps / 1e9:g} GB/s per direction)"
    )
    return devices, links, about
