"""nccl-tests' printed numbers and the checks of its bandwidth arithmetic.

The checks redo nccl-tests' arithmetic (SEED_FACTS.md section 6; the
``GetBw`` functions of nccl-tests ``src/*.cu``): ``algbw = size / time`` and
``busbw = algbw x factor``. Bandwidths are printed with two decimals and the
time with about four significant digits, so a row is only inconsistent when
no values inside the rounding intervals of the printed strings fit.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from commsim.calibrate.parser_common import RunData

__all__ = [
    "ALGBW_FACTORS",
    "BUSBW_FACTORS",
    "GBPS",
    "LEGACY_ALGBW",
    "MAX_CALL_S",
    "MAX_GBPS",
    "MIN_CALL_S",
    "SLACK",
    "Measured",
    "Printed",
    "algbw_agrees",
    "average_warnings",
    "bandwidth_fault",
    "bandwidth_warnings",
    "legacy_algbw",
    "printed",
    "size_fault",
    "time_fault",
]


GBPS = 1e9
"""Bytes per second in nccl-tests' "GB/s" (decimal)."""


SLACK = 1e-9
"""Relative slack for the floating-point error of our own arithmetic."""


MAX_CALL_S = 86_400.0
"""The longest time per call a result row may print: one day. nccl-tests times each size over 20
calls after 5 warm-up ones by default, so a longer figure would be weeks at one size: a corrupt or
edited row, not a measurement."""


MIN_CALL_S = 1e-9
"""The shortest time per call a result row may print: one nanosecond (nccl-tests prints hundredths of
a microsecond, and a collective call takes microseconds)."""


def time_fault(seconds: float, per_s: float = 1e6) -> str | None:
    """What a row's time per call (s) should be instead, in the row's unit (``per_s`` of them a
    second: us, or ms in the 2017 tables), or None when it is a measurement's."""
    unit = "ms" if per_s == 1e3 else "us"
    if not (math.isfinite(seconds) and 0 < seconds <= MAX_CALL_S):
        return f"a positive time of at most one day per call ({MAX_CALL_S * per_s:.4g} {unit})"
    if seconds < MIN_CALL_S:  # a garbled 1e-320: positive, and its busbw overflows to inf
        return f"a time of at least one nanosecond per call ({MIN_CALL_S * per_s:g} {unit})"
    return None


MAX_GBPS = 1e299
"""The most GB/s a row's bandwidth may be: more (``1e308``, ``inf``) is a garble, and overflows in B/s."""


def bandwidth_fault(gbps: float) -> str | None:
    """What a row's algbw or busbw (GB/s) should be instead, or None when it is a measurement's
    (nan too: nccl-tests prints it, and the checks skip it)."""
    if math.isnan(gbps) or 0 <= gbps <= MAX_GBPS:
        return None
    return f"a bandwidth of 0 to {MAX_GBPS:g} GB/s"


def size_fault(nbytes: int) -> str | None:
    """What a row's size (bytes) should be instead, or None when commsim models it."""
    from commsim.units import MAX_SIZE_BYTES

    if nbytes > MAX_SIZE_BYTES:
        return f"a size of at most 1 PiB ({MAX_SIZE_BYTES} bytes), the largest commsim models"
    return None


def _one(ranks: int) -> float:
    return 1.0


def _ring(ranks: int) -> float:
    return (ranks - 1) / ranks


ALGBW_FACTORS: dict[str, Callable[[int], float]] = {"hypercube": _ring}
"""algbw / (size / time) per collective; 1 for every collective not listed.

nccl-tests' hypercube test counts only the ``n-1`` received blocks of the
``n``-block buffer it prints as the size.
"""


BUSBW_FACTORS: dict[str, Callable[[int], float]] = {
    "all_reduce": lambda ranks: 2.0 * _ring(ranks),
    "all_gather": _ring,
    "reduce_scatter": _ring,
    "all_to_all": _ring,
    "gather": _ring,
    "scatter": _ring,
    "broadcast": _one,
    "reduce": _one,
    "send_recv": _one,
    "hypercube": _one,
}
"""busbw / algbw per collective, as a function of the number of ranks."""


class Printed(NamedTuple):
    """A printed number and half a unit of its last printed digit.

    The true value lies in ``[value - half_ulp, value + half_ulp]``.
    """

    value: float
    half_ulp: float

    def divided(self, divisor: float) -> Printed:
        """The same printed number in a larger unit (microseconds / 1e6 = seconds)."""
        return Printed(self.value / divisor, self.half_ulp / divisor)


class Measured(NamedTuple):
    """One printed (time, algbw, busbw) triple of a result row.

    ``time`` is in seconds, ``algbw`` and ``busbw`` in GB/s (1e9 bytes/s) as
    printed; ``label`` says which half of the row it is ("out-of-place").
    """

    line: int
    label: str
    nbytes: int
    time: Printed
    algbw: Printed
    busbw: Printed


def printed(token: str) -> Printed:
    """Read a number as nccl-tests printed it, keeping its precision.

    Examples
    --------
    >>> printed("40.12")
    Printed(value=40.12, half_ulp=0.005)
    >>> printed("1.2e+08").half_ulp
    5000000.0
    """
    value = float(token)
    mantissa, _, exponent = token.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    power = float(exponent) if exponent else 0.0  # float: an exponent of any length reads
    try:
        return Printed(value, 0.5 * 10.0 ** (power - decimals))
    except OverflowError:  # a garbled "1e999": the value is inf, and so is its rounding
        return Printed(value, math.inf)


def _expected_GBps(nbytes: int, time: Printed, factor: float) -> tuple[float, float]:
    """Lowest and highest bandwidth that ``nbytes`` over the printed time allow."""
    if nbytes == 0:
        return 0.0, 0.0
    longest = time.value + time.half_ulp
    shortest = time.value - time.half_ulp
    low = nbytes * factor / longest / GBPS if longest > 0 else math.inf
    high = nbytes * factor / shortest / GBPS if shortest > 0 else math.inf
    return low, high


def _disagrees(shown: Printed, low: float, high: float) -> bool:
    slack = SLACK * max(abs(shown.value), 1.0)
    return shown.value + shown.half_ulp + slack < low or shown.value - shown.half_ulp - slack > high


def algbw_agrees(nbytes: int, time_s: Printed, algbw: Printed) -> bool:
    """Whether a printed algbw (GB/s) is ``nbytes`` over the printed time (s), within print rounding."""
    low, high = _expected_GBps(nbytes, time_s, 1.0)
    return not _disagrees(algbw, low, high)


def _check(m: Measured, column: str, shown: Printed, factor: float, why: str) -> str | None:
    if math.isnan(m.time.value) or math.isnan(shown.value):
        return None
    low, high = _expected_GBps(m.nbytes, m.time, factor)
    if not _disagrees(shown, low, high):
        return None
    return (
        f"line {m.line}: {m.label} {column} {shown.value:g} GB/s disagrees with "
        f"size / time{why} = {m.nbytes} B / {m.time.value * 1e6:.6g} us{why}, which allows "
        f"{low:.6g} to {high:.6g} GB/s after print rounding"
    )


def bandwidth_warnings(measured: list[Measured], collective: str | None, ranks: int) -> list[str]:
    """Warnings for printed bandwidths that their size and time cannot explain.

    Parameters
    ----------
    measured : list of Measured
        The printed triples of every row.
    collective : str or None
        Normalised collective name; without it only algbw is checked (its
        factor is 1 for every collective but hypercube) and busbw is not
        (:func:`~commsim.calibrate.parser_common.finish_log` says so in its own warning).
    ranks : int
        Number of ranks; 0 when unknown (then only algbw is checked).

    Returns
    -------
    list of str
        One message per disagreeing column, naming the line; past
        :data:`_MAX_ROW_WARNINGS` the rest are summed up in one message.
    """
    known = ranks > 0 and collective is not None
    alg = ALGBW_FACTORS.get(collective or "", _one)(ranks) if known else 1.0
    bus = BUSBW_FACTORS[collective](ranks) if known and collective in BUSBW_FACTORS else None
    if known and collective in LEGACY_ALGBW and ranks > 1 and legacy_algbw(measured, ranks):
        return [
            f"the printed algbw is size / time x {_ring(ranks):.4g} and busbw = algbw, as nccl-tests' "
            f"{collective} printed them before June 2020 (NVIDIA/nccl-tests issue #45); the times are "
            "the same"
        ]
    alg_why = f" x {alg:.4g}" if alg != 1.0 else ""
    warnings: list[str] = []
    rows: list[tuple[int, str]] = []
    for m in measured:
        found = [_check(m, "algbw", m.algbw, alg, alg_why)]
        if bus is not None:
            found.append(_check(m, "busbw", m.busbw, alg * bus, f" x {alg * bus:.4g}"))
        rows.extend((m.line, w) for w in found if w is not None)
    warnings.extend(w for _, w in rows[:_MAX_ROW_WARNINGS])
    if len(rows) > _MAX_ROW_WARNINGS:
        rest = rows[_MAX_ROW_WARNINGS:]
        warnings.append(
            f"... and {len(rest)} more printed bandwidths disagree the same way (lines {rest[0][0]} to "
            f"{rest[-1][0]}); if every row disagrees, check the number of ranks ({ranks}) and the collective"
        )
    return warnings


LEGACY_ALGBW = frozenset({"all_gather", "reduce_scatter"})
"""Collectives whose nccl-tests algbw counted only the n-1 blocks a rank receives until June 2020
(NVIDIA/nccl-tests issue #45): algbw = size / time x (n-1)/n and busbw = algbw; since then algbw =
size / time and busbw = algbw x (n-1)/n, the same busbw."""


def legacy_algbw(measured: list[Measured], ranks: int) -> bool:
    """Whether every row with a nonzero algbw follows the old definition and some disagree with today's."""
    informative = [m for m in measured if m.nbytes > 0 and m.algbw.value > 0 and not math.isnan(m.time.value)]
    factor = _ring(ranks)
    old = all(_check(m, "algbw", m.algbw, factor, "") is None for m in informative)
    old = old and all(_check(m, "busbw", m.busbw, factor, "") is None for m in informative)
    return bool(informative) and old and any(_check(m, "algbw", m.algbw, 1.0, "") for m in informative)


_MAX_ROW_WARNINGS = 3
"""Disagreeing bandwidths reported one by one; the rest in one line (a wrong rank count hits every row)."""


def average_warnings(data: RunData) -> list[str]:
    """Whether ``# Avg bus bandwidth`` is the mean busbw of the rows, as nccl-tests computes it.

    A mismatch means rows are missing (cut from the log) or were edited.
    """
    busbw = [m.busbw for m in data.measured if not math.isnan(m.busbw.value)]
    if data.avg_busbw is None or math.isnan(data.avg_busbw.value) or not busbw:
        return []
    mean = math.fsum(b.value for b in busbw) / len(busbw)
    rounding = math.fsum(b.half_ulp for b in busbw) / len(busbw) + data.avg_busbw.half_ulp
    if abs(mean - data.avg_busbw.value) <= rounding * (1 + SLACK) + SLACK:
        return []
    return [
        f"Avg bus bandwidth {data.avg_busbw.value:g} GB/s is not the mean busbw of the "
        f"{len(busbw)} results read ({mean:.6g} GB/s): rows may be missing from the log"
    ]
