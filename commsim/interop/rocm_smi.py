"""``rocm-smi --showtopo`` output as a commsim machine, and a machine written back as that output.

``rocm-smi --showtopo`` prints four blocks for the GPUs of an AMD host: the
*weight* between every two GPUs (a cost: 15 per xGMI hop, 20 per PCIe
segment, a little more across the sockets), the *hops* (1 over xGMI, 2
through one CPU, 3 through both sockets), the *link type* (``XGMI`` or
``PCIE``) and every GPU's *NUMA node* (and affinity). Each matrix is a
header of ``GPU<j>`` labels and one row per GPU; the diagonal holds ``0``.

The machine built from it:

* ``gpu<i>`` per GPU; ``cpu<k>`` per NUMA node the GPUs sit on, joined
  pairwise by the inter-socket link (``socket_kind``, default EPYC
  ``xgmi``); each GPU on its node's CPU by a PCIe link (``pcie_kind``,
  default ``pcie5_x16``, MI300X's host interface; MI100/MI200 are Gen 4);
* an xGMI link (``xgmi_gpu``) between every two GPUs of type ``XGMI`` with
  the smallest xGMI weight (one hop). xGMI pairs with a larger weight are
  reached through other GPUs, which commsim's GPUs do not do: they are
  listed in :attr:`RocmTopo.notes` and talk over PCIe.

The output mirrors what :func:`topology_to_rocm_smi` writes for a machine
of that shape, so a file round-trips (:func:`rocm_smi_to_topology` then
:func:`topology_to_rocm_smi` gives the same four matrices).

References
----------
ROCm/rocm_smi_lib ``python_smi_tools/rocm_smi.py`` (``showTopology``:
the block titles, ``print2DArray`` cells padded to 12 characters, NUMA
lines ``GPU[i]\\t\\t: (Topology) Numa Node: k``); outputs posted in
ROCm/rocm_smi_lib issue #108 (4 GPUs over PCIe, weight 52, hops 3) and in
public MI250/MI300X guides (4 or 8 GPUs over xGMI, weight 15, hops 1);
the weight rule (15 per xGMI hop, 20 per PCIe segment) from
ROCm/rocm-systems pull request #7372.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path

from commsim.interop.errors import ExportError, FormatError
from commsim.textfile import read_text_file
from commsim.topology.linkkinds import get_link_kind
from commsim.topology.model import Device, PhysicalLink, Topology

__all__ = [
    "LINK_TYPES",
    "RocmTopo",
    "parse_rocm_smi",
    "read_rocm_smi",
    "rocm_smi_to_topology",
    "topology_to_rocm_smi",
]

LINK_TYPES = ("XGMI", "PCIE")
"""Link types ``rocm-smi`` prints between two GPUs."""

_BLOCKS = {
    "weight": "Weight between two GPUs",
    "hops": "Hops between two GPUs",
    "type": "Link Type between two GPUs",
}
_NUMA_TITLE = "Numa Nodes"
_XGMI_WEIGHT, _PCIE_WEIGHT, _SOCKET_WEIGHT = 15, 20, 12
_TITLE = re.compile(r"^=+\s*(.*?)\s*=+\s*$")
_NUMA = re.compile(r"^GPU\s*\[?(\d+)\]?\s*:\s*\(Topology\)\s*Numa (Node|Affinity):\s*(-?\d+)\s*$")


@dataclass
class RocmTopo:
    """The four blocks of ``rocm-smi --showtopo``.

    Attributes
    ----------
    weight, hops : list of list of int
        Per pair of GPUs (0 on the diagonal).
    link_type : list of list of str
        ``XGMI`` or ``PCIE`` per pair ("0" on the diagonal).
    numa_node : list of int
        Per GPU (-1 when unknown).
    source : str or None
    notes : list of str
        What the import assumed or left out.
    """

    weight: list[list[int]]
    hops: list[list[int]]
    link_type: list[list[str]]
    numa_node: list[int]
    source: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def n(self) -> int:
        """Number of GPUs."""
        return len(self.link_type)


def _table(lines: list[tuple[int, str]], title: str, source: str | None) -> list[list[str]]:
    """The cells of one matrix block (rows without their label)."""
    if not lines:
        raise FormatError(f"block {title!r} is empty", source)
    header_line, header = lines[0]
    labels = header.split()
    if not labels or any(not re.fullmatch(r"GPU\d+", label) for label in labels):
        raise FormatError(
            f"block {title!r}: expected a header of GPU0 GPU1 ..., got {header.strip()!r}",
            source,
            header_line,
        )
    rows = []
    for k, (number, text) in enumerate(lines[1:]):
        cells = text.split()
        if not cells or cells[0] != f"GPU{k}" or len(cells) != len(labels) + 1:
            raise FormatError(
                f"block {title!r}: expected row GPU{k} with {len(labels)} values, got {text.strip()!r}",
                source,
                number,
            )
        rows.append(cells[1:])
    if len(rows) != len(labels):
        raise FormatError(f"block {title!r}: {len(labels)} columns but {len(rows)} rows", source, header_line)
    return rows


def _blocks(text: str, source: str | None) -> dict[str, list[tuple[int, str]]]:
    """Lines of every ``=== title ===`` block, by title."""
    blocks: dict[str, list[tuple[int, str]]] = {}
    current: list[tuple[int, str]] | None = None
    for number, line in enumerate(text.splitlines(), 1):
        match = _TITLE.match(line.strip())
        if match:
            current = blocks.setdefault(match.group(1), []) if match.group(1) else None
        elif current is not None and line.strip():
            current.append((number, line))
    return blocks


def _integers(
    rows: list[list[str]], title: str, source: str | None, lines: list[tuple[int, str]]
) -> list[list[int]]:
    """The cells as whole numbers (the diagonal is 0); ``lines`` are the block's, header first."""
    matrix = []
    for i, row in enumerate(rows):
        values = []
        for j, cell in enumerate(row):
            if i != j and not cell.isdigit():
                line = lines[i + 1][0] if i + 1 < len(lines) else None
                raise FormatError(
                    f"block {title!r}: GPU{i}/GPU{j} is {cell!r}, expected a whole number", source, line
                )
            values.append(0 if i == j else int(cell))
        matrix.append(values)
    return matrix


def parse_rocm_smi(text: str, source: str | None = None) -> RocmTopo:
    """The blocks of a ``rocm-smi --showtopo`` output.

    Raises
    ------
    FormatError
        If the link-type block is missing, a matrix is not square or names
        its rows out of order, a link type is not XGMI or PCIE, or a weight
        or hop count is not a number; with the file and line.
    """
    blocks = _blocks(text, source)
    if _BLOCKS["type"] not in blocks:
        raise FormatError(f"no {_BLOCKS['type']!r} block: is this the output of rocm-smi --showtopo?", source)
    types = _table(blocks[_BLOCKS["type"]], _BLOCKS["type"], source)
    for i, row in enumerate(types):
        for j, cell in enumerate(row):
            if i != j and cell not in LINK_TYPES:
                line = blocks[_BLOCKS["type"]][i + 1][0]
                raise FormatError(
                    f"link type {cell!r} between GPU{i} and GPU{j}; valid: {', '.join(LINK_TYPES)}",
                    source,
                    line,
                )
    n = len(types)
    matrices = {}
    for key in ("weight", "hops"):
        title = _BLOCKS[key]
        rows = _table(blocks[title], title, source) if title in blocks else [["0"] * n for _ in range(n)]
        if len(rows) != n:
            raise FormatError(f"block {title!r} has {len(rows)} GPUs but the link types have {n}", source)
        matrices[key] = _integers(rows, title, source, blocks.get(title, []))
    numa = _numa(blocks.get(_NUMA_TITLE, []), n, source)
    return RocmTopo(matrices["weight"], matrices["hops"], types, numa, source)


def _numa(lines: list[tuple[int, str]], n: int, source: str | None) -> list[int]:
    nodes = [-1] * n
    for number, line in lines:
        match = _NUMA.match(line.strip())
        if match is None:
            raise FormatError(
                f"expected 'GPU[i] : (Topology) Numa Node: k', got {line.strip()!r}", source, number
            )
        gpu, what, value = int(match.group(1)), match.group(2), int(match.group(3))
        if gpu >= n:
            raise FormatError(f"GPU[{gpu}] is not among the {n} GPUs of the matrices", source, number)
        if what == "Node":
            nodes[gpu] = value
    return nodes


def read_rocm_smi(path: str | PathLike[str]) -> RocmTopo:
    """Read a saved ``rocm-smi --showtopo`` output."""
    return parse_rocm_smi(read_text_file(path, "rocm-smi --showtopo output"), str(Path(path)))


def rocm_smi_to_topology(
    topo: RocmTopo,
    name: str | None = None,
    *,
    pcie_kind: str = "pcie5_x16",
    socket_kind: str = "xgmi",
    model: str | None = None,
) -> Topology:
    """The machine of a ``rocm-smi --showtopo`` output (see the module docstring).

    Parameters
    ----------
    topo : RocmTopo
    name : str, optional
        Default: the file's stem, else ``"rocm_smi"``.
    pcie_kind, socket_kind : str
        Link kinds of the GPUs' host links and of the links between sockets.
    model : str, optional
        GPU model to record on the GPUs, e.g. ``"MI300X"``.
    """
    for kind, family in ((pcie_kind, "pcie"), (socket_kind, "inter_socket")):
        if get_link_kind(kind).family != family:
            raise FormatError(f"{kind!r} is not a link kind of family {family}")
    if any(node < 0 for node in topo.numa_node):
        topo.notes.append("some GPUs have no NUMA node: they are placed on cpu0")
    nodes = sorted({max(node, 0) for node in topo.numa_node})
    cpu_of = {node: f"cpu{k}" for k, node in enumerate(nodes)}
    gpus = [f"gpu{i}" for i in range(topo.n)]
    devices = [Device(g, "gpu", model=model) for g in gpus] + [Device(c, "cpu") for c in cpu_of.values()]
    links = [PhysicalLink(g, cpu_of[max(topo.numa_node[i], 0)], pcie_kind) for i, g in enumerate(gpus)]
    cpus = list(cpu_of.values())
    links += [PhysicalLink(a, b, socket_kind) for k, a in enumerate(cpus) for b in cpus[k + 1 :]]
    links += _xgmi_links(topo, gpus)
    stem = Path(topo.source).stem if topo.source else "rocm_smi"
    return Topology(name or stem, devices, links, description="imported from rocm-smi --showtopo")


def _xgmi_links(topo: RocmTopo, gpus: list[str]) -> list[PhysicalLink]:
    pairs = [(i, j) for i in range(topo.n) for j in range(i + 1, topo.n) if topo.link_type[i][j] == "XGMI"]
    if not pairs:
        return []
    direct = min(topo.weight[i][j] for i, j in pairs) or _XGMI_WEIGHT
    links = []
    for i, j in pairs:
        if topo.weight[i][j] in (direct, 0):
            links.append(PhysicalLink(gpus[i], gpus[j], "xgmi_gpu"))
        else:
            topo.notes.append(
                f"GPU{i}-GPU{j}: xGMI weight {topo.weight[i][j]} is more than one hop ({direct}): "
                "no direct link, they talk over PCIe here"
            )
    return links


def _cpu_of(topology: Topology, gpu: str) -> str:
    """The CPU a GPU's PCIe path reaches first."""
    seen, frontier = {gpu}, [gpu]
    while frontier:
        nxt = []
        for node in frontier:
            for peer in topology.graph.successors(node):
                kind = topology.device(peer).kind
                if peer in seen or kind == "gpu" or topology.link(node, peer).family != "pcie":
                    continue
                if kind == "cpu":
                    return peer
                seen.add(peer)
                nxt.append(peer)
        frontier = nxt
    raise ExportError(f"{gpu} reaches no CPU over PCIe; rocm-smi places every GPU on a NUMA node")


def topology_to_rocm_smi(topology: Topology) -> str:
    """What ``rocm-smi --showtopo`` would print for ``topology`` (the rules of the module docstring).

    Raises
    ------
    ExportError
        If a GPU reaches no CPU over PCIe.
    """
    gpus = topology.gpus
    cpus = topology.devices_of_kind("cpu")
    node = [cpus.index(_cpu_of(topology, g)) for g in gpus]
    n = len(gpus)
    weight = [[0] * n for _ in range(n)]
    hops = [[0] * n for _ in range(n)]
    kind = [["0"] * n for _ in range(n)]
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            if topology.graph.has_edge(gpus[i], gpus[j]) and topology.link(gpus[i], gpus[j]).family == "xgmi":
                weight[i][j], hops[i][j], kind[i][j] = _XGMI_WEIGHT, 1, "XGMI"
            elif node[i] == node[j]:
                weight[i][j], hops[i][j], kind[i][j] = 2 * _PCIE_WEIGHT, 2, "PCIE"
            else:
                weight[i][j], hops[i][j], kind[i][j] = 2 * _PCIE_WEIGHT + _SOCKET_WEIGHT, 3, "PCIE"
    out = [_spacer(" ROCm System Management Interface ")]
    tables: list[tuple[str, list[list[str]]]] = [
        (_BLOCKS["weight"], [[str(v) for v in row] for row in weight]),
        (_BLOCKS["hops"], [[str(v) for v in row] for row in hops]),
        (_BLOCKS["type"], kind),
    ]
    for title, matrix in tables:
        out.append(_spacer(f" {title} "))
        out.append("       " + "".join(f"GPU{j}".ljust(13) for j in range(n)).rstrip())
        out += [
            f"GPU{i}".ljust(7) + "".join(v.ljust(13) for v in row).rstrip() for i, row in enumerate(matrix)
        ]
        out.append("")
    out.append(_spacer(f" {_NUMA_TITLE} "))
    for i in range(n):
        out.append(f"GPU[{i}]\t\t: (Topology) Numa Node: {node[i]}")
        out.append(f"GPU[{i}]\t\t: (Topology) Numa Affinity: {node[i]}")
    out.append(_spacer(" End of ROCm SMI Log "))
    return "\n".join(out) + "\n"


def _spacer(title: str, width: int = 90) -> str:
    """A ``=== title ===`` line as rocm-smi centres it."""
    return title.center(width, "=")
