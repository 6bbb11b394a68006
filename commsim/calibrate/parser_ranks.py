"""The number of ranks of an nccl-tests log: every source's word, the one chosen, and why.

Sources, most trusted first (:data:`EXACT_SOURCES` state the number, the others
bound it from below): ``--gpus`` (or ``--nodes`` x ``--gpus-per-node``), the
device list, NCCL INFO ``nranks``, the count column of a collective that
divides its buffer among the ranks, the busbw/algbw ratio of the rows (both
read by :mod:`~commsim.calibrate.parser_table_ranks`), a bare
MPI or Slurm launcher's process count, a bare nccl-tests command line; then
the run header's threads x GPUs and launcher prefixes.
"""

from __future__ import annotations

from commsim.calibrate.evidence import Evidence
from commsim.calibrate.parser import Device
from commsim.calibrate.parser_bandwidth import LEGACY_ALGBW, Measured
from commsim.calibrate.parser_command import LAUNCHED, MAX_RANKS, ONE_PROCESS
from commsim.calibrate.parser_common import RunData
from commsim.calibrate.parser_table_columns import in_place_checked
from commsim.calibrate.parser_table_ranks import (
    RANK_SCALES,
    informative,
    ranks_from_bandwidths,
    ranks_from_counts,
    ratio_bounds,
)
from commsim.errors import ParseError

__all__ = ["EXACT_SOURCES", "resolve_ranks"]

COUNT_COLUMN = "count column (size / (count x type size))"
"""Source name of the rank count the count column of a divided collective gives."""

EXACT_SOURCES = (
    "n_ranks given (--gpus, or --nodes x --gpus-per-node)",
    "device list",
    "NCCL INFO nranks",
    COUNT_COLUMN,
    "busbw/algbw ratio",
    LAUNCHED,
    ONE_PROCESS,
)
"""Rank sources that state the number; the others only bound it from below."""

_AMBIGUOUS = "busbw/algbw ratio (ambiguous)"


def resolve_ranks(
    explicit: int | None,
    devices: list[Device],
    collective: str | None,
    data: RunData,
    warnings: list[str],
    one_process: Evidence | None = None,
) -> tuple[int, tuple[Evidence, ...]]:
    """The number of ranks and every source's evidence, the one used first."""
    if explicit is not None and explicit < 1:
        raise ValueError(f"n_ranks must be a positive number of ranks, not {explicit}")
    found = _rank_evidence(devices, collective, data) + ([one_process] if one_process else [])
    unchecked = in_place_checked(data.rows, data.column_header) is False
    chosen = _choose_ranks(explicit, found, data.source, collective, (data.measured, unchecked))
    if chosen.value > MAX_RANKS:  # a garbled line; a cluster of 10^8 ranks is built for minutes
        raise ParseError(
            f"the {chosen.source} says {chosen.value} ranks, above the limit of {MAX_RANKS:,} "
            "commsim models; if the line is garbled, pass --gpus N",
            source=data.source,
            line=chosen.line,
        )
    warnings += _rank_disagreements(chosen, found)
    return chosen.value, (chosen, *_supporting_first(chosen, found))


def _supporting_first(chosen: Evidence, found: list[Evidence]) -> list[Evidence]:
    """The other sources, those that say the number used first, then ranges holding it, then the rest.

    A lower bound of 1 (``nThread 1 nGpus 1``: one rank per process) says
    nothing once another source gives the number, so it is left out: a
    report citing it for 24 ranks would name a source that never said 24.
    """
    others = [e for e in found if e is not chosen and not (_is_bound(e) and e.value <= 1)]

    def rank(e: Evidence) -> int:
        if e.source == _AMBIGUOUS:
            return 1 if e.value[0] <= chosen.value <= e.value[1] else 2
        return 0 if e.value == chosen.value else 2

    return sorted(others, key=rank)


def _is_bound(e: Evidence) -> bool:
    return e.source not in EXACT_SOURCES and e.source != _AMBIGUOUS


def _rank_evidence(devices: list[Device], collective: str | None, data: RunData) -> list[Evidence]:
    found = _device_evidence(devices)
    if data.info_nranks:
        line, value, text = data.info_nranks[0]
        found.append(Evidence.at(value, "NCCL INFO nranks", line, text))
    per_process = _per_process(data.header)
    if data.header_line is not None and per_process is not None:
        line, text = data.header_line
        found.append(Evidence.at(per_process, "nThread x nGpus", line, text))
    if data.prefix_ranks:
        line, rank = max(data.prefix_ranks.items(), key=lambda item: (item[1], -item[0]))
        at_least = (rank + 1) * (per_process or 1)
        if at_least > 1:  # only rank 0's prefix: 'at least one rank' says nothing
            found.append(Evidence(at_least, "MPI/Slurm line prefix", line, f"rank {rank} prefix"))
    counted = ranks_from_counts(data.rows)
    if counted is not None:
        value, row = counted
        text = f"{row.nbytes} B / ({row.count} x {row.dtype}) = {value} ranks"
        found.append(Evidence(value, COUNT_COLUMN, row.line, text))
    ratio = _ratio_evidence(collective, data.measured)
    return found + ([ratio] if ratio is not None else [])


def _device_evidence(devices: list[Device]) -> list[Evidence]:
    if not devices:
        return []
    last = devices[-1]
    text = f"Rank {last.rank} on {last.host} device {last.device} {last.model}"
    if [d.rank for d in devices] == list(range(len(devices))):
        return [Evidence.at(len(devices), "device list", last.line, text)]
    return [Evidence.at(last.rank + 1, "highest rank listed", last.line, text)]


def _per_process(header: dict[str, int | str]) -> int | None:
    threads, gpus = header.get("nThread"), header.get("nGpus")
    if isinstance(threads, int) and isinstance(gpus, int) and threads > 0 and gpus > 0:
        return threads * gpus
    return None


def _ratio_family(collective: str | None, rows: list[Measured]) -> tuple[str | None, str]:
    """The collective whose factor to use and how it was chosen.

    Without a known collective the ratio itself tells the family: only
    all_reduce has busbw > algbw (2(n-1)/n > 1 for n > 2), and all ring
    collectives (all_gather, reduce_scatter, all_to_all ...) share (n-1)/n < 1.
    """
    if collective is not None or not rows:
        return (collective if collective in RANK_SCALES else None), str(collective)
    above = any(m.busbw.value - m.busbw.half_ulp > m.algbw.value + m.algbw.half_ulp for m in rows)
    below = any(m.busbw.value + m.busbw.half_ulp < m.algbw.value - m.algbw.half_ulp for m in rows)
    if above and not below:
        return "all_reduce", "all_reduce (collective unknown; only all_reduce has busbw > algbw)"
    if below and not above:
        return "all_gather", "a ring collective (collective unknown; busbw < algbw)"
    return None, ""


def _ratio_evidence(collective: str | None, measured: list[Measured]) -> Evidence | None:
    rows = informative(measured)
    family, named = _ratio_family(collective, rows)
    if family is None or not rows:
        return None
    if collective in LEGACY_ALGBW and all(low <= 1.0 <= high for low, high in map(ratio_bounds, rows)):
        return None  # busbw = algbw: nccl-tests' definition before June 2020, which tells no rank count
    fits = ranks_from_bandwidths(family, rows)
    first = min(m.line for m in rows)
    described = f"{len(rows)} printed busbw/algbw pairs of {named}"
    if not fits:  # the rows that disagree are warned about once the number is known
        return None
    if len(fits) == 1:
        return Evidence(fits[0], "busbw/algbw ratio", first, f"{described} fit only n = {fits[0]}")
    return Evidence((fits[0], fits[-1]), _AMBIGUOUS, first, f"{described} fit n = {fits[0]}..{fits[-1]}")


def _choose_ranks(
    explicit: int | None,
    found: list[Evidence],
    source: str | None,
    collective: str | None = None,
    table: tuple[list[Measured] | None, bool] = (None, False),
) -> Evidence:
    """The rank count chosen from ``found``; ``table``: the rows' printed pairs, and whether
    their in-place ``#wrong`` is N/A (no in-place check), for the refusal's reason."""
    measured, unchecked = table
    if explicit is not None:
        return Evidence(explicit, EXACT_SOURCES[0])
    for kind in EXACT_SOURCES[1:]:
        exact = next((e for e in found if e.source == kind), None)
        if exact is not None:
            return _beyond_device_list(exact, found, collective, measured or [])
    bounds = [e for e in found if e.source not in EXACT_SOURCES and e.source != _AMBIGUOUS]
    ambiguous = next((e for e in found if e.source == _AMBIGUOUS), None)
    best = max(bounds, key=lambda e: e.value, default=None)
    if best is not None and (ambiguous is None or ambiguous.value[0] <= best.value <= ambiguous.value[1]):
        return best
    why = _why_unknown(best, ambiguous, collective, measured, unchecked)
    raise ParseError(f"cannot tell the number of ranks: {why}; pass --gpus N", source=source)


def _beyond_device_list(
    chosen: Evidence, found: list[Evidence], collective: str | None, measured: list[Measured]
) -> Evidence:
    """The table's own rank count when it is larger than a device list's: the list was cut.

    nccl-tests prints one device line per rank and computes every row's count and busbw with the
    communicator's size, so a list of fewer ranks than the rows were computed for has lost its
    tail (a page or a parser's sample keeping its first lines, log 188: two MI350X listed, 16 in
    busbw/algbw = 2 x 15/16). Only a known collective's count column and busbw/algbw ratio outweigh
    the list, when they agree (the ratio alone: when :data:`_TABLE_SIZES` sizes or more fit it, or
    when the list names one rank: a one-rank all_reduce, all_gather, reduce_scatter or all_to_all
    has a busbw factor of 0 and prints busbw 0.00, so one row of non-zero busbw already rules the
    list out; log 230, a parser's sample listing rank 0 of a 16-rank MI355X run).
    """
    if chosen.source != "device list" or collective is None:
        return chosen
    table = [e for e in found if e.source in (COUNT_COLUMN, "busbw/algbw ratio")]
    if not table:
        return _launched_beyond(chosen, found)
    if len({e.value for e in table}) != 1 or table[0].value <= chosen.value:
        return chosen  # they disagree (a type column that is not the one counted), or say no more
    sizes = len({m.nbytes for m in informative(measured)})
    if all(e.source != COUNT_COLUMN for e in table) and sizes < _TABLE_SIZES and chosen.value > 1:
        return chosen
    return table[0]


def _launched_beyond(chosen: Evidence, found: list[Evidence]) -> Evidence:
    """The launcher's process count when the rows' busbw/algbw range holds it but not the list.

    At a thousand ranks the ratio prints too coarsely to name one count (log 204: ``mpirun -np
    1024``, rows fitting 1011 to 1035, a device list cut by its author at rank 99); the launcher
    states the number, and the rows rule out the list's.
    """
    launched = next((e for e in found if e.source == LAUNCHED), None)
    ambiguous = next((e for e in found if e.source == _AMBIGUOUS), None)
    if launched is None or ambiguous is None:
        return chosen
    low, high = ambiguous.value
    return launched if chosen.value < low <= launched.value <= high else chosen


_TABLE_SIZES = 3
"""Sizes whose busbw/algbw must agree on a rank count before it outweighs a shorter device list: one
row off by more than print rounding is flagged as such, not read as more ranks."""


def _why_unknown(
    best: Evidence | None,
    ambiguous: Evidence | None,
    collective: str | None = None,
    measured: list[Measured] | None = None,
    unchecked: bool = False,
) -> str:
    if ambiguous is not None:
        low, high = ambiguous.value
        bound = f"; at least {best.value} by the {best.source}" if best is not None else ""
        return f"the busbw/algbw ratio of the rows fits every number from {low} to {high}{bound}"
    head = "the log has no device list, no run header and no NCCL INFO nranks line, and "
    if collective is not None and collective not in RANK_SCALES:
        return head + f"busbw/algbw of {collective} does not depend on the number of ranks"
    coarse = _too_coarse(measured) if measured is not None else None
    if coarse is not None:
        return head + coarse
    if collective is not None:
        return head + f"busbw/algbw of {collective} does not depend on the number of ranks"
    if unchecked and _ratio_one(measured or []):  # reduce, broadcast, all_reduce check in place
        return head + (
            "busbw/algbw of its rows is 1 and their in-place #wrong is N/A, which fits send_recv of "
            "any number of ranks (all_reduce, reduce and broadcast check in place; --collective "
            "would not settle it)"
        )
    return head + (
        "busbw/algbw of its rows does not tell it with the collective unknown (a ratio of 1 fits "
        "all_reduce of 2 ranks and reduce, broadcast or send_recv of any number; --collective may "
        "settle it)"
    )


def _ratio_one(measured: list[Measured]) -> bool:
    """Whether every informative row's busbw/algbw is 1 within print rounding."""
    rows = informative(measured)
    return bool(rows) and all(low <= 1.0 <= high for low, high in map(ratio_bounds, rows))


def _too_coarse(measured: list[Measured]) -> str | None:
    """Why rows whose bandwidths print as 0.00 or 0.01 GB/s give no ratio; None if they give one."""
    rows = informative(measured)
    if not rows:
        largest = max((m.nbytes for m in measured), default=0)
        return (
            f"its rows (up to {largest} B) print algbw 0.00 GB/s, so they give no busbw/algbw ratio at "
            "all (--collective would not settle it)"
        )
    low = max(ratio_bounds(m)[0] for m in rows)
    high = min(ratio_bounds(m)[1] for m in rows)
    if high <= 1.25 * low:
        return None
    return (
        f"its rows print bandwidths too small to give busbw/algbw (algbw at most "
        f"{max(m.algbw.value for m in rows):g} GB/s: within print rounding the ratio lies anywhere from "
        f"{low:.2g} to {high:.2g}; --collective would not settle it)"
    )


def _rank_disagreements(chosen: Evidence, found: list[Evidence]) -> list[str]:
    warnings = []
    for other in found:
        if other is chosen:
            continue
        if other.source == _AMBIGUOUS:
            wrong = not other.value[0] <= chosen.value <= other.value[1]
        else:
            wrong = other.value > chosen.value or (
                other.source in EXACT_SOURCES and other.value != chosen.value
            )
        if wrong:
            says = "at least " if other.source not in EXACT_SOURCES else ""
            table = chosen.source in (COUNT_COLUMN, "busbw/algbw ratio", LAUNCHED)
            cut = "; the device list looks cut" if table and other.source == "device list" else ""
            warnings.append(
                f"number of ranks: the {other.describe()} says {says}{_show(other.value)} but the "
                f"{chosen.describe()} says {chosen.value}; using {chosen.value} ({chosen.source}){cut}"
            )
    if chosen.source not in EXACT_SOURCES:
        warnings.append(
            f"number of ranks {chosen.value} is only a lower bound ({chosen.describe()}); pass --gpus N"
        )
    return warnings


def _show(value: object) -> str:
    """A value as a report says it: a (low, high) pair as ``low to high``."""
    return f"{value[0]} to {value[1]}" if isinstance(value, tuple) else str(value)
