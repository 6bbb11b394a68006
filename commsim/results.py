"""Result objects: time, bandwidths and the links that explain them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from commsim.collectives import Collective, busbw_factor
from commsim.engine import ReplayRecord
from commsim.schedule import Schedule
from commsim.topology.model import Topology
from commsim.units import format_time

__all__ = ["LinkLoad", "Result", "link_loads"]

_TIE = 1e-9


@dataclass(frozen=True)
class LinkLoad:
    """How much one directed link was used during a run.

    Attributes
    ----------
    link : str
        ``"src->dst"``.
    kind : str
        Link kind.
    nbytes : float
        Bytes carried.
    busy_s : float
        ``nbytes / capacity``: the time the link would need at full rate.
    active_s : float
        Time during which at least one flow crossed it.
    utilisation : float
        ``busy_s`` as a fraction of the run's time (1.0 = saturated throughout).
    """

    link: str
    kind: str
    nbytes: float
    busy_s: float
    active_s: float
    utilisation: float

    def describe(self) -> str:
        """E.g. ``gpu0->pcie_switch0 100% (15 ms)``: share of the run spent at full rate."""
        return f"{self.link} {self.utilisation:.0%} ({format_time(self.busy_s)})"


def link_loads(topology: Topology, record: ReplayRecord, run_time_s: float | None = None) -> list[LinkLoad]:
    """Every link that carried data, busiest first (ties in link order).

    Utilisation is relative to ``run_time_s`` (default: the replay's makespan),
    so that a modelled time (``nccl``) and its link shares agree.
    """
    capacity = np.array([link.bandwidth_Bps for link in topology.links])
    busy = record.link_bytes / capacity
    makespan = record.makespan_s if run_time_s is None else run_time_s
    order = np.lexsort((np.arange(busy.size), -busy))
    loads = []
    for i in order.tolist():
        if record.link_bytes[i] <= 0:
            continue
        link = topology.links[i]
        loads.append(
            LinkLoad(
                link=link.name,
                kind=link.kind,
                nbytes=float(record.link_bytes[i]),
                busy_s=float(busy[i]),
                active_s=float(record.link_busy_s[i]),
                utilisation=float(busy[i] / makespan) if makespan > 0 else 0.0,
            )
        )
    return loads


@dataclass(frozen=True, eq=False)
class Result:
    """One simulated collective.

    Attributes
    ----------
    label, algorithm : str
    collective : Collective
    topology : str
        Topology name.
    ranks : int
    nbytes : float
    time_s : float
        Completion time: the replay's, or the algorithm's model time for
        algorithms that model what a replay leaves out (``nccl``).
    algbw_Bps, busbw_Bps : float
        nccl-tests' algorithm and bus bandwidths (bytes per second).
    links : list of LinkLoad
        Every used link, busiest first.
    analytic_time_s : float or None
        The algorithm's closed form, where it has one.
    replay_time_s : float or None
        The ideal replay's completion time (equal to ``time_s`` unless the
        time comes from a model).
    """

    label: str
    algorithm: str
    collective: Collective
    topology: str
    ranks: int
    nbytes: float
    time_s: float
    links: list[LinkLoad]
    analytic_time_s: float | None = None
    replay_time_s: float | None = None
    params: dict[str, Any] = field(default_factory=dict)
    record: ReplayRecord | None = field(default=None, repr=False)
    schedule: Schedule | None = field(default=None, repr=False)
    topology_obj: Topology | None = field(default=None, repr=False)

    @property
    def algbw_Bps(self) -> float:
        """size / time."""
        return self.nbytes / self.time_s if self.time_s > 0 else float("inf")

    @property
    def busbw_Bps(self) -> float:
        """algbw x nccl-tests' factor for the collective."""
        return self.algbw_Bps * busbw_factor(self.collective, self.ranks)

    @property
    def bottleneck(self) -> list[LinkLoad]:
        """The busiest links (all those tied with the busiest)."""
        if not self.links:
            return []
        top = self.links[0].busy_s
        return [load for load in self.links if load.busy_s >= top * (1 - _TIE)]

    @property
    def link_utilisation(self) -> dict[str, float]:
        """Utilisation of every used link by name."""
        return {load.link: load.utilisation for load in self.links}

    def to_record(self) -> dict[str, Any]:
        """A flat JSON-ready record (see README, ``--json``)."""
        return {
            "label": self.label,
            "algorithm": self.algorithm,
            "collective": self.collective.value,
            "topology": self.topology,
            "ranks": self.ranks,
            "nbytes": int(self.nbytes) if float(self.nbytes).is_integer() else self.nbytes,
            "time_s": self.time_s,
            "algbw_Bps": self.algbw_Bps,
            "busbw_Bps": self.busbw_Bps,
            "analytic_time_s": self.analytic_time_s,
            "replay_time_s": self.replay_time_s,
            "bottleneck": [
                {"link": b.link, "kind": b.kind, "utilisation": b.utilisation, "busy_s": b.busy_s}
                for b in self.bottleneck
            ],
        }
