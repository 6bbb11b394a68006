"""Units: reading and writing sizes, bandwidths and times (decimal SI inside)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from commsim.errors import CommsimError, UnitError
from commsim.units import (
    BANDWIDTH_FORMS,
    SIZE_FORMS,
    TIME_FORMS,
    format_bandwidth,
    format_size,
    format_time,
    parse_bandwidth,
    parse_size,
    parse_time,
)

# -- sizes ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "nbytes"),
    [
        ("160 MB", 1.6e8),  # SEED_FACTS section 1's gradient
        ("1 GiB", 2.0**30),
        ("8 Gbit", 1e9),
        ("4096", 4096.0),
        ("512 KiB", 512 * 1024.0),
        ("1 kB", 1e3),
        ("1 KB", 1e3),
        ("3 TB", 3e12),
        ("2 MiB", 2.0 * 2**20),
        ("1.5e3 kB", 1.5e6),
        ("  40MB ", 4e7),
        ("16 bit", 2.0),
        (".5 GB", 5e8),
        # nccl-tests' -b/-e suffixes: a prefix alone is binary
        ("1K", 2**10),
        ("1k", 2**10),
        ("1M", 2**20),
        ("64M", 64 * 2**20),
        ("8G", 8 * 2**30),
        ("2T", 2 * 2**40),
        ("1 M", 2**20),
        ("1.5K", 1536),
        ("1 MB", 10**6),
        ("1 MiB", 2**20),
    ],
)
def test_parse_size(text: str, nbytes: int) -> None:
    """K/M/G/T alone are binary (nccl-tests), KB/MB/GB decimal, KiB/MiB/GiB binary, bits 1/8 byte."""
    result = parse_size(text)
    assert result == nbytes
    assert isinstance(result, int)


@pytest.mark.parametrize(("value", "expected"), [(7, 7), (4096.0, 4096), (1, 1)])
def test_parse_size_accepts_plain_numbers(value: float, expected: int) -> None:
    """A plain whole number is already bytes, returned as an int."""
    result = parse_size(value)
    assert result == expected
    assert isinstance(result, int)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0 B", "must be at least 1 byte"),
        (0, "must be at least 1 byte"),
        ("0.5 B", "must be at least 1 byte"),
        ("1 bit", "must be at least 1 byte"),
        (2.5, "is 2.5 bytes, not a whole number of bytes"),
        ("1.0001 KB", "is 1000.1 bytes, not a whole number of bytes"),
        ("2 PiB", "larger than the limit of 1 PiB"),
        (2**51, "larger than the limit of 1 PiB"),
    ],
)
def test_sizes_are_whole_positive_bytes(value: object, message: str) -> None:
    """A size of 0 would print an infinite bus bandwidth; a fraction of a byte is not a message."""
    with pytest.raises(UnitError, match=message):
        parse_size(value)  # type: ignore[arg-type]


def test_largest_size_is_accepted() -> None:
    """The limit itself (1 PiB = 2**50 B, also written '1P') is a valid size."""
    assert parse_size("1P") == parse_size("1 PiB") == 2**50


@pytest.mark.parametrize(("parse", "example"), [(parse_bandwidth, "16 GB/s"), (parse_time, "5 us")])
@pytest.mark.parametrize("bare", [16, 5.0, 0])
def test_files_need_units_on_figures(parse, example: str, bare: float) -> None:  # type: ignore[no-untyped-def]
    """``bandwidth: 16`` in a file is refused with an example (not read as 16 B/s)."""
    with pytest.raises(UnitError, match=f"has no unit; write it with one, e.g. '{example}'"):
        parse(bare, require_unit=True)
    assert parse(bare) == bare  # the Python API keeps plain SI numbers


# -- bandwidths ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "bandwidth_Bps"),
    [
        ("16 GB/s", 1.6e10),  # SEED_FACTS section 1's PCIe 3.0 x16
        ("128 Gbit/s", 1.6e10),
        ("300 Gbps", 3.75e10),  # SEED_FACTS section 2: one NVLink 2.0, bidirectional
        ("900 MiB/s", 900 * 2.0**20),
        ("100 Gbit/s", 1.25e10),
        ("100 Gb/s", 1.25e10),
        ("25 GB/s", 2.5e10),
        ("1 kB/s", 1e3),
        ("10Gbps", 1.25e9),
    ],
)
def test_parse_bandwidth(text: str, bandwidth_Bps: float) -> None:
    """Rates per second in bytes or bits, decimal or binary prefixes."""
    assert parse_bandwidth(text) == pytest.approx(bandwidth_Bps, rel=1e-12)


def test_parse_bandwidth_needs_per_second() -> None:
    """A size is not a bandwidth: "16 GB" lacks "/s"."""
    with pytest.raises(UnitError, match="cannot read bandwidth '16 GB'"):
        parse_bandwidth("16 GB")


# -- times --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "time_s"),
    [
        ("5 us", 5e-6),  # SEED_FACTS section 2's PCIe latency
        ("1.5 ms", 1.5e-3),
        ("200 ns", 2e-7),
        ("0 s", 0.0),
        ("2 sec", 2.0),
        ("3 µs", 3e-6),
        ("3 μs", 3e-6),
        ("7 ps", 7e-12),
        ("2 min", 120.0),
        ("5us", 5e-6),
    ],
)
def test_parse_time(text: str, time_s: float) -> None:
    """Durations with a unit, returned in seconds."""
    assert parse_time(text) == pytest.approx(time_s, rel=1e-12)


# -- malformed input ----------------------------------------------------------

MALFORMED = ["12 parsecs", "", "-3 GB", "fast", True, None, "1e999 GB", "GB", "5 GB/s/s", "1 MM"]


@pytest.mark.parametrize("bad", MALFORMED)
def test_malformed_size_names_accepted_forms(bad: object) -> None:
    """A bad size raises UnitError (also a ValueError) listing the accepted forms."""
    with pytest.raises(UnitError) as info:
        parse_size(bad)  # type: ignore[arg-type]
    message = str(info.value)
    assert repr(bad) in message
    assert message.endswith("expected " + SIZE_FORMS)
    assert "'160 MB'" in message
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, CommsimError)


@pytest.mark.parametrize("bad", [*MALFORMED, "16 GB"])
def test_malformed_bandwidth_names_accepted_forms(bad: object) -> None:
    """A bad bandwidth raises UnitError listing the accepted forms."""
    with pytest.raises(UnitError) as info:
        parse_bandwidth(bad)  # type: ignore[arg-type]
    message = str(info.value)
    assert repr(bad) in message
    assert message.endswith("expected " + BANDWIDTH_FORMS)
    assert "'16 GB/s'" in message


@pytest.mark.parametrize("bad", [*MALFORMED, "-1 ms", "5 uss", "5"])
def test_malformed_time_names_accepted_forms(bad: object) -> None:
    """A bad time raises UnitError listing the accepted forms ("5" alone has no unit)."""
    with pytest.raises(UnitError) as info:
        parse_time(bad)  # type: ignore[arg-type]
    message = str(info.value)
    assert repr(bad) in message
    assert message.endswith("expected " + TIME_FORMS)
    assert "'5 us'" in message


@pytest.mark.parametrize("parse", [parse_size, parse_bandwidth, parse_time])
@pytest.mark.parametrize("bad", [-1, -0.5, math.nan, math.inf, -math.inf])
def test_bad_plain_numbers(parse, bad: float) -> None:  # type: ignore[no-untyped-def]
    """Negative, NaN and infinite numbers are rejected as non-finite or negative."""
    with pytest.raises(UnitError, match="must be a finite, non-negative quantity"):
        parse(bad)


def test_boolean_is_not_a_number() -> None:
    """True is an int in Python, but never a quantity."""
    with pytest.raises(UnitError, match="is a boolean"):
        parse_size(True)


def test_negative_size_message() -> None:
    """The message of "-3 GB" says why it is wrong, not just that it is."""
    with pytest.raises(UnitError, match=r"^size '-3 GB' must be a finite, non-negative quantity; expected "):
        parse_size("-3 GB")


# -- formatting -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("nbytes", "text"),
    [
        (1.6e8, "160 MB"),
        (2**30, "1 GiB"),
        (2**20, "1 MiB"),
        (1024, "1 KiB"),
        (1536, "1.536 kB"),
        (4e7, "40 MB"),
        (0, "0 B"),
        (0.5, "0.5 B"),
        (3 * 2**30, "3.221 GB"),
    ],
)
def test_format_size(nbytes: float, text: str) -> None:
    """Decimal prefixes, except exact powers of two (>= 1 KiB) in binary ones."""
    assert format_size(nbytes) == text


@pytest.mark.parametrize(
    ("bandwidth_Bps", "text"), [(1.6e10, "16 GB/s"), (3.75e10, "37.5 GB/s"), (1e6, "1 MB/s"), (0, "0 B/s")]
)
def test_format_bandwidth(bandwidth_Bps: float, text: str) -> None:
    """Bandwidths are written in decimal bytes per second."""
    assert format_bandwidth(bandwidth_Bps) == text


@pytest.mark.parametrize(
    ("time_s", "text"),
    [(0.015, "15 ms"), (0.06, "60 ms"), (5e-6, "5 us"), (2e-7, "200 ns"), (0, "0 s"), (3600, "3600 s")],
)
def test_format_time(time_s: float, text: str) -> None:
    """Times pick the most readable unit (SEED_FACTS section 1: 15 ms, 60 ms)."""
    assert format_time(time_s) == text


# -- round trips ------------------------------------------------------------------

_POSITIVE = st.floats(min_value=1e-12, max_value=1e18, allow_nan=False, allow_infinity=False)


@given(st.integers(min_value=1, max_value=2**50))
def test_size_round_trip(nbytes: int) -> None:
    """parse(format(x)) == x exactly with 16 digits (every size up to 1 PiB has at most 16)."""
    assert parse_size(format_size(nbytes, digits=16)) == nbytes


@given(_POSITIVE)
def test_bandwidth_round_trip(bandwidth_Bps: float) -> None:
    """parse(format(x)) == x to the printed digits."""
    assert parse_bandwidth(format_bandwidth(bandwidth_Bps)) == pytest.approx(bandwidth_Bps, rel=5e-4)
    assert parse_bandwidth(format_bandwidth(bandwidth_Bps, digits=15)) == pytest.approx(
        bandwidth_Bps, rel=1e-13
    )


@given(st.floats(min_value=1e-15, max_value=1e6, allow_nan=False, allow_infinity=False))
def test_time_round_trip(time_s: float) -> None:
    """parse(format(x)) == x to the printed digits, from femtoseconds to days."""
    assert parse_time(format_time(time_s)) == pytest.approx(time_s, rel=5e-4)
    assert parse_time(format_time(time_s, digits=15)) == pytest.approx(time_s, rel=1e-13)


@given(st.integers(min_value=10, max_value=50))
def test_powers_of_two_round_trip_exactly(exponent: int) -> None:
    """nccl-tests sizes (powers of two) come back bit for bit."""
    assert parse_size(format_size(2**exponent)) == 2.0**exponent


@pytest.mark.parametrize("text", ["160 Mb", "8 Gb", "16 b"])
def test_lower_case_b_in_a_size_is_refused_with_a_hint(text: str) -> None:
    with pytest.raises(UnitError, match="ambiguous in a size: write 'B' for bytes or 'bit' for bits"):
        parse_size(text)
