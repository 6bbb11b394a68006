"""Import a machine from ``nvidia-smi topo -m`` output.

``nvidia-smi topo -m`` prints, for every pair of GPUs and NICs, how they are
connected: ``NV#`` (a bond of # NVLinks), or a PCIe relation, from closest to
farthest ``PIX`` (at most one PCIe bridge), ``PXB`` (several bridges, no host
bridge), ``PHB`` (through a PCIe host bridge), ``NODE`` (between host bridges
of one NUMA node) and ``SYS`` (across the inter-socket link; ``SOC`` in old
drivers). :func:`import_topo_matrix` builds a :class:`Topology` that
reproduces every cell: :func:`classify_pair` computed back from the built
machine equals the input matrix.

Construction rules
------------------
1. Devices: ``GPUk`` becomes ``gpuk`` (model = ``gpu_model``); every other
   column (``NIC0``, ``mlx5_0`` ...) becomes ``nic0``, ``nic1`` ... in column
   order, its model the name the ``NIC Legend`` gives (``NIC0: mlx5_0``) or
   the column's own name.
2. PCIe relations form a tree, so they nest (an ultrametric): the devices
   closer than level L to each other form groups, and each group at one
   level splits into groups of the level below. NVLink pairs show ``NV#``
   and hide their PCIe relation; it is taken from third devices (GPU0 and
   GPU1 both ``PIX`` to NIC0 share its switch). Pairs that nothing constrains
   share a host bridge (``PHB``) when their NUMA Affinity (else CPU
   Affinity) agrees and no other cell objects; otherwise they are as far
   apart as the other cells say (``SYS`` if nothing joins them).
   The completed matrix must reproduce every given cell, else the input is
   rejected (it is no PCIe tree).
3. ``PIX`` group of two or more: one ``pcie_switch`` joining them.
   ``PXB`` group of several PIX groups: every PIX group gets a leaf switch
   (a lone device too) and the leaves hang off one parent switch.
4. ``PHB`` groups of one NUMA node: when the node has one group, its
   members attach straight to the CPU (the CPU is their host bridge); when
   it has several, each group gets a host bridge (a ``pcie_switch`` whose
   model is :data:`HOST_BRIDGE_MODEL`) attached to the CPU, so crossing
   between groups (``NODE``) passes two host bridges and the CPU.
5. ``NODE`` groups are NUMA nodes: one ``cpu{numa}`` each, numbered by the
   NUMA Affinity column (groups without one, e.g. NICs alone, take the
   lowest unused number). Every pair of CPUs is joined by one inter-socket
   link (``SYS``): ``socket_kind`` if given, else ``xgmi`` with an AMD
   ``cpu_model``, ``qpi`` for Pascal/Volta-era GPUs, otherwise ``upi``.
6. NVLink: ``NV#`` is a bond of # links of the GPU generation's kind
   (P100 nvlink1; V100 and Turing RTX nvlink2; A100/A800/A30 and Ampere RTX
   with a bridge nvlink3, whose consumer bridges run slower than the
   catalogue figure; H100/H200/GH200 nvlink4; Blackwell nvlink5 if the
   catalogue has it, else approximated by nvlink4; unknown models nvlink2).
   NVSwitch rule: when three or more GPUs show the same ``NV#`` between
   every pair and either # >= 12 (A100: NV12, H100: NV18) or a GPU would
   need more links than its generation has (DGX-2: NV6 between 16 V100s),
   the GPUs are joined to one ``nvswitch0`` by a bundle of # links each
   instead of n(n-1)/2 direct bundles. Two GPUs showing NV12 keep a direct
   bundle: that is also what an NVLink-bridged pair (A100 PCIe, H100 NVL)
   is, and for two GPUs both models have the same bandwidth.
7. Every PCIe link (device to switch, switch to switch, switch or host
   bridge to CPU) is one link of the generation's kind (P100/V100/Turing
   pcie3_x16; Ampere and Ada pcie4_x16; Hopper and later pcie5_x16;
   unknown pcie3_x16). The NIC's network kind (``ib_hdr`` for A100,
   ``ib_ndr`` for Hopper and later, else ``eth_100g``) is not used inside one
   box; the description records it for a cluster builder.
8. ``p2p=False`` (``nvidia-smi topo -p2p`` shows ``NS``): same devices and
   links, ``Topology.peer_to_peer`` is False and the description says that
   NCCL then copies through host memory.

Reading back (:func:`classify_pair`): an NVLink bond, direct or through one
NVSwitch, is ``NV#``; otherwise the route over PCIe and inter-socket links
decides: two CPUs ``SYS``, a CPU and a host bridge ``NODE``, a CPU or a host
bridge ``PHB``, two switches ``PXB``, one ``PIX``.

Every figure is a catalogue default; the description lists what was
inferred and which defaults were used, so it can be calibrated.

The matrix is read by :mod:`commsim.topology.nvsmi_parse` (whose public
names this module re-exports) and the PCIe tree, NVLink bonds and link kinds
are built by :mod:`commsim.topology.nvsmi_build`; this module puts them
together, describes the result and reads it back.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from commsim.errors import ParseError, TopologyError
from commsim.topology.elements import Device, PhysicalLink
from commsim.topology.linkkinds import kinds_matching
from commsim.topology.model import Topology
from commsim.topology.nvsmi_build import (
    HOST_BRIDGE_MODEL,
    NODE,
    PcieTree,
    build_pcie,
    choose_kinds,
    cpu_numbers,
    level_of,
    nvlink_links,
    partitions,
)
from commsim.topology.nvsmi_parse import RELATIONS, TopoMatrix, find_p2p_status, parse_topo_matrix
from commsim.units import parse_bandwidth, parse_time

if TYPE_CHECKING:
    from commsim.calibrate.parser import NcclTestsLog

__all__ = [
    "HOST_BRIDGE_MODEL",
    "RELATIONS",
    "TopoMatrix",
    "classify_pair",
    "find_p2p_status",
    "import_topo_matrix",
    "load_topo_matrix",
    "parse_topo_matrix",
    "topo_matrix_from_log",
]


# -- the importer ----------------------------------------------------------------------


def _kind_figures(overrides: Mapping[str, Any] | None) -> dict[str, tuple[float | None, float | None]]:
    """``{kind or family: {bandwidth, latency}}`` (or ``(bandwidth_Bps, latency_s)``) to SI figures."""
    figures: dict[str, tuple[float | None, float | None]] = {}
    for key, value in (overrides or {}).items():
        kinds_matching((key,))  # validates the name
        if isinstance(value, Mapping):
            unknown = set(value) - {"bandwidth", "latency"}
            if unknown:
                raise TopologyError(
                    f"override of {key!r}: unknown field(s) {sorted(unknown)}; valid: bandwidth, latency"
                )
            bandwidth, latency = value.get("bandwidth"), value.get("latency")
        elif isinstance(value, tuple | list) and len(value) == 2:
            bandwidth, latency = value
        else:
            raise TopologyError(
                f"override of {key!r} must be {{bandwidth: ..., latency: ...}} or "
                f"(bandwidth_Bps, latency_s), got {value!r}"
            )
        figures[key] = (
            parse_bandwidth(bandwidth) if bandwidth is not None else None,
            parse_time(latency) if latency is not None else None,
        )
    return figures


def import_topo_matrix(
    text: str,
    *,
    gpu_model: str | None = None,
    name: str = "imported",
    nvlink_kind: str | None = None,
    pcie_kind: str | None = None,
    nic_kind: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    p2p: bool = True,
    cpu_model: str | None = None,
    socket_kind: str | None = None,
) -> Topology:
    """Build a :class:`Topology` from ``nvidia-smi topo -m`` output.

    The construction rules are in the module docstring; the result
    reproduces the matrix (:func:`classify_pair` of every pair of columns
    equals its cell).

    Parameters
    ----------
    text : str
        The command's output; prompt lines, legends and a line prefix are fine.
    gpu_model : str, optional
        GPU name (``"NVIDIA A100-SXM4-80GB"``); sets every GPU's model and the
        default link kinds.
    name : str
        Name of the topology.
    nvlink_kind, pcie_kind, nic_kind, socket_kind : str, optional
        Link kinds that win over the ones inferred from ``gpu_model`` (and
        ``cpu_model`` for the inter-socket link).
    overrides : mapping, optional
        ``{kind or family: {"bandwidth": "20 GB/s", "latency": "1 us"}}``
        figures for links of that kind (the topology's ``kind_overrides``).
    p2p : bool
        False when GPU peer-to-peer is unavailable (``topo -p2p`` shows
        ``NS``); sets the topology's ``peer_to_peer`` and is stated in the
        description.
    cpu_model : str, optional
        CPU name; an AMD EPYC selects ``xgmi`` between sockets.

    Returns
    -------
    Topology
        Its description says what was inferred and which defaults were used.

    Raises
    ------
    ParseError
        If the matrix is garbled or describes no PCIe tree.
    TopologyError, UnknownNameError
        If a given link kind or override is invalid.

    Examples
    --------
    >>> t = import_topo_matrix("  GPU0 GPU1\\nGPU0 X PIX\\nGPU1 PIX X\\n", gpu_model="Tesla V100-SXM2-16GB")
    >>> [d.name for d in t.devices], classify_pair(t, "gpu0", "gpu1")
    (['cpu0', 'pcie_switch0', 'gpu0', 'gpu1'], 'PIX')
    """
    from commsim.errors import check_argument

    for argument, value in (("gpu_model", gpu_model), ("cpu_model", cpu_model)):  # 5 failed in re, {} passed
        check_argument(value, (str, type(None)), argument, "None or the model's name as nvidia-smi prints it")
    check_argument(p2p, bool, "p2p", "True or False")  # 'no' is true
    matrix = parse_topo_matrix(text)
    kinds = choose_kinds(
        gpu_model, cpu_model, nvlink_kind, pcie_kind, nic_kind, socket_kind, _nvlinks_per_gpu(matrix)
    )
    notes: list[str] = []
    levels = partitions(matrix)
    numbers = cpu_numbers(levels[NODE], matrix, notes)
    cpus = [f"cpu{number}" for number in numbers]
    names = matrix.device_names
    machine = PcieTree(kinds["pcie"][0])
    build_pcie(machine, levels, names, cpus)
    switch, nvlinks, nvlink_summary = nvlink_links(matrix, names, kinds["nvlink"][0], notes)
    devices = [Device(cpu, "cpu", model=cpu_model) for _, cpu in sorted(zip(numbers, cpus))]
    devices += (
        machine.devices + switch + [_endpoint(matrix, i, names[i], gpu_model) for i in range(len(names))]
    )
    sockets = [PhysicalLink(a, b, kinds["socket"][0]) for a, b in itertools.combinations(sorted(cpus), 2)]
    parts = _describe(matrix, levels, machine, gpu_model, kinds, nvlink_summary, p2p) + notes
    parts.append("Every figure is a catalogue default; calibrate it against measurements")
    description = ". ".join(parts) + "."
    links = machine.links + sockets + nvlinks
    return Topology(name, devices, links, _kind_figures(overrides), description, peer_to_peer=p2p)


def _nvlinks_per_gpu(matrix: TopoMatrix) -> int:
    """The most NVLinks any GPU of the matrix has.

    On an NVSwitch board every pair shows the same NV# of 12 or more (each
    GPU's links to the switches: NV12 on A100, NV18 on H100), so that cell is
    the count; on direct meshes (NV6 between each pair of a 4-GPU H100
    board, NV1/NV2 on a DGX-1) a GPU's cells add up.
    """
    cells = {(i, j): int(c[2:]) for (i, j), c in matrix.cells.items() if i != j and c[2:].isdigit()}
    if not cells:
        return 0
    counts = set(cells.values())
    if len(counts) == 1 and min(counts) >= 12:
        return min(counts)
    per_gpu: dict[int, int] = {}
    for (i, _), count in cells.items():
        per_gpu[i] = per_gpu.get(i, 0) + count
    return max(per_gpu.values())


def _endpoint(matrix: TopoMatrix, index: int, name: str, gpu_model: str | None) -> Device:
    if matrix.is_gpu(index):
        return Device(name, "gpu", model=gpu_model)
    label = matrix.labels[index]
    model = matrix.nic_names.get(label) or (None if re.fullmatch(r"NIC\d+", label) else label)
    return Device(name, "nic", model=model)


def _describe(
    matrix: TopoMatrix,
    levels: list[list[list[int]]],
    machine: PcieTree,
    gpu_model: str | None,
    kinds: dict[str, tuple[str, str]],
    nvlink_summary: str,
    p2p: bool,
) -> list[str]:
    """Sentences of the description: what the matrix held, what was inferred, which defaults."""
    gpus = sum(matrix.is_gpu(i) for i in range(len(matrix.labels)))
    numa_from = "NUMA Affinity" if any(v is not None for v in matrix.numa) else "SYS cells"
    nvlink = "" if nvlink_summary == "no NVLink" else "; kind {} ({})".format(*kinds["nvlink"])
    parts = [
        f"Imported from nvidia-smi topo -m: {gpus} GPUs ({gpu_model or 'model not given'}), "
        f"{len(matrix.labels) - gpus} NICs, {len(levels[NODE])} NUMA node(s) (cpuN, numbered from the "
        f"{numa_from}), {machine.switches} PCIe switches and {machine.bridges} host bridges inferred "
        "from the PIX/PXB/PHB/NODE/SYS cells",
        f"NVLink: {nvlink_summary}{nvlink}",
        "PCIe: every PCIe link is one {} ({})".format(*kinds["pcie"]),
        "NUMA nodes joined pairwise by one {} link ({})".format(*kinds["socket"])
        if len(levels[NODE]) > 1
        else "",
        "NIC network kind nic_kind={} ({}); unused inside one box, for a cluster builder".format(
            *kinds["nic"]
        ),
    ]
    hidden = [
        RELATIONS[level_of(levels, i, j)]
        for (i, j), c in matrix.cells.items()
        if i < j and c.startswith("NV")
    ]
    if hidden:
        tally = ", ".join(f"{r} x{hidden.count(r)}" for r in RELATIONS if r in hidden)
        parts.append(f"PCIe relations hidden behind NV# cells were completed from the other cells ({tally})")
    if p2p:
        parts.append("GPU peer-to-peer p2p=True: available")
    else:
        parts.append(
            "GPU peer-to-peer p2p=False: unavailable (as when topo -p2p shows NS), so NCCL copies "
            "between GPUs through host memory (SHM transport); the links are those of the matrix, and "
            "peer_to_peer=False tells the NCCL model to stage through the CPU"
        )
    return [part for part in parts if part]


# -- reading back --------------------------------------------------------------------------


def classify_pair(topology: Topology, a: str, b: str) -> str:
    """The ``nvidia-smi topo -m`` cell of two devices of a topology.

    ``NV#`` if the two GPUs share an NVLink bond (directly, or through one
    NVSwitch: the smaller of the two bundles); otherwise the PCIe relation of
    the route over PCIe and inter-socket links: two or more CPUs ``SYS``; one
    CPU and a host bridge ``NODE``; one CPU, or a host bridge alone, ``PHB``;
    two or more PCIe switches ``PXB``; else ``PIX``.

    Raises
    ------
    TopologyError
        If the two devices are joined neither by NVLink nor over PCIe.
    """
    if a == b:
        topology.device(a)
        return "X"
    bond = _nvlink_bond(topology, a, b)
    if bond:
        return f"NV{bond}"
    route = topology.route(a, b, kinds=("pcie", "inter_socket"))
    middle = [topology.device(topology.links[i].dst) for i in route[:-1]]
    cpus = sum(d.kind == "cpu" for d in middle)
    bridges = sum(d.kind == "pcie_switch" and d.model == HOST_BRIDGE_MODEL for d in middle)
    switches = sum(d.kind == "pcie_switch" for d in middle) - bridges
    if cpus >= 2:
        return "SYS"
    if cpus == 1:
        return "NODE" if bridges else "PHB"
    if bridges:
        return "PHB"
    return "PXB" if switches >= 2 else "PIX"


def _nvlink_bond(topology: Topology, a: str, b: str) -> int:
    """Links in the NVLink bond between ``a`` and ``b`` (0 if none)."""

    def nvlink(src: str, dst: str) -> int:
        data = topology.graph.get_edge_data(src, dst)
        link = topology.links[data["link"]] if data else None
        return link.count if link is not None and link.family == "nvlink" else 0

    if nvlink(a, b):
        return nvlink(a, b)
    switches = [s for s in topology.graph.successors(a) if topology.device(s).kind == "nvswitch"]
    return max((min(nvlink(a, s), nvlink(s, b)) for s in switches), default=0)


def load_topo_matrix(path: str | Path, **kwargs: Any) -> Topology:
    """Read a file of ``nvidia-smi topo -m`` output and import it.

    ``name`` defaults to the file's stem; ``p2p`` defaults to what a
    ``topo -p2p`` matrix in the same file shows (True without one). Other
    keyword arguments are those of :func:`import_topo_matrix`.

    Raises
    ------
    ParseError
        If the file cannot be read or parsed (the message names file and line).
    """
    from commsim.filekind import looks_like_rocm_smi, rocm_smi_message
    from commsim.textfile import read_text_file

    text = read_text_file(path, "nvidia-smi topo output")
    if looks_like_rocm_smi(text):  # its GPU0 GPU1 ... tables hold weights and hops, not NV# and PIX
        raise ParseError(rocm_smi_message(str(path), "nvidia-smi topo -m output"))
    kwargs.setdefault("name", Path(path).stem)
    if "p2p" not in kwargs:
        kwargs["p2p"] = find_p2p_status(text) is not False
    try:
        return import_topo_matrix(text, **kwargs)
    except ParseError as exc:
        message = str(exc).removeprefix(f"line {exc.line}: ")
        raise ParseError(message, source=str(path), line=exc.line) from None


def topo_matrix_from_log(log: NcclTestsLog, **kwargs: Any) -> Topology | None:
    """The topology of the ``nvidia-smi topo -m`` matrix in an nccl-tests log, if any.

    ``gpu_model`` defaults to the log's most common GPU; other keyword
    arguments are those of :func:`import_topo_matrix`. Returns None when the
    log holds no matrix.
    """
    if log.topo_matrix is None:
        return None
    kwargs.setdefault("gpu_model", log.gpu_model)
    return import_topo_matrix(log.topo_matrix, **kwargs)
