"""Collective algorithms: each plans a Schedule; a registry finds them by name."""

from commsim.algorithms import (  # noqa: F401  (registers built-ins)
    direct,
    halving_doubling,
    hierarchical,
    hybrid,
    multi_machine_ps,
    multi_ring,
    parameter_server,
    ring,
    tree,
    tree_packing,
)
from commsim.algorithms.base import Algorithm, NoParams, Params, Problem
from commsim.algorithms.registry import (
    ENTRY_POINT_GROUP,
    algorithm_names,
    get_algorithm,
    make_algorithm,
    register,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "Algorithm",
    "NoParams",
    "Params",
    "Problem",
    "algorithm_names",
    "get_algorithm",
    "make_algorithm",
    "register",
]
