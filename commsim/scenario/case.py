"""One case to simulate, checked once: the same model for flags, scenario files and sweep points.

A :class:`Case` is a machine (a built :class:`~commsim.topology.model.Topology`),
the ranks taking part, a collective, a size in whole bytes, an algorithm
that implements the collective with parameters its own ``Params`` model
accepts, a root among the ranks, and a label. Whoever reads the user's
input (``commsim run`` flags, a scenario file, a sweep grid point, a call
of :func:`commsim.simulate`) builds its cases with :meth:`Case.of`; a
problem comes back as a :class:`CaseError` whose :attr:`~CaseError.problems`
name the field (``("params", "chunks")``), so each reader can say where in
its own terms: ``file:line:col`` for files, the flag for flags.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pydantic
from pydantic import Field, ValidationInfo, field_validator

from commsim.collectives import Collective, get_collective, needs_root
from commsim.errors import CommsimError, ScenarioError
from commsim.topology.model import Topology
from commsim.units import parse_size

__all__ = ["MAX_CASES", "Case", "CaseChoice", "CaseError", "Loc", "parse_nbytes", "select_ranks"]

MAX_CASES = 10_000
"""The most cases one run makes: a scenario file's algorithms x sizes, or ``--algorithm`` x ``--size``;
larger grids are sweeps."""

Loc = tuple[int | str, ...]
"""A field of a case and, for parameters, the key inside it: ``("params", "chunks")``."""


class CaseError(ScenarioError):
    """A case that cannot be built: one ``(field, message)`` per problem.

    Parameters
    ----------
    problems : list of (Loc, str)
        Where (a :class:`Case` field, then keys inside it) and what, in the
        user's words.
    """

    def __init__(self, problems: list[tuple[Loc, str]]) -> None:
        self.problems = problems
        super().__init__("\n".join(f"{'.'.join(map(str, loc))}: {message}" for loc, message in problems))


def select_ranks(topology: Topology, ranks: int | Sequence[str] | None) -> tuple[str, ...]:
    """The participating GPUs: all, the first ``ranks``, or the named ones.

    Raises
    ------
    AlgorithmError
        For a count outside 2..GPUs, names that are not GPUs, a GPU named twice, or fewer than 2 names.
    """
    from commsim.errors import AlgorithmError

    gpus = topology.gpus
    if ranks is None:
        return tuple(gpus)
    if isinstance(ranks, int):
        if not 2 <= ranks <= len(gpus):
            raise AlgorithmError(
                f"ranks={ranks} but topology {topology.name!r} has {len(gpus)} GPUs (need 2..{len(gpus)})"
            )
        return tuple(gpus[:ranks])
    known = set(gpus)
    missing = [r for r in ranks if r not in known]
    if missing:
        raise AlgorithmError(
            f"ranks {missing} are not GPUs of topology {topology.name!r}; GPUs: {', '.join(gpus)}"
        )
    if len(set(ranks)) != len(ranks):
        raise AlgorithmError(f"ranks {list(ranks)} name a GPU twice")
    if len(ranks) < 2:
        raise AlgorithmError(
            f"ranks {list(ranks)} name {len(ranks)} GPU(s); a collective needs at least 2, e.g. "
            f"[{', '.join(gpus[:2])}] or a count such as ranks: 2"
        )
    return tuple(ranks)


def _user_error(exc: CommsimError) -> ValueError:
    """A CommsimError raised inside a validator, as the ValueError pydantic reports at the field."""
    return ValueError(str(exc))


class CaseChoice(pydantic.BaseModel):
    """What is asked of a machine: a collective, an algorithm with its parameters, a size.

    The part of a :class:`Case` that is checked without the machine (a
    sweep point's, before its machine is built, too). Fields are validated
    in order, each against those before it: the algorithm must implement
    the collective, the parameters must satisfy the algorithm's ``Params``.

    Attributes
    ----------
    collective : Collective
    algorithm : str
        A registered algorithm that implements ``collective``.
    params : dict
        The algorithm's parameters as given (checked by its ``Params`` model).
    nbytes : int
        The size in whole bytes (given as ``"160 MB"``, ``"1M"`` = 2^20 B, or bytes).
    """

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    collective: Collective
    algorithm: str
    params: dict[str, Any] = Field(default_factory=dict)
    nbytes: int

    @field_validator("collective", mode="before")
    @classmethod
    def _collective(cls, value: Any) -> Collective:
        if not isinstance(value, (str, Collective)):
            from commsim.scenario.messages import describe

            raise ValueError(f"expected a collective name, got {describe(value)}")
        try:
            return get_collective(value)
        except CommsimError as exc:
            raise _user_error(exc) from None

    @field_validator("algorithm")
    @classmethod
    def _algorithm(cls, name: str, info: ValidationInfo) -> str:
        from commsim.algorithms import BUILT_IN, algorithm_names, get_algorithm
        from commsim.errors import known_name

        if name not in BUILT_IN:  # listing the names imports every family and reads the plugins
            known_name("algorithm", name, algorithm_names())
        collective = info.data.get("collective")
        implemented = get_algorithm(name).collectives
        if collective is not None and collective not in implemented:
            others = [n for n in algorithm_names() if collective in get_algorithm(n).collectives]
            raise ValueError(
                f"{name!r} does not implement {collective}; it implements: "
                f"{', '.join(sorted(c.value for c in implemented))}. "
                f"Algorithms for {collective}: {', '.join(others) or '(none)'}"
            )
        return name

    @field_validator("params")
    @classmethod
    def _params(cls, params: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        name = info.data.get("algorithm")
        if name is not None:  # an unknown algorithm is reported alone
            from commsim.algorithms import get_algorithm

            model = get_algorithm(name).Params
            _refuse_booleans(model, params)
            model.model_validate(params)  # its errors land under ("params", ...)
        return params

    @field_validator("nbytes", mode="before")
    @classmethod
    def _nbytes(cls, value: Any) -> int:
        return parse_nbytes(value)


def _refuse_booleans(model: type[pydantic.BaseModel], params: dict[str, Any]) -> None:
    """Booleans are not numbers: ``chunks: true`` is refused, not read as 1 (pydantic's lax mode would)."""
    from pydantic_core import InitErrorDetails, ValidationError

    wrong = [
        InitErrorDetails(type="int_type", loc=(key,), input=value)
        for key, value in params.items()
        if isinstance(value, bool)
        and key in model.model_fields
        and "bool" not in str(model.model_fields[key].annotation)
    ]
    if wrong:
        raise ValidationError.from_exception_data(model.__name__, wrong)


class Case(CaseChoice):
    """One collective on one machine: what :func:`commsim.api.simulate_case` plans and replays.

    A :class:`CaseChoice` (collective, algorithm, params, size) and the
    machine: the ranks are checked against it, the root against the ranks.

    Attributes
    ----------
    topology : Topology
        The machine, overrides applied.
    ranks : tuple of str
        The GPUs taking part, in rank order (given as None for all, a count
        for the first ones, or names).
    root : int
        The root rank of a rooted collective (0 otherwise).
    label : str or None
        A display name (default: the algorithm's).
    """

    topology: Topology
    ranks: tuple[str, ...]
    root: int = Field(0, ge=0)
    label: str | None = None

    @field_validator("topology", mode="before")
    @classmethod
    def _topology(cls, value: Any) -> Any:
        """A Topology, or a name or YAML path as :func:`commsim.get_topology` takes it."""
        if isinstance(value, str):
            from commsim.topology.resolve import get_topology

            try:
                return get_topology(value)
            except CommsimError as exc:
                raise _user_error(exc) from None
        if not isinstance(value, Topology):
            from commsim.scenario.messages import describe

            raise ValueError(
                f"expected a Topology (e.g. commsim.get_topology('dgx1_v100')) or a machine name, got "
                f"{describe(value)}"
            )
        return value

    @field_validator("ranks", mode="before")
    @classmethod
    def _ranks(cls, value: Any, info: ValidationInfo) -> Any:
        topology = info.data.get("topology")
        if topology is None:
            raise ValueError("cannot be checked without a machine (see topology)")
        from commsim.topology.builders import is_whole_number

        if is_whole_number(value):
            value = int(value)  # a NumPy count reads as the count
        given_as_names = isinstance(value, (list, tuple)) and all(isinstance(r, str) for r in value)
        if isinstance(value, bool) or not (value is None or isinstance(value, int) or given_as_names):
            from commsim.scenario.messages import describe

            raise ValueError(f"expected a GPU count or a list of GPU names, got {describe(value)}")
        try:
            return select_ranks(topology, value)
        except CommsimError as exc:
            raise _user_error(exc) from None

    @field_validator("root")
    @classmethod
    def _root(cls, root: int, info: ValidationInfo) -> int:
        ranks: tuple[str, ...] = info.data.get("ranks") or ()
        collective = info.data.get("collective")
        if ranks and collective is not None and needs_root(collective) and root >= len(ranks):
            raise ValueError(
                f"{root} is not a rank of the {len(ranks)} taking part; give 0 to {len(ranks) - 1}"
            )
        return root

    @classmethod
    def of(cls, **fields: Any) -> Case:
        """Validate ``fields`` into a Case.

        Parameters
        ----------
        **fields
            ``collective``, ``algorithm``, ``params``, ``nbytes`` (a size as
            written or bytes), ``topology`` (a Topology, or a name or YAML
            path as :func:`commsim.get_topology` takes it), ``ranks`` (None, a
            count or names), ``root``, ``label``.

        Raises
        ------
        CaseError
            With one ``(field, message)`` per problem, in the user's words.

        Examples
        --------
        >>> from commsim.topology import get_topology
        >>> case = Case.of(topology=get_topology("pcie_4gpu_switch"), ranks=None,
        ...                collective="allreduce", algorithm="ring", nbytes="1M")
        >>> case.nbytes, case.collective.value, len(case.ranks)
        (1048576, 'all_reduce', 4)
        """
        fields.setdefault("ranks", None)
        try:
            return cls.model_validate(fields)
        except pydantic.ValidationError as exc:
            raise CaseError(case_problems(exc, fields)) from None

    def with_size(self, size: str | float) -> Case:
        """This case at another size, checked as :attr:`nbytes` is (whole bytes > 0).

        Raises
        ------
        CaseError
            ``nbytes: ...`` if the size cannot be read.
        """
        try:
            nbytes = parse_nbytes(size)
        except ValueError as exc:
            raise CaseError([(("nbytes",), str(exc))]) from None
        return self.model_copy(update={"nbytes": nbytes})

    @property
    def name(self) -> str:
        """The label, or the algorithm's name."""
        return self.label or self.algorithm


def parse_nbytes(value: Any) -> int:
    """A size as a user gives it, in whole bytes > 0 (``ValueError`` otherwise, for pydantic)."""
    try:
        return parse_size(value)
    except CommsimError as exc:
        raise _user_error(exc) from None


def case_problems(
    exc: pydantic.ValidationError, fields: dict[str, Any], model: type[CaseChoice] | None = None
) -> list[tuple[Loc, str]]:
    """``(field, message)`` per problem of a case (``model``, default :class:`Case`).

    Parameters are worded against the algorithm's own ``Params``.
    """
    from commsim.scenario.messages import problems

    errors = exc.errors()
    outer = [e for e in errors if e["loc"][:1] != ("params",) or len(e["loc"]) == 1]
    inner = [{**e, "loc": e["loc"][1:]} for e in errors if e["loc"][:1] == ("params",) and len(e["loc"]) > 1]
    found = problems(outer, fields, model or Case) if outer else []
    if inner:
        from commsim.algorithms import get_algorithm

        params_model = get_algorithm(fields["algorithm"]).Params
        found += [(("params", *loc), m) for loc, m in problems(inner, fields.get("params"), params_model)]
    return found
