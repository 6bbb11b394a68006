"""Hybrid: two algorithms at once on different links, data split between them.

The PCIe hierarchy of an NVLink machine is a network of its own; running a
second collective over it while NVLink carries the first adds its
bandwidth. With R = BW_nvlink / BW_pcie, sending R/(1+R) of the data over
NVLink and 1/(1+R) over PCIe makes both finish together (SEED_FACTS.md
section 4; Blink, MLSys 2020). By default the split is computed from each
part's closed-form time for the whole message: part i gets a share
proportional to 1 / t_i, which is R/(1+R) for two parts.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from commsim.algorithms.base import Algorithm, Params, Problem
from commsim.algorithms.compose import merge_schedules, restrict_paths
from commsim.algorithms.registry import get_algorithm, register
from commsim.collectives import Collective
from commsim.errors import AlgorithmError
from commsim.schedule import Schedule

__all__ = ["Hybrid", "HybridPart"]


class HybridPart(Params):
    """One part: an algorithm, its parameters and the link kinds it may use."""

    algorithm: str
    params: dict[str, Any] = Field(default_factory=dict)
    kinds: list[str]


_DEFAULT_PARTS = [
    HybridPart(algorithm="multi_ring", params={"kinds": ["nvlink"]}, kinds=["nvlink"]),
    HybridPart(algorithm="ring", kinds=["pcie", "inter_socket"]),
]


class HybridParams(Params):
    """The parts and how the data is split between them."""

    parts: list[HybridPart] = Field(default_factory=lambda: list(_DEFAULT_PARTS), min_length=2)
    split: list[float] | None = Field(
        None, description="fraction of the data per part (default: equal finish)"
    )

    @field_validator("split")
    @classmethod
    def _fractions(cls, split: list[float] | None) -> list[float] | None:
        if split is not None and (any(f < 0 for f in split) or abs(sum(split) - 1) > 1e-9):
            raise ValueError(f"split {split} must be non-negative fractions summing to 1")
        return split


@register
class Hybrid(Algorithm):
    """Several algorithms on disjoint link kinds at once, split by bandwidth.

    References
    ----------
    SEED_FACTS.md section 4 (hybrid PCIe + NVLink, R/(1+R)); Wang et al.,
    Blink, MLSys 2020.
    """

    name = "hybrid"
    summary = "one algorithm over NVLink and one over PCIe at once, data split so both finish together"
    reference = "SEED_FACTS.md section 4; Blink, MLSys 2020"
    collectives = frozenset({Collective.ALL_REDUCE, Collective.REDUCE_SCATTER, Collective.ALL_GATHER})
    Params = HybridParams

    def _parts(self, problem: Problem) -> list[tuple[Algorithm, Problem]]:
        assert isinstance(self.params, HybridParams)
        parts = []
        for part in self.params.parts:
            algorithm = get_algorithm(part.algorithm)(part.params)
            sub = Problem(
                problem.topology,
                problem.ranks,
                problem.collective,
                problem.nbytes,
                problem.root,
                tuple(part.kinds),
            )
            algorithm.check(sub)
            parts.append((algorithm, sub))
        return parts

    def split(self, problem: Problem) -> list[float]:
        """Fraction of the data each part carries."""
        assert isinstance(self.params, HybridParams)
        if self.params.split is not None:
            if len(self.params.split) != len(self.params.parts):
                raise AlgorithmError(
                    f"split has {len(self.params.split)} fractions for {len(self.params.parts)} parts"
                )
            return list(self.params.split)
        rates = []
        for algorithm, sub in self._parts(problem):
            time_s = algorithm.analytic_time(sub)
            if time_s is None or time_s <= 0:
                raise AlgorithmError(
                    f"hybrid cannot compute a split: {algorithm.name!r} has no closed form; "
                    "give 'split' explicitly"
                )
            rates.append(1 / time_s)
        return [r / sum(rates) for r in rates]

    def plan(self, problem: Problem) -> Schedule:
        self.check(problem)
        assert isinstance(self.params, HybridParams)
        schedules = []
        for (algorithm, sub), fraction, part in zip(
            self._parts(problem), self.split(problem), self.params.parts
        ):
            if fraction <= 0:
                continue
            piece = Problem(
                sub.topology, sub.ranks, sub.collective, problem.nbytes * fraction, sub.root, sub.kinds
            )
            schedules.append(restrict_paths(algorithm.plan(piece), part.kinds))
        return merge_schedules(schedules, problem.nbytes)

    def analytic_time(self, problem: Problem) -> float | None:
        """The slowest part's closed-form time on its share."""
        times = []
        for (algorithm, sub), fraction in zip(self._parts(problem), self.split(problem)):
            if fraction <= 0:
                continue
            piece = Problem(
                sub.topology, sub.ranks, sub.collective, problem.nbytes * fraction, sub.root, sub.kinds
            )
            time_s = algorithm.analytic_time(piece)
            if time_s is None:
                return None
            times.append(time_s)
        return max(times)
