"""Reading ``nvidia-smi topo -m`` and ``nvidia-smi topo -p2p`` matrices.

:func:`parse_topo_matrix` reads the first ``topo -m`` matrix of a text into a
:class:`TopoMatrix` (labels, cells, NUMA and CPU affinity, the ``NIC
Legend``, line numbers), checking that it is square and symmetric;
:func:`find_p2p_status` reads a ``topo -p2p`` matrix. Building a machine
from them is :mod:`commsim.topology.nvsmi`'s job.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from commsim.errors import ParseError

__all__ = ["RELATIONS", "TopoMatrix", "find_p2p_status", "parse_topo_matrix"]

RELATIONS = ("PIX", "PXB", "PHB", "NODE", "SYS")
"""PCIe relations of ``nvidia-smi topo -m``, closest first."""

_CELL = re.compile(r"X|PIX|PXB|PHB|NODE|SYS|SOC|NV([1-9]\d*)")
MAX_NVLINKS = 18
"""The most NVLinks one GPU has (H100, B200, GB200: 18), so the most one cell can bond."""
_CELLS_EXPECTED = "X, NV#, PIX, PXB, PHB, NODE, SYS or SOC"
_LABEL = re.compile(r"[A-Za-z][\w-]*\d")
_EXTRA = re.compile(r"CPU Affinity|NUMA Affinity|GPU NUMA ID")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_P2P_CELLS = frozenset({"X", "OK", "NS", "CNS", "GNS", "TNS", "U"})


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


MAX_MATRIX_DEVICES = 128
"""The most GPUs and NICs one matrix may have (one host; a DGX H100 shows 8 GPUs and 10 NICs)."""


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
    if len(labels) > MAX_MATRIX_DEVICES:
        raise ParseError(
            f"the matrix has {len(labels):,} columns (GPUs and NICs), more than the limit of "
            f"{MAX_MATRIX_DEVICES}: nvidia-smi topo -m shows one host",
            line=header + 1,
        )
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
            if cell.startswith("NV") and int(cell[2:]) > MAX_NVLINKS:
                raise ParseError(
                    f"cell {labels[i]}/{labels[j]} is {cell}, more NVLinks than any GPU has (at most "
                    f"{MAX_NVLINKS}: H100, B200); check the cell (NV1 to NV{MAX_NVLINKS})",
                    line=line,
                )
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
