"""Pydantic's validation errors in a user's words.

pydantic says "Input should be a valid string", names union members
(``topology.function-after[_exactly_one(), TopologyRef]``) and answers an
unknown field with "Extra inputs are not permitted". Here each error
becomes: the field path as the user wrote it, what was expected, what was
given ("expected a whole number, got 'x'"), and for an unknown field the
valid ones and the nearest. :func:`commsim.yamlio.validation_message` adds
file, line and column.
"""

from __future__ import annotations

from typing import Any

import pydantic

__all__ = ["describe", "problems"]


def describe(value: Any) -> str:
    """A user's value in words: ``16 (a number)``, ``nothing``, ``a mapping``."""
    if value is None:
        return "nothing (an empty value)"
    if isinstance(value, bool):
        return f"{str(value).lower()} (true/false)"
    if isinstance(value, (int, float)):
        return f"{value!r} (a number)"
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return repr(value)


_EXPECTED = {
    "string_type": "text",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "list_type": "a list",
    "tuple_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping of fields",
    "model_attributes_type": "a mapping of fields",
    "dataclass_type": "a mapping of fields",
}
"""What a type error of pydantic expected, in a user's words."""


_TYPE_TAGS = {"str", "int", "float", "bool", "list", "dict", "tuple", "none", "bytes"}


def _is_tag(part: str) -> bool:
    """Whether a ``loc`` part is pydantic's name of a union member, not a key."""
    return "[" in part or part in _TYPE_TAGS or part[:1].isupper() or "-" in part


def _real_loc(data: Any, loc: tuple[Any, ...]) -> tuple[int | str, ...]:
    """``loc`` without pydantic's union tags (``str``, ``function-after[...]``): the user's keys."""
    real: list[int | str] = []
    for part in loc:
        in_list = isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data)
        if in_list or (isinstance(data, dict) and part in data):
            data = data[part]
            real.append(part)
        elif (isinstance(part, int) and data is None) or (isinstance(part, str) and not _is_tag(part)):
            real.append(part)  # a key the user left out (missing) or added (extra)
            data = None
    return tuple(real)


def _model_fields(model: Any, loc: tuple[int | str, ...]) -> list[str] | None:
    """The field names of the (sub-)model that holds the value at ``loc``, if one does."""
    current: Any = model
    for part in loc:
        current = _unwrap_model(current)
        if isinstance(part, int):
            current = _element(current)
            continue
        fields = getattr(current, "model_fields", None)
        if fields is None or part not in fields:
            current = _element(current)
            continue
        current = fields[part].annotation
    current = _unwrap_model(current)
    fields = getattr(current, "model_fields", None)
    return list(fields) if fields is not None else None


def _unwrap_model(annotation: Any) -> Any:
    """The BaseModel inside ``X | None`` or ``Annotated[X, ...]``, else the annotation."""
    for arg in getattr(annotation, "__args__", None) or ():
        if isinstance(arg, type) and issubclass(arg, pydantic.BaseModel):
            return arg
    return getattr(annotation, "__origin__", None) if hasattr(annotation, "__metadata__") else annotation


def _element(annotation: Any) -> Any:
    """The element model of ``list[X]`` or the value model of ``dict[str, X]``."""
    args = getattr(annotation, "__args__", None) or ()
    for arg in reversed(args):
        found = _unwrap_model(arg)
        if isinstance(found, type) and issubclass(found, pydantic.BaseModel):
            return found
    return annotation


def _one_message(err: Any, fields: list[str] | None) -> str:
    """One pydantic error in a user's words."""
    kind, ctx, value = err["type"], err.get("ctx") or {}, err.get("input")
    name = str(err["loc"][-1]) if err["loc"] else ""
    if kind == "missing":
        if err["loc"] and isinstance(err["loc"][-1], int):
            return f"missing item {err['loc'][-1] + 1} of the list"
        return f"missing required field {name!r}"
    if kind == "extra_forbidden":
        from commsim.errors import did_you_mean

        valid = f"; valid: {', '.join(fields)}{did_you_mean(name, fields)}" if fields else ""
        return f"unknown field {name!r}{valid}"
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}, got {describe(value)}"
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        if isinstance(value, float) and value != value:  # NaN fails every bound: the bound is not the problem
            return "must be a number, got nan"
        words = {"greater_than_equal": "at least", "greater_than": "more than"}
        words |= {"less_than_equal": "at most", "less_than": "less than"}
        bound = next(iter(ctx.values()), "?")
        bound = int(bound) if isinstance(bound, float) and bound.is_integer() else bound
        return f"must be {words[kind]} {bound}, got {describe(value)}"
    if kind == "too_short":
        least = ctx.get("min_length")
        return f"needs at least {least} item{'' if least == 1 else 's'}, got {ctx.get('actual_length')}"
    if kind == "too_long":
        most = ctx.get("max_length")
        return f"takes at most {most} item{'' if most == 1 else 's'}, got {ctx.get('actual_length')}"
    if kind == "literal_error":
        return f"expected {ctx.get('expected')}, got {describe(value)}"
    if kind == "finite_number":
        return f"expected a finite number (not nan or inf), got {describe(value)}"
    if kind == "string_too_short":
        return f"expected text of at least {ctx.get('min_length', 1)} character(s), got {describe(value)}"
    message = str(err["msg"])
    if message.startswith("Input should be "):  # any other of pydantic's type errors, in the same words
        return f"expected {message[len('Input should be ') :]}, got {describe(value)}"
    return message[len("Value error, ") :] if message.startswith("Value error, ") else message


def problems(
    exc: pydantic.ValidationError | list[Any], data: Any, model: Any
) -> list[tuple[tuple[int | str, ...], str]]:
    """``(location, message)`` per value, union members' complaints merged into one.

    ``exc`` is a ValidationError or some of its ``errors()``.
    """
    grouped: dict[tuple[int | str, ...], list[Any]] = {}
    for err in exc if isinstance(exc, list) else exc.errors():
        grouped.setdefault(_real_loc(data, tuple(err["loc"])), []).append(err)
    problems = []
    for loc, errors in grouped.items():
        specific = [e for e in errors if e["type"] not in _EXPECTED]
        if len(errors) > 1 and not specific:
            kinds = list(dict.fromkeys(_EXPECTED[e["type"]] for e in errors))
            message = f"expected {' or '.join(kinds)}, got {describe(errors[0].get('input'))}"
        else:
            fields = _model_fields(model, loc[:-1]) if model is not None else None
            message = _one_message((specific or errors)[0], fields)
        problems.append((loc, message))
    deeper = {loc[:n] for loc, _ in problems for n in range(len(loc))}
    return [  # a union member that did not fit says less than the one that almost did
        (loc, message)
        for loc, message in problems
        if not (loc in deeper and all(e["type"] in _EXPECTED for e in grouped[loc]))
    ]
