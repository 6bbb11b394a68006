"""A small XML reader that keeps the line of every element, for error messages.

:mod:`xml.etree.ElementTree` forgets where an element was; the formats read
here (MSCCL algorithms, NCCL's topology and graph dumps) are checked
attribute by attribute, and a message that names the line of the bad
element is worth the 60 lines. Built on the standard library's expat.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from xml.parsers import expat

from commsim.interop.errors import FormatError
from commsim.textfile import read_text_file

__all__ = ["XmlElement", "parse_xml", "read_xml_file"]


@dataclass
class XmlElement:
    """One element: its tag, attributes, children and the line it starts on.

    Attributes
    ----------
    tag : str
    attrs : dict of str to str
    children : list of XmlElement
    line : int
        1-based line of the element's start tag.
    source : str or None
        The file it came from, for messages.
    """

    tag: str
    attrs: dict[str, str]
    line: int
    source: str | None = None
    children: list[XmlElement] = field(default_factory=list)

    def iter(self, tag: str) -> Iterator[XmlElement]:
        """Every descendant (and this element) with ``tag``, in document order."""
        if self.tag == tag:
            yield self
        for child in self.children:
            yield from child.iter(tag)

    def error(self, message: str) -> FormatError:
        """A :class:`FormatError` at this element's line."""
        return FormatError(f"<{self.tag}>: {message}", self.source, self.line)

    def text(self, name: str, valid: str = "") -> str:
        """The attribute ``name``; :class:`FormatError` naming it if missing."""
        if name not in self.attrs:
            hint = f" ({valid})" if valid else ""
            raise self.error(f"missing attribute {name!r}{hint}")
        return self.attrs[name]

    def integer(self, name: str, default: int | None = None) -> int:
        """The attribute ``name`` as an integer (decimal or ``0x`` hexadecimal)."""
        if default is not None and name not in self.attrs:
            return default
        value = self.text(name, "an integer")
        try:
            return int(value, 0) if value.lower().startswith(("0x", "-0x")) else int(value)
        except ValueError:
            raise self.error(f"attribute {name}={value!r} is not an integer") from None

    def number(self, name: str, default: float | None = None) -> float:
        """The attribute ``name`` as a float."""
        if default is not None and name not in self.attrs:
            return default
        value = self.text(name, "a number")
        try:
            return float(value)
        except ValueError:
            raise self.error(f"attribute {name}={value!r} is not a number") from None


def parse_xml(text: str, source: str | None = None) -> XmlElement:
    """The root element of an XML document.

    Raises
    ------
    FormatError
        If the text is not well-formed XML (with expat's line and reason).
    """
    parser = expat.ParserCreate()
    stack: list[XmlElement] = []
    roots: list[XmlElement] = []

    def start(tag: str, attrs: dict[str, str]) -> None:
        element = XmlElement(tag, dict(attrs), parser.CurrentLineNumber, source)
        (stack[-1].children if stack else roots).append(element)
        stack.append(element)

    def end(tag: str) -> None:
        stack.pop()

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    try:
        parser.Parse(text, True)
    except expat.ExpatError as exc:
        reason = expat.ErrorString(exc.code)
        raise FormatError(
            f"not well-formed XML: {reason} (column {exc.offset + 1})", source, exc.lineno
        ) from None
    if not roots:
        raise FormatError("no XML element found", source)
    return roots[0]


def read_xml_file(path: str | PathLike[str], what: str) -> XmlElement:
    """Read and parse an XML file (``what`` names it in messages, e.g. "MSCCL algorithm")."""
    return parse_xml(read_text_file(path, what, markup=True), str(Path(path)))
