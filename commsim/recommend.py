"""Rank every applicable algorithm for one case, say why the winner wins, and where tuning pays.

:func:`tuned_gains` compares, size by size, NCCL's default choice (the
algorithm and protocol NCCL picks with its built-in tuning) against the
best tuned choice: the NCCL model's best (algorithm, protocol) on this
machine (different from the default when the machine carries calibrated
``nccl:`` parameters), or a commsim algorithm. :func:`tuned_ranges`
groups the sizes where the tuned choice is faster by more than a
threshold (default :data:`DEFAULT_THRESHOLD`, 10 %) into size ranges.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from commsim.algorithms import algorithm_names, get_algorithm
from commsim.api import simulate
from commsim.collectives import Collective, get_collective
from commsim.errors import AlgorithmError, CommsimError, ScheduleError, TopologyError
from commsim.results import Result
from commsim.topology.model import Topology
from commsim.units import format_size, format_time

__all__ = [
    "DEFAULT_THRESHOLD",
    "Recommendation",
    "TunedGain",
    "TunedRange",
    "recommend",
    "tuned_gains",
    "tuned_ranges",
]

DEFAULT_THRESHOLD = 0.10
"""A tuned choice is reported when NCCL's default takes more than 10 % longer."""

_USED = 0.01  # a link counts as kept busy above 1 % utilisation


@dataclass(frozen=True)
class Recommendation:
    """Algorithms ranked fastest first, those that cannot run, and the reason the winner wins."""

    results: list[Result]
    not_applicable: dict[str, str] = field(default_factory=dict)

    @property
    def winner(self) -> Result:
        """The fastest result."""
        return self.results[0]

    def explanation(self) -> str:
        """One paragraph: how much faster, and which links it keeps busy that the runner-up leaves idle."""
        if len(self.results) < 2:
            return f"{self.winner.algorithm} is the only algorithm that applies."
        win, second = self.results[0], self.results[1]
        win_links = {l.link for l in win.links if l.utilisation > _USED}
        second_links = {l.link for l in second.links if l.utilisation > _USED}
        extra = sorted(win_links - second_links)
        head = (
            f"{win.algorithm} wins at {format_time(win.time_s)}, {second.time_s / win.time_s:.2f}x faster "
            f"than {second.algorithm} ({format_time(second.time_s)})"
        )
        if not win_links and not second_links:  # "keeps 0 directed links busy against 0" said nothing
            return (
                f"{head}: no link is busy more than {_USED:.0%} of the time in either, so the size is too "
                "small for bandwidth to matter; the difference is in steps and latency."
            )
        text = f"{head}: it keeps {len(win_links)} directed links busy against {len(second_links)}"
        if extra:
            shown = ", ".join(extra[:6]) + (f" and {len(extra) - 6} more" if len(extra) > 6 else "")
            text += f"; {second.algorithm} leaves idle {shown}"
        else:
            win_bytes = sum(l.nbytes for l in win.links)
            second_bytes = sum(l.nbytes for l in second.links)
            text += (
                f"; it moves {win_bytes / second_bytes:.2f}x the bytes over its links"
                if abs(win_bytes - second_bytes) > 1e-9 * max(win_bytes, second_bytes)
                else "; both move the same bytes over the same links: the difference is in steps and latency"
            )
        bottleneck = win.bottleneck[0]
        return text + f". Its busiest link is {bottleneck.describe()}."


def recommend(
    topology: Topology, collective: str | Collective, size: str | float, ranks: int | list[str] | None = None
) -> Recommendation:
    """Simulate every registered algorithm with default parameters and rank them."""
    from commsim.scenario.machine import build_machine

    topology = build_machine(topology)  # a name too; 5 is refused here, not by every algorithm in turn
    coll = get_collective(collective)
    results, skipped = [], {}
    for name in algorithm_names():
        if coll not in get_algorithm(name).collectives:
            skipped[name] = f"does not implement {coll}"
            continue
        try:
            results.append(simulate(topology, name, coll, size, ranks=ranks))
        except (AlgorithmError, TopologyError, ScheduleError) as exc:
            skipped[name] = str(exc)
    if not results:
        raise AlgorithmError(f"no algorithm applies to {coll} on topology {topology.name!r}")
    results.sort(key=lambda r: (r.time_s, r.algorithm))
    return Recommendation(results, skipped)


@dataclass(frozen=True)
class TunedGain:
    """At one size: NCCL's default choice and the fastest tuned choice, with their times (s)."""

    nbytes: float
    default: str
    default_s: float
    best: str
    best_s: float

    @property
    def gain(self) -> float:
        """How much longer the default takes: ``default_s / best_s - 1`` (0.25 = 25 %)."""
        return self.default_s / self.best_s - 1


@dataclass(frozen=True)
class TunedRange:
    """Neighbouring sizes where ``best`` beats NCCL's ``default`` by more than the threshold."""

    first_bytes: float
    last_bytes: float
    default: str
    best: str
    min_gain: float
    max_gain: float

    def describe(self) -> str:
        """E.g. ``1 MB to 16 MB: multi_ring beats NCCL's default (Ring/LL128) by 12-30 %``."""
        where = format_size(self.first_bytes)
        if self.last_bytes != self.first_bytes:
            where += f" to {format_size(self.last_bytes)}"
        low, high = round(100 * self.min_gain), round(100 * self.max_gain)
        by = f"{low} %" if low == high else f"{low}-{high} %"
        return f"{where}: {self.best} beats NCCL's default ({self.default}) by {by}"

    def to_record(self) -> dict[str, object]:
        """JSON-ready fields."""
        return {
            "first_bytes": self.first_bytes,
            "last_bytes": self.last_bytes,
            "default": self.default,
            "best": self.best,
            "min_gain": self.min_gain,
            "max_gain": self.max_gain,
        }


def tuned_gains(
    topology: Topology,
    collective: str | Collective,
    sizes: Sequence[float],
    ranks: int | list[str] | None = None,
    commsim_algorithms: bool = True,
) -> list[TunedGain]:
    """NCCL's default choice against the best tuned choice at each of ``sizes`` (bytes).

    The default is what NCCL picks with its built-in parameters; its time,
    and the NCCL model's own best, are priced with the machine's parameters
    (calibrated when the topology carries them). With ``commsim_algorithms``
    every registered algorithm but ``nccl`` competes too.

    Raises
    ------
    AlgorithmError, TopologyError
        If the NCCL model does not apply to this collective or machine.
    """
    from commsim.algorithms.base import Problem
    from commsim.nccl.model import predict
    from commsim.nccl.params import NcclParams

    coll = get_collective(collective)
    from commsim.topology.builders import is_whole_number

    if is_whole_number(ranks):
        names = tuple(topology.gpus[: int(ranks)])
    elif ranks is not None and not isinstance(ranks, int):
        names = tuple(ranks)  # names, a list or a tuple
    else:
        names = tuple(topology.gpus)
    here, builtin = NcclParams.of(topology), NcclParams()
    gains = []
    for size in sizes:
        problem = Problem(topology, names, coll, float(size))
        picked = predict(problem, builtin).chosen
        default = predict(problem, here, algorithms=(picked.algorithm,), protocols=(picked.protocol,))
        tuned = predict(problem, here)
        best, best_s = f"NCCL {tuned.chosen.algorithm}/{tuned.chosen.protocol}", tuned.time_s
        if commsim_algorithms:
            ranked = [r for r in _ranked(topology, coll, size, ranks) if r.algorithm != "nccl"]
            if ranked and ranked[0].time_s < best_s:
                best, best_s = ranked[0].algorithm, ranked[0].time_s
        label = f"{picked.algorithm}/{picked.protocol}"
        gains.append(TunedGain(float(size), label, default.time_s, best, best_s))
    return gains


def _ranked(topology: Topology, coll: Collective, size: float, ranks: int | list[str] | None) -> list[Result]:
    try:
        return recommend(topology, coll, size, ranks).results
    except AlgorithmError:
        return []


def tuned_ranges(gains: Sequence[TunedGain], threshold: float = DEFAULT_THRESHOLD) -> list[TunedRange]:
    """Group neighbouring sizes whose gain exceeds ``threshold`` with the same default and best.

    Raises
    ------
    CommsimError
        If ``threshold`` is negative or not finite.
    """
    if not 0 <= threshold < float("inf"):
        raise CommsimError(f"threshold must be a non-negative fraction (0.1 = 10 %), got {threshold!r}")
    ranges: list[TunedRange] = []
    current: list[TunedGain] = []
    for point in [*gains, None]:
        same = (
            point is not None
            and bool(current)
            and (point.default, point.best)
            == (
                current[-1].default,
                current[-1].best,
            )
        )
        if current and not (point is not None and point.gain > threshold and same):
            ranges.append(_range(current))
            current = []
        if point is not None and point.gain > threshold:
            current.append(point)
    return ranges


def _range(points: list[TunedGain]) -> TunedRange:
    gains = [p.gain for p in points]
    return TunedRange(
        points[0].nbytes, points[-1].nbytes, points[0].default, points[0].best, min(gains), max(gains)
    )
