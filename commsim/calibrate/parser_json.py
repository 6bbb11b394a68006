"""Read nccl-tests' ``-J`` JSON output into a RunData.

nccl-tests (``src/util.cu``, JSON file versions 1 to 3) writes one object:
``version``, ``start_time``, ``args`` (the command line), ``env``,
``nccl_version`` (NCCL's integer version code), ``config`` (the run header
and a ``devices`` list), ``results`` (one object per message size with
``size``, ``count``, ``type``, ``redop``, ``root`` and ``out_of_place`` /
``in_place`` objects holding ``time`` (or ``cpu_time``, us), ``alg_bw``,
``bus_bw`` (GB/s) and ``nwrong``), ``out_of_bounds``,
``average_bus_bandwidth``, ``errors`` and ``end_time``. Numbers are printed
with ``%lf`` (six decimals); NaN is written as the string ``"nan"``.

The versions differ in details this reader accepts: ``step_factor`` or
``step_bytes``; ``time`` or ``cpu_time``; ``nwrong`` null when errors are
not checked; extra ``bitwise`` and ``*_per_iter`` objects (version 3);
``"true"``/``"false"`` strings for flags; ``root`` as a padded string or an
integer; a device entry that nccl-tests could not parse (old rank lines) is
skipped with a warning. Hand-made files with ``algbw``/``busbw``/``bytes``
spellings are read too.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from commsim.calibrate.parser import Device, NcclTestsRow, find_program
from commsim.calibrate.parser_bandwidth import (
    GBPS,
    Measured,
    Printed,
    bandwidth_fault,
    size_fault,
    time_fault,
)
from commsim.calibrate.parser_common import RunData
from commsim.calibrate.settings import read_json_settings
from commsim.calibrate.settings_lines import decode_version_code
from commsim.errors import ParseError

__all__ = ["read_json_run"]

_HALF_ULP = 5e-7  # "%lf" prints six decimals
_CONFIG_NAMES = {  # JSON config key -> the text header's name for it
    "nthreads": "nThread",
    "ngpus": "nGpus",
    "minimum_bytes": "minBytes",
    "maximum_bytes": "maxBytes",
    "warmup_iters": "warmup iters",
    "iterations": "iters",
    "aggregated_iterations": "agg iters",
}
_HALVES = (("out_of_place", "out-of-place"), ("in_place", "in-place"))
_KEYS = {  # what a value is called, in the order tried
    "size": ("size", "bytes", "nbytes"),
    "type": ("type", "dtype", "datatype"),
    "time": ("time", "cpu_time", "time_us"),
    "alg_bw": ("alg_bw", "algbw"),
    "bus_bw": ("bus_bw", "busbw"),
    "nwrong": ("nwrong", "wrong", "errors"),
}


def _key(entry: dict[str, Any], name: str) -> str:
    """The spelling of ``name`` that ``entry`` uses (the usual one if none)."""
    return next((key for key in _KEYS[name] if key in entry), _KEYS[name][0])


class _Where:
    """Where a value sits, for error messages: result index and line."""

    def __init__(self, source: str | None, line: int, what: str, *, locate: bool = True) -> None:
        self.source, self.line, self.what, self.locate = source, line, what, locate

    def fail(self, message: str) -> ParseError:
        if not self.locate:
            return ParseError(f"{self.what}: {message}")
        return ParseError(f"{self.what}: {message}", source=self.source, line=self.line)


def read_json_run(lines: list[str], source: str | None) -> RunData:
    """Read the cleaned lines (see ``clean_lines``) of an nccl-tests ``-J`` file."""
    text = "\n".join(lines)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        message = f"invalid JSON ({exc.msg}); expected nccl-tests -J output"
        raise ParseError(message, source=source, line=exc.lineno) from None
    results = document.get("results") if isinstance(document, dict) else None
    if not isinstance(results, list):
        raise ParseError("JSON has no 'results' list; expected nccl-tests -J output", source=source)
    data = RunData(source=source)
    filled = [number for number, line in enumerate(lines, 1) if line.strip()]
    top = filled[0]  # the opening brace
    data.first_line, data.last_line = top, filled[-1]
    config = document.get("config")
    config = config if isinstance(config, dict) else {}
    data.header = _header(config)
    for key in ("nthreads", "ngpus"):
        value = config.get(key)
        if key in config and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            data.header.pop(_CONFIG_NAMES[key], None)
            data.warnings.append(f"line {top}: config.{key} is {value!r}, not a whole number >= 1; ignored")
    if "nThread" in data.header or "nGpus" in data.header:
        data.header_line = (top, "config: " + json.dumps({k: config.get(k) for k in ("nthreads", "ngpus")}))
    _read_devices(config.get("devices", document.get("devices")), data, top)
    _read_identity(document, data, top)
    data.settings = read_json_settings(document, top)
    for index, line in enumerate(_result_lines(text, len(results))):
        _read_result(results[index], _Where(source, line, f"results[{index}]"), data)
    _read_footer(document, data, top)
    return data


def _read_devices(devices: object, data: RunData, line: int) -> None:
    for index, device in enumerate(devices if isinstance(devices, list) else []):
        where = _Where(None, line, f"config.devices[{index}]", locate=False)  # the message alone
        try:
            data.devices.append(_device(device, where))
        except ParseError as exc:
            data.warnings.append(f"line {line}: device entry skipped: {exc}")


def _header(config: dict[str, Any]) -> dict[str, int | str]:
    """The config block under the names the text header uses."""
    header: dict[str, int | str] = {}
    for key, value in config.items():
        if key == "step_factor":
            header["step"] = f"{value}(factor)"
        elif key == "step_bytes":
            header["step"] = f"{value}(bytes)"
        elif isinstance(value, bool):
            header[_CONFIG_NAMES.get(key, key)] = int(value)
        elif isinstance(value, (int, str)):
            header[_CONFIG_NAMES.get(key, key)] = value
    return header


def _device(entry: object, where: _Where) -> Device:
    if not isinstance(entry, dict):
        raise where.fail(f"expected a device object, found {entry!r}")
    return Device(
        rank=_integer(entry, "rank", where),
        host=_string(entry, "hostname", where),
        device=_integer(entry, "device", where),
        model=_string(entry, "device_info", where),
        pid=_integer(entry, "pid", where) if "pid" in entry else None,
        bus_id=_string(entry, "device_hex", where) if "device_hex" in entry else None,
    )


def _read_identity(document: dict[str, Any], data: RunData, top: int) -> None:
    """Command line, collective and NCCL version (one that is not NCCL's code is warned of and ignored,
    as a bad config.ngpus is: validate then says the log does not give it)."""
    args = document.get("args")
    if isinstance(args, list) and args and all(isinstance(arg, str) for arg in args):
        data.command = " ".join(args)
        data.program = find_program(data.command)
    code = document.get("nccl_version")
    if isinstance(code, int) and not isinstance(code, bool) and code > 0:
        data.nccl_version = decode_version_code(code)
    elif "nccl_version" in document:
        data.warnings.append(
            f"line {top}: nccl_version is {code!r}, not NCCL's version code (a whole number such as 22602 "
            "for 2.26.2); ignored (give the version with --nccl-version)"
        )


def _read_footer(document: dict[str, Any], data: RunData, line: int) -> None:
    where = _Where(data.source, line, "average_bus_bandwidth")
    average = document.get("average_bus_bandwidth")
    if isinstance(average, dict) and "bandwidth" in average:
        data.avg_busbw = Printed(_number(average, "bandwidth", where), _HALF_ULP)
    bounds = document.get("out_of_bounds")
    if isinstance(bounds, dict) and "count" in bounds:
        data.out_of_bounds = _integer(bounds, "count", _Where(data.source, line, "out_of_bounds"))


def _result_lines(text: str, count: int) -> list[int]:
    """The line of each result object (all on one line in nccl-tests' own files)."""
    start = text.find('"results"')
    offsets = [start + m.start() for m in re.finditer(r'"size"\s*:', text[start:])]
    if len(offsets) != count:
        offsets = [start] * count
    return [text.count("\n", 0, offset) + 1 for offset in offsets]


def _read_result(result: object, where: _Where, data: RunData) -> None:
    if not isinstance(result, dict):
        raise where.fail(f"expected a result object, found {result!r}")
    nbytes = _integer(result, _key(result, "size"), where)
    if nbytes < 0:
        raise where.fail(f"'size' is {nbytes} bytes; a message size is 0 bytes or more")
    if fault := size_fault(nbytes):
        raise where.fail(f"'size' is {nbytes} bytes; expected {fault}")
    halves = {}
    for key, label in _HALVES:
        halves[key] = _half(result.get(key), nbytes, label, where, data)
    oop, ip = halves["out_of_place"], halves["in_place"]
    if oop is None:
        raise where.fail(
            "has no out_of_place measurement (an in-place-only trace replay); "
            "expected nccl-tests -J output of a normal run"
        )
    data.rows.append(
        NcclTestsRow(
            nbytes=nbytes,
            count=_integer(result, "count", where),
            dtype=_string(result, _key(result, "type"), where),
            redop=_string(result, "redop", where) if "redop" in result else None,
            root=_root(result, where),
            oop_time_s=oop[0],
            oop_algbw_Bps=oop[1],
            oop_busbw_Bps=oop[2],
            oop_wrong=oop[3],
            ip_time_s=ip[0] if ip else None,
            ip_algbw_Bps=ip[1] if ip else None,
            ip_busbw_Bps=ip[2] if ip else None,
            ip_wrong=ip[3] if ip else None,
            line=where.line,
        )
    )


def _half(
    entry: object, nbytes: int, label: str, where: _Where, data: RunData
) -> tuple[float, float, float, int | None] | None:
    """(time_s, algbw_Bps, busbw_Bps, wrong) of one measurement object, or None."""
    if entry is None:
        return None
    inner = _Where(where.source, where.line, f"{where.what}.{label.replace('-', '_')}")
    if not isinstance(entry, dict):
        raise inner.fail(f"expected a measurement object, found {entry!r}")
    time_us = _number(entry, _key(entry, "time"), inner)
    if fault := time_fault(time_us / 1e6):
        key = _key(entry, "time")
        raise inner.fail(f"'{key}' should be {fault}, found {entry.get(key)!r}")
    algbw = _number(entry, _key(entry, "alg_bw"), inner)
    busbw = _number(entry, _key(entry, "bus_bw"), inner)
    for name, gbps in (("alg_bw", algbw), ("bus_bw", busbw)):
        if fault := bandwidth_fault(gbps):
            key = _key(entry, name)
            raise inner.fail(f"'{key}' should be {fault}, found {entry.get(key)!r}")
    wrong_key = _key(entry, "nwrong")
    wrong = entry.get(wrong_key)
    seconds = Printed(time_us, _HALF_ULP).divided(1e6)
    measured = Measured(
        where.line, label, nbytes, seconds, Printed(algbw, _HALF_ULP), Printed(busbw, _HALF_ULP)
    )
    data.measured.append(measured)
    count = _number(entry, wrong_key, inner) if wrong not in (None, "nan") else math.nan
    if math.isinf(count):  # a bare NaN (json reads it) is the "nan" nccl-tests writes: no check
        raise inner.fail(f"'{wrong_key}' should be a count of wrong elements, found {wrong!r}")
    wrong_count = None if math.isnan(count) else int(count)
    return seconds.value, algbw * GBPS, busbw * GBPS, wrong_count


def _root(result: dict[str, Any], where: _Where) -> int | None:
    """nccl-tests writes the root as a padded string, ``"    -1"``."""
    root = result.get("root")
    if root is None:
        return None
    if isinstance(root, str) and re.fullmatch(r"\s*-?\d+\s*", root):
        return int(root)
    if isinstance(root, int) and not isinstance(root, bool):
        return root
    raise where.fail(f"'root' should be an integer, found {root!r}")


def _number(entry: dict[str, Any], key: str, where: _Where) -> float:
    value = entry.get(key)
    if value == "nan":
        return float("nan")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise where.fail(f"'{key}' should be a number, found {value!r}")
    return float(value)


def _integer(entry: dict[str, Any], key: str, where: _Where) -> int:
    value = entry.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise where.fail(f"'{key}' should be an integer, found {value!r}")
    return value


def _string(entry: dict[str, Any], key: str, where: _Where) -> str:
    value = entry.get(key)
    if not isinstance(value, str):
        raise where.fail(f"'{key}' should be a string, found {value!r}")
    return value
