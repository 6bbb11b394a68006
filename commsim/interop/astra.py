"""ASTRA-sim's analytical network file: import it as a commsim machine, export a machine as one.

ASTRA-sim's analytical backend describes a network as dimensions, each a
building block of ``npus_count`` NPUs: ``Ring`` (each NPU linked to the
next, the last to the first), ``FullyConnected`` (every pair linked) or
``Switch`` (every NPU linked to one switch), with one ``bandwidth`` (GB/s)
and ``latency`` (ns) per link of that dimension::

    topology: [ Ring, Switch ]
    npus_count: [ 4, 2 ]
    bandwidth: [ 50.0, 10.0 ]  # GB/s
    latency: [ 500.0, 2500.0 ]  # ns

NPU ``i`` has coordinate ``(i mod n0, (i // n0) mod n1, ...)``; dimension
``d`` joins the NPUs that differ in coordinate ``d`` only.

Conventions of the translation:

* **Units.** ASTRA-sim's analytical backend reads a GB as 2^30 bytes
  (``bw_GBps_to_Bpns``: ``bw * (1 << 30) / 1e9``), so ``bandwidth: [50]``
  is 53.69 GB/s in commsim's decimal units; pass ``gigabyte=1e9`` for
  forks that read decimal GB. Latency is per link traversal in both tools.
* **Devices.** NPUs become GPUs ``npu0 ..``; each ``Switch`` group gets a
  ``switch`` device ``sw<d>_<k>``. A ring of two NPUs is built by
  ASTRA-sim as two links between them, and here as a bond of two.
* **Link kinds** only name the family commsim reports (dimension 0
  ``nvlink4``, the others ``ib_ndr`` unless ``kinds=`` says otherwise); the
  file's figures override the kind's.
* **Routing differs.** ASTRA-sim forwards through NPUs (a ring's far side
  is several hops away); commsim's GPUs never forward, so two NPUs talk
  only over a link or a switch they share: rings and direct algorithms
  within one block run, sends across two dimensions have no route.

Export (:func:`topology_to_astra`) finds the dimensions of a machine made
of such blocks (GPUs in rank order, nothing else than their links and
switches) and raises :class:`ExportError` for anything else (PCIe trees,
CPUs, NICs).

References
----------
astra-sim/astra-network-analytical, ``common/NetworkParser.cpp``
(``parse_network_config_yml``: keys ``topology``, ``npus_count``,
``bandwidth``, ``latency``; names ``Ring``, ``FullyConnected``,
``Switch``; ``npus_count > 1``, ``bandwidth > 0``, ``latency >= 0``) and
``common/NetworkFunction.cpp`` (GB = 2^30 B); the sample
``hoti2024/demo4/inputs/Ring_Switch.yml`` of astra-sim/tutorials.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Literal

import pydantic

from commsim.interop.errors import ExportError, FormatError
from commsim.textfile import read_text_file
from commsim.topology.model import Device, PhysicalLink, Topology
from commsim.yamlio import load_yaml_model

__all__ = [
    "ASTRA_GIGABYTE",
    "AstraNetwork",
    "astra_to_topology",
    "astra_yaml",
    "read_astra",
    "topology_to_astra",
]

ASTRA_GIGABYTE = float(1 << 30)
"""Bytes in ASTRA-sim's GB (its analytical backend's ``bw_GBps_to_Bpns``)."""

Block = Literal["Ring", "FullyConnected", "Switch"]


class AstraNetwork(pydantic.BaseModel):
    """An ASTRA-sim analytical network: one entry per dimension in every list.

    Attributes
    ----------
    topology : list of {"Ring", "FullyConnected", "Switch"}
    npus_count : list of int
        NPUs per dimension, each at least 2.
    bandwidth : list of float
        Per link, GB/s in ASTRA-sim's units (see :data:`ASTRA_GIGABYTE`).
    latency : list of float
        Per link, nanoseconds.
    """

    model_config = pydantic.ConfigDict(extra="ignore")

    topology: list[Block] = pydantic.Field(min_length=1)
    npus_count: list[pydantic.conint(ge=2)]  # type: ignore[valid-type]
    bandwidth: list[pydantic.confloat(gt=0)]  # type: ignore[valid-type]
    latency: list[pydantic.confloat(ge=0)]  # type: ignore[valid-type]

    @pydantic.model_validator(mode="after")
    def _same_lengths(self) -> AstraNetwork:
        dims = len(self.topology)
        for name in ("npus_count", "bandwidth", "latency"):
            if len(getattr(self, name)) != dims:
                raise ValueError(
                    f"{name} has {len(getattr(self, name))} entries but topology has {dims} dimensions"
                )
        return self

    @property
    def npus(self) -> int:
        """All NPUs: the product of ``npus_count``."""
        return math.prod(self.npus_count)


def read_astra(path: str | PathLike[str]) -> AstraNetwork:
    """Read an ASTRA-sim network YAML file.

    Raises
    ------
    FormatError
        With ``file:line:col`` of every wrong field (an unknown block names the valid ones).
    """
    text = read_text_file(path, "ASTRA-sim network file")
    return load_yaml_model(AstraNetwork, text, str(Path(path)), FormatError)


def _groups(npus_count: list[int], dim: int) -> list[list[int]]:
    """NPU ids of every group of dimension ``dim``, each in coordinate order."""
    stride = math.prod(npus_count[:dim])
    size = npus_count[dim]
    total = math.prod(npus_count)
    bases = [i for i in range(total) if (i // stride) % size == 0]
    return [[base + k * stride for k in range(size)] for base in bases]


def astra_to_topology(
    network: AstraNetwork,
    name: str = "astra",
    *,
    kinds: list[str] | None = None,
    gigabyte: float = ASTRA_GIGABYTE,
) -> Topology:
    """The commsim machine of an ASTRA-sim network (see the module docstring).

    Parameters
    ----------
    network : AstraNetwork
    name : str
        The topology's name.
    kinds : list of str, optional
        Link kind per dimension (default ``nvlink4`` then ``ib_ndr``).
    gigabyte : float
        Bytes in the file's GB (default 2^30, as ASTRA-sim reads it).
    """
    dims = len(network.topology)
    kinds = kinds or ["nvlink4"] + ["ib_ndr"] * (dims - 1)
    if len(kinds) != dims:
        raise FormatError(f"kinds has {len(kinds)} entries for {dims} dimensions")
    first = network.npus_count[0]
    devices = [Device(f"npu{i}", "gpu", box=i // first if dims > 1 else 0) for i in range(network.npus)]
    links: list[PhysicalLink] = []
    for dim, block in enumerate(network.topology):
        bandwidth_Bps, latency_s = network.bandwidth[dim] * gigabyte, network.latency[dim] * 1e-9
        for k, group in enumerate(_groups(network.npus_count, dim)):
            names = [f"npu{i}" for i in group]
            pairs = _block_pairs(block, names, dim, k, devices)
            links += [PhysicalLink(a, b, kinds[dim], 1, bandwidth_Bps, latency_s) for a, b in pairs]
    return Topology(name, devices, links, description=f"imported from ASTRA-sim: {_summary(network)}")


def _block_pairs(
    block: str, names: list[str], dim: int, k: int, devices: list[Device]
) -> list[tuple[str, str]]:
    if block == "Switch":
        switch = f"sw{dim}_{k}"
        devices.append(Device(switch, "switch", box=-1 if dim else devices[0].box))
        return [(n, switch) for n in names]
    if block == "FullyConnected":
        return [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    return [(names[i], names[(i + 1) % len(names)]) for i in range(len(names))]  # a ring of 2: two links


def _summary(network: AstraNetwork) -> str:
    return " x ".join(f"{b}({n})" for b, n in zip(network.topology, network.npus_count))


def astra_yaml(network: AstraNetwork) -> str:
    """The YAML text of ``network``, in ASTRA-sim's own layout (flow lists, units in comments)."""

    def row(values: list[object]) -> str:
        return "[ " + ", ".join(str(v) for v in values) + " ]"

    return (
        f"topology: {row(list(network.topology))}\n"
        f"npus_count: {row(list(network.npus_count))}\n"
        f"bandwidth: {row([_number(b) for b in network.bandwidth])}  # GB/s\n"
        f"latency: {row([_number(v) for v in network.latency])}  # ns\n"
    )


def _tidy(value: float) -> float:
    """``value`` to 12 significant digits: unit conversions leave no ``500.00000000000006``."""
    return float(f"{value:.12g}")


def _number(value: float) -> str:
    """Shortest text that reads back as the same float (``50.0``, ``53.6870912``)."""
    return repr(float(value))


# -- export ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Figures:
    bandwidth_Bps: float
    latency_s: float


def topology_to_astra(topology: Topology, *, gigabyte: float = ASTRA_GIGABYTE) -> AstraNetwork:
    """The ASTRA-sim network of a machine made of rings, full meshes and switches.

    Raises
    ------
    ExportError
        If the machine is not such a product (what is left over is named).
    """
    gpus = topology.gpus
    extra = [d.name for d in topology.devices if d.kind not in ("gpu", "switch", "nvswitch")]
    if extra:
        raise ExportError(
            f"topology {topology.name!r} has {', '.join(extra[:4])}: ASTRA-sim networks hold NPUs, "
            "links between them and switches only"
        )
    found = _search(topology, list(range(len(gpus))), 1, len(gpus), [])
    if found is None:
        raise ExportError(
            f"topology {topology.name!r} is not a product of Ring, FullyConnected and Switch "
            "dimensions over its GPUs in rank order with one bandwidth and latency per dimension"
        )
    network = AstraNetwork(
        topology=[b for b, _, _ in found],
        npus_count=[n for _, n, _ in found],
        bandwidth=[_tidy(f.bandwidth_Bps / gigabyte) for _, _, f in found],
        latency=[_tidy(f.latency_s * 1e9) for _, _, f in found],
    )
    return network


def _search(
    topology: Topology, ids: list[int], stride: int, remaining: int, dims: list[tuple[str, int, _Figures]]
) -> list[tuple[str, int, _Figures]] | None:
    """Dimensions (block, size, figures) that rebuild ``topology`` exactly, found by backtracking."""
    if remaining == 1:
        return dims if _same_machine(topology, dims) else None
    for size in sorted((s for s in range(2, remaining + 1) if remaining % s == 0), reverse=True):
        members = [topology.gpus[k * stride] for k in range(size)]
        block = _block_of(topology, members)
        if block is None:
            continue
        found = _search(topology, ids, stride * size, remaining // size, [*dims, (block[0], size, block[1])])
        if found is not None:
            return found
    return None


def _figures(topology: Topology, a: str, b: str) -> tuple[_Figures, int] | None:
    """Per-link figures and bond count of the link ``a -> b``, or None."""
    if not topology.graph.has_edge(a, b):
        return None
    link = topology.link(a, b)
    return _Figures(link.bandwidth_Bps / link.count, link.latency_s), link.count


def _block_of(topology: Topology, members: list[str]) -> tuple[str, _Figures] | None:
    """Which building block ``members`` (in order) form, with its per-link figures."""
    size = len(members)
    for switch in topology.graph.successors(members[0]):
        if topology.device(switch).kind in ("switch", "nvswitch"):
            reach = {n for n in topology.graph.successors(switch) if topology.device(n).kind == "gpu"}
            figures = {_figures(topology, m, switch) for m in members}
            if reach == set(members) and len(figures) == 1 and None not in figures:
                (value,) = figures
                assert value is not None
                if value[1] == 1:
                    return "Switch", value[0]
    ring = [_figures(topology, members[i], members[(i + 1) % size]) for i in range(size)]
    if size == 2:
        if ring[0] is not None and ring[0][1] == 2:
            return "Ring", ring[0][0]
        return ("FullyConnected", ring[0][0]) if ring[0] is not None and ring[0][1] == 1 else None
    pairs = [_figures(topology, a, b) for i, a in enumerate(members) for b in members[i + 1 :]]
    if None not in pairs and len(set(pairs)) == 1 and pairs[0] is not None and pairs[0][1] == 1:
        return "FullyConnected", pairs[0][0]
    if None not in ring and len(set(ring)) == 1 and ring[0] is not None and ring[0][1] == 1:
        return "Ring", ring[0][0]
    return None


def _same_machine(topology: Topology, dims: list[tuple[str, int, _Figures]]) -> bool:
    """Whether the dimensions rebuild exactly the links of ``topology`` (names aside)."""
    network = AstraNetwork(
        topology=[b for b, _, _ in dims],
        npus_count=[n for _, n, _ in dims],
        bandwidth=[f.bandwidth_Bps for _, _, f in dims],
        latency=[f.latency_s * 1e9 for _, _, f in dims],
    )
    rebuilt = astra_to_topology(network, gigabyte=1.0)
    rename = dict(zip(rebuilt.gpus, topology.gpus))
    switches = len(rebuilt.devices) - len(rebuilt.gpus)
    if switches != len(topology.devices) - len(topology.gpus):
        return False
    return _shape(rebuilt, rename) == _shape(topology, {})


def _shape(topology: Topology, rename: dict[str, str]) -> set[tuple[object, ...]]:
    """GPU-to-GPU links and switch groups with figures, comparable across two machines."""
    shape: set[tuple[object, ...]] = set()
    for physical in topology.physical_links:
        link = topology.link(physical.a, physical.b)
        figures = (physical.count, round(link.bandwidth_Bps / link.count, 3), round(link.latency_s, 15))
        a, b = rename.get(physical.a, physical.a), rename.get(physical.b, physical.b)
        if topology.device(physical.b).kind == "gpu":
            shape.add(("link", min(a, b), max(a, b), *figures))
        else:
            group = frozenset(rename.get(n, n) for n in topology.graph.successors(physical.b))
            shape.add(("switch", a, group, *figures))
    return shape
