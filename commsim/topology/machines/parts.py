"""Shared parts of the machine-class builders: checks, the host side (CPUs, PCIe, NICs).

Every machine class is a GPU fabric (NVSwitch, NVLink mesh, NVLink bridges,
xGMI mesh, or none) on top of a host side that all classes share:

- ``sockets`` CPUs ``cpu0`` .. joined pairwise by inter-socket links; GPUs
  are split over the sockets in contiguous blocks (GPU i on socket
  ``i * sockets // gpus``), as on the DGX/HGX baseboards where GPUs 0-3 hang
  off CPU 0 and 4-7 off CPU 1;
- PCIe: each GPU on a root port of its CPU (``gpus_per_switch=None``) or on
  PCIe switches ``pcie_switch{j}`` of ``gpus_per_switch`` GPUs, each switch
  on its first GPU's CPU;
- NICs ``nic{j}`` on those PCIe switches (or CPUs), spread evenly; each NIC
  ``serves`` the GPUs closest to it (see :func:`place_nics`), and its
  ``model`` is the network link kind it is meant for (``"ib_ndr"``), which
  :func:`commsim.topology.cluster.cluster` uses as its default network.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from commsim.errors import TopologyError
from commsim.topology.elements import Device, PhysicalLink
from commsim.topology.linkkinds import LINK_KINDS, get_link_kind
from commsim.topology.model import Topology
from commsim.units import parse_bandwidth

__all__ = ["Group", "Host", "Parts", "check_bandwidth", "check_kind", "check_whole", "place_nics", "spread"]

NETWORK_FAMILIES = ("ethernet", "infiniband")
"""Families a NIC's network kind may belong to."""

SOCKET_LINKS = {"qpi": 2, "upi": 3, "upi2": 4, "xgmi": 4}
"""Inter-socket links between two CPUs by kind: QPI on Broadwell-EP (2), UPI on Xeon Scalable
(up to 3), UPI 2.0 on Sapphire Rapids (4, Intel ARK for the Xeon Platinum 8480C of DGX H100),
xGMI on 2P AMD EPYC (up to 4, AMD EPYC platform briefs)."""


# -- checks ------------------------------------------------------------------------------------


def check_whole(value: object, minimum: int, what: str, builder: str) -> int:
    """``value`` if it is a whole number of at least ``minimum``.

    Raises
    ------
    TopologyError
        ``builder 'nvswitch_box' needs gpus >= 2 (a whole number), got 1``.
    """
    from commsim.topology.builders import whole_number_type

    number = whole_number_type(value, what, builder)
    if number < minimum:
        raise TopologyError(f"builder {builder!r} needs {what} >= {minimum} (a whole number), got {number!r}")
    return number


def check_kind(name: str, families: Sequence[str], what: str, builder: str) -> str:
    """``name`` if it is a link kind of one of ``families``.

    Raises
    ------
    UnknownNameError
        If ``name`` is no link kind at all.
    TopologyError
        If it is of another family; the message lists the valid kinds.
    """
    kind = get_link_kind(name)
    if kind.family not in families:
        valid = sorted(k.name for k in LINK_KINDS.values() if k.family in families)
        raise TopologyError(
            f"builder {builder!r}: {what} {name!r} is a {kind.family} link, not "
            f"{' or '.join(families)}; valid: {', '.join(valid)}"
        )
    return name


def check_bandwidth(value: str | float | None, what: str, builder: str) -> float | None:
    """``value`` in bytes per second (None stays None: the kind's default).

    Raises
    ------
    UnitError
        If the text cannot be read as a bandwidth.
    TopologyError
        If it is not positive.
    """
    if value is None:
        return None
    bandwidth_Bps = parse_bandwidth(value)
    if not bandwidth_Bps > 0:
        raise TopologyError(f"builder {builder!r} needs a positive {what}, got {value!r}")
    return bandwidth_Bps


# -- assembly ----------------------------------------------------------------------------------


@dataclass
class Parts:
    """Devices and links of one box under construction."""

    devices: list[Device] = field(default_factory=list)
    links: list[PhysicalLink] = field(default_factory=list)

    def add(self, name: str, kind: str, model: str | None = None, serves: Sequence[str] = ()) -> str:
        """Add a device; return its name."""
        self.devices.append(Device(name, kind, model=model, serves=tuple(serves)))
        return name

    def link(self, a: str, b: str, kind: str, count: int = 1, bandwidth_Bps: float | None = None) -> None:
        """Add ``count`` bonded links of ``kind`` between ``a`` and ``b``."""
        self.links.append(PhysicalLink(a, b, kind, count, bandwidth_Bps))

    def topology(self, name: str, description: str, peer_to_peer: bool = True) -> Topology:
        """The finished box."""
        return Topology(name, self.devices, self.links, description=description, peer_to_peer=peer_to_peer)


@dataclass(frozen=True)
class Group:
    """GPUs that share one PCIe attachment point (a PCIe switch, or a CPU's root ports)."""

    host: str
    gpus: tuple[str, ...]


@dataclass(frozen=True)
class Host:
    """The host side of a box: CPUs, PCIe tree and NICs (validated by :meth:`checked`).

    Attributes
    ----------
    pcie : str
        PCIe kind of every GPU, switch and NIC link.
    sockets : int
        CPUs.
    inter_socket : str
        Kind of the links between CPUs (``SOCKET_LINKS`` of them per pair).
    gpus_per_switch : int or None
        None: each GPU on a root port of its CPU; k: PCIe switches of k GPUs.
    nics : int
        NICs in the box, spread over the PCIe switches (or CPUs).
    nic : str
        The network kind the NICs are for (their ``model``).
    """

    pcie: str
    sockets: int
    inter_socket: str
    gpus_per_switch: int | None
    nics: int
    nic: str

    def checked(self, gpus: int, builder: str) -> Host:
        """This host side if its figures fit ``gpus`` GPUs; TopologyError or UnknownNameError otherwise."""
        check_kind(self.pcie, ("pcie",), "pcie", builder)
        sockets = check_whole(self.sockets, 1, "sockets", builder)
        if sockets > gpus:
            raise TopologyError(
                f"builder {builder!r}: {sockets} sockets for {gpus} GPUs; give sockets <= gpus"
            )
        check_kind(self.inter_socket, ("inter_socket",), "inter_socket", builder)
        per_switch = self.gpus_per_switch
        if per_switch is not None:
            per_switch = check_whole(per_switch, 1, "gpus_per_switch", builder)
        nics = check_whole(self.nics, 0, "nics", builder)
        check_kind(self.nic, NETWORK_FAMILIES, "nic", builder)
        return replace(self, sockets=sockets, gpus_per_switch=per_switch, nics=nics)  # ints, not NumPy's


def add_host(parts: Parts, gpus: Sequence[str], host: Host) -> list[Group]:
    """Add CPUs, inter-socket links, the PCIe tree and NICs for ``gpus``; return the PCIe groups."""
    cpus = [parts.add(f"cpu{s}", "cpu") for s in range(host.sockets)]
    for a in range(host.sockets):
        for b in range(a + 1, host.sockets):
            parts.link(cpus[a], cpus[b], host.inter_socket, SOCKET_LINKS.get(host.inter_socket, 1))
    socket_of = {gpu: cpus[i * host.sockets // len(gpus)] for i, gpu in enumerate(gpus)}
    groups = pcie_groups(parts, gpus, socket_of, host.pcie, host.gpus_per_switch)
    place_nics(parts, groups, host.nics, host.nic, host.pcie)
    return groups


def pcie_groups(
    parts: Parts, gpus: Sequence[str], parent: dict[str, str], pcie: str, gpus_per_switch: int | None
) -> list[Group]:
    """Join each GPU to its ``parent`` (CPU) directly, or through switches of ``gpus_per_switch`` GPUs."""
    if gpus_per_switch is None:
        for gpu in gpus:
            parts.link(gpu, parent[gpu], pcie)
        return [Group(parent[gpu], (gpu,)) for gpu in gpus]
    groups = []
    for j, start in enumerate(range(0, len(gpus), gpus_per_switch)):
        members = tuple(gpus[start : start + gpus_per_switch])
        switch = parts.add(f"pcie_switch{j}", "pcie_switch")
        parts.link(switch, parent[members[0]], pcie)
        for gpu in members:
            parts.link(gpu, switch, pcie)
        groups.append(Group(switch, members))
    return groups


def spread(gpus: int, nics: int) -> list[tuple[int, list[int]]]:
    """(home GPU, served GPUs) of each of ``nics`` NICs spread evenly over ``gpus`` GPUs (indices).

    With at most one NIC per GPU, NIC j sits by GPU ceil(j g / nics) and
    serves the GPUs s with floor(s nics / g) = j: its own and the NIC-less
    GPUs after it (4 NICs for 8 GPUs: NIC 0 by GPU 0 serves GPUs 0 and 1).
    With more NICs than GPUs, NIC j sits by GPU floor(j g / nics) and
    serves it alone (32 EFA NICs for 8 GPUs: 4 per GPU).
    """
    if nics <= gpus:
        return [
            (-(-j * gpus // nics), [s for s in range(gpus) if s * nics // gpus == j]) for j in range(nics)
        ]
    return [(j * gpus // nics, [j * gpus // nics]) for j in range(nics)]


def place_nics(parts: Parts, groups: Sequence[Group], nics: int, nic: str, pcie: str, first: int = 0) -> None:
    """Spread ``nics`` NICs ``nic{first + j}`` over the GPUs of ``groups`` as :func:`spread` says.

    Each NIC sits on the PCIe switch (or CPU) of its home GPU: a DGX A100
    (switches of 2 GPUs, 8 NICs) gets 2 NICs per switch, one per GPU.
    """
    gpus = [(gpu, group.host) for group in groups for gpu in group.gpus]
    for j, (home, served) in enumerate(spread(len(gpus), nics)):
        name = parts.add(f"nic{first + j}", "nic", model=nic, serves=[gpus[s][0] for s in served])
        parts.link(name, gpus[home][1], pcie)


def default_model(gpu_model: str | None, by_fabric: dict[str, str], fabric: str) -> str | None:
    """``gpu_model``, else the GPU that ``fabric`` implies (None if none does)."""
    return gpu_model if gpu_model is not None else by_fabric.get(fabric)
