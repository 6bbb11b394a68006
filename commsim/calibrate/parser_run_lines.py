"""The lines of one nccl-tests run other than its result rows: how each is recognised, what it says.

The run header (``# nThread 1 nGpus 8 ...``), the device list (``#  Rank  0
Group  0 Pid 1234 on host device  0 [0x1b] NVIDIA H100``), nccl-tests' and
NCCL's version lines, a failed call, NCCL INFO ``nranks``, the units line,
the column header and the footer (``# Avg bus bandwidth``).
:class:`~commsim.calibrate.parser_text.TextReader` reads a run's lines with
them, and :func:`~commsim.calibrate.parser_runs.split_runs` cuts a log into
runs at them.
"""

from __future__ import annotations

import re

from commsim.calibrate.parser import Device
from commsim.calibrate.parser_common import RunData
from commsim.calibrate.parser_table import INTEGER
from commsim.calibrate.settings_lines import version_in_code_line

__all__ = [
    "AVG_BUSBW",
    "COMPILED_WITH",
    "DEVICE",
    "NCCL_LOG",
    "OUT_OF_BOUNDS",
    "RUN_HEADER",
    "TABLE_END",
    "TESTS_VERSION",
    "UNITS",
    "is_column_header",
    "read_device",
    "read_run_header",
    "scan_info",
]

_NCCL_VERSION = re.compile(r"\b[NR]CCL version(?: ?: ?| )(\d+\.\d+\.\d+[^\s,;]*)")
TESTS_VERSION = re.compile(r"^#\s*nccl-tests version (\S+) nccl-headers=(\d+) nccl-library=(\d+)")
"""nccl-tests' version line: its version and the NCCL release codes of its headers and library."""
DEVICE = re.compile(
    r"^#?\s*Rank\s+(?P<rank>\d+)(?:\s+Group\s+\d+)?(?:\s+Pid\s+(?P<pid>\d+))?(?:\s+on\s+(?P<host>\S+))?"
    r"\s+device\s+(?P<device>\d+)(?:\s+\[(?P<bus>[^\]]*)\])?(?:\s+(?P<model>.*?\S)|(?<=\]))"
    r"(?:\s+\(node\s+(?P<node>\d+)\))?\s*$"
)
"""A device line (``#  Rank  0 Group  0 Pid 221599 on host device  0 [0000:8f:00] NVIDIA B200``).

"on HOST" is missing from edited logs, some of which note the node after the model instead
(``... NVIDIA B200 (node 1)``). rccl-tests prints no name after the bus id where the driver gives
none (``... device  0 [0000:75:00]``): the model is then empty, not the bus id."""
RUN_HEADER = re.compile(r"^#?\s*nThread\s+\d+")
"""The run header (``# nThread 1 nGpus 8 minBytes ...``): a run starts at it."""
UNITS = re.compile(r"^#?\s*\(B\)")
"""nccl-tests' units line (``#  (B)  (elements) ...``); extracts of the table drop its '#'."""
# the footer, like the units line, loses its '#' in extracts of the table
AVG_BUSBW = re.compile(r"^#?\s*Avg bus bandwidth\s*:\s*(\S+)")
"""The footer's average bus bandwidth (GB/s)."""
OUT_OF_BOUNDS = re.compile(r"^#?\s*Out of bounds values\s*:\s*(\d+)")
"""The footer's count of out-of-bounds values."""
TABLE_END = re.compile(r"^#?\s*(?:Avg bus bandwidth|Out of bounds values|Collective test concluded)")
"""Any footer line: the table has ended."""
COMPILED_WITH = re.compile(r"^#\s*NCCL Tests compiled with NCCL (\S+)")
"""nccl-tests' note of the NCCL release it was compiled with."""
NCCL_LOG = re.compile(r"^\S+:\d+:\d+\s+\[\d+\]\s")
"""NCCL_DEBUG lines: ``host:pid:tid [dev] ...``."""
_TEST_FAILURE = re.compile(r"\b(?:Test (?:CUDA |NCCL )?failure\b|(?:NCCL|Cuda|CUDA) failure \S+\.cu:\d+).*")
"""nccl-tests' report of a failed call (``Test CUDA failure common.cu:389 '...'``; the 2017-2018
tests' ``NCCLCHECK``/``CUDACHECK`` printed ``NCCL failure all_reduce.cu:95 '...'``)."""
_NCCL_WARN = re.compile(r"\bNCCL WARN\s+(.*\S)")
"""NCCL's warning (``host:pid:tid [0] misc/nvmlwrap.cc:74 NCCL WARN Failed to open libnvidia-ml.so.1``)."""
_INFO_NRANKS = re.compile(r"\bcomm 0x[0-9a-fA-F]+ rank \d+ n[Rr]anks ([1-9]\d*)\b")
"""NCCL INFO's communicator size (``comm 0x... rank 0 nRanks 8``); a communicator has a rank or more,
so a garbled ``nRanks 0`` says nothing (it divided by zero in the busbw factor)."""


def is_column_header(text: str) -> bool:
    """Whether a line is a result table's column header (``#  size  count  type ... algbw``)."""
    lowered = text.lstrip("#").lower().split()
    return bool(lowered) and lowered[0] in ("size", "bytes") and "algbw" in lowered


def scan_info(data: RunData, number: int, text: str) -> None:
    """Note in ``data`` what any line of a run may say: the NCCL version (the first printed), a
    failed call and an NCCL WARN (the first of each) and NCCL INFO ``nranks``; ``number`` is the
    line's in the file."""
    version = _NCCL_VERSION.search(text)
    if version and data.nccl_version is None:
        data.nccl_version = version.group(1)
    coded = version_in_code_line(text) if version is None else None
    if coded and data.nccl_version is None:
        data.nccl_version = coded[1]
    failure = _TEST_FAILURE.search(text)
    if failure and data.failure is None:
        data.failure = (number, failure.group(0).strip())
    warn = _NCCL_WARN.search(text) if data.nccl_warn is None else None
    if warn:
        data.nccl_warn = (number, warn.group(1))
    nranks = _INFO_NRANKS.search(text)
    if nranks:
        data.info_nranks.append((number, int(nranks.group(1)), text))


def read_device(number: int, match: re.Match[str]) -> Device:
    """The device of a :data:`DEVICE` line (``number``: its line in the file)."""
    pid, host, node = match.group("pid", "host", "node")
    return Device(
        rank=int(match.group("rank")),
        host=host or (f"node {node}" if node is not None else ""),
        device=int(match.group("device")),
        model=match.group("model") or "",
        pid=int(pid) if pid is not None else None,
        bus_id=match.group("bus"),
        line=number,
    )


def read_run_header(text: str) -> dict[str, int | str]:
    """``# nThread 1 nGpus 8 ... step: 2(factor) warmup iters: 5 ...`` as a dict."""
    header: dict[str, int | str] = {}
    key: list[str] = []
    expect_value = False
    for token in text.lstrip("#").split():
        if expect_value or (key and token[:1].isdigit()):
            header[" ".join(key)] = int(token) if INTEGER.match(token) else token
            key, expect_value = [], False
        elif token.endswith(":"):
            key.append(token[:-1])
            expect_value = True
        else:
            key.append(token)
    return header
