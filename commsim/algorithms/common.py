"""Helpers shared by algorithm families: resolving devices, phase costs."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from commsim.algorithms.base import Problem
from commsim.errors import AlgorithmError
from commsim.topology.model import Topology

__all__ = ["phase_time", "resolve_device"]


def resolve_device(problem: Problem, spec: str | int, what: str) -> str:
    """A device name from a parameter: a rank index, ``"cpu"`` (the first CPU), or a name.

    Raises
    ------
    AlgorithmError
        If no such device exists; the message lists what would be valid.
    """
    topology = problem.topology
    if isinstance(spec, int) or (isinstance(spec, str) and spec.isdigit()):
        index = int(spec)
        if not 0 <= index < problem.n:
            raise AlgorithmError(f"{what} rank {index} is outside 0..{problem.n - 1}")
        return problem.ranks[index]
    if spec == "cpu":
        cpus = topology.devices_of_kind("cpu")
        if not cpus:
            raise AlgorithmError(f"{what} 'cpu' asked for, but topology {topology.name!r} has no CPU")
        return cpus[0]
    if not topology.has_device(spec):
        names = ", ".join(d.name for d in topology.devices)
        raise AlgorithmError(
            f"{what} {spec!r} is not a device of topology {topology.name!r}; "
            f"use a rank index, 'cpu', or one of: {names}"
        )
    return spec


def phase_time(
    topology: Topology, sends: Iterable[tuple[str, str, float]], kinds: Sequence[str] | None = None
) -> float:
    """Time of sends that all start together: worst path latency + busiest link's load.

    The load bound ``bytes / capacity`` of the busiest directed link is the
    exact max-min time when that link stays saturated until the phase ends
    (every flow crosses it, or flows elsewhere finish no later), which holds
    for the textbook's machines and for symmetric ones.
    """
    load = np.zeros(len(topology.links))
    latency = 0.0
    for src, dst, nbytes in sends:
        # as the engine does: sprayed over every equal-cost route, or on the one hashed route
        routes = topology.routes(src, dst, kinds) if topology.multipath == "spray" else None
        routes = routes or (topology.route(src, dst, kinds),)
        for route in routes:
            load[list(route)] += nbytes / len(routes)
            latency = max(latency, sum(topology.links[i].latency_s for i in route))
    capacity = np.array([link.bandwidth_Bps for link in topology.links])
    return latency + float(np.max(load / capacity))
