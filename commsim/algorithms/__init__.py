"""Collective algorithms: each plans a Schedule; a registry finds them by name.

Each family's module is imported when one of its names is first looked up
(:data:`~commsim.algorithms.registry.BUILT_IN`), not by importing this package.
"""

from commsim.algorithms.base import Algorithm, NoParams, Params, Problem
from commsim.algorithms.registry import (
    BUILT_IN,
    ENTRY_POINT_GROUP,
    algorithm_names,
    get_algorithm,
    make_algorithm,
    register,
)

__all__ = [
    "BUILT_IN",
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
