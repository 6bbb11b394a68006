"""A scenario's cases checked before anything runs, each problem at its line.

The algorithm must implement the collective, its parameters must satisfy
the algorithm's own ``Params`` model, the ranks must be GPUs of the machine
and the root one of the ranks. Found here, these carry the file, line and
column of the value that caused them; found while planning, they would not.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pydantic
import yaml

from commsim.collectives import Collective, needs_root
from commsim.errors import CommsimError, ScenarioError
from commsim.topology.model import Topology
from commsim.yamlio import position, validation_message

__all__ = ["check_algorithm", "check_override_figures", "check_params", "check_ranks"]


def check_algorithm(
    name: str,
    params: dict[str, Any],
    collective: Collective,
    node: yaml.Node | None,
    source: str,
    loc: tuple[int | str, ...],
) -> None:
    """Refuse an algorithm that does not implement ``collective`` or parameters it does not take.

    Parameters
    ----------
    name, params : str, dict
        The entry as written.
    collective : Collective
    node : yaml.Node or None
        The document's node tree, for positions.
    source : str
        The file's name.
    loc : tuple
        Where the entry stands in the document, e.g. ``("algorithms", 2)``.

    Raises
    ------
    ScenarioError
        ``file:line:col: algorithms.2.algorithm: 'tree' does not implement all_to_all; ...``
        or ``file:line:col: algorithms.2.params.chunks: must be at least 1, got 0``.
    """
    from commsim.algorithms import algorithm_names, get_algorithm

    cls = get_algorithm(name)
    if collective not in cls.collectives:
        implements = ", ".join(sorted(c.value for c in cls.collectives))
        others = [n for n in algorithm_names() if collective in get_algorithm(n).collectives]
        raise ScenarioError(
            f"{position(node, (*loc, 'algorithm'), source)}: {'.'.join(map(str, loc))}.algorithm: "
            f"{name!r} does not implement {collective}; it implements: {implements}. "
            f"Algorithms for {collective}: {', '.join(others) or '(none)'}"
        )
    try:
        cls.Params.model_validate(params)
    except pydantic.ValidationError as exc:
        raise ScenarioError(
            validation_message(exc, node, source, data=params, model=cls.Params, prefix=(*loc, "params"))
        ) from None


def check_ranks(
    topology: Topology,
    ranks: int | Sequence[str] | None,
    root: int,
    collective: Collective,
    node: yaml.Node | None,
    source: str,
) -> None:
    """Refuse ranks that are not GPUs of ``topology`` and a root outside the ranks.

    Raises
    ------
    ScenarioError
        At the line of ``ranks`` or ``root``.
    """
    from commsim.api import select_ranks

    try:
        chosen = select_ranks(topology, ranks)
    except CommsimError as exc:
        raise ScenarioError(f"{position(node, ('ranks',), source)}: ranks: {exc}") from None
    if needs_root(collective) and not 0 <= root < len(chosen):
        raise ScenarioError(
            f"{position(node, ('root',), source)}: root: {root} is not a rank of the "
            f"{len(chosen)} taking part; give 0 to {len(chosen) - 1}"
        )


def check_params(name: str, params: dict[str, Any], given_as: str = "--param") -> None:
    """Refuse parameters that algorithm ``name`` does not take, in the user's words.

    Parameters
    ----------
    name : str
        A registered algorithm.
    params : dict
        The parameters as given.
    given_as : str
        How the user gave them, for the message (``--param``).

    Raises
    ------
    CommsimError
        ``--param chnks: unknown field 'chnks'; valid: order; did you mean ...``.
    """
    from commsim.algorithms import get_algorithm
    from commsim.scenario.messages import problems

    cls = get_algorithm(name)
    try:
        cls.Params.model_validate(params)
    except pydantic.ValidationError as exc:
        lines = [
            f"{given_as} {'.'.join(map(str, loc))} (algorithm {name!r}): {message}"
            for loc, message in problems(exc, params, cls.Params)
        ]
        raise CommsimError("\n".join(lines)) from None


def check_override_figures(overrides: Any, node: yaml.Node | None, source: str) -> None:
    """Each ``overrides: {KIND: {bandwidth: ..., latency: ...}}`` figure readable, at its own line.

    Shapes other than a mapping of mappings are left to the scenario model,
    which names what it expected.

    Raises
    ------
    ScenarioError
        ``file:line:col: overrides.nvlink.bandwidth: bandwidth 16 has no unit; ...``.
    """
    from commsim.units import parse_bandwidth, parse_time

    if not isinstance(overrides, dict):
        return
    for kind, figures in overrides.items():
        if not isinstance(figures, dict):
            continue
        for field, value in figures.items():
            if field not in ("bandwidth", "latency"):
                continue
            try:
                (parse_bandwidth if field == "bandwidth" else parse_time)(value, require_unit=True)
            except CommsimError as exc:
                where = position(node, ("overrides", kind, field), source)
                raise ScenarioError(f"{where}: overrides.{kind}.{field}: {exc}") from None
