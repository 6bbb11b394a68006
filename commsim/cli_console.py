"""The consoles of the ``commsim`` command: results to stdout, messages to stderr.

Shared by :mod:`commsim.cli` and the command modules it registers, so that
every command prints alike (200 columns wide when stdout is not a terminal).
"""

from __future__ import annotations

import sys

from rich.console import Console

__all__ = ["err", "out"]

out = Console() if sys.stdout.isatty() else Console(width=200)
"""Results: tables and reports on stdout."""

err = Console(stderr=True, soft_wrap=True)
"""Messages: files written, errors, on stderr."""
