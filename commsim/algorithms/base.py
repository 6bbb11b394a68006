"""The algorithm interface: plan a Schedule, optionally give a closed form."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import pydantic

from commsim.collectives import Collective
from commsim.errors import AlgorithmError, TopologyError
from commsim.schedule import Schedule, routed_pairs
from commsim.topology.model import Topology

__all__ = ["Algorithm", "NoParams", "NotApplicableError", "Params", "Problem", "check_routes"]


class NotApplicableError(AlgorithmError):
    """An algorithm cannot run on this machine (or these ranks); the message says why.

    ``str(error)`` reads ``algorithm 'direct' is not applicable: <reason>``.

    Attributes
    ----------
    reason : str
        The one-sentence reason.
    algorithm : str or None
        The algorithm that refused (filled in by :meth:`Algorithm.plan`).
    """

    def __init__(self, reason: str, algorithm: str | None = None) -> None:
        self.reason, self.algorithm = reason, algorithm
        head = f"algorithm {algorithm!r} is not applicable" if algorithm else "not applicable"
        super().__init__(f"{head}: {reason}")


def check_routes(schedule: Schedule, topology: Topology) -> None:
    """Resolve every path of ``schedule`` on ``topology`` (routes are cached for the replay).

    Raises
    ------
    NotApplicableError
        Naming the first send whose route does not exist.
    """
    prefetch_routes(schedule, topology)
    for spec in schedule.paths:
        try:
            if spec.via is not None:
                if spec.via[0] != spec.src or spec.via[-1] != spec.dst:
                    raise TopologyError(
                        f"explicit path {list(spec.via)} must run from {spec.src} to {spec.dst}"
                    )
                topology.links_between(spec.via)
            else:
                topology.route(spec.src, spec.dst, spec.kinds)
        except TopologyError as exc:
            raise NotApplicableError(str(exc)) from None


def prefetch_routes(schedule: Schedule, topology: Topology) -> None:
    """Find the routes of all routed path specs, a source's many destinations in one search."""
    for kinds, pairs in routed_pairs(schedule).items():
        topology.prefetch_routes(pairs, kinds)


def _checked_plan(plan: Callable[[Any, Problem], Schedule]) -> Callable[[Any, Problem], Schedule]:
    """Wrap an algorithm's ``plan``: routing failures become :class:`NotApplicableError`."""

    @functools.wraps(plan)
    def checked(self: Algorithm, problem: Problem) -> Schedule:
        try:
            schedule = plan(self, problem)
            check_routes(schedule, problem.topology)
        except NotApplicableError as exc:
            if exc.algorithm is None:
                raise NotApplicableError(exc.reason, self.name) from None
            if exc.algorithm != self.name:
                raise NotApplicableError(f"its part {exc.algorithm!r}: {exc.reason}", self.name) from None
            raise
        except TopologyError as exc:
            raise NotApplicableError(str(exc), self.name) from None
        return schedule

    checked._checks_routes = True  # type: ignore[attr-defined]
    return checked


class Params(pydantic.BaseModel):
    """Base class of algorithm parameters: unknown fields are errors."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)


class NoParams(Params):
    """For algorithms without parameters."""


_ParamsModel = Params


@dataclass(frozen=True)
class Problem:
    """What to plan: a collective of ``nbytes`` among ``ranks`` on ``topology``.

    Attributes
    ----------
    topology : Topology
    ranks : tuple of str
        GPU names in rank order.
    collective : Collective
    nbytes : float
        nccl-tests size convention (see :mod:`commsim.collectives`).
    root : int
        Root rank index for rooted collectives.
    kinds : tuple of str or None
        Link kinds or families routes may use (None: all); set by
        compositions such as ``hybrid`` that give each part its own links.
    """

    topology: Topology
    ranks: tuple[str, ...]
    collective: Collective
    nbytes: float
    root: int = 0
    kinds: tuple[str, ...] | None = None

    @property
    def n(self) -> int:
        """Number of ranks."""
        return len(self.ranks)


class Algorithm:
    """Base class: subclasses set the class attributes and implement :meth:`plan`.

    Attributes
    ----------
    name : str
        Registry name.
    summary : str
        One line for ``commsim algos``.
    reference : str
        Where the algorithm comes from (book section, paper).
    collectives : frozenset of Collective
        What it implements.
    Params : type
        Its pydantic parameter model.
    """

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    reference: ClassVar[str] = ""
    collectives: ClassVar[frozenset[Collective]] = frozenset()
    time_from_model: ClassVar[bool] = False
    """True when the algorithm's closed form, not the ideal replay, is its time (e.g. ``nccl``,
    whose protocol overheads and latencies the replay of its channels leaves out)."""
    Params: ClassVar[type[_ParamsModel]] = NoParams

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every ``plan`` a subclass defines checks its routes (see :func:`check_routes`).

        An algorithm that cannot run on a machine thus raises
        :class:`NotApplicableError` ("not applicable: <reason>") from ``plan``,
        not a routing error from inside the replay.
        """
        super().__init_subclass__(**kwargs)
        plan = cls.__dict__.get("plan")
        if plan is not None and not getattr(plan, "_checks_routes", False):
            cls.plan = _checked_plan(plan)  # type: ignore[method-assign,assignment]

    def __init__(self, params: _ParamsModel | dict[str, Any] | None = None) -> None:
        self.params: _ParamsModel
        if isinstance(params, _ParamsModel):
            self.params = params
        else:
            try:
                self.params = self.Params.model_validate(params or {})
            except pydantic.ValidationError as exc:
                problems = "; ".join(
                    f"{'.'.join(str(p) for p in e['loc']) or 'params'}: {e['msg']}" for e in exc.errors()
                )
                valid = ", ".join(self.Params.model_fields) or "(none)"
                raise AlgorithmError(
                    f"algorithm {self.name!r}: bad parameters: {problems}; valid parameters: {valid}"
                ) from None

    def check(self, problem: Problem) -> None:
        """Raise :class:`AlgorithmError` if this algorithm cannot run ``problem``."""
        if problem.collective not in self.collectives:
            supported = ", ".join(sorted(c.value for c in self.collectives))
            raise AlgorithmError(
                f"algorithm {self.name!r} does not implement {problem.collective}; it implements: {supported}"
            )
        if problem.n < 2:  # name the machine: the user may not know it has one GPU (review27 U8)
            gpus = len(problem.topology.gpus)
            where = f"machine {problem.topology.name!r} has {gpus} GPU{'' if gpus == 1 else 's'}"
            if gpus >= 2:
                where = f"{problem.n} of {where} take part"
            raise AlgorithmError(f"algorithm {self.name!r} needs at least 2 ranks, got {problem.n} ({where})")

    def plan(self, problem: Problem) -> Schedule:
        """Build the schedule of ``problem``."""
        raise NotImplementedError

    def analytic_time(self, problem: Problem) -> float | None:
        """Closed-form time in seconds, or None where the algorithm has none."""
        return None


def route_figures(
    topology: Topology, src: str, dst: str, kinds: Sequence[str] | None = None
) -> tuple[float, float]:
    """(latency_s, bottleneck bandwidth_Bps) of the route from ``src`` to ``dst``."""
    links = [topology.links[i] for i in topology.route(src, dst, kinds)]
    return sum(link.latency_s for link in links), min(link.bandwidth_Bps for link in links)
