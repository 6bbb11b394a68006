"""Algorithms by name: built-ins register with a decorator, plugins by entry point.

Third-party packages add algorithms through the ``commsim.algorithms``
entry-point group; each entry point loads an :class:`Algorithm` subclass.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Any, TypeVar

from commsim.algorithms.base import Algorithm
from commsim.errors import AlgorithmError, UnknownNameError

__all__ = ["ENTRY_POINT_GROUP", "algorithm_names", "get_algorithm", "make_algorithm", "register"]

ENTRY_POINT_GROUP = "commsim.algorithms"
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


def _load_plugins() -> None:
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
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


def algorithm_names() -> list[str]:
    """Every registered algorithm name, sorted."""
    _load_plugins()
    return sorted(_REGISTRY)


def get_algorithm(name: str) -> type[Algorithm]:
    """The algorithm class called ``name``; UnknownNameError lists the valid names."""
    _load_plugins()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownNameError("algorithm", name, list(_REGISTRY)) from None


def make_algorithm(name: str, params: dict[str, Any] | None = None) -> Algorithm:
    """An instance of algorithm ``name`` with validated ``params``."""
    return get_algorithm(name)(params)
