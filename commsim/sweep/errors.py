"""The error raised when a sweep cannot run (as opposed to a bad sweep file)."""

from __future__ import annotations

from commsim.errors import CommsimError

__all__ = ["SweepError"]


class SweepError(CommsimError):
    """A sweep cannot run: its runner, its output file, or a missing optional package.

    Problems in the sweep file itself raise :class:`~commsim.errors.ScenarioError`
    with ``file:line:col``; problems of one scenario (an algorithm that does not
    apply to a machine) are recorded in that scenario's ``error`` column.
    """
