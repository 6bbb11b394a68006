"""Interchange with the tools around commsim: what it writes for them, what it reads from them.

* :mod:`~commsim.interop.msccl`: schedules as MSCCL algorithm XML, and back
  (:mod:`~commsim.interop.msccl_format`, :mod:`~commsim.interop.msccl_check`).
* :mod:`~commsim.interop.astra`: ASTRA-sim analytical network YAML, both ways.
* :mod:`~commsim.interop.nccl_topo`, :mod:`~commsim.interop.nccl_graph`: NCCL's
  topology and graph dumps as a machine and the channels NCCL chose.
"""

from __future__ import annotations

from commsim.interop.errors import ExportError, FormatError
from commsim.interop.msccl import MscclExport, msccl_to_schedule, schedule_to_msccl, write_msccl
from commsim.interop.msccl_check import check_msccl, msccl_problems
from commsim.interop.msccl_format import algo_to_xml, parse_msccl, read_msccl

__all__ = [
    "ExportError",
    "FormatError",
    "MscclExport",
    "algo_to_xml",
    "check_msccl",
    "msccl_problems",
    "msccl_to_schedule",
    "parse_msccl",
    "read_msccl",
    "schedule_to_msccl",
    "write_msccl",
]
