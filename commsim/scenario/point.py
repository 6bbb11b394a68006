"""A case before its machine is built: what a sweep grid point is checked as.

A sweep file names thousands of cases; building each machine to check them
would take longer than the check is worth, so a grid point is checked as a
:class:`CaseSpec`: the :class:`~commsim.scenario.case.CaseChoice` every
case has (collective, algorithm with parameters, size), plus the machine's
reference and overrides checked without building it, and the ranks and
root by shape. :meth:`CaseSpec.case` then builds the machine and the
:class:`~commsim.scenario.case.Case`, whose checks against the machine
(ranks, root) come last.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import pydantic
from pydantic import Field, StrictInt, ValidationInfo, field_validator

from commsim.scenario.case import Case, CaseChoice, CaseError, case_problems
from commsim.scenario.machine import Overrides, build_machine, check_reference
from commsim.topology.model import Topology

__all__ = ["CaseSpec"]


class CaseSpec(CaseChoice):
    """A case as a sweep point gives it: the machine by reference, the ranks and root by shape.

    Validate with ``context={"base": Path}`` (where relative topology paths
    start); see :meth:`of`.

    Attributes
    ----------
    topology : str or dict
        A shipped name, a builder name, a YAML path, ``{builder: NAME, FIELD: value}``
        or ``{file: PATH}`` (see :func:`~commsim.scenario.machine.build_machine`).
    overrides : dict
        ``{kind or family: Figures}`` (units required).
    ranks : int, list of str or None
        A GPU count (>= 2), GPU names, or None for all.
    root : int
    """

    topology: str | dict[str, Any]
    overrides: Overrides = Field(default_factory=dict)
    ranks: Annotated[StrictInt, Field(ge=2)] | Annotated[list[str], Field(min_length=1)] | None = None
    root: Annotated[StrictInt, Field(ge=0)] = 0

    @field_validator("topology")
    @classmethod
    def _reference(cls, ref: str | dict[str, Any], info: ValidationInfo) -> str | dict[str, Any]:
        context = info.context or {}
        check_reference(ref, Path(context.get("base", ".")))
        return ref

    @classmethod
    def of(cls, fields: dict[str, Any], base: Path) -> CaseSpec:
        """Validate ``fields`` (names as :class:`CaseSpec`'s; ``nbytes`` is the size).

        Raises
        ------
        CaseError
            With one ``(field, message)`` per problem.
        """
        try:
            return cls.model_validate(fields, context={"base": base, "file": str(base)})
        except pydantic.ValidationError as exc:
            raise CaseError(case_problems(exc, fields, cls)) from None

    def machine(self, base: Path) -> Topology:
        """The machine: the reference built, the overrides applied."""
        return build_machine(self.topology, self.overrides, base=base)

    def case(self, machine: Topology) -> Case:
        """The :class:`Case` on ``machine`` (from :meth:`machine`), its ranks and root checked against it.

        Raises
        ------
        CaseError
            If the ranks are not GPUs of the machine or the root not one of them.
        """
        fields = self.model_dump(include={"collective", "algorithm", "params", "nbytes", "ranks", "root"})
        return Case.of(topology=machine, **fields)
