"""Reading a user's text file in the encodings tools write: UTF-8, UTF-8 with BOM, UTF-16/32 with BOM.

PowerShell's ``>`` writes UTF-16 with a byte-order mark, Windows editors
often add a UTF-8 BOM; both are decoded. A file with NUL bytes and no BOM
is binary (or UTF-16 without a BOM) and is refused, naming the line of the
first NUL. Stray bytes that are not UTF-8 in an otherwise textual log (a
Latin-1 character in a host name or a terminal escape) are replaced by
U+FFFD so that one odd byte in an INFO line does not refuse a whole log.

A log copied from a terminal or a web page carries characters that are
not nccl-tests' own: :func:`plain_text` removes terminal colour codes (a CI
or ``kubectl`` log keeps them), decodes HTML character references (a page's
source escapes mpirun's ``<stdout>`` tags; not in XML, whose parser decodes
its own) and turns the typographic spaces a web page or chat client puts in
place of spaces (no-break, thin, zero-width) into plain ones, so the columns
split where nccl-tests put them.

Files commsim writes go through :func:`write_whole`: whole or not at all.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import html
import os
import re
import tempfile
from collections.abc import Iterator
from os import PathLike
from pathlib import Path
from typing import BinaryIO

from commsim.errors import ParseError

__all__ = [
    "MAX_TEXT_BYTES",
    "decode_text",
    "plain_text",
    "read_limited",
    "read_text_file",
    "whole_file",
    "write_whole",
]

MAX_TEXT_BYTES = 20_000_000
"""The largest text file read (a log, a matrix, an XML dump): 20 MB, read in about 4 s.

An nccl-tests log of 96 GPUs with ``NCCL_DEBUG=INFO`` is about 1 MB."""

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def decode_text(data: bytes, source: str | None = None) -> str:
    """The text of a file's bytes (see the module docstring for the rules).

    Raises
    ------
    ParseError
        For bytes that are no text (NUL bytes without a byte-order mark, or a
        byte-order mark whose encoding the bytes do not follow).
    """
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                return data.decode(encoding)
            except UnicodeDecodeError as exc:
                line = data[: exc.start].count(b"\n") + 1 if encoding == "utf-8-sig" else None
                raise ParseError(
                    f"the file starts with a {encoding.upper()} byte-order mark but is not valid "
                    f"{encoding.upper()} ({exc.reason}); save it as UTF-8",
                    source=source,
                    line=line,
                ) from None
    nul = data.find(b"\x00")
    if nul >= 0:
        raise ParseError(
            "the file holds NUL bytes: it is binary, or UTF-16 without a byte-order mark; "
            "save it as UTF-8 text",
            source=source,
            line=data[:nul].count(b"\n") + 1,
        )
    return data.decode("utf-8", errors="replace")


_TERMINAL_CODES = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[!-/]+[0-~]|[<-Z\\-~])"
)
"""ECMA-48 escape sequences: CSI (colours, ``ESC[0m``), OSC (titles, links), those with intermediate
bytes (``ESC(B``, which ``tput sgr0`` prints after ``ESC[m``) and two-character escapes (``ESC =``,
``ESC c``). Not a digit or a space after ESC: a bare ESC that a broken colour filter left before a
row (``ESC8388608``) must not take the size's first digit with it (the row is then refused or
skipped, never read as another size); ``ESC 7`` / ``ESC 8`` (cursor save and restore) stay."""

_LINE_SEPARATORS = re.compile("[\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
"""Characters Python's ``str.splitlines`` breaks lines at besides ``\\n`` and ``\\r``: inside a log
they are no line break of its file, so they become spaces and line numbers stay the file's."""

_WIDE_SPACES = re.compile("[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]")
"""Unicode space separators other than the ASCII space (no-break, en/em, thin, ideographic)."""

_ZERO_WIDTH = re.compile("[\u200b-\u200d\u2060\ufeff]")
"""Zero-width spaces and joiners, and a byte-order mark inside the text (a concatenated file)."""


_HTML_ESCAPED = re.compile(r"&(?:lt|gt|amp|quot|apos|nbsp|#\d+|#x[0-9a-fA-F]+);")
"""An HTML character reference: the text was copied from a page's source (``[1,0]&lt;stdout&gt;:``).
Only these, each with its semicolon, are decoded (``html.unescape`` would also turn ``&region=`` in a
URL into ``®ion=``)."""


def _decoded_reference(match: re.Match[str]) -> str:
    """The character a reference stands for; a space for a line break (``&#10;``), which is none of
    the file's."""
    value = html.unescape(match.group(0))
    return " " if value in ("\n", "\r") or _LINE_SEPARATORS.fullmatch(value) else value


def plain_text(text: str, html_references: bool = True) -> str:
    """``text`` without terminal escape sequences or HTML character references (unless
    ``html_references`` is False), with typographic spaces made ASCII spaces.

    The file's line breaks (``\\n``, ``\\r``) are kept; other characters ``str.splitlines`` breaks
    at (form feed, U+2028 ...) and references to line breaks (``&#10;``) become spaces, so line
    numbers stay the file's (columns may change).
    """
    if "\x1b" in text:
        text = _TERMINAL_CODES.sub("", text)
    if html_references and "&" in text:
        text = _HTML_ESCAPED.sub(_decoded_reference, text)
    if not text.isascii():
        text = _ZERO_WIDTH.sub("", _WIDE_SPACES.sub(" ", text))
    return _LINE_SEPARATORS.sub(" ", text)


def read_text_file(path: str | PathLike[str], what: str, *, markup: bool = False) -> str:
    """Read a text file the user gave, as :func:`decode_text` does, made :func:`plain_text`.

    Parameters
    ----------
    path : str or path-like
    what : str
        What the file should be, for the message ("nccl-tests log").
    markup : bool
        The file is XML, whose character references (``name="R&amp;D"``) its parser decodes: they
        are kept, not decoded here as a web page's would be (decoding them first would leave a bare
        ``&`` or ``<`` inside an attribute, which is no longer XML).

    Raises
    ------
    ParseError
        If the file cannot be read, is larger than :data:`MAX_TEXT_BYTES` or is no text.
    """
    from commsim.errors import check_argument

    check_argument(path, (str, PathLike), "path", f"the path of a {what} (str or Path)")
    try:
        size = Path(path).stat().st_size
        if size > MAX_TEXT_BYTES:
            raise _too_large(size, what, path)
        data = read_limited(path, MAX_TEXT_BYTES + 1)  # /dev/zero or a pipe has no size
    except OSError as exc:
        raise ParseError(f"cannot read {what}: {exc.strerror}", source=str(path)) from None
    if len(data) > MAX_TEXT_BYTES:
        raise _too_large(len(data), what, path, more=True)
    return plain_text(decode_text(data, str(path)), html_references=not markup)


def _new_file_mode(target: Path) -> int:
    """The mode ``target`` has, or the one a new file gets under the process's umask."""
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def read_limited(path: str | PathLike[str], limit: int) -> bytes:
    """At most ``limit`` bytes of a file, a pipe or a device.

    A named pipe nobody writes to reads as empty instead of waiting forever
    (it is opened without blocking, then read as usual, so ``<(command)``
    still waits for the command's output).

    Raises
    ------
    OSError
        If the file cannot be opened or read.
    """
    import fcntl

    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        flags = fcntl.fcntl(descriptor, fcntl.F_GETFL)
        fcntl.fcntl(descriptor, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)
        with os.fdopen(descriptor, "rb", closefd=False) as stream:
            return stream.read(limit)
    finally:
        os.close(descriptor)


def _too_large(size: int, what: str, path: str | PathLike[str], more: bool = False) -> ParseError:
    how_big = "it goes on past" if more else f"{size / 1e6:,.0f} MB is larger than"
    return ParseError(
        f"{how_big} the limit of {MAX_TEXT_BYTES / 1e6:,.0f} MB for a {what}; keep the part you need "
        "(for a log: the run's header and table)",
        source=str(path),
    )


def write_whole(path: str | PathLike[str], data: str | bytes) -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` whole or not at all.

    It goes to a temporary file beside ``path`` that is renamed into place
    when complete, so an interrupted or failed write leaves the old file (or
    none), never half of one. A temporary file that cannot be made is
    reported under ``path``'s name, not its own.

    Returns
    -------
    Path
        The written file.
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with whole_file(path) as stream:
        stream.write(raw)
    return Path(path)


@contextlib.contextmanager
def whole_file(path: str | PathLike[str]) -> Iterator[BinaryIO]:
    """A binary stream whose bytes become ``path`` only when the ``with`` block ends without error.

    For writers that stream (a trace of millions of events): they go to a
    temporary file beside ``path``, renamed into place at the end, removed on
    an error or an interrupt, so ``path`` is never left half-written.
    """
    from commsim.errors import check_argument

    check_argument(path, (str, PathLike), "path", "a file path (str or os.PathLike)")  # 5 failed in Path()
    target = Path(path)
    if target.is_dir():  # else found only at the rename, after all the writing, under the temporary's name
        raise IsADirectoryError(errno.EISDIR, "is a folder; give a file name", str(target))
    try:
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(target)) from None
    try:
        with os.fdopen(handle, "wb") as stream:
            yield stream
        os.chmod(temporary, _new_file_mode(target))  # as open() would make it, not mkstemp's 0600
        try:
            os.replace(temporary, target)
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, str(target)) from None
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
