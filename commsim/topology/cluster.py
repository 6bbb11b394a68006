"""Clusters: K copies of one box joined by an Ethernet or InfiniBand network.

:func:`cluster` copies a box (a shipped machine such as ``dgx_a100``, a
machine-class builder such as ``nvswitch_box`` with its defaults, or any
single-box :class:`~commsim.topology.model.Topology`, e.g. one made by
:mod:`commsim.topology.machines`, an NVL72 rack included) ``nodes`` times
and joins the boxes' NICs by a network (DESIGN.md, "Machines to ship"; the
textbook's multi-machine setting, SEED_FACTS.md section 5):

- ``fabric="switch"``: one non-blocking network switch, ``switch0``;
- ``fabric="fat_tree"``: a two-level fat tree (leaf and spine switches) whose
  uplink capacity is the downlink capacity divided by the oversubscription;
- ``fabric="rails"``: rail-optimised: NIC i of every node on leaf switch
  ``rail{i}_leaf{c}`` (one leaf per rail and group of ``leaf_size`` nodes),
  the leaves joined by spines as in the fat tree.

:func:`nics_reaching` tells which NICs a set of GPUs sends through (a run
with one GPU per node uses one NIC of each node, not all eight).

Naming: every device of box ``k`` keeps its name behind the prefix ``n{k}_``
(``n1_pcie_switch0``), except GPUs, which are numbered across the cluster
(``gpu0`` .. ``gpu{8K-1}`` for 8-GPU boxes) so that rank order is box-major.
Every copied device has ``box = k``. Network switches belong to no box; they
carry ``box = 0``.
"""

from __future__ import annotations

from collections.abc import Sequence

from commsim.errors import TopologyError, UnknownNameError
from commsim.topology.builders import is_whole_number, whole_number_type
from commsim.topology.cluster_box import FALLBACK_NIC_PCIE as FALLBACK_NIC_PCIE  # re-exported
from commsim.topology.cluster_box import copy_box
from commsim.topology.elements import Device, PhysicalLink
from commsim.topology.linkkinds import LINK_KINDS, get_link_kind
from commsim.topology.machines import MACHINES
from commsim.topology.machines.networks import Network, Shape, fat_tree, rails, single_switch
from commsim.topology.model import Topology
from commsim.units import parse_bandwidth, parse_time

__all__ = ["DEFAULT_NIC", "FABRICS", "NIC_PER", "cluster", "nics_reaching"]

FABRICS = ("switch", "fat_tree", "rails")
"""Network shapes :func:`cluster` builds."""

NIC_PER = ("gpu", "box")
"""How many NICs of each box join the network: one per GPU, or one per box."""

NETWORK_FAMILIES = ("ethernet", "infiniband")
"""Link families a cluster network may use."""

DEFAULT_NIC = "ib_hdr"
"""Network kind of a cluster whose box does not name one (its NICs' ``model``)."""


def cluster(
    box: str | Topology = "dgx_a100",
    nodes: int = 2,
    nic: str | None = None,
    nic_per: str = "gpu",
    fabric: str = "switch",
    oversubscription: float = 1.0,
    leaf_size: int | None = None,
    nic_bandwidth: str | float | None = None,
    nic_latency: str | float | None = None,
    nics_per_node: int | None = None,
) -> Topology:
    """``nodes`` copies of ``box`` joined by a network of ``nic`` links.

    Parameters
    ----------
    box : str or Topology
        A shipped machine name (``"dgx_a100"``, ``"hgx_h100"``, ``"dgx1_v100"``,
        ...), a machine-class builder name (``"nvswitch_box"``, built with its
        defaults), or a single-box Topology (e.g. ``nvswitch_box(fabric="nvlink5")``
        or ``nvl72_rack()``).
    nodes : int
        Number of boxes, at least 1.
    nic : str, optional
        Link kind of every network link, of family ethernet or infiniband
        (``"ib_hdr"``, ``"ib_ndr"``, ``"roce_400g"``, ``"efa_v2"``, ...).
        Default: the kind the box's NICs are for (their ``model``, as the
        machine-class builders set it), else :data:`DEFAULT_NIC`.
    nic_per : {"gpu", "box"}
        ``"gpu"``: one NIC per GPU joins the network (all of them if the box
        has fewer than GPUs; from a box with more, as many as GPUs, picked
        evenly: use ``nics_per_node`` to join all 32 NICs of an AWS p5);
        ``"box"``: only the first NIC. A box without NICs gets them: on
        each GPU's PCIe switch (or CPU), or, per box, on its first PCIe
        switch (or CPU).
    fabric : {"switch", "fat_tree", "rails"}
        One non-blocking switch ``switch0``; leaf switches ``leaf{i}`` of
        ``leaf_size`` NICs under spine switches ``spine{j}``; or
        rail-optimised leaves ``rail{r}_leaf{c}`` (NIC r of nodes
        c x leaf_size .. (c+1) x leaf_size - 1) under spines ``spine{j}``.
        Rails are the DGX SuperPOD design: a GPU's peers of the same index
        in other nodes are one leaf hop away, and NCCL keeps most traffic
        on its rail (NVIDIA DGX SuperPOD reference architecture, "compute
        fabric": rail-optimised, full fat tree, one leaf per rail in each
        scalable unit of 32 nodes).
    oversubscription : float
        Fat tree and rails: a leaf's downlink capacity over its uplink
        capacity, at least 1 (1 is non-blocking, 2 halves the uplinks).
    leaf_size : int, optional
        Fat tree: NICs per leaf switch, default the NICs of one box.
        Rails: nodes per rail leaf, default all nodes (one leaf per rail).
    nic_bandwidth, nic_latency : str or float, optional
        Per network link and direction (``"25 GB/s"``, ``"2 us"``); the
        kind's catalogue defaults when omitted.
    nics_per_node : int, optional
        How many NICs of each box join the network (overrides ``nic_per``):
        picked evenly from the box's NICs (4 of 8: nic0, nic2, nic4, nic6),
        each GPU whose own NIC stays out then counting as served by its
        nearest joined NIC; a box without NICs gets this many, spread over
        its GPUs' PCIe switches (or CPUs).

    Returns
    -------
    Topology
        Named ``cluster_{nodes}x{box}``; the description states the network.

    Raises
    ------
    TopologyError
        On nodes < 1, a box of several boxes, a NIC kind outside ethernet
        and infiniband, oversubscription < 1, leaf_size < 1, fat-tree
        parameters given for a single switch, a box that cannot host a NIC,
        or nics_per_node < 1 or above the box's own NICs.
    UnknownNameError
        On an unknown box, link kind, ``nic_per`` or ``fabric``.

    Examples
    --------
    >>> topology = cluster("dgx_a100", nodes=4, nic="ib_hdr")
    >>> len(topology.gpus), list(topology.boxes)
    (32, [0, 1, 2, 3])
    """
    template = _load_box(box)
    nodes = _check_nodes(nodes)
    _check_choice(nic_per, NIC_PER, "nic_per")
    _check_choice(fabric, FABRICS, "fabric")
    leaf_size = _check_fabric(fabric, oversubscription, leaf_size)
    nics_per_node = _check_nics_per_node(template, nics_per_node)
    network = _network(nic or _box_nic_kind(template), nic_bandwidth, nic_latency)
    devices: list[Device] = []
    links: list[PhysicalLink] = []
    nics = [copy_box(template, k, nic_per, devices, links, nics_per_node) for k in range(nodes)]
    net_devices, net_links, about = _join(nics, network, fabric, oversubscription, leaf_size)
    per_box = len(nics[0])
    joined = _nic_share(per_box, len(template.gpus)) if nics_per_node else _NIC_PER_TEXT[nic_per]
    description = (
        f"{nodes} x {template.name} ({len(template.gpus)} GPUs each), "
        f"{per_box} {network.kind} NIC(s) per box ({joined}); {about}"
    )
    return Topology(
        f"cluster_{nodes}x{template.name}",
        devices + net_devices,
        links + net_links,
        description=description,
        peer_to_peer=template.peer_to_peer,
    )


def _join(
    nics: list[list[str]], network: Network, fabric: str, oversubscription: float, leaf_size: int | None
) -> Shape:
    """The network joining every box's NICs (``nics[k]``: box k's): its devices, links and description."""
    flat = [n for box_nics in nics for n in box_nics]
    if fabric == "switch":
        return single_switch(flat, network)
    if fabric == "fat_tree":
        return fat_tree(flat, network, oversubscription, leaf_size or len(nics[0]))
    return rails(nics, network, oversubscription, leaf_size or len(nics))


_NIC_PER_TEXT = {"gpu": "one per GPU", "box": "one per box"}
"""How the description says which NICs of a box joined, per ``nic_per``."""


def _nic_share(nics: int, gpus: int) -> str:
    """``one per GPU``, ``one per 4 GPUs``, ``3 for 8 GPUs``: a box's NICs against its GPUs.

    Said per GPU, not per node: a box may be a rack of several hosts (an NVL72
    rack's 72 NICs are 4 per 4-GPU host).
    """
    if nics == gpus:
        return "one per GPU"
    if nics and gpus % nics == 0:
        return f"one per {gpus // nics} GPUs"
    return f"{nics} for {gpus} GPUs"


# -- validation ------------------------------------------------------------------------------


def _load_box(box: str | Topology) -> Topology:
    from commsim.topology.io import load_shipped, shipped_topologies  # PyYAML and the file schema, on use

    if isinstance(box, Topology):
        template = box
    elif box in MACHINES and box not in shipped_topologies():
        template = MACHINES[box]()
    elif isinstance(box, str) and box in shipped_topologies():
        template = load_shipped(box)
    else:
        raise UnknownNameError("cluster box", str(box), [*MACHINES, *shipped_topologies()])
    if len(template.boxes) > 1:
        raise TopologyError(
            f"cluster box {template.name!r} already spans boxes {sorted(template.boxes)}; give a single box"
        )
    return template


def _check_nodes(nodes: int) -> int:
    nodes = whole_number_type(nodes, "nodes", "cluster")
    if nodes < 1:
        raise TopologyError(f"cluster needs nodes >= 1, got {nodes!r}")
    return nodes


def _check_choice(value: str, valid: Sequence[str], what: str) -> None:
    if value not in valid:
        raise UnknownNameError(f"cluster {what}", value, list(valid))


def _check_fabric(fabric: str, oversubscription: float, leaf_size: int | None) -> int | None:
    """``leaf_size`` as an int (None stays None) if the fabric's figures are valid."""
    if not oversubscription >= 1:
        raise TopologyError(
            f"cluster oversubscription must be at least 1 (1 = non-blocking), got {oversubscription!r}"
        )
    if leaf_size is not None and (not is_whole_number(leaf_size) or leaf_size < 1):
        raise TopologyError(f"cluster leaf_size must be a whole number >= 1, got {leaf_size!r}")
    if fabric == "switch" and (oversubscription != 1 or leaf_size is not None):
        raise TopologyError(
            "cluster oversubscription and leaf_size apply to fabric='fat_tree' and 'rails' only; "
            "fabric='switch' is one non-blocking switch"
        )
    return None if leaf_size is None else int(leaf_size)


def _check_nics_per_node(template: Topology, nics_per_node: int | None) -> int | None:
    """``nics_per_node`` as an int (None stays None) if the box can give that many NICs."""
    if nics_per_node is None:
        return None
    if not is_whole_number(nics_per_node) or nics_per_node < 1:
        raise TopologyError(f"cluster nics_per_node must be a whole number >= 1, got {nics_per_node!r}")
    count = int(nics_per_node)
    own = template.devices_of_kind("nic")
    if own and count > len(own):
        raise TopologyError(
            f"cluster nics_per_node={count} but box {template.name!r} has {len(own)} NIC(s); "
            f"give at most {len(own)}"
        )
    return count


def _box_nic_kind(template: Topology) -> str:
    """The network kind the box's NICs are for (their model), else :data:`DEFAULT_NIC`."""
    for name in template.devices_of_kind("nic"):
        model = template.device(name).model
        if model in LINK_KINDS and LINK_KINDS[model].family in NETWORK_FAMILIES:
            return model
    return DEFAULT_NIC


def _network(nic: str, bandwidth: str | float | None, latency: str | float | None) -> Network:
    valid = sorted(k.name for k in LINK_KINDS.values() if k.family in NETWORK_FAMILIES)
    if nic not in LINK_KINDS:  # the network kinds only, not every kind of the catalogue
        raise UnknownNameError("cluster nic", str(nic), valid)
    kind = get_link_kind(nic)
    if kind.family not in NETWORK_FAMILIES:
        raise TopologyError(
            f"cluster nic {nic!r} is a {kind.family} link, not a network link; valid: {', '.join(valid)}"
        )
    return Network(
        kind.name,
        parse_bandwidth(bandwidth) if bandwidth is not None else None,
        parse_time(latency) if latency is not None else None,
    )


# -- which NICs a run uses -----------------------------------------------------------------------


def nics_reaching(topology: Topology, gpus: Sequence[str]) -> list[str]:
    """The NICs that the given GPUs send through, in declaration order.

    A GPU uses the NICs that serve it (``Device.serves``); a GPU served by
    none uses the nearest NIC of its box (fewest hops; the first among
    equals). Only NICs joined to a network switch count when the topology
    has any (a cluster); in a single box, every NIC does.

    Parameters
    ----------
    topology : Topology
        A box or a cluster.
    gpus : sequence of str
        GPU names, e.g. the ranks of a run.

    Returns
    -------
    list of str
        NIC names; empty if the GPUs' boxes have no NIC.

    Raises
    ------
    UnknownNameError
        If a name is no device of the topology.
    TopologyError
        If a device is not a GPU.

    Examples
    --------
    >>> topology = cluster("hgx_h100", nodes=2, nic="ib_ndr")
    >>> nics_reaching(topology, ["gpu0", "gpu8"])
    ['n0_nic0', 'n1_nic0']
    """
    nics = topology.devices_of_kind("nic")
    networked = [n for n in nics if any(topology.device(m).kind == "switch" for m in topology.successors(n))]
    candidates = networked or nics
    used: set[str] = set()
    for gpu in gpus:
        device = topology.device(gpu)
        if device.kind != "gpu":
            raise TopologyError(f"nics_reaching takes GPUs; {gpu!r} is a {device.kind}")
        mine = [n for n in candidates if topology.device(n).box == device.box]
        own = [n for n in mine if gpu in topology.device(n).serves]
        if not own and mine:
            own = [min(mine, key=lambda n: len(topology.route(gpu, n)))]
        used.update(own)
    return [n for n in nics if n in used]
