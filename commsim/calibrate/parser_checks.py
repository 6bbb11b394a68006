"""Checks of one run's rows and device list: wrong results, ranks listed twice.

Internal to the readers (:mod:`commsim.calibrate.parser_common` calls them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from commsim.calibrate.parser import Device, NcclTestsRow

if TYPE_CHECKING:
    from commsim.calibrate.parser_common import RunData

__all__ = ["line_spans", "number_spans", "unique_devices", "wrong_rows", "wrong_warnings"]


def wrong_rows(rows: list[NcclTestsRow]) -> list[NcclTestsRow]:
    """The rows whose out-of-place or in-place ``#wrong`` is above zero."""
    return [row for row in rows if row.oop_wrong or row.ip_wrong]


def number_spans(numbers: list[int]) -> str:
    """Whole numbers as spans: ``[0, 1, 2, 5]`` -> ``"0-2, 5"``."""
    spans: list[list[int]] = []
    for number in sorted(numbers):
        if spans and number == spans[-1][1] + 1:
            spans[-1][1] = number
        else:
            spans.append([number, number])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def line_spans(lines: list[int]) -> str:
    """Line numbers as spans: ``[14, 15, 16, 20]`` -> ``"lines 14-16, 20"``, ``[30]`` -> ``"line 30"``."""
    return f"line {number_spans(lines)}" if len(lines) == 1 else f"lines {number_spans(lines)}"


def wrong_warnings(data: RunData) -> list[str]:
    """One warning for every row with wrong elements (their most, as nccl-tests prints it, %g)."""
    warnings = []
    wrong = wrong_rows(data.rows)
    if wrong:
        most = max(max(row.oop_wrong or 0, row.ip_wrong or 0) for row in wrong)
        warnings.append(
            f"{len(wrong)} of {len(data.rows)} rows report wrong elements (#wrong > 0, up to {most:g} "
            f"in one row; {line_spans([row.line for row in wrong])}): the results are wrong"
        )
    if data.out_of_bounds:
        where = f"line {data.out_of_bounds_line}: " if data.out_of_bounds_line else ""
        warnings.append(f"{where}nccl-tests reports {data.out_of_bounds} out-of-bounds values")
    return warnings


def unique_devices(devices: list[Device], warnings: list[str]) -> list[Device]:
    """One device per rank (the first listed); one warning for the ranks listed twice.

    Ranks listed again on another host with the same device and bus id are
    independent runs (nccl-tests without MPI started once per host) whose
    output is interleaved, not one rank on two GPUs.
    """
    by_rank: dict[int, Device] = {}
    other_host: list[Device] = []
    different: list[int] = []
    for device in devices:
        seen = by_rank.setdefault(device.rank, device)
        if seen == device:
            continue
        same_gpu = (seen.device, seen.bus_id, seen.model) == (device.device, device.bus_id, device.model)
        if same_gpu and seen.host != device.host:
            other_host.append(device)
        else:
            different.append(device.rank)
    if other_host:
        ranks = number_spans([d.rank for d in other_host])
        hosts = list(dict.fromkeys([by_rank[d.rank].host for d in other_host] + [d.host for d in other_host]))
        warnings.append(
            f"rank{'s' if len(other_host) > 1 else ''} {ranks} appear{'' if len(other_host) > 1 else 's'} "
            f"on {len(hosts)} hosts ({', '.join(hosts)}) with the same devices: independent runs "
            "(nccl-tests without MPI, started once per host) whose output is interleaved in this log; "
            f"the ranks of {hosts[0]} are modelled"
        )
    if different:
        warnings.append(
            f"rank{'s' if len(different) > 1 else ''} {number_spans(different)} "
            f"{'are' if len(different) > 1 else 'is'} listed twice with different devices"
        )
    return sorted(by_rank.values(), key=lambda d: d.rank)
