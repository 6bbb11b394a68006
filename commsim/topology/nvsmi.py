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
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from commsim.errors import ParseError, TopologyError
from commsim.topology.linkkinds import LINK_KINDS, get_link_kind, kinds_matching
from commsim.topology.model import Device, PhysicalLink, Topology
from commsim.units import format_bandwidth, parse_bandwidth, parse_time

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

RELATIONS = ("PIX", "PXB", "PHB", "NODE", "SYS")
"""PCIe relations of ``nvidia-smi topo -m``, closest first."""

HOST_BRIDGE_MODEL = "PCIe host bridge"
"""Model of the ``pcie_switch`` devices that stand for a CPU's PCIe host bridge."""

_PIX, _PXB, _PHB, _NODE, _SYS = range(5)
_CELL = re.compile(r"X|PIX|PXB|PHB|NODE|SYS|SOC|NV([1-9]\d*)")
_CELLS_EXPECTED = "X, NV#, PIX, PXB, PHB, NODE, SYS or SOC"
_LABEL = re.compile(r"[A-Za-z][\w-]*\d")
_EXTRA = re.compile(r"CPU Affinity|NUMA Affinity|GPU NUMA ID")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_P2P_CELLS = frozenset({"X", "OK", "NS", "CNS", "GNS", "TNS", "U"})
_NVLINKS_PER_GPU = {"nvlink1": 4, "nvlink2": 6, "nvlink3": 12, "nvlink4": 18, "nvlink5": 18}


# -- parsing ------------------------------------------------------------------------


@dataclass(frozen=True)
class TopoMatrix:
    """A parsed ``nvidia-smi topo -m`` matrix.

    Attributes
    ----------
    labels : tuple of str
        Column names as printed (``GPU0``, ``NIC0``, ``mlx5_0`` ...).
    cells : dict
        ``{(i, j): cell}`` for every ordered pair of different columns;
        ``SOC`` is stored as ``SYS``.
    numa : tuple of int or None
        NUMA Affinity of each row (None where not printed or ``N/A``).
    cpu_affinity : tuple of str or None
        CPU Affinity of each row.
    nic_names : dict
        ``NIC0 -> mlx5_0`` from the ``NIC Legend``.
    lines : tuple of int
        1-based line number of each row in the text.
    """

    labels: tuple[str, ...]
    cells: dict[tuple[int, int], str]
    numa: tuple[int | None, ...]
    cpu_affinity: tuple[str | None, ...]
    nic_names: dict[str, str] = field(default_factory=dict)
    lines: tuple[int, ...] = ()

    def is_gpu(self, index: int) -> bool:
        """Whether column ``index`` is a GPU."""
        return _is_gpu_label(self.labels[index])

    @property
    def device_names(self) -> list[str]:
        """The commsim device name of each column (``gpu3``, ``nic0`` ...)."""
        nics = [label for label in self.labels if not _is_gpu_label(label)]
        return [
            "gpu" + label[3:] if _is_gpu_label(label) else f"nic{nics.index(label)}" for label in self.labels
        ]


def _is_gpu_label(label: str) -> bool:
    return re.fullmatch(r"GPU\d+", label) is not None


def _strip(line: str, prefix: str) -> str:
    """``line`` without colour codes and without the matrix's line prefix."""
    line = _ANSI.sub("", line)
    stripped = line.lstrip()
    return stripped[len(prefix) :] if prefix and stripped.startswith(prefix) else line


def _find_header(lines: list[str]) -> tuple[int, str, list[str]]:
    """(index, line prefix, labels) of the first topo -m header; ``topo -p2p`` ones are skipped."""
    for index, raw in enumerate(lines):
        tokens = _ANSI.sub("", raw).split()
        if "GPU0" not in tokens:
            continue
        start = tokens.index("GPU0")
        labels = []
        for token in tokens[start:]:
            if not _LABEL.fullmatch(token) or _CELL.fullmatch(token):
                break
            labels.append(token)
        if start + len(labels) < len(tokens) and _CELL.fullmatch(tokens[start + len(labels)]):
            continue  # a matrix row, not a header
        following = _strip(lines[index + 1], " ".join(tokens[:start])) if index + 1 < len(lines) else ""
        row = following.split()[1 : 1 + len(labels)]
        if set(row) & (_P2P_CELLS - {"X"}):
            continue  # a `topo -p2p` matrix
        return index, " ".join(tokens[:start]), labels
    raise ParseError("no nvidia-smi topo -m matrix found (expected a header row starting with GPU0)")


def _read_cells(label: str, tokens: list[str], labels: list[str], line: int) -> list[str]:
    n = len(labels)
    cells = tokens[1 : 1 + n]
    if len(cells) < n:
        raise ParseError(
            f"row {label} has {len(cells)} cells but the header has {n} columns; the row is truncated",
            line=line,
        )
    for column, cell in zip(labels, cells):
        if not _CELL.fullmatch(cell):
            raise ParseError(
                f"cell {label}/{column} is {cell!r}; expected {_CELLS_EXPECTED} "
                "(or is the row truncated, the matrix not square?)",
                line=line,
            )
    if len(tokens) > 1 + n and _CELL.fullmatch(tokens[1 + n]):
        raise ParseError(
            f"row {label} has more cells than the header has columns ({n}); the matrix is not square",
            line=line,
        )
    return ["SYS" if cell == "SOC" else cell for cell in cells]


def parse_topo_matrix(text: str) -> TopoMatrix:
    """Read the first ``nvidia-smi topo -m`` matrix in ``text``.

    Prompt lines before the header, the legend and ``NIC Legend`` after the
    matrix, tabs, terminal colour codes and a line prefix before every line
    (``rank0:``) are accepted; a ``topo -p2p`` matrix is skipped.

    Raises
    ------
    ParseError
        If there is no matrix, a cell is unknown, a row is truncated, too
        long, missing or repeated, or the matrix is not symmetric; the message
        names the line and the cell.

    Examples
    --------
    >>> m = parse_topo_matrix("  GPU0 GPU1 NUMA Affinity\\nGPU0 X NV2 0\\nGPU1 NV2 X 0\\n")
    >>> m.labels, m.cells[0, 1], m.numa
    (('GPU0', 'GPU1'), 'NV2', (0, 0))
    """
    lines = text.splitlines()
    header, prefix, labels = _find_header(lines)
    rows: dict[int, tuple[list[str], list[str], int]] = {}
    end = len(lines) + 1
    for number, raw in enumerate(lines[header + 1 :], start=header + 2):
        tokens = _strip(raw, prefix).split()
        if not tokens or tokens[0] not in labels:
            if len(tokens) > 1 and _LABEL.fullmatch(tokens[0]) and _CELL.fullmatch(tokens[1]):
                raise ParseError(
                    f"row {tokens[0]} has no column in the header; the matrix is not square", line=number
                )
            end = number
            break
        index = labels.index(tokens[0])
        if index in rows:
            raise ParseError(f"row {tokens[0]} appears twice (first at line {rows[index][2]})", line=number)
        rows[index] = (_read_cells(tokens[0], tokens, labels, number), tokens[1 + len(labels) :], number)
    missing = [label for i, label in enumerate(labels) if i not in rows]
    if missing:
        raise ParseError(
            f"the matrix has {len(labels)} columns but {len(rows)} rows (no row for "
            f"{', '.join(missing)}); it is truncated",
            line=end,
        )
    cells = _check_cells(labels, rows)
    extras = _EXTRA.findall(_ANSI.sub("", lines[header]))
    values = [dict(zip(extras, rows[i][1])) for i in range(len(labels))]
    return TopoMatrix(
        labels=tuple(labels),
        cells=cells,
        numa=tuple(_integer(v.get("NUMA Affinity")) for v in values),
        cpu_affinity=tuple(v.get("CPU Affinity") if v.get("CPU Affinity") != "N/A" else None for v in values),
        nic_names=dict(re.findall(r"\b(NIC\d+)\s*:\s*(\S+)", _ANSI.sub("", text))),
        lines=tuple(rows[i][2] for i in range(len(labels))),
    )


def _integer(value: str | None) -> int | None:
    return int(value) if value is not None and value.isdigit() else None


def _check_cells(
    labels: list[str], rows: dict[int, tuple[list[str], list[str], int]]
) -> dict[tuple[int, int], str]:
    """Off-diagonal cells; the diagonal must be X, the matrix symmetric, NV# between GPUs."""
    cells: dict[tuple[int, int], str] = {}
    for i, (row, _, line) in sorted(rows.items()):
        for j, cell in enumerate(row):
            if (cell == "X") != (i == j):
                what = "must be X" if i == j else "is X, which only the diagonal may be"
                raise ParseError(f"cell {labels[i]}/{labels[j]} {what}", line=line)
            if i == j:
                continue
            if j < i and cells[j, i] != cell:
                raise ParseError(
                    f"cell {labels[i]}/{labels[j]} is {cell} but {labels[j]}/{labels[i]} (line "
                    f"{rows[j][2]}) is {cells[j, i]}; the matrix must be symmetric",
                    line=line,
                )
            if cell.startswith("NV") and not (_is_gpu_label(labels[i]) and _is_gpu_label(labels[j])):
                raise ParseError(f"cell {labels[i]}/{labels[j]} is {cell}; NVLink joins GPUs only", line=line)
            cells[i, j] = cell
    return cells


def find_p2p_status(text: str) -> bool | None:
    """Whether an ``nvidia-smi topo -p2p`` matrix in ``text`` shows peer-to-peer everywhere.

    Returns
    -------
    bool or None
        True if every off-diagonal cell is ``OK``, False if any is not (``NS``,
        ``CNS``, ``GNS``, ``TNS``, ``U``), None if ``text`` holds no such matrix.
    """
    lines = [_ANSI.sub("", line).split() for line in text.splitlines()]
    for index, tokens in enumerate(lines):
        if "GPU0" not in tokens or not all(_is_gpu_label(t) for t in tokens[tokens.index("GPU0") :]):
            continue
        statuses = []
        for row in lines[index + 1 :]:
            cells = row[next((k for k, t in enumerate(row) if _is_gpu_label(t)), len(row)) + 1 :]
            if not cells or not set(cells) <= _P2P_CELLS:
                break
            statuses += cells
        if set(statuses) - {"X"}:
            return set(statuses) <= {"X", "OK"}
    return None


# -- the PCIe tree --------------------------------------------------------------------


def _pair(i: int, j: int) -> tuple[int, int]:
    return (i, j) if i < j else (j, i)


def _known_levels(matrix: TopoMatrix) -> dict[tuple[int, int], int]:
    """PCIe level of every pair (i < j) whose cell is not NV#."""
    return {
        (i, j): RELATIONS.index(cell)
        for (i, j), cell in matrix.cells.items()
        if i < j and not cell.startswith("NV")
    }


def _join_known(clusters: list[list[int]], known: dict[tuple[int, int], int], level: int) -> list[list[int]]:
    """Merge clusters joined by a known cell at ``level`` or closer (union-find)."""
    owner = {member: k for k, cluster in enumerate(clusters) for member in cluster}
    parent = list(range(len(clusters)))

    def find(k: int) -> int:
        while parent[k] != k:
            k = parent[k]
        return k

    for (i, j), value in known.items():
        if value <= level:
            parent[find(owner[i])] = find(owner[j])
    merged: dict[int, list[int]] = {}
    for k, cluster in enumerate(clusters):
        merged.setdefault(find(k), []).extend(cluster)
    return sorted((sorted(c) for c in merged.values()), key=lambda c: c[0])


def _may_share_host_bridge(
    a: list[int], b: list[int], known: dict[tuple[int, int], int], keys: list[object], n: int
) -> bool:
    """Whether nothing in the matrix keeps clusters ``a`` and ``b`` from one host bridge."""
    if any(_pair(x, y) in known for x in a for y in b):
        return False
    keys_a, keys_b = {keys[x] for x in a} - {None}, {keys[y] for y in b} - {None}
    if keys_a and keys_b and keys_a != keys_b:
        return False
    inside = set(a) | set(b)
    for other in set(range(n)) - inside:
        if len({known[_pair(x, other)] for x in inside if _pair(x, other) in known}) > 1:
            return False
    return True


def _join_unconstrained(
    clusters: list[list[int]], known: dict[tuple[int, int], int], keys: list[object]
) -> list[list[int]]:
    """First-fit merge of clusters whose mutual cells are all NV# (nothing says how far apart)."""
    merged: list[list[int]] = []
    for cluster in clusters:
        target = next((m for m in merged if _may_share_host_bridge(m, cluster, known, keys, len(keys))), None)
        if target is None:
            merged.append(list(cluster))
        else:
            target.extend(cluster)
    return [sorted(c) for c in merged]


def _partitions(matrix: TopoMatrix) -> list[list[list[int]]]:
    """Groups of devices closer than each level: PIX, PXB, PHB (host bridge), NODE (NUMA).

    Raises ParseError if the completed matrix contradicts a given cell.
    """
    known = _known_levels(matrix)
    keys: list[object] = [
        ("numa", numa) if numa is not None else ("cpus", cpus) if cpus else None
        for numa, cpus in zip(matrix.numa, matrix.cpu_affinity)
    ]
    clusters = [[i] for i in range(len(matrix.labels))]
    levels = []
    for level in (_PIX, _PXB, _PHB, _NODE):
        clusters = _join_known(clusters, known, level)
        if level == _PHB:
            clusters = _join_unconstrained(clusters, known, keys)
        levels.append(clusters)
    for (i, j), value in known.items():
        implied = _level_of(levels, i, j)
        if implied != value:
            raise ParseError(
                f"cell {matrix.labels[i]}/{matrix.labels[j]} is {RELATIONS[value]} but the other cells "
                f"make it {RELATIONS[implied]}; the matrix does not describe a PCIe tree",
                line=matrix.lines[i],
            )
    return levels


def _level_of(levels: list[list[list[int]]], i: int, j: int) -> int:
    for level, clusters in enumerate(levels):
        if any(i in c and j in c for c in clusters):
            return level
    return _SYS


@dataclass
class _Machine:
    """Devices and links being built."""

    pcie_kind: str
    devices: list[Device] = field(default_factory=list)
    links: list[PhysicalLink] = field(default_factory=list)
    switches: int = 0
    bridges: int = 0

    def hub(self, children: list[str], host_bridge: bool = False) -> str:
        """A new PCIe switch (or host bridge) with ``children`` attached."""
        if host_bridge:
            name, model = f"host_bridge{self.bridges}", HOST_BRIDGE_MODEL
            self.bridges += 1
        else:
            name, model = f"pcie_switch{self.switches}", None
            self.switches += 1
        self.devices.append(Device(name, "pcie_switch", model=model))
        self.links += [PhysicalLink(child, name, self.pcie_kind) for child in children]
        return name

    def attach(self, children: list[str], parent: str) -> None:
        """Join each child to ``parent`` by one PCIe link."""
        self.links += [PhysicalLink(child, parent, self.pcie_kind) for child in children]


def _inside(clusters: list[list[int]], outer: list[int]) -> list[list[int]]:
    """The clusters of a finer level that make up ``outer``."""
    return [c for c in clusters if c[0] in outer]


def _build_pcie(machine: _Machine, levels: list[list[list[int]]], names: list[str], cpus: list[str]) -> None:
    """Switches, host bridges and uplinks for every NUMA node (rules 3 and 4)."""
    pix, pxb, phb, numa = levels
    for node, cpu in zip(numa, cpus):
        bridges = _inside(phb, node)
        for bridge in bridges:
            tops = [_pxb_node(machine, group, pix, names) for group in _inside(pxb, bridge)]
            if len(bridges) > 1:
                tops = [machine.hub(tops, host_bridge=True)]
            machine.attach(tops, cpu)


def _pxb_node(machine: _Machine, group: list[int], pix: list[list[int]], names: list[str]) -> str:
    leaves = _inside(pix, group)
    if len(leaves) == 1:
        return names[group[0]] if len(group) == 1 else machine.hub([names[i] for i in group])
    return machine.hub([machine.hub([names[i] for i in leaf]) for leaf in leaves])


def _cpu_numbers(numa: list[list[int]], matrix: TopoMatrix, notes: list[str]) -> list[int]:
    """NUMA node number of each NUMA group (rule 5)."""
    numbers: list[int | None] = []
    for group in numa:
        values = list(dict.fromkeys(matrix.numa[i] for i in group if matrix.numa[i] is not None))
        if len(values) > 1:
            notes.append(
                f"NUMA Affinity puts {', '.join(matrix.labels[i] for i in group)} on nodes "
                f"{values}, but the matrix joins them below SYS; they share cpu{values[0]}"
            )
        if values and values[0] in numbers:
            notes.append(
                f"{', '.join(matrix.labels[i] for i in group)} share NUMA Affinity {values[0]} with "
                "devices the matrix puts SYS apart; they got a NUMA node number of their own"
            )
        numbers.append(values[0] if values and values[0] not in numbers else None)
    taken = {number for number in numbers if number is not None}
    free = (k for k in itertools.count() if k not in taken)
    return [number if number is not None else next(free) for number in numbers]


# -- NVLink and the GPU generation ------------------------------------------------------


@dataclass(frozen=True)
class _Generation:
    """Link kinds that go with a GPU generation (rules 5 to 7)."""

    name: str
    pattern: str
    nvlink: str | None
    pcie: str
    socket: str = "upi"
    nic: str = "eth_100g"
    note: str = ""


_BRIDGE = "its NVLink is a bridge between cards, slower than the catalogue's per-link figure: calibrate it"
_GENERATIONS = (
    _Generation("Blackwell", r"\bG?B[123]00\b|Blackwell|RTX 50[6-9]0", "nvlink5", "pcie5_x16", nic="ib_ndr"),
    _Generation("Hopper", r"\bG?H(100|200|800|20)\b", "nvlink4", "pcie5_x16", nic="ib_ndr"),
    _Generation("Ampere", r"\bA(100|800)\b", "nvlink3", "pcie4_x16", nic="ib_hdr"),
    _Generation("Ampere", r"\bA30\b", "nvlink3", "pcie4_x16"),
    _Generation(
        "Ampere", r"RTX 30[5-9]0|RTX A[2-6]000|\bA(2|10|10G|16|40)\b", "nvlink3", "pcie4_x16", note=_BRIDGE
    ),
    _Generation("Ada", r"RTX 40[5-9]0|\bL(4|20|40|40S)\b|\bAda\b", None, "pcie4_x16"),
    _Generation("Turing", r"RTX 20[6-8]0|TITAN RTX|Quadro RTX|\bT4\b", "nvlink2", "pcie3_x16", note=_BRIDGE),
    _Generation("Volta", r"V100|TITAN V\b", "nvlink2", "pcie3_x16", socket="qpi"),
    _Generation("Pascal", r"P100", "nvlink1", "pcie3_x16", socket="qpi"),
    _Generation("Pascal", r"GTX 10[5-8]0|\bP(4|40|6000)\b|TITAN Xp?\b", None, "pcie3_x16", socket="qpi"),
    _Generation(
        "Kepler/Maxwell", r"\bK(20|40|80)\b|\bM(40|60)\b|GTX 9[5-8]0", None, "pcie3_x16", socket="qpi"
    ),
)
_UNKNOWN = _Generation("unknown", "", "nvlink2", "pcie3_x16")


def _generation(gpu_model: str | None) -> _Generation:
    for generation in _GENERATIONS:
        if gpu_model and re.search(generation.pattern, gpu_model, re.IGNORECASE):
            return generation
    return _UNKNOWN


def _chosen(
    given: str | None, families: tuple[str, ...], inferred: str, why: str, what: str
) -> tuple[str, str]:
    """(kind, reason): the given kind (checked) or the inferred one."""
    if given is None:
        return inferred, why
    kind = get_link_kind(given)
    if kind.family not in families:
        raise TopologyError(f"{what} must be a link kind of family {' or '.join(families)}, got {given!r}")
    return given, "given"


def _nvlink_kind(given: str | None, generation: _Generation, gpu_model: str | None) -> tuple[str, str]:
    if generation.nvlink is None or generation is _UNKNOWN:
        about = f"{gpu_model!r} is not a known NVLink GPU" if gpu_model else "no GPU model given"
        inferred, why = "nvlink2", f"default: {about}"
    elif generation.nvlink not in LINK_KINDS:
        inferred = "nvlink4"
        why = f"{generation.name}'s {generation.nvlink} is not in the catalogue, approximated by nvlink4"
    else:
        inferred, why = generation.nvlink, f"{generation.name} GPU"
    if generation.note and generation.nvlink:
        why += f"; {generation.note}"
    return _chosen(given, ("nvlink",), inferred, why, "nvlink_kind")


def _socket_kind(given: str | None, generation: _Generation, cpu_model: str | None) -> tuple[str, str]:
    if cpu_model and re.search(r"\bAMD\b|EPYC", cpu_model, re.IGNORECASE) and "xgmi" in LINK_KINDS:
        return _chosen(given, ("inter_socket",), "xgmi", "AMD CPU", "socket_kind")
    why = f"{generation.name}-era Intel host" if generation.socket == "qpi" else "default"
    return _chosen(given, ("inter_socket",), generation.socket, why, "socket_kind")


def _nvlink_links(
    matrix: TopoMatrix, names: list[str], kind: str, notes: list[str]
) -> tuple[list[Device], list[PhysicalLink], str]:
    """NVLink bonds (rule 6): direct bundles, or one NVSwitch; plus a one-line summary."""
    gpus = [i for i in range(len(names)) if matrix.is_gpu(i)]
    counts = {(i, j): int(c[2:]) for (i, j), c in matrix.cells.items() if i < j and c.startswith("NV")}
    if not counts:
        return [], [], "no NVLink"
    per_gpu = _NVLINKS_PER_GPU.get(kind, 18)
    bonds = set(counts.values())
    everywhere = len(gpus) >= 3 and len(counts) == len(gpus) * (len(gpus) - 1) // 2 and len(bonds) == 1
    width = next(iter(bonds))
    if everywhere and (width >= 12 or (len(gpus) - 1) * width > per_gpu):
        bandwidth = format_bandwidth(width * LINK_KINDS[kind].bandwidth_Bps)
        switch = Device("nvswitch0", "nvswitch", model=f"NVSwitch (inferred from NV{width} between all GPUs)")
        links = [PhysicalLink(names[g], "nvswitch0", kind, width) for g in gpus]
        return (
            [switch],
            links,
            (
                f"NV{width} between every pair of the {len(gpus)} GPUs, modelled as one NVSwitch "
                f"(nvswitch0) with a bundle of {width} {kind} links per GPU "
                f"({bandwidth} per direction per GPU)"
            ),
        )
    for g in gpus:
        total = sum(c for pair, c in counts.items() if g in pair)
        if total > per_gpu:
            notes.append(f"{matrix.labels[g]} shows {total} NVLinks, more than a {kind} GPU has ({per_gpu})")
    links = [PhysicalLink(names[i], names[j], kind, c) for (i, j), c in sorted(counts.items())]
    return [], links, f"{len(links)} bonded GPU pairs of {kind} ({sum(counts.values())} links)"


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
    matrix = parse_topo_matrix(text)
    kinds = _choose_kinds(gpu_model, cpu_model, nvlink_kind, pcie_kind, nic_kind, socket_kind)
    notes: list[str] = []
    levels = _partitions(matrix)
    numbers = _cpu_numbers(levels[_NODE], matrix, notes)
    cpus = [f"cpu{number}" for number in numbers]
    names = matrix.device_names
    machine = _Machine(kinds["pcie"][0])
    _build_pcie(machine, levels, names, cpus)
    switch, nvlinks, nvlink_summary = _nvlink_links(matrix, names, kinds["nvlink"][0], notes)
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


def _choose_kinds(
    gpu_model: str | None,
    cpu_model: str | None,
    nvlink_kind: str | None,
    pcie_kind: str | None,
    nic_kind: str | None,
    socket_kind: str | None,
) -> dict[str, tuple[str, str]]:
    """``{"nvlink"|"pcie"|"nic"|"socket": (kind, why)}``: given kinds win over inferred ones."""
    generation = _generation(gpu_model)
    why = f"{generation.name} GPU" if generation is not _UNKNOWN else "default for an unknown GPU"
    return {
        "nvlink": _nvlink_kind(nvlink_kind, generation, gpu_model),
        "pcie": _chosen(pcie_kind, ("pcie",), generation.pcie, why, "pcie_kind"),
        "nic": _chosen(nic_kind, ("ethernet", "infiniband"), generation.nic, why, "nic_kind"),
        "socket": _socket_kind(socket_kind, generation, cpu_model),
    }


def _endpoint(matrix: TopoMatrix, index: int, name: str, gpu_model: str | None) -> Device:
    if matrix.is_gpu(index):
        return Device(name, "gpu", model=gpu_model)
    label = matrix.labels[index]
    model = matrix.nic_names.get(label) or (None if re.fullmatch(r"NIC\d+", label) else label)
    return Device(name, "nic", model=model)


def _describe(
    matrix: TopoMatrix,
    levels: list[list[list[int]]],
    machine: _Machine,
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
        f"{len(matrix.labels) - gpus} NICs, {len(levels[_NODE])} NUMA node(s) (cpuN, numbered from the "
        f"{numa_from}), {machine.switches} PCIe switches and {machine.bridges} host bridges inferred "
        "from the PIX/PXB/PHB/NODE/SYS cells",
        f"NVLink: {nvlink_summary}{nvlink}",
        "PCIe: every PCIe link is one {} ({})".format(*kinds["pcie"]),
        "NUMA nodes joined pairwise by one {} link ({})".format(*kinds["socket"])
        if len(levels[_NODE]) > 1
        else "",
        "NIC network kind nic_kind={} ({}); unused inside one box, for a cluster builder".format(
            *kinds["nic"]
        ),
    ]
    hidden = [
        RELATIONS[_level_of(levels, i, j)]
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
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ParseError(f"cannot read nvidia-smi topo output: {exc.strerror}", source=str(path)) from None
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
