"""The cost of one bucket's collective: a :func:`commsim.api.simulate` call, cached by size."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from commsim.api import select_ranks, simulate
from commsim.errors import check_argument
from commsim.results import LinkLoad
from commsim.topology.model import Topology

__all__ = ["CollectiveCost", "CollectiveTimer"]


@dataclass(frozen=True)
class CollectiveCost:
    """What one all-reduce of a bucket costs.

    Attributes
    ----------
    nbytes : float
    time_s : float
        The simulated completion time (0 with a single rank).
    links : tuple of LinkLoad
        Per used link: bytes carried and busy time (``nbytes / capacity``).
    """

    nbytes: float
    time_s: float
    links: tuple[LinkLoad, ...] = ()


class CollectiveTimer:
    """Times all-reduces of any size with one algorithm among fixed ranks, caching by size.

    Parameters
    ----------
    topology : Topology
    algorithm : str
        A registered algorithm name.
    params : mapping, optional
        The algorithm's parameters.
    ranks : int or list of str, optional
        The data-parallel GPUs (default all of the topology); 1 means a
        single GPU, which has nothing to synchronise.
    collective : str
        ``"all_reduce"`` for data parallelism.

    Notes
    -----
    One timer serves every step that uses the same machine and algorithm:
    buckets of equal size (other bucket caps, overlap on or off) are
    simulated once. The replay records are dropped; only the time and the
    per-link loads are kept.
    """

    def __init__(
        self,
        topology: Topology,
        algorithm: str,
        params: Mapping[str, Any] | None = None,
        ranks: int | Sequence[str] | None = None,
        collective: str = "all_reduce",
    ) -> None:
        check_argument(topology, Topology, "topology", "a Topology, e.g. get_topology('dgx1_v100')")
        check_argument(params, (Mapping, type(None)), "params", "a mapping of parameter names to values")
        self.topology = topology
        self.algorithm = algorithm
        self.params = dict(params or {})
        self.collective = collective
        if ranks is None or ranks == 1 or len(topology.gpus) < 2:
            self.ranks: tuple[str, ...] = tuple(topology.gpus[:1]) if ranks == 1 else tuple(topology.gpus)
        else:
            self.ranks = select_ranks(topology, ranks)
        self._ranks_arg = None if ranks is None else list(self.ranks)
        self._cache: dict[float, CollectiveCost] = {}

    @property
    def n_ranks(self) -> int:
        """Number of data-parallel GPUs."""
        return len(self.ranks)

    @property
    def simulations(self) -> int:
        """How many distinct sizes were simulated so far."""
        return len(self._cache)

    def __call__(self, nbytes: float) -> CollectiveCost:
        """The cost of one collective of ``nbytes`` (simulated once per distinct size)."""
        check_argument(nbytes, (int, float), "nbytes", "a number of bytes")  # a dict is unhashable
        cost = self._cache.get(nbytes)
        if cost is None:
            cost = self._simulate(nbytes)
            self._cache[nbytes] = cost
        return cost

    def _simulate(self, nbytes: float) -> CollectiveCost:
        if self.n_ranks < 2:
            return CollectiveCost(nbytes, 0.0)
        result = simulate(
            self.topology,
            self.algorithm,
            self.collective,
            nbytes,
            params=self.params,
            ranks=self._ranks_arg,
        )
        return CollectiveCost(nbytes, result.time_s, tuple(result.links))
