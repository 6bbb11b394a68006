"""A log's text as the readers read it: commentary blanked, launcher prefixes removed, the
``nvidia-smi topo -m`` matrix found.

Launchers put a prefix before each line (``mpirun --tag-output``'s
``[1,15]<stdout>:``, ``srun --label``'s ``15:``, ``mpiexec -prepend-rank``'s
``[15]``, a time stamp, Ray's worker prefix ``(<actor or task> pid=N, ip=...)``
as SkyPilot writes it, ``(head, rank=0, pid=3808)``) and Markdown quotes a
pasted log with ``> ``: it is removed and the rank a launcher names kept.
NCCL's debug lines start ``host:pid:tid [dev] NCCL INFO``;
quoted without their ``host:pid:tid`` (``[1] NCCL INFO Channel 00/0 ...``)
the bracket is the CUDA device, not a launcher's rank.
"""

from __future__ import annotations

import itertools
import re
from typing import NamedTuple

__all__ = ["CleanText", "clean_lines", "clean_text", "find_topo_matrix", "unknown_prefix"]


_COMMENTARY = re.compile(r"^\s*##(?:\s|$)")


_PREFIXES = (
    re.compile(r"^\s*\[\d+,(?P<rank>\d+)\]<(?:stdout|stderr)>:"),  # mpirun --tag-output
    # mpiexec -prepend-rank (MPICH, Intel MPI); not NCCL's own '[dev] NCCL INFO' tag, its host:pid:tid cut
    re.compile(r"^\s*\[(?P<rank>\d+)\](?![ \t]+NCCL[ \t])(?:[ \t]|$)"),
    re.compile(r"^\s*(?P<rank>\d+):(?:[ \t]|$)"),  # srun --label
    re.compile(r"^\s*rank\s*(?P<rank>\d+)\s*:[ \t]?", re.IGNORECASE),
    # Ray prints a worker's output after '(pid=N)', '(Name pid=N, ip=A)'
    # (docs.ray.io, "Configuring Logging"); SkyPilot's '(head, rank=0, pid=N)'
    # names its node rank, a lower bound on the process ranks, like the others.
    re.compile(r"^\s*\((?=[^()]*\bpid=\d+)(?:[^()]*?\brank=(?P<rank>\d+))?[^()]*\)(?:[ \t]|$)"),
    re.compile(r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?[ \t]"),
    # a Markdown block quote ('> ', '>' before '#' or a digit, '>>' nested): notes and issue replies
    # quote pasted output so (probe 14's 256)
    re.compile(r"^\s*>(?=[ \t#\d>]|$)[ \t]?"),
)


class CleanText(NamedTuple):
    """A log's lines with commentary blanked and launcher prefixes removed.

    ``prefix_ranks`` maps a line number to the rank its MPI or Slurm prefix
    named (``[1,15]<stdout>:`` or ``15:`` -> 15). ``hidden_header`` is the
    first line holding a column header after text no known prefix matched,
    and that text: ``(12, 'node-0 | ')``, for the refusal to name.
    """

    lines: list[str]
    prefix_ranks: dict[int, int]
    hidden_header: tuple[int, str] | None = None


_INNER_HEADER = re.compile(r"#?\s*(?:size|bytes)\s+count\s+type\s.*\btime\s+algbw\s+busbw\b", re.IGNORECASE)
"""A column header (``#  size  count  type ... time  algbw  busbw``) anywhere in a line: its columns
in nccl-tests' order, so prose naming a column or two is none."""


def unknown_prefix(line: str) -> str | None:
    """The text before a column header that does not start ``line``, or None.

    A launcher prefix commsim does not know hides the whole table from the
    readers; this finds what to name in the refusal.
    """
    if "algbw" not in line.lower():
        return None
    match = _INNER_HEADER.search(line)
    if match is None or not line[: match.start()].strip():
        return None
    return line[: match.start()]


def clean_text(text: str) -> CleanText:
    """The lines of ``text`` with commentary blanked and launcher prefixes removed.

    Blanking (rather than dropping) keeps list index + 1 equal to the line number.
    """
    cleaned: list[str] = []
    ranks: dict[int, int] = {}
    hidden: tuple[int, str] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if _COMMENTARY.match(line):
            cleaned.append("")
            continue
        line, rank = _strip_prefixes(line)
        cleaned.append(line)
        if rank is not None:
            ranks[number] = rank
        prefix = unknown_prefix(line) if hidden is None else None
        hidden = (number, prefix) if prefix is not None else hidden
    return CleanText(cleaned, ranks, hidden)


_BRACKETED = re.compile(r"\[[\d,]+\](?:<(?:stdout|stderr)>:)?")
"""A bracketed launcher prefix (``[0]``, ``[1,0]<stdout>:``) as text, to find it again inside a line."""


_ROW_START = re.compile(r"\s*\d")
"""A result row starts with its size; NCCL's lines start with a host name or a bracketed tag."""


def _strip_prefixes(line: str) -> tuple[str, int | None]:
    """``line`` without its launcher prefixes, and the rank they name.

    A launcher that tags each write rather than each line (``mpiexec
    -prepend-rank``) puts its bracketed prefix again inside a result row,
    glued to the field before it, since nccl-tests prints a row in pieces
    (``-1[0]    1626.5``): those repeats are replaced by a blank, in result rows
    only (NCCL's channel lines name ranks as ``0[0] -> 1[1]``).
    """
    rank, tags = None, set()
    for _ in range(8):  # a time stamp, a launcher, a tagger, a rank, quotes within quotes
        stripped = line
        for prefix in _PREFIXES:
            match = prefix.match(stripped)
            if match:
                stripped = stripped[match.end() :]
                rank = int(match.group("rank")) if match.groupdict().get("rank") else rank
                tags.update(_BRACKETED.findall(match.group(0)))
        if stripped == line:
            break
        line = stripped
    if _ROW_START.match(line) and "NCCL" not in line:  # NCCL's own lines keep their 0[0] rank tags
        for tag in tags:
            line = re.sub(r"(?<=\S)" + re.escape(tag), " ", line)
    return line, rank


def clean_lines(text: str) -> list[str]:
    """The lines of ``text`` with commentary blanked and launcher prefixes removed."""
    return clean_text(text).lines


_TOPO_CELL = re.compile(r"^(?:X|SYS|SOC|NODE|PHB|PXB|PIX|PXN|NV\d+)$")


_TOPO_LABEL = re.compile(r"^[A-Za-z][\w-]*\d$")


def find_topo_matrix(lines: list[str]) -> str | None:
    """The raw text of the first ``nvidia-smi topo -m`` matrix in ``lines``.

    The matrix runs from its ``GPU0 GPU1 ...`` header row through its last
    row (``GPUn``/``NICn`` followed by one connection code per column).
    Other matrices with the same header, e.g. ``topo -p2p``, are skipped.
    """
    for index, line in enumerate(lines):
        labels = _topo_labels(line)
        if labels:
            count = _count_topo_rows(lines, index + 1, labels)
            if count:
                return "\n".join(lines[index : index + 1 + count])
    return None


def _topo_labels(line: str) -> list[str]:
    tokens = line.split()
    if not tokens or tokens[0] != "GPU0":
        return []
    labels = list(itertools.takewhile(_TOPO_LABEL.match, tokens))
    if len(tokens) > len(labels) and _TOPO_CELL.match(tokens[len(labels)]):
        return []  # a matrix row, not the header
    return labels


def _count_topo_rows(lines: list[str], start: int, labels: list[str]) -> int:
    count = 0
    for line in lines[start:]:
        tokens = line.split()
        cells = tokens[1 : 1 + len(labels)]
        if not tokens or tokens[0] not in labels or len(cells) < len(labels):
            break
        if not all(_TOPO_CELL.match(cell) for cell in cells):
            break
        count += 1
    return count
