"""Algorithms by name: built-ins are imported on first use, plugins found by entry point.

Each built-in family lives in its own module, named in :data:`BUILT_IN`
(algorithm name -> ``module:class``), so looking up ``ring`` imports
``commsim.algorithms.ring`` and nothing else: the CLI's start-up pays only
for what it runs. Third-party packages add algorithms through the
``commsim.algorithms`` entry-point group; each entry point loads an
:class:`Algorithm` subclass. The group is read (every installed
distribution's metadata) only when a name is not built in or when every name
is asked for, and then a plugin that cannot be loaded is an
:class:`~commsim.errors.AlgorithmError`. A built-in name's answer cannot
depend on a plugin, since a plugin may not take a built-in name.
"""

from __future__ import annotations

import importlib
from typing import Any, TypeVar

from commsim.algorithms.base import Algorithm
from commsim.errors import AlgorithmError, UnknownNameError

__all__ = ["BUILT_IN", "ENTRY_POINT_GROUP", "algorithm_names", "get_algorithm", "make_algorithm", "register"]

ENTRY_POINT_GROUP = "commsim.algorithms"

BUILT_IN: dict[str, str] = {
    "direct": "commsim.algorithms.direct:Direct",
    "halving_doubling": "commsim.algorithms.halving_doubling:HalvingDoubling",
    "hierarchical": "commsim.algorithms.hierarchical:Hierarchical",
    "hybrid": "commsim.algorithms.hybrid:Hybrid",
    "kv_parameter_server": "commsim.algorithms.multi_machine_ps:KeyValueParameterServer",
    "multi_ring": "commsim.algorithms.multi_ring:MultiRing",
    "naive_ring": "commsim.algorithms.ring:NaiveRing",
    "parameter_server": "commsim.algorithms.parameter_server:ParameterServer",
    "ring": "commsim.algorithms.ring:Ring",
    "seven_step_ps": "commsim.algorithms.multi_machine_ps:SevenStepParameterServer",
    "sharded_parameter_server": "commsim.algorithms.parameter_server:ShardedParameterServer",
    "tree": "commsim.algorithms.tree:Tree",
    "tree_packing": "commsim.algorithms.tree_packing:TreePacking",
}
"""Built-in algorithm name -> ``module:class``, imported when the name is first looked up."""

_REGISTRY: dict[str, type[Algorithm]] = {}
_plugins_loaded = False

A = TypeVar("A", bound=type[Algorithm])


def register(cls: A) -> A:
    """Class decorator adding an algorithm to the registry under ``cls.name``."""
    if not cls.name:
        raise AlgorithmError(f"{cls.__name__} has no name")
    existing = _REGISTRY.get(cls.name)
    if existing is not None and existing is not cls:
        raise AlgorithmError(f"algorithm name {cls.name!r} is taken by {existing.__qualname__}")
    _REGISTRY[cls.name] = cls
    return cls


def _load_built_in(name: str) -> type[Algorithm]:
    """Import built-in ``name``'s module and register its class (again, harmlessly, if it already was)."""
    module_name, _, class_name = BUILT_IN[name].partition(":")
    cls: type[Algorithm] = getattr(importlib.import_module(module_name), class_name)
    return register(cls)


def _load_all_built_in() -> None:
    for name in BUILT_IN:
        if name not in _REGISTRY:
            _load_built_in(name)


def _load_plugins() -> None:
    """Register every entry point of the group, after the built-ins (which keep their names).

    Raises
    ------
    AlgorithmError
        A plugin that cannot be loaded, is not an Algorithm subclass, or takes
        a name already registered.
    """
    global _plugins_loaded
    if _plugins_loaded:
        return
    _load_all_built_in()
    from importlib.metadata import entry_points

    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            cls = entry.load()
        except Exception as exc:  # a broken plugin must not break commsim
            raise AlgorithmError(
                f"algorithm plugin {entry.name!r} ({entry.value}) failed to load: {exc}"
            ) from exc
        if not (isinstance(cls, type) and issubclass(cls, Algorithm)):
            raise AlgorithmError(
                f"algorithm plugin {entry.name!r} ({entry.value}) is not an Algorithm subclass"
            )
        if not cls.name:
            cls.name = entry.name
        register(cls)
    _plugins_loaded = True  # only now: until a broken plugin is fixed, every such lookup reports it


def algorithm_names() -> list[str]:
    """Every registered algorithm name (built-ins and plugins), sorted."""
    _load_all_built_in()
    _load_plugins()
    return sorted(_REGISTRY)


def get_algorithm(name: str) -> type[Algorithm]:
    """The algorithm class called ``name``; UnknownNameError lists the valid names.

    A built-in name imports only its own module; any other name reads the
    entry points first (so a broken plugin is reported there).
    """
    if not isinstance(name, str):  # a list or dict is unhashable: it failed in the lookup
        raise UnknownNameError("algorithm", repr(name), algorithm_names())
    if name in BUILT_IN:
        return _REGISTRY.get(name) or _load_built_in(name)
    _load_plugins()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownNameError("algorithm", name, list(_REGISTRY)) from None


def make_algorithm(name: str, params: dict[str, Any] | None = None) -> Algorithm:
    """An instance of algorithm ``name`` with validated ``params``."""
    return get_algorithm(name)(params)
