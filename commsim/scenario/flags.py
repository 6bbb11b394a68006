"""The cases of ``commsim run --topology ... --algorithm ... --size ...``: each problem named by its flag.

The same :class:`~commsim.scenario.case.Case` model as files and sweep
points, so a flag is refused exactly when the same value in a file is;
only the wording of where differs (``--size``, ``--param chunks``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from commsim.errors import CommsimError
from commsim.scenario.case import MAX_CASES, Case, CaseError, Loc, parse_nbytes
from commsim.topology.model import Topology

__all__ = ["FLAGS", "flag_cases"]

FLAGS = {
    "topology": "--topology",
    "ranks": "--ranks",
    "collective": "--collective",
    "algorithm": "--algorithm",
    "params": "--param",
    "nbytes": "--size",
    "root": "--root",
    "label": "--label",
}
"""The flag that gives each field of a case."""


def flag_cases(
    machine: Topology,
    algorithms: Sequence[str],
    collective: str,
    sizes: Sequence[str | float],
    params: Mapping[str, Any],
) -> list[Case]:
    """Every (algorithm, size) case the flags ask for, algorithms outer.

    Parameters
    ----------
    machine : Topology
        From ``--topology`` and the builder flags.
    algorithms : sequence of str
        ``--algorithm`` (repeatable).
    collective : str
        ``--collective``.
    sizes : sequence of str or float
        ``--size`` (repeatable).
    params : mapping
        ``--param KEY=VALUE``, values read as YAML.

    Raises
    ------
    CommsimError
        ``--param chnks (algorithm 'ring'): unknown field 'chnks'; valid: order``,
        ``--size: size '0' must be at least 1 byte; ...``, or more cases than
        :data:`~commsim.scenario.case.MAX_CASES`.
    """
    count = len(algorithms) * len(sizes)
    if count > MAX_CASES:
        raise CommsimError(
            f"{count:,} cases (--algorithm x --size) is more than the limit of {MAX_CASES:,}; "
            "use a sweep file (commsim sweep)"
        )
    nbytes = []
    for size in sizes:
        try:
            nbytes.append(parse_nbytes(size))
        except ValueError as exc:
            raise CommsimError(f"--size: {exc}") from None
    cases = []
    for name in algorithms:
        fields = {"collective": collective, "algorithm": name, "params": dict(params)}
        try:
            first = Case.of(topology=machine, nbytes=nbytes[0] if nbytes else 1, **fields)
        except CaseError as exc:
            raise CommsimError("\n".join(_flag_line(loc, m, name) for loc, m in exc.problems)) from None
        cases += [first.model_copy(update={"nbytes": n}) for n in nbytes]
    return cases


def _flag_line(loc: Loc, message: str, algorithm: str) -> str:
    if loc[0] == "params" and len(loc) > 1:
        return f"--param {'.'.join(map(str, loc[1:]))} (algorithm {algorithm!r}): {message}"
    return f"{FLAGS.get(str(loc[0]), str(loc[0]))}: {message}"
