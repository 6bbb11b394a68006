"""Typed errors raised for bad input.

Every error a user can provoke derives from :class:`CommsimError`. Messages
are one sentence that say what was wrong, where, and what would be valid.
The CLI turns any ``CommsimError`` into a message on stderr and exit code 2,
never a traceback.
"""

from __future__ import annotations

from collections.abc import Collection

__all__ = [
    "AlgorithmError",
    "ArgumentError",
    "CalibrationError",
    "CommsimError",
    "ParseError",
    "ScenarioError",
    "ScheduleError",
    "TopologyError",
    "UnitError",
    "UnknownNameError",
    "check_argument",
    "did_you_mean",
    "known_name",
]


class CommsimError(Exception):
    """Base class of every error caused by a user's input."""


class UnitError(CommsimError, ValueError):
    """A quantity string (size, bandwidth, time) could not be read."""


class TopologyError(CommsimError):
    """A machine description is invalid (disconnected, missing link, ...)."""


class ScenarioError(CommsimError):
    """A scenario file or its fields are invalid."""


class UnknownNameError(CommsimError, KeyError):
    """A name (topology, algorithm, link kind, ...) is not known.

    Parameters
    ----------
    what : str
        What kind of name it is, e.g. ``"algorithm"``.
    name : str
        The name that was asked for.
    valid : iterable of str
        The names that would have been accepted.
    """

    def __init__(self, what: str, name: str, valid: list[str] | tuple[str, ...]) -> None:
        self.what = what
        self.name = name
        self.valid = sorted(set(valid))
        hint = did_you_mean(name, self.valid)
        super().__init__(f"unknown {what} {name!r}; valid: {', '.join(self.valid) or '(none)'}{hint}")

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])


class AlgorithmError(CommsimError):
    """An algorithm cannot run on the given topology, ranks or collective."""


class ScheduleError(CommsimError):
    """A schedule is malformed or does not achieve its collective."""


class ParseError(CommsimError):
    """A measurement log (nccl-tests output) could not be read.

    Parameters
    ----------
    message : str
        What was wrong.
    source : str, optional
        The file name, if known.
    line : int, optional
        1-based line number, if known.
    """

    def __init__(self, message: str, source: str | None = None, line: int | None = None) -> None:
        self.source = source
        self.line = line
        where = ""
        if source is not None:
            where = f"{source}:{line}: " if line is not None else f"{source}: "
        elif line is not None:
            where = f"line {line}: "
        super().__init__(where + message)


class CalibrationError(CommsimError):
    """A calibration cannot be done with the given measurements."""


class ArgumentError(CommsimError, TypeError):
    """A Python API function was given an argument of the wrong type (a ``TypeError`` too)."""


def check_argument(value: object, types: type | tuple[type, ...], name: str, expected: str) -> None:
    """Refuse an API argument that is not one of ``types`` (a bool is no number), naming what is valid.

    Parameters
    ----------
    value : object
        What the caller gave.
    types : type or tuple of type
        What is accepted (``None`` as ``type(None)``).
    name : str
        The argument, e.g. ``"params"``.
    expected : str
        What would be valid, in words: ``"a mapping of parameter names to values"``.

    Raises
    ------
    ArgumentError
        ``params: expected a mapping of parameter names to values, got [1] (list)``.
    """
    accepted = types if isinstance(types, tuple) else (types,)
    if isinstance(value, accepted) and not (isinstance(value, bool) and bool not in accepted):
        return
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    given = "None" if value is None else f"{shown} ({type(value).__name__})"
    raise ArgumentError(f"{name}: expected {expected}, got {given}")


def did_you_mean(name: object, valid: Collection[str]) -> str:
    """``"; did you mean 'all_reduce'?"`` for the nearest valid names, or ``""`` if none is near.

    Nearness is :func:`difflib.get_close_matches` (ratio >= 0.6), after
    lower-casing and reading ``-`` and spaces as ``_``.
    """
    import difflib

    if not isinstance(name, str) or not valid:
        return ""
    folded = {v.lower().replace("-", "_").replace(" ", "_"): v for v in valid}
    key = name.lower().replace("-", "_").replace(" ", "_")
    near = [folded[m] for m in difflib.get_close_matches(key, list(folded), n=2, cutoff=0.6)]
    near = [n for n in near if n != name]
    if not near:
        return ""
    return "; did you mean " + " or ".join(repr(n) for n in near) + "?"


def known_name(what: str, name: str, valid: Collection[str]) -> str:
    """``name`` if it is one of ``valid``: the check of a pydantic field validator.

    Parameters
    ----------
    what : str
        What kind of name it is, e.g. ``"algorithm"``.
    name : str
        The name given.
    valid : collection of str
        The names accepted, in the order the message lists them.

    Raises
    ------
    ValueError
        ``unknown {what} {name!r}; valid: a, b, c``; pydantic reports it with
        the field's position (unlike :class:`UnknownNameError`, which is no
        ``ValueError`` and lists the names sorted).
    """
    if not isinstance(name, str) or name not in valid:  # a list from YAML is unhashable: no lookup
        raise ValueError(f"unknown {what} {name!r}; valid: {', '.join(valid)}{did_you_mean(name, valid)}")
    return name
