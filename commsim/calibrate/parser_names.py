"""The collectives a log's file name names (``all_reduce_8gpu.txt``, ``AllGather.json``).

:func:`~commsim.calibrate.parser_collective.decide_collective` takes the file name's choice only
among the collectives the result table allows, and only when the log names no nccl-tests binary.
"""

from __future__ import annotations

import re
from pathlib import PurePath

__all__ = ["collectives_in_name"]

# Longest and most specific first: at one position the first alternative that matches wins.
_SPELLINGS = (
    ("reduce_scatter", r"reduce[-_ ]?scatter"),
    ("all_reduce", r"all[-_ ]?reduce"),
    ("all_gather", r"all[-_ ]?gather"),
    ("all_to_all", r"all[-_ ]?to[-_ ]?all|a2a"),
    ("send_recv", r"send[-_ ]?recv"),
    ("broadcast", r"broadcast|bcast"),
    ("hypercube", r"hyper[-_ ]?cube"),
    ("reduce", r"reduce"),
    ("gather", r"gather"),
    ("scatter", r"scatter"),
)
_NAME = re.compile(
    r"(?<![a-z])(?:"
    + "|".join(f"(?P<{name}>{pattern})" for name, pattern in _SPELLINGS)
    + r")(?:[-_ ]?perf(?:[-_ ]?mpi)?)?(?![a-z])"
)


def collectives_in_name(name: str) -> list[str]:
    """Every collective a file name names, as whole words, in order of appearance.

    Parameters
    ----------
    name : str
        A file name or path; only its last component is read.

    Returns
    -------
    list of str
        Normalised names (see :data:`~commsim.calibrate.parser.COLLECTIVES`),
        without repeats; empty when the name names none.

    Examples
    --------
    >>> collectives_in_name("12_MI250X-SS11-4node-32rank-allreduce.txt")
    ['all_reduce']
    >>> collectives_in_name("ReduceScatter_vs_bcast.log")
    ['reduce_scatter', 'broadcast']
    >>> collectives_in_name("reducer_test.txt")
    []
    """
    stem = PurePath(name).name
    words = re.sub(r"(?<=[a-z])(?=[A-Z])", "_", stem).lower()  # AllReduce -> all_reduce
    found = [match.lastgroup for match in _NAME.finditer(words) if match.lastgroup]
    return list(dict.fromkeys(found))
