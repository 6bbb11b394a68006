"""Rank every applicable algorithm for one case and say why the winner wins."""

from __future__ import annotations

from dataclasses import dataclass, field

from commsim.algorithms import algorithm_names, get_algorithm
from commsim.api import simulate
from commsim.collectives import Collective, get_collective
from commsim.errors import AlgorithmError, ScheduleError, TopologyError
from commsim.results import Result
from commsim.topology.model import Topology
from commsim.units import format_time

__all__ = ["Recommendation", "recommend"]

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
        text = (
            f"{win.algorithm} wins at {format_time(win.time_s)}, {second.time_s / win.time_s:.2f}x faster "
            f"than {second.algorithm} ({format_time(second.time_s)}): it keeps {len(win_links)} directed "
            f"links busy against {len(second_links)}"
        )
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
