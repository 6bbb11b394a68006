"""The consoles of the ``commsim`` command: results to stdout, messages to stderr.

Every command prints through these two. Text that came from the user (file
names, labels, names in error messages) goes through :func:`say` or
:func:`escape` first, so that ``--algorithm '[bold]ring'`` is shown as typed
and not read as console markup. Emoji codes are not read either (a label
``a:x:b`` stays as typed; and rich's emoji table, 2 ms, is not loaded).

Width: a terminal's own width; when stdout is piped, ``COLUMNS`` if set,
else 200 columns (tables wrap link names at separators, never mid-word).
A ``COLUMNS`` below 40 is not a width anyone reads a table at (``0`` made
rich print nothing at all, and exit 0): it is ignored, as if unset.
"""

from __future__ import annotations

import os
import sys
from typing import TextIO

from rich.console import Console
from rich.markup import escape

__all__ = ["err", "error", "escape", "out", "say"]


MIN_COLUMNS = 40
"""Narrowest ``COLUMNS`` taken as a width; below it (0, 1, 10) the variable is ignored."""


def _width(stream: TextIO, piped: int | None) -> int | None:
    """The width for ``stream``: None lets rich follow the terminal or ``COLUMNS``."""
    columns = os.environ.get("COLUMNS", "")
    plausible = columns.isdecimal() and int(columns) >= MIN_COLUMNS
    if plausible or (not columns.isdecimal() and stream.isatty()):
        return None  # rich follows COLUMNS, or the terminal
    if not stream.isatty():
        return piped or 80
    try:  # an implausible COLUMNS on a terminal: the terminal's own width
        return os.get_terminal_size(stream.fileno()).columns or 80
    except OSError:
        return 80


def _result_width() -> int | None:
    return _width(sys.stdout, 200)


out = Console(width=_result_width(), emoji=False)
"""Results: tables and reports on stdout."""

err = Console(stderr=True, soft_wrap=True, emoji=False, width=_width(sys.stderr, None))
"""Messages: files written, progress, warnings and errors, on stderr."""


def say(message: str) -> None:
    """Print a plain message (escaped, never markup) on stderr."""
    err.print(escape(message), highlight=False)


def error(message: str) -> None:
    """Print ``error: message`` on stderr, the message escaped."""
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False)
