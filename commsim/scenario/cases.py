"""A file's cases built before anything runs, each problem at the line of the value that caused it.

The cases are :class:`~commsim.scenario.case.Case` models, the same ones
flags and sweep points make; here their problems (a :class:`CaseError`'s
fields) are placed in the file: an algorithm's parameters at
``algorithms.2.params.chunks``, a size at ``sizes.1``, the ranks at ``ranks``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import yaml

from commsim.collectives import Collective
from commsim.errors import CommsimError, ScenarioError
from commsim.scenario.case import Case, CaseError, Loc, parse_nbytes
from commsim.topology.model import Topology
from commsim.yamlio import position

__all__ = ["file_cases", "located"]

_MAX_LINES = 5


def located(
    exc: CaseError,
    where: Callable[[Loc], Loc],
    node: yaml.Node | None,
    source: str,
    error: type[CommsimError],
) -> CommsimError:
    """``exc`` as ``file:line:col: field: message`` lines, its fields placed in the file by ``where``."""
    lines = []
    for loc, message in exc.problems[:_MAX_LINES]:
        in_file = where(loc)
        lines.append(f"{position(node, in_file, source)}: {'.'.join(map(str, in_file))}: {message}")
    if len(exc.problems) > _MAX_LINES:
        lines.append(f"... and {len(exc.problems) - _MAX_LINES} more error(s)")
    return error("\n".join(lines))


def file_cases(
    topology: Topology,
    collective: str | Collective,
    entries: Sequence[tuple[str, dict[str, Any], str | None]],
    sizes: Sequence[str | float],
    ranks: int | Sequence[str] | None,
    root: int,
    node: yaml.Node | None,
    source: str,
    *,
    entries_at: Loc = ("algorithms",),
    sizes_at: Loc = ("sizes",),
) -> list[Case]:
    """Every (entry, size) case of a file, entries outer, each problem at its line.

    Parameters
    ----------
    topology : Topology
        The file's machine, built.
    collective : str or Collective
    entries : sequence of (algorithm, params, label)
        The algorithm entries as written.
    sizes : sequence
        The sizes as written.
    ranks, root
        As written (root 0 where the file has none).
    node : yaml.Node or None
        The file's node tree, for positions.
    source : str
        The file's name.
    entries_at, sizes_at : tuple
        Where the entries and the sizes stand in the document
        (``("sync",)``, ``("bucket_sizes",)`` in a training scenario); a
        ``sizes_at`` of ``("size",)`` is one size given alone.

    Raises
    ------
    ScenarioError
        ``file:line:col: algorithms.0.params.chnks: unknown field 'chnks'; valid: order``.
    """

    def size_loc(j: int) -> Loc:
        return sizes_at if sizes_at == ("size",) else (*sizes_at, j)

    nbytes = []
    for j, size in enumerate(sizes):
        try:
            nbytes.append(parse_nbytes(size))
        except ValueError as exc:
            problem = CaseError([(size_loc(j), str(exc))])
            raise located(problem, lambda loc: loc, node, source, ScenarioError) from None
    cases = []
    for i, (algorithm, params, label) in enumerate(entries):

        def where(loc: Loc, i: int = i) -> Loc:
            head, rest = loc[0], loc[1:]
            if head in ("algorithm", "params", "label"):
                return (*entries_at, i, head, *rest)
            return size_loc(0) if head == "nbytes" else loc

        fields = {"collective": collective, "algorithm": algorithm, "params": params, "label": label}
        try:
            first = Case.of(
                topology=topology, ranks=ranks, root=root, nbytes=nbytes[0] if nbytes else 1, **fields
            )
        except CaseError as exc:
            raise located(exc, where, node, source, ScenarioError) from None
        cases += [first.model_copy(update={"nbytes": n}) for n in nbytes]
    return cases
