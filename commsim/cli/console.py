"""The consoles of the ``commsim`` command: results to stdout, messages to stderr.

Every command prints through these two. Text that came from the user (file
names, labels, names in error messages) goes through :func:`say` or
:func:`escape` first, so that ``--algorithm '[bold]ring'`` is shown as typed
and not read as console markup. Emoji codes are not read either (a label
``a:x:b`` stays as typed; and rich's emoji table, 2 ms, is not loaded).

Width: a terminal's own width; when stdout is piped, ``COLUMNS`` if set,
else 200 columns (tables wrap link names at separators, never mid-word).
"""

from __future__ import annotations

import os
import sys

from rich.console import Console
from rich.markup import escape

__all__ = ["err", "error", "escape", "out", "say"]


def _result_width() -> int | None:
    if sys.stdout.isatty() or os.environ.get("COLUMNS", "").isdigit():
        return None  # rich follows the terminal, or COLUMNS
    return 200


out = Console(width=_result_width(), emoji=False)
"""Results: tables and reports on stdout."""

err = Console(stderr=True, soft_wrap=True, emoji=False)
"""Messages: files written, progress, warnings and errors, on stderr."""


def say(message: str) -> None:
    """Print a plain message (escaped, never markup) on stderr."""
    err.print(escape(message), highlight=False)


def error(message: str) -> None:
    """Print ``error: message`` on stderr, the message escaped."""
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False)
