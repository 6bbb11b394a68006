"""Errors of the import and export formats.

Every file another tool wrote (an MSCCL algorithm, NCCL's topology and graph
dumps, ``rocm-smi --showtopo`` output, an ASTRA-sim network file, a tuner
CSV) that cannot be read raises :class:`FormatError`, naming the file, the
line where known, what was wrong and what would be valid. A schedule or
machine that the target format cannot express raises :class:`ExportError`.
"""

from __future__ import annotations

from commsim.errors import ParseError, ScheduleError

__all__ = ["ExportError", "FormatError"]


class FormatError(ParseError):
    """A file in an interchange format is malformed or names something unknown.

    Parameters
    ----------
    message : str
        What was wrong and what would be valid.
    source : str, optional
        The file name, if known.
    line : int, optional
        1-based line number, if known.
    """


class ExportError(ScheduleError):
    """A schedule (or machine) cannot be written in the requested format."""
