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
from yaml.constructor import SafeConstructor

from commsim.errors import CommsimError

__all__ = [
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_MACHINE_NODES",
    "MAX_NODES",
    "kind_of",
    "load_yaml_model",
    "locate",
    "position",
    "read_text",
    "read_yaml",
    "validation_message",
]

try:  # the C loader is much faster when PyYAML was built with libyaml
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    _Loader = yaml.SafeLoader

Model = TypeVar("Model", bound=pydantic.BaseModel)

MAX_FILE_BYTES = 5_000_000
"""The largest YAML file (or ``--param`` text) read: 5 MB (a 1,000-GPU topology file is ~200 kB)."""
MAX_DEPTH = 40
"""The deepest nesting of lists and mappings (scenario files need under 10)."""
MAX_NODES = 100_000
"""The most values in one scenario, sweep or other document, counting what every alias (``*name``) repeats.

A scenario needs a few hundred; 100,000 are read (or refused) in about half a second."""
MAX_MACHINE_NODES = 1_000_000
"""The most values in a topology file: a 1,024-box DGX A100 cluster saved as YAML holds 512,000."""


class _LimitError(Exception):
    """A document over one of the limits: ``(message, mark)``."""


def _check_events(text: str, max_values: int = MAX_NODES) -> None:
    """Refuse too deep nesting and alias bombs before anything is built.

    PyYAML's C composer recurses once per level (100,000 nested ``[`` crash
    the interpreter) and an alias repeats its anchor's whole value, so ten
    aliases of ten aliases ... expand exponentially. The event stream is
    flat; it is walked once, keeping each anchor's expanded size.
    """
    sizes: dict[str, int] = {}
    stack: list[list[Any]] = []  # [values inside so far, anchor] of each open collection
    expanded = 0
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            stack.append([0, event.anchor])
            if len(stack) > MAX_DEPTH:
                raise _LimitError(f"nested deeper than the limit of {MAX_DEPTH} levels", event.start_mark)
            continue
        if isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            inside, anchor = stack.pop()
            count, added = inside + 1, 1
        elif isinstance(event, yaml.AliasEvent):
            count, anchor = sizes.get(event.anchor or "", 1), None
            added = count
        elif isinstance(event, yaml.ScalarEvent):
            count, anchor, added = 1, event.anchor, 1
        else:
            continue
        if anchor is not None:
            sizes[anchor] = count
        if stack:
            stack[-1][0] += count
        expanded += added
        if expanded > max_values:
            raise _LimitError(
                f"holds more than the limit of {max_values:,} values (counting what aliases repeat)",
                event.start_mark,
            )


class _Constructor(SafeConstructor):
    """Safe construction that refuses a key given twice in one mapping (YAML forbids it)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                key = self.construct_object(key_node)
                try:
                    first = seen.get(key)
                except TypeError:  # an unhashable key: PyYAML reports it below
                    continue
                if first is not None:
                    raise _LimitError(
                        f"key {key!r} is given twice in one mapping (first at line "
                        f"{first.start_mark.line + 1}); give it once",
                        key_node.start_mark,
                    )
                seen[key] = key_node
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        """An integer, refusing ones longer than any real figure (Python converts at most 4,300 digits)."""
        if len(node.value) > _MAX_DIGITS:
            raise _LimitError(
                f"the number {node.value[:12]}... has {len(node.value):,} digits, "
                f"more than the limit of {_MAX_DIGITS}",
                node.start_mark,
            )
        return int(super().construct_yaml_int(node))


def _refuse_tag(constructor: SafeConstructor, node: yaml.Node) -> Any:
    """A YAML type no commsim field holds (``!!set`` would even come out in a random order)."""
    tag = node.tag.replace("tag:yaml.org,2002:", "!!")
    raise _LimitError(
        f"the tag {tag} is not allowed: only plain values (text, numbers, lists, mappings) are read",
        node.start_mark,
    )


_Constructor.add_constructor("tag:yaml.org,2002:int", _Constructor.construct_yaml_int)  # type: ignore[type-var]
# a date (``description: 2024-05-01``) is the text written, not a datetime no field accepts
_Constructor.add_constructor("tag:yaml.org,2002:timestamp", _Constructor.construct_yaml_str)  # type: ignore[type-var]
for _tag in ("set", "omap", "pairs", "binary"):
    _Constructor.add_constructor(f"tag:yaml.org,2002:{_tag}", _refuse_tag)  # type: ignore[type-var]
_MAX_DIGITS = 100


def kind_of(data: Any) -> str:
    """What a document's top level is, in words: ``nothing (the file is empty)``, ``a list``, ..."""
    if data is None:
        return "nothing (the file is empty)"
    if isinstance(data, bool):
        return f"{str(data).lower()} (true/false)"
    if isinstance(data, (int, float)):
        return f"{data!r} (a number)"
    if isinstance(data, str):
        return f"the text {data[:40]!r}"
    if isinstance(data, dict):
        return "a mapping"
    return "a list" if isinstance(data, list) else "a value of an unknown kind"


_CONTEXTS = {
    "while scanning a quoted scalar": "in the quoted text",
    "while scanning a plain scalar": "in the value",
    "while parsing a flow sequence": "in the [...] list",
    "while parsing a flow mapping": "in the {...} mapping",
    "while parsing a block mapping": "in the mapping",
    "while parsing a block collection": "in the list",
    "while scanning a simple key": "in the key",
}
"""PyYAML's context phrases in a user's words."""


def _yaml_problem(exc: yaml.MarkedYAMLError, text: str = "") -> str:
    """PyYAML's complaint in a user's words, with where the unfinished part began."""
    problem = exc.problem or "unreadable"
    mark = exc.problem_mark
    if problem == "found undefined alias" and mark is not None:
        import re

        found = re.match(r"\*([^\s,\[\]{}]+)", text[mark.index :] if mark.index is not None else "")
        name = found.group(1) if found else "?"
        return (
            f"the alias *{name} names no anchor; define it first with &{name} "
            "(an anchor must come before its aliases)"
        )
    context, start = exc.context, exc.context_mark
    elsewhere = (
        start is not None and mark is not None and (start.line, start.column) != (mark.line, mark.column)
    )
    if context and start is not None and elsewhere:
        part = _CONTEXTS.get(context, context)
        problem = f"{problem} ({part} that began at line {start.line + 1}, column {start.column + 1})"
    if problem.startswith("could not determine a constructor for the tag"):
        tag = problem.rsplit(" ", 1)[-1].replace("tag:yaml.org,2002:", "!!")
        return f"the tag {tag} is not allowed: only plain values (text, numbers, lists, mappings) are read"
    if "found unhashable key" in problem:
        return "a list or mapping is used as a key; keys are plain text, e.g. 'name:'"
    if "found another document" in problem:
        return "holds more than one document (a second '---'); give one"
    return f"not valid YAML: {problem}"


def read_yaml(
    text: str, source: str, error: type[CommsimError], max_values: int = MAX_NODES
) -> tuple[Any, yaml.Node | None]:
    """Parse YAML text into Python data and its node tree, within the limits.

    Tags other than YAML's own (``!!python/object``) are refused, and of
    YAML's own those of types no field holds (``!!set``, ``!!omap``,
    ``!!pairs``, ``!!binary``); a date stays the text written. Refused too are keys
    given twice, nesting deeper than :data:`MAX_DEPTH`, documents of more
    than ``max_values`` values (aliases expanded; default :data:`MAX_NODES`,
    :data:`MAX_MACHINE_NODES` for a topology file) and text longer than
    :data:`MAX_FILE_BYTES`.

    Raises
    ------
    error
        With ``source:line:col`` when the text is not valid YAML or is over a limit.
    """
    if len(text) > MAX_FILE_BYTES:
        raise error(f"{source}: longer than the limit of {MAX_FILE_BYTES:,} characters")
    try:
        _check_events(text, max_values)
        node = yaml.compose(text, Loader=_Loader)
        data = _Constructor().construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        raise error(f"{where}: {_yaml_problem(exc, text)}") from None
    except _LimitError as exc:
        message, mark = exc.args
        raise error(f"{source}:{mark.line + 1}:{mark.column + 1}: {message}") from None
    except yaml.reader.ReaderError as exc:  # a control character YAML does not allow
        line, column = _line_col(text, exc.position)
        character = exc.character if isinstance(exc.character, int) else ord(exc.character or "\0")
        raise error(
            f"{source}:{line}:{column}: not valid YAML: control character U+{character:04X} is not allowed;"
            " remove it (YAML allows tabs, newlines and printable characters)"
        ) from None
    except yaml.YAMLError as exc:
        raise error(f"{source}: not valid YAML: {exc}") from None
    return data, node


def _line_col(text: str, position: int) -> tuple[int, int]:
    """1-based (line, column) of character ``position`` of ``text``."""
    before = text[:position]
    return before.count("\n") + 1, position - (before.rfind("\n") + 1) + 1


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
    exc: pydantic.ValidationError,
    node: yaml.Node | None,
    source: str,
    first: int = 5,
    *,
    data: Any = None,
    model: type[pydantic.BaseModel] | None = None,
    prefix: tuple[int | str, ...] = (),
) -> str:
    """Render pydantic errors as ``file:line:col: field: message`` lines, in a user's words.

    With ``data`` (what was validated) and ``model``, pydantic's wording
    ("Input should be a valid string", union members such as
    ``function-after[...]``, "Extra inputs are not permitted") becomes the
    user's: the field as written, what was expected, what was given, and
    for an unknown field the valid ones. ``prefix`` is where the validated
    data stands in the document (``("algorithms", 2, "params")``).
    """
    from commsim.scenario.messages import problems as user_problems

    problems = user_problems(exc, data, model)
    lines = []
    for relative, message in problems[:first]:
        loc = (*prefix, *relative)
        field = ".".join(str(p) for p in loc) or "(document)"
        lines.append(f"{position(node, loc, source)}: {field}: {message}")
    more = len(problems) - first
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
        raise error(f"{source}: expected a mapping of fields at the top level, got {kind_of(data)}")
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
        raise error(validation_message(exc, node, source, data=data, model=model)) from None
    except CommsimError as exc:  # raised by validators that parse units
        raise error(f"{source}: {exc}") from None


def read_text(path: str | Path, error: type[CommsimError]) -> str:
    """Read a YAML file the user gave: UTF-8, UTF-8 with BOM, or UTF-16/32 with BOM.

    Raises
    ------
    error
        If the file cannot be read, is larger than :data:`MAX_FILE_BYTES`, or
        is not text in those encodings (naming the line of the first bad byte).
    """
    from commsim.errors import ParseError, check_argument
    from commsim.textfile import decode_text, read_limited

    check_argument(path, (str, Path), "path", "a YAML file's path (str or Path)")
    try:
        data = read_limited(path, MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise error(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise error(f"{path}: larger than the limit of {MAX_FILE_BYTES:,} bytes for a YAML file")
    try:
        if data.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")) or b"\x00" in data:
            return decode_text(data, str(path))
        return data.decode("utf-8")
    except ParseError as exc:
        raise error(str(exc)) from None
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise error(
            f"{path}:{line}:{column}: not UTF-8 text (byte 0x{data[exc.start]:02X}; Latin-1 or "
            "Windows-1252?); save the file as UTF-8 (or UTF-16 with a byte-order mark)"
        ) from None
