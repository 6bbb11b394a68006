"""Quantities with units: sizes, bandwidths and times as SI numbers.

Inside commsim every quantity is a plain number in base SI units: bytes,
seconds, bytes per second. Names carry the unit (``nbytes``, ``latency_s``,
``bandwidth_Bps``). This module is the one place that reads the strings
people write ("160 MB", "1M", "16 GB/s", "100 Gbit/s", "5 us") and writes
them back for display.

Sizes follow the field's two habits, and say which by how they are written:

* ``K``, ``M``, ``G``, ``T``, ``P`` alone are binary, as in nccl-tests'
  ``-b 8 -e 1M`` (``1M`` = 2**20 bytes); lower-case ``k`` too;
* ``KB``/``kB``, ``MB``, ``GB``, ``TB``, ``PB`` are decimal (``1 MB`` = 10**6 bytes);
* ``KiB``, ``MiB``, ``GiB``, ``TiB``, ``PiB`` are binary;
* bits are written ``bit`` (``8 Gbit`` = 10**9 bytes).

A size is a whole number of bytes, at least 1 and at most
:data:`MAX_SIZE_BYTES`. Bandwidths are decimal, as nccl-tests prints them
(``GB/s`` = 10**9 B/s; ``GiB/s`` binary; ``Gbit/s``, ``Gb/s`` and ``Gbps``
bits). Booleans are never quantities.
"""

from __future__ import annotations

import math
import numbers
import re

from commsim.errors import UnitError

__all__ = [
    "BANDWIDTH_FORMS",
    "MAX_SIZE_BYTES",
    "SIZE_FORMS",
    "SIZE_HELP",
    "TIME_FORMS",
    "format_bandwidth",
    "format_size",
    "format_time",
    "parse_bandwidth",
    "parse_size",
    "parse_time",
]

MAX_SIZE_BYTES = 2**50
"""The largest size commsim accepts: 1 PiB (far above any one collective)."""

_DECIMAL = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_BINARY = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50}
_BARE = {"k": 2**10, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40, "P": 2**50}
"""nccl-tests' ``-b/-e`` suffixes: a prefix without a unit is binary."""
_TIME = {
    "s": 1.0,
    "sec": 1.0,
    "ms": 1e-3,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ns": 1e-9,
    "ps": 1e-12,
    "min": 60.0,
}

_NUMBER = r"(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)"
_SIZE_RE = re.compile(_NUMBER + r"\s*(?P<prefix>Ki|Mi|Gi|Ti|Pi|[kKMGTP]?)(?P<unit>B|bit)?$")
_BW_RE = re.compile(_NUMBER + r"\s*(?P<prefix>Ki|Mi|Gi|Ti|Pi|[kKMGTP]?)(?P<unit>B|bit|b)(?:/s|ps)$")
_TIME_RE = re.compile(_NUMBER + r"\s*(?P<unit>s|sec|ms|us|µs|μs|ns|ps|min)$")

SIZE_FORMS = (
    "a whole number of bytes with an optional unit, e.g. '160 MB', '1M', '1 GiB', '4096', '8 Gbit' "
    "(K/M/G/T alone are binary as in nccl-tests, KB/MB/GB decimal, KiB/MiB/GiB binary)"
)
SIZE_HELP = "K/M/G/T binary as in nccl-tests (1M = 1 MiB), KB/MB/GB decimal, KiB/MiB/GiB binary"
"""One line for every ``--help`` that takes a size."""
BANDWIDTH_FORMS = (
    "a rate with a unit per second, e.g. '16 GB/s', '25 GB/s', '128 Gbit/s', '300 Gbps', '900 MiB/s'"
)
TIME_FORMS = "a duration with a unit, e.g. '5 us', '1.5 ms', '0 s', '200 ns'"


def _prefix_factor(prefix: str) -> float:
    return _BINARY[prefix] if prefix in _BINARY else _DECIMAL[prefix]


def _check_value(value: float, text: object, what: str, forms: str) -> float:
    if not math.isfinite(value) or value < 0:
        raise UnitError(f"{what} {text!r} must be a finite, non-negative quantity; expected {forms}")
    return value


def _number(value: object, what: str, forms: str, unit_example: str | None = None) -> float | None:
    """Return ``value`` as float when it is already a plain number.

    With ``unit_example`` a plain number is refused: the caller reads a file
    where a number without a unit is ambiguous (``bandwidth: 16``).
    """
    if isinstance(value, bool):
        raise UnitError(f"{what} {value!r} is a boolean; expected {forms}")
    if isinstance(value, numbers.Real) and not isinstance(value, (int, float)):
        value = int(value) if isinstance(value, numbers.Integral) else float(value)  # numpy.int64 as int
    if isinstance(value, (int, float)):
        if unit_example is not None:
            raise UnitError(f"{what} {value!r} has no unit; write it with one, e.g. {unit_example!r}")
        return _check_value(float(value), value, what, forms)
    if not isinstance(value, str):
        raise UnitError(f"{what} {value!r} is not a string or number; expected {forms}")
    return None


def _whole_bytes(nbytes: float, text: object) -> int:
    if not math.isfinite(nbytes) or nbytes < 1:
        raise UnitError(f"size {text!r} must be at least 1 byte; expected {SIZE_FORMS}")
    if nbytes > MAX_SIZE_BYTES:
        raise UnitError(f"size {text!r} is larger than the limit of 1 PiB ({MAX_SIZE_BYTES} bytes)")
    whole = round(nbytes)
    if abs(nbytes - whole) > 1e-12 * nbytes:  # "1.001 kB" is 1000.9999999999999 in binary floating point
        raise UnitError(f"size {text!r} is {nbytes:g} bytes, not a whole number of bytes")
    return int(whole)


def parse_size(value: str | float | int) -> int:
    """Read a data size and return it in whole bytes.

    Parameters
    ----------
    value : str or number
        "160 MB" (decimal, 1.6e8 B), "1M" (nccl-tests' binary suffix, 2**20
        B), "1 GiB" (2**30 B), "8 Gbit" (1e9 B), or a plain number of bytes.
        A bare lower-case "b" ("160 Mb") is refused as ambiguous; bandwidths
        keep "Gbps" and "Gb/s".

    Returns
    -------
    int
        Bytes, between 1 and :data:`MAX_SIZE_BYTES`.

    Raises
    ------
    UnitError
        If the value is not a size, is zero, negative, fractional or too
        large; the message lists the accepted forms.

    Examples
    --------
    >>> parse_size("160 MB")
    160000000
    >>> parse_size("1M")
    1048576
    >>> parse_size("1 KiB")
    1024
    """
    number = _number(value, "size", SIZE_FORMS)
    if number is not None:
        return _whole_bytes(number, value)
    assert isinstance(value, str)
    match = _SIZE_RE.match(value.strip())
    if match is None:
        hint = ""
        if re.match(_NUMBER + r"\s*[kKMGTP]?i?b$", value.strip()):
            hint = " (a lower-case 'b' is ambiguous in a size: write 'B' for bytes or 'bit' for bits)"
        raise UnitError(f"cannot read size {value!r}{hint}; expected {SIZE_FORMS}")
    prefix, unit = match["prefix"], match["unit"]
    if unit is None and prefix in _BARE:
        factor = float(_BARE[prefix])
    else:
        factor = _prefix_factor(prefix) / (8.0 if unit == "bit" else 1.0)
    nbytes = float(match["num"]) * factor
    if not math.isfinite(nbytes) or nbytes < 0:
        _check_value(nbytes, value, "size", SIZE_FORMS)
    return _whole_bytes(nbytes, value)


def parse_bandwidth(value: str | float | int, *, require_unit: bool = False) -> float:
    """Read a bandwidth and return it in bytes per second.

    Parameters
    ----------
    value : str or number
        "16 GB/s" (1.6e10 B/s), "100 Gbit/s" or "100 Gbps" (1.25e10 B/s),
        "900 MiB/s", or a plain number of bytes per second.
    require_unit : bool
        Refuse a plain number (files: ``bandwidth: 16`` is not 16 B/s).

    Returns
    -------
    float
        Bytes per second.

    Raises
    ------
    UnitError
        If the string is not a bandwidth; the message lists the accepted forms.

    Examples
    --------
    >>> parse_bandwidth("16 GB/s")
    16000000000.0
    >>> parse_bandwidth("100 Gbit/s")
    12500000000.0
    """
    number = _number(value, "bandwidth", BANDWIDTH_FORMS, "16 GB/s" if require_unit else None)
    if number is not None:
        return number
    assert isinstance(value, str)
    match = _BW_RE.match(value.strip())
    if match is None:
        raise UnitError(f"cannot read bandwidth {value!r}; expected {BANDWIDTH_FORMS}")
    factor = _prefix_factor(match["prefix"])
    if match["unit"] in ("bit", "b"):
        factor /= 8.0
    return _check_value(float(match["num"]) * factor, value, "bandwidth", BANDWIDTH_FORMS)


def parse_time(value: str | float | int, *, require_unit: bool = False) -> float:
    """Read a duration and return it in seconds.

    Parameters
    ----------
    value : str or number
        "5 us", "1.5 ms", "200 ns", or a plain number of seconds.
    require_unit : bool
        Refuse a plain number (files: ``latency: 5`` is not five seconds).

    Returns
    -------
    float
        Seconds.

    Raises
    ------
    UnitError
        If the string is not a duration; the message lists the accepted forms.

    Examples
    --------
    >>> parse_time("5 us")
    5e-06
    """
    number = _number(value, "time", TIME_FORMS, "5 us" if require_unit else None)
    if number is not None:
        return number
    assert isinstance(value, str)
    match = _TIME_RE.match(value.strip())
    if match is None:
        raise UnitError(f"cannot read time {value!r}; expected {TIME_FORMS}")
    return _check_value(float(match["num"]) * _TIME[match["unit"]], value, "time", TIME_FORMS)


def _check_format(value: object, name: str, digits: object) -> None:
    """Refuse what is no number, and digits that are no whole number from 1 to 30 (they failed inside)."""
    from commsim.errors import ArgumentError, check_argument

    check_argument(value, numbers.Real, name, "a number")
    if not isinstance(digits, numbers.Integral) or isinstance(digits, bool) or not 1 <= int(digits) <= 30:
        raise ArgumentError(
            f"digits: expected a whole number of significant digits from 1 to 30, got {digits!r}"
        )


def _scaled(value: float, steps: list[tuple[float, str]], digits: int) -> str:
    for factor, unit in steps:
        if abs(value) >= factor:
            return f"{value / factor:.{digits}g} {unit}"
    factor, unit = steps[-1]
    return f"{value / factor:.{digits}g} {unit}"


def format_size(nbytes: float, digits: int = 4) -> str:
    """Format bytes with a decimal prefix, e.g. ``160 MB``.

    Sizes that are exact powers of two of at least 1 KiB are written with
    binary prefixes (``1 GiB``), as nccl-tests' sizes usually are.
    """
    _check_format(nbytes, "nbytes", digits)
    if nbytes >= 1024 and float(nbytes).is_integer():
        as_int = int(nbytes)
        if as_int & (as_int - 1) == 0:
            for factor, unit in ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
                if as_int >= factor:
                    return f"{as_int // factor} {unit}"
    steps = [(1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB"), (1.0, "B")]
    return _scaled(nbytes, steps, digits)


def format_bandwidth(bandwidth_Bps: float, digits: int = 4) -> str:
    """Format bytes per second, e.g. ``16 GB/s``."""
    _check_format(bandwidth_Bps, "bandwidth_Bps", digits)
    steps = [(1e12, "TB/s"), (1e9, "GB/s"), (1e6, "MB/s"), (1e3, "kB/s"), (1.0, "B/s")]
    return _scaled(bandwidth_Bps, steps, digits)


def format_time(time_s: float, digits: int = 4) -> str:
    """Format seconds with the most readable unit, e.g. ``15 ms``."""
    _check_format(time_s, "time_s", digits)
    if time_s == 0:
        return "0 s"
    steps = [(1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")]
    return _scaled(time_s, steps, digits)
