"""Read the text nccl-tests prints (every format since 2017) into a RunData.

Lines are classified one at a time: the run header, the device list, version
lines, the column header (which fixes the table's layout), result rows, and
the footer. Anything else (NCCL INFO, MPI warnings, shell prompts) is noise.
A line inside the table that starts with a digit is a result row and must
match the column header, or it is a :class:`~commsim.errors.ParseError`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from commsim.calibrate.parser import Device, NcclTestsRow, decode_version_code, find_program
from commsim.calibrate.parser_common import (
    GBPS,
    Measured,
    Printed,
    RunData,
    find_topo_matrix,
    printed,
)
from commsim.errors import ParseError

__all__ = ["read_text_run"]

_NCCL_VERSION = re.compile(r"\bNCCL version (\d+\.\d+\.\d+[^\s,;]*)")
_TESTS_VERSION = re.compile(r"^#\s*nccl-tests version (\S+) nccl-headers=(\d+) nccl-library=(\d+)")
_DEVICE = re.compile(
    r"^#\s*Rank\s+(?P<rank>\d+)(?:\s+Group\s+\d+)?(?:\s+Pid\s+(?P<pid>\d+))?\s+on\s+(?P<host>\S+)"
    r"\s+device\s+(?P<device>\d+)(?:\s+\[(?P<bus>[^\]]*)\])?\s+(?P<model>.*\S)"
)
_RUN_HEADER = re.compile(r"^#\s*nThread\s")
_UNITS = re.compile(r"^#\s*\(B\)")
_AVG_BUSBW = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(\S+)")
_OUT_OF_BOUNDS = re.compile(r"^#\s*Out of bounds values\s*:\s*(\d+)")
_COMPILED_WITH = re.compile(r"^#\s*NCCL Tests compiled with NCCL (\S+)")
_INTEGER = re.compile(r"^-?\d+$")
_NCCL_LOG = re.compile(r"^\S+:\d+:\d+\s+\[\d+\]\s")  # NCCL_DEBUG lines: "host:pid:tid [dev] ..."

_LABELS = {  # canonical column name: header labels of all nccl-tests versions
    "size": "size bytes",
    "count": "count n",
    "type": "type",
    "redop": "redop op",
    "root": "root",
    "time": "time cputime",
    "algbw": "algbw",
    "busbw": "busbw",
    "wrong": "#wrong",
    "error": "error res",
    "timestamp": "timestamp",
}
_CANONICAL = {label: name for name, labels in _LABELS.items() for label in labels.split()}
_MEASURES = {"time", "algbw", "busbw", "wrong", "error"}
_REQUIRED = (("", "size"), ("", "count"), ("", "type"), ("oop", "time"), ("oop", "algbw"), ("oop", "busbw"))
_SLOT_NAMES = {"oop": "out-of-place", "ip": "in-place", "": ""}


class _Column(NamedTuple):
    label: str  # as printed in the header
    name: str  # canonical, or "other"
    slot: str  # "oop", "ip" or "" (not a measurement)
    width: int  # number of whitespace-separated fields in a row


@dataclass
class _Layout:
    """The columns of a result table, as its header announced them."""

    line: int
    columns: list[_Column]
    time_per_s: float  # printed time units per second: 1e6 for us

    @property
    def width(self) -> int:
        return sum(column.width for column in self.columns)

    def has(self, slot: str, name: str) -> bool:
        return any(c.slot == slot and c.name == name for c in self.columns)


class _Half(NamedTuple):
    """One half (out-of-place or in-place) of a result row, in SI units."""

    time_s: float | None
    algbw_Bps: float | None
    busbw_Bps: float | None
    wrong: int | None
    max_error: float | None


def read_text_run(lines: list[str], source: str | None) -> RunData:
    """Read cleaned text lines (see ``clean_lines``) of one nccl-tests run."""
    reader = _TextReader(source)
    for number, line in enumerate(lines, start=1):
        reader.feed(number, line)
    data = reader.data
    data.nccl_version = data.nccl_version or reader.library_version
    data.program = next(filter(None, map(find_program, lines)), None)
    data.command = _find_command(lines)
    data.topo_matrix = find_topo_matrix(lines)
    return data


class _TextReader:
    """A line-by-line state machine over the text of one run."""

    def __init__(self, source: str | None) -> None:
        self.data = RunData(source=source)
        self.layout: _Layout | None = None
        self.in_table = False
        self.library_version: str | None = None
        self.handlers: list[tuple[re.Pattern[str], Callable[[int, re.Match[str]], None]]] = [
            (_DEVICE, self._device),
            (_RUN_HEADER, self._run_header),
            (_TESTS_VERSION, self._tests_version),
            (_COMPILED_WITH, self._compiled_with),
            (_UNITS, self._units),
            (_AVG_BUSBW, self._avg_busbw),
            (_OUT_OF_BOUNDS, self._out_of_bounds),
        ]

    def _fail(self, message: str, line: int) -> ParseError:
        return ParseError(message, source=self.data.source, line=line)

    def feed(self, number: int, line: str) -> None:
        text = line.strip()
        if not text:
            return
        version = _NCCL_VERSION.search(text)
        if version and self.data.nccl_version is None:
            self.data.nccl_version = version.group(1)
        if _NCCL_LOG.match(text):
            return
        if text.startswith("#"):
            self._comment(number, text)
        elif text[0].isdigit():
            self._row(number, text.split())

    def _comment(self, number: int, text: str) -> None:
        for pattern, handler in self.handlers:
            match = pattern.match(text)
            if match:
                handler(number, match)
                return
        tokens = text[1:].split()
        lowered = [token.lower() for token in tokens]
        if lowered and lowered[0] in ("size", "bytes") and "algbw" in lowered:
            self.layout = _read_layout(number, tokens, self._fail)
            self.in_table = True

    def _device(self, number: int, match: re.Match[str]) -> None:
        pid = match.group("pid")
        self.data.devices.append(
            Device(
                rank=int(match.group("rank")),
                host=match.group("host"),
                device=int(match.group("device")),
                model=match.group("model"),
                pid=int(pid) if pid is not None else None,
                bus_id=match.group("bus"),
            )
        )

    def _run_header(self, number: int, match: re.Match[str]) -> None:
        if self.data.rows:
            raise self._fail(
                f"a second nccl-tests run starts here, after result rows at lines "
                f"{self.data.rows[0].line}-{self.data.rows[-1].line}; split the log into one "
                "file per run",
                number,
            )
        if "nThread" in self.data.header:
            self.data.warnings.append(
                f"line {number}: a second run header before any result; were several "
                "non-MPI nccl-tests processes started by mpirun?"
            )
        self.data.header.update(_read_run_header(match.string))

    def _tests_version(self, number: int, match: re.Match[str]) -> None:
        tests, headers, library = match.groups()
        self.data.header.update(
            {"nccl-tests version": tests, "nccl-headers": int(headers), "nccl-library": int(library)}
        )
        self.library_version = decode_version_code(int(library))

    def _compiled_with(self, number: int, match: re.Match[str]) -> None:
        self.data.header["compiled with NCCL"] = match.group(1)

    def _units(self, number: int, match: re.Match[str]) -> None:
        units = match.string.split()
        if self.layout is not None and "(ms)" in units:
            self.layout.time_per_s = 1e3
        elif self.layout is not None and "(us)" in units:
            self.layout.time_per_s = 1e6

    def _avg_busbw(self, number: int, match: re.Match[str]) -> None:
        self.in_table = False
        try:
            self.data.avg_busbw = printed(match.group(1))
        except ValueError:
            found = match.group(1)
            raise self._fail(f"'Avg bus bandwidth' should be a number, found {found!r}", number) from None

    def _out_of_bounds(self, number: int, match: re.Match[str]) -> None:
        self.in_table = False
        self.data.out_of_bounds = int(match.group(1))

    def _row(self, number: int, tokens: list[str]) -> None:
        if self.layout is None:
            if len(tokens) >= 8 and tokens[0].isdigit() and tokens[1].isdigit():
                raise self._fail(
                    "this looks like a result row but no column header "
                    "('#  size  count  type ...') precedes it",
                    number,
                )
            return
        if self.in_table:
            row, measured = _read_row(number, tokens, self.layout, self._fail)
            self.data.rows.append(row)
            self.data.measured.extend(measured)


def _read_run_header(text: str) -> dict[str, int | str]:
    """``# nThread 1 nGpus 8 ... step: 2(factor) warmup iters: 5 ...`` as a dict."""
    header: dict[str, int | str] = {}
    key: list[str] = []
    expect_value = False
    for token in text.lstrip("#").split():
        if expect_value or (key and token[:1].isdigit()):
            header[" ".join(key)] = int(token) if _INTEGER.match(token) else token
            key, expect_value = [], False
        elif token.endswith(":"):
            key.append(token[:-1])
            expect_value = True
        else:
            key.append(token)
    return header


def _read_layout(number: int, labels: list[str], fail: Callable[[str, int], ParseError]) -> _Layout:
    """The table layout announced by the column header ``labels``."""
    columns = []
    slots = iter(("oop", "ip"))
    slot = ""
    for label in labels:
        name = _CANONICAL.get(label.lower(), "other")
        if name == "time":
            slot = next(slots, "extra")
        width = 2 if name == "timestamp" else 1  # "2025-05-20 12:00:00"
        columns.append(_Column(label, name, slot if name in _MEASURES else "", width))
    layout = _Layout(number, columns, 1e3 if labels[0].lower() == "bytes" else 1e6)
    for slot, name in _REQUIRED:
        if not layout.has(slot, name):
            what = f"{_SLOT_NAMES[slot]} {name}".strip()
            raise fail(
                f"the column header has no {what} column; expected nccl-tests' "
                "'size count type [redop] [root] time algbw busbw ...' header",
                number,
            )
    return layout


def _read_row(
    number: int, tokens: list[str], layout: _Layout, fail: Callable[[str, int], ParseError]
) -> tuple[NcclTestsRow, list[Measured]]:
    """One result row, read by the layout of its table."""
    if len(tokens) != layout.width:
        labels = " ".join(column.label for column in layout.columns)
        raise fail(
            f"result row has {len(tokens)} fields but the column header at line {layout.line} "
            f"announces {layout.width} ({labels}); the row is truncated or garbled",
            number,
        )
    cells = _Cells(number, tokens, layout, fail)
    nbytes = cells.integer("", "size", "size")
    measured: list[Measured] = []
    oop = cells.half("oop", nbytes, measured, optional=False)
    ip = cells.half("ip", nbytes, measured, optional=True)
    root = cells.text("", "root")
    row = NcclTestsRow(
        nbytes=nbytes,
        count=cells.integer("", "count", "count"),
        dtype=cells.text("", "type") or "",
        redop=cells.text("", "redop"),
        root=cells.integer("", "root", "root") if root is not None else None,
        oop_time_s=_required(oop.time_s),
        oop_algbw_Bps=_required(oop.algbw_Bps),
        oop_busbw_Bps=_required(oop.busbw_Bps),
        oop_wrong=oop.wrong,
        ip_time_s=ip.time_s,
        ip_algbw_Bps=ip.algbw_Bps,
        ip_busbw_Bps=ip.busbw_Bps,
        ip_wrong=ip.wrong,
        line=number,
        oop_max_error=oop.max_error,
        ip_max_error=ip.max_error,
    )
    return row, measured


def _required(value: float | None) -> float:
    assert value is not None, "out-of-place values are read with optional=False"
    return value


class _Cells:
    """The fields of one row, addressed by (slot, column name)."""

    def __init__(
        self, number: int, tokens: list[str], layout: _Layout, fail: Callable[[str, int], ParseError]
    ) -> None:
        self.line = number
        self.fail = fail
        self.time_per_s = layout.time_per_s
        self.cells: dict[tuple[str, str], tuple[int, str]] = {}
        position = 0
        for column in layout.columns:
            value = " ".join(tokens[position : position + column.width])
            self.cells.setdefault((column.slot, column.name), (position + 1, value))
            position += column.width

    def text(self, slot: str, name: str) -> str | None:
        cell = self.cells.get((slot, name))
        return cell[1] if cell else None

    def _bad(self, slot: str, name: str, expected: str) -> ParseError:
        field, token = self.cells[(slot, name)]
        what = f"{_SLOT_NAMES[slot]} {name}".strip()
        return self.fail(f"field {field} ({what}) should be {expected}, found {token!r}", self.line)

    def integer(self, slot: str, name: str, what: str) -> int:
        token = self.text(slot, name) or ""
        if not _INTEGER.match(token):
            raise self._bad(slot, name, "an integer")
        return int(token)

    def number(self, slot: str, name: str, optional: bool) -> Printed | None:
        token = self.text(slot, name)
        if token is None or (optional and token == "N/A"):
            return None
        try:
            return printed(token)
        except ValueError:
            raise self._bad(slot, name, "a number" + (" or N/A" if optional else "")) from None

    def half(self, slot: str, nbytes: int, measured: list[Measured], optional: bool) -> _Half:
        time = self.number(slot, "time", optional)
        algbw = self.number(slot, "algbw", optional)
        busbw = self.number(slot, "busbw", optional)
        wrong = self.number(slot, "wrong", optional=True)
        error = self.number(slot, "error", optional=True)
        if time is None or algbw is None or busbw is None:
            return _Half(None, None, None, None, None)
        seconds = time.divided(self.time_per_s)
        label = _SLOT_NAMES[slot]
        measured.append(Measured(self.line, label, nbytes, seconds, algbw, busbw))
        return _Half(
            seconds.value,
            algbw.value * GBPS,
            busbw.value * GBPS,
            None if wrong is None else int(wrong.value),
            None if error is None else error.value,
        )


_PROMPT = re.compile(r"^(?:#\s+)?(?:[\w.-]+@[^\s#$]*[#$]\s+|\$\s+)?")
_NOT_COMMAND = re.compile(r"^#\s*(?:Collective test|Rank\b)")


def _find_command(lines: list[str]) -> str | None:
    """The first command line naming an nccl-tests binary, continuations joined."""
    pending = ""
    for line in lines:
        text = line.strip()
        if text.endswith("\\"):
            pending += text[:-1].strip() + " "
            continue
        full, pending = (pending + text).strip(), ""
        if find_program(full) and not _NOT_COMMAND.match(full) and "NCCL INFO" not in full:
            return _PROMPT.sub("", full, count=1)
    return None
