"""YAML reading with line numbers for validation errors.

PyYAML composes a node tree that remembers where every value stood. After
pydantic rejects a document, each error's ``loc`` (a path of keys and list
indices) is walked down that tree to report ``file:line:col``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import pydantic
import yaml

from commsim.errors import CommsimError

__all__ = ["load_yaml_model", "locate", "position", "read_yaml", "validation_message"]

try:  # the C loader is much faster when PyYAML was built with libyaml
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    _Loader = yaml.SafeLoader

Model = TypeVar("Model", bound=pydantic.BaseModel)


def read_yaml(text: str, source: str, error: type[CommsimError]) -> tuple[Any, yaml.Node | None]:
    """Parse YAML text into Python data and its node tree.

    Raises
    ------
    error
        With ``source:line:col`` when the text is not valid YAML.
    """
    try:
        node = yaml.compose(text, Loader=_Loader)
        data = yaml.load(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        raise error(f"{where}: not valid YAML: {exc.problem}") from None
    return data, node


def locate(node: yaml.Node | None, loc: tuple[int | str, ...]) -> tuple[int, int] | None:
    """1-based (line, column) of the value at ``loc`` in a composed YAML tree.

    Walks as deep as the path exists; a missing key reports its parent.
    """
    found = node
    for part in loc:
        child = _child(found, part)
        if child is None:
            break
        found = child
    if found is None:
        return None
    return found.start_mark.line + 1, found.start_mark.column + 1


def position(node: yaml.Node | None, loc: tuple[int | str, ...], source: str) -> str:
    """``source:line:col`` of the value at ``loc`` (as :func:`locate`), or ``source`` alone."""
    where = locate(node, loc)
    return f"{source}:{where[0]}:{where[1]}" if where else source


def _child(node: yaml.Node | None, part: int | str) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if key.value == str(part):
                return value
    elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
        return node.value[part]
    return None


def validation_message(
    exc: pydantic.ValidationError, node: yaml.Node | None, source: str, first: int = 5
) -> str:
    """Render pydantic errors as ``file:line:col: field: message`` lines."""
    lines = []
    for err in exc.errors()[:first]:
        loc = tuple(p for p in err["loc"] if isinstance(p, (int, str)))
        prefix = position(node, loc, source)
        field = ".".join(str(p) for p in loc) or "(document)"
        message = err["msg"]
        if message.startswith("Value error, "):
            message = message[len("Value error, ") :]
        lines.append(f"{prefix}: {field}: {message}")
    more = len(exc.errors()) - first
    if more > 0:
        lines.append(f"... and {more} more error(s)")
    return "\n".join(lines)


def load_yaml_model(model: type[Model], text: str, source: str, error: type[CommsimError]) -> Model:
    """Parse and validate a YAML document as a pydantic model.

    Raises
    ------
    error
        With file, line and column of every problem found.
    """
    data, node = read_yaml(text, source, error)
    if not isinstance(data, dict):
        raise error(f"{source}: expected a mapping of fields at the top level, got {type(data).__name__}")
    return validate_with_lines(model, data, node, source, error)


def validate_with_lines(
    model: type[Model], data: Any, node: yaml.Node | None, source: str, error: type[CommsimError]
) -> Model:
    """Validate already-parsed data, reporting errors with YAML positions.

    Validators see ``context={"file": source}``: figures read from a file
    need their units (:func:`commsim.topology.schema.from_file`).
    """
    try:
        return model.model_validate(data, context={"file": source})
    except pydantic.ValidationError as exc:
        raise error(validation_message(exc, node, source)) from None
    except CommsimError as exc:  # raised by validators that parse units
        raise error(f"{source}: {exc}") from None


def read_text(path: str | Path, error: type[CommsimError]) -> str:
    """Read a UTF-8 file or raise ``error`` saying why not."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise error(f"cannot read {path}: {exc.strerror or exc}") from None
