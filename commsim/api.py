"""The Python API: one call from names and sizes to a :class:`Result`."""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from commsim.algorithms import Problem, make_algorithm
from commsim.collectives import Collective
from commsim.engine import replay
from commsim.errors import CommsimError, ScenarioError, ScheduleError, UnitError, check_argument
from commsim.results import Result, link_loads
from commsim.scenario.case import Case, CaseError, select_ranks
from commsim.scenario.machine import build_machine, parse_overrides
from commsim.topology.model import Topology
from commsim.units import BANDWIDTH_FORMS, TIME_FORMS, format_size
from commsim.verify import should_verify

if TYPE_CHECKING:  # the file readers (PyYAML) are imported when a file is read
    from commsim.config import LoadedScenario
    from commsim.schedule import Schedule
    from commsim.training.config import LoadedTrainingScenario

__all__ = [
    "Case",
    "FileRun",
    "explain",
    "load_file",
    "parse_overrides",
    "run_file",
    "run_scenario",
    "select_ranks",
    "simulate",
    "simulate_case",
]


def simulate(
    topology: str | Topology,
    algorithm: str,
    collective: str | Collective = "all_reduce",
    size: str | float = "160 MB",
    *,
    params: Mapping[str, Any] | None = None,
    ranks: int | Sequence[str] | None = None,
    root: int = 0,
    label: str | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    verify: bool | None = None,
    gpus: int | None = None,
) -> Result:
    """Simulate one collective and return its :class:`Result`.

    Parameters
    ----------
    topology : str or Topology
        A shipped name (``"dgx1_v100"``), a builder name (``"ring"`` with
        ``gpus=``), a YAML path, or a Topology.
    algorithm : str
        A registered algorithm name (``commsim algos`` lists them).
    collective : str
        ``"all_reduce"`` etc.
    size : str or float
        nccl-tests size, e.g. ``"160 MB"`` or bytes.
    params : mapping, optional
        Algorithm parameters.
    ranks : int or list of str, optional
        Participating GPUs (default all).
    root : int
        Root rank for rooted collectives.
    overrides : mapping, optional
        Per link kind or family: ``{"nvlink": {"bandwidth": "18 GB/s"}}``.
        Figures need their unit, as in a scenario file: ``{"bandwidth": 16}``
        is refused, not read as 16 B/s.
    verify : bool, optional
        Prove the schedule correct symbolically before replaying it (see
        :func:`commsim.verify.verify_schedule`). By default (None) every plan
        of at most :data:`commsim.verify.VERIFY_LIMIT` sends is verified;
        False skips it for speed, True verifies whatever the size.

    Raises
    ------
    CaseError
        If the case is not one that can be asked for (an unknown name, a
        size that is not whole bytes > 0, parameters the algorithm does not
        take, ranks or a root the machine does not have), one line per
        argument: ``size: size 0 must be at least 1 byte; ...``.
    AlgorithmError
        If the algorithm cannot run on this machine (found while planning).

    Examples
    --------
    >>> r = simulate("pcie_4gpu_switch", "sharded_parameter_server", size="160 MB")
    >>> round(r.time_s * 1e3, 6)
    15.0
    """
    _check_simulate_arguments(params, overrides, label, verify)
    machine = build_machine(topology, overrides, gpus=gpus)
    fields: dict[str, Any] = {"collective": collective, "algorithm": algorithm, "params": dict(params or {})}
    fields |= {"nbytes": size, "ranks": ranks, "root": root, "label": label}
    try:
        case = Case.of(topology=machine, **fields)
    except CaseError as exc:  # in the words of this function's arguments
        renamed = [(("size", *loc[1:]) if loc[0] == "nbytes" else loc, m) for loc, m in exc.problems]
        raise CaseError(renamed) from None
    return simulate_case(case, verify=verify)


def _check_simulate_arguments(params: Any, overrides: Any, label: Any, verify: Any) -> None:
    """The arguments of :func:`simulate` no model checks, refused by name rather than deep inside."""
    check_argument(params, (Mapping, type(None)), "params", "a mapping of parameter names to values")
    expected = "a mapping {kind or family: {bandwidth: ..., latency: ...}}"
    check_argument(overrides, (Mapping, type(None)), "overrides", expected)
    for kind, figures in (overrides or {}).items():
        check_argument(figures, Mapping, f"overrides[{kind!r}]", "a mapping such as {'bandwidth': '18 GB/s'}")
        try:  # an unknown field, or a figure that is no quantity
            parse_overrides({kind: figures})
        except UnitError as exc:
            raise UnitError(f"overrides[{kind!r}]: {exc}") from None
        for name, forms in (("bandwidth", BANDWIDTH_FORMS), ("latency", TIME_FORMS)):
            value = figures.get(name)
            if isinstance(value, numbers.Real) and not isinstance(value, bool):  # 16 would be 16 B/s
                raise UnitError(
                    f"overrides[{kind!r}][{name!r}]: {value!r} has no unit (a bare number is refused, "
                    f"as in a scenario file); expected {forms}"
                )
    check_argument(label, (str, type(None)), "label", "text")
    check_argument(verify, (bool, type(None)), "verify", "True, False or None")


MAX_VERIFY_STATE = 150_000_000
"""Largest symbolic state (device x chunk x rank counters) verified even when asked for
(a ring of 512 GPUs, 134 million: about 5 s and 1.2 GB)."""


def _check_verifiable(schedule: Schedule) -> None:
    """Refuse to verify a plan whose symbolic state could not fit in memory in a reasonable time."""
    cells = len(schedule.devices) * schedule.chunk_nbytes.size * len(schedule.ranks)
    if cells > MAX_VERIFY_STATE:
        raise ScheduleError(
            f"verification (--verify) of this plan of {len(schedule.ranks):,} ranks needs {cells:,} "
            f"symbolic counters (devices x chunks x ranks), more than the limit of {MAX_VERIFY_STATE:,}; "
            "run it without --verify"
        )


def simulate_case(case: Case, verify: bool | None = None) -> Result:
    """Plan ``case``, verify the plan, replay it, and return its :class:`Result`.

    Parameters
    ----------
    case : Case
        A checked case (:meth:`Case.of`).
    verify : bool, optional
        As for :func:`simulate`.

    Raises
    ------
    AlgorithmError
        If the algorithm cannot run on the machine (found while planning).
    """
    problem = Problem(case.topology, case.ranks, case.collective, case.nbytes, case.root)
    algo = make_algorithm(case.algorithm, dict(case.params))
    schedule = algo.plan(problem)
    if verify:
        _check_verifiable(schedule)
    if verify or (verify is None and should_verify(schedule)):
        schedule.verify()
    record = replay(schedule, case.topology)
    analytic = algo.analytic_time(problem)
    time_s = analytic if algo.time_from_model and analytic is not None else record.makespan_s
    return Result(
        label=case.name,
        algorithm=case.algorithm,
        collective=case.collective,
        topology=case.topology.name,
        ranks=problem.n,
        nbytes=problem.nbytes,
        time_s=time_s,
        replay_time_s=record.makespan_s,
        links=link_loads(case.topology, record, time_s),
        analytic_time_s=analytic,
        params=dict(case.params),
        record=record,
        schedule=schedule,
        topology_obj=case.topology,
    )


def run_scenario(
    loaded: LoadedScenario,
    verify: bool | None = None,
    progress: Callable[[list[Any]], Iterable[Any]] | None = None,
) -> list[Result]:
    """Every case of a loaded scenario (algorithms outer, sizes inner).

    Parameters
    ----------
    loaded : commsim.config.LoadedScenario
    verify : bool, optional
        As for :func:`simulate` (default: every plan up to the size limit).
    progress : callable, optional
        Wraps the list of cases, e.g. to draw a progress bar.

    Raises
    ------
    ScenarioError
        An error found while planning a case, at the line of its algorithm entry.
    """
    from commsim.config import LoadedScenario

    expected = "a loaded scenario (commsim.load_scenario); for a path use run_file"
    check_argument(loaded, LoadedScenario, "loaded", expected)
    positions = loaded.entry_positions
    per_entry = max(1, len(loaded.sizes_nbytes))
    cases: list[Case] = list(loaded.cases)
    results = []
    for index, case in enumerate(progress(cases) if progress else cases):
        try:
            results.append(simulate_case(case, verify=verify))
        except CommsimError as exc:
            entry = index // per_entry
            if entry >= len(positions):
                raise
            what = f"algorithms.{entry} ({case.algorithm}, {format_size(case.nbytes)})"
            raise ScenarioError(f"{positions[entry]}: {what}: {exc}") from None
    return results


@dataclass(frozen=True)
class FileRun:
    """What :func:`run_file` ran: a collective scenario's results or a training scenario's steps.

    Attributes
    ----------
    kind : {"collective", "training"}
        Which scenario the file held (training scenarios have a top-level ``workload``).
    title : str
        ``name: collective on machine`` (or the training scenario's title), for reports.
    results : list of Result
        Collective scenarios: one per (algorithm, size), algorithms outer.
    steps : list of commsim.training.StepResult
        Training scenarios: one per (nodes, strategy, overlap, bucket size).
    """

    kind: Literal["collective", "training"]
    title: str
    results: list[Result] = field(default_factory=list)
    steps: list[Any] = field(default_factory=list)


def load_file(path: str | Path) -> LoadedScenario | LoadedTrainingScenario:
    """Read a scenario file once: a collective scenario, or a training one (top-level ``workload``).

    Parameters
    ----------
    path : str or Path
        A scenario YAML file; relative paths in it start from its directory.

    Returns
    -------
    commsim.config.LoadedScenario or commsim.training.LoadedTrainingScenario
        Told apart by ``kind`` (``"collective"`` or ``"training"``); every
        case checked, each problem at its line.

    Raises
    ------
    ScenarioError
        If the file is malformed (with its line).
    """
    from commsim.errors import ScenarioError
    from commsim.yamlio import kind_of, read_text, read_yaml

    check_argument(path, (str, Path), "path", "a scenario file's path (str or Path)")
    path = Path(path)
    data, node = read_yaml(read_text(path, ScenarioError), str(path), ScenarioError)
    if not isinstance(data, dict):
        raise ScenarioError(f"{path}: expected a mapping of scenario fields, got {kind_of(data)}")
    if "workload" in data:
        from commsim.training.config import training_from_data

        return training_from_data(data, node, str(path), path.parent)
    from commsim.config import scenario_from_data

    return scenario_from_data(data, node, str(path), path.parent)


def run_file(
    path: str | Path | LoadedScenario | LoadedTrainingScenario,
    *,
    verify: bool | None = None,
    progress: Callable[[list[Any]], Iterable[Any]] | None = None,
) -> FileRun:
    """Run a scenario file, collective or training, as ``commsim run FILE`` does.

    Parameters
    ----------
    path : str, Path, or what :func:`load_file` returned
        A scenario YAML file (read once), or the file already loaded.
    verify : bool, optional
        As for :func:`simulate`; collective scenarios only.
    progress : callable, optional
        Wraps the list of cases of a collective scenario (a progress bar).

    Raises
    ------
    ScenarioError
        If the file is malformed (with its line), or ``verify`` is given for a
        training scenario.

    Examples
    --------
    >>> run = run_file("scenarios/pcie_4gpu_sync_strategies.yaml")  # doctest: +SKIP
    >>> [round(r.time_s * 1e3) for r in run.results]  # doctest: +SKIP
    [60, 80, 15, 15]
    """
    from commsim import config
    from commsim.training.config import LoadedTrainingScenario

    expected = "a scenario file's path (str or Path), or what load_file returned"
    check_argument(path, (str, Path, config.LoadedScenario, LoadedTrainingScenario), "path", expected)
    check_argument(verify, (bool, type(None)), "verify", "None, True or False")  # 'no' is true
    if progress is not None and not callable(progress):
        check_argument(progress, type(None), "progress", "None or a callable wrapping the list of cases")
    loaded = load_file(path) if isinstance(path, (str, Path)) else path
    if not isinstance(loaded, config.LoadedScenario):  # a training scenario
        from commsim.training import run_loaded_training

        if verify is not None:
            raise ScenarioError(
                f"{loaded.source}: verify applies to collective scenarios, not training scenarios"
            )
        return FileRun("training", loaded.title, steps=run_loaded_training(loaded))
    results = run_scenario(loaded, verify=verify, progress=progress)
    title = f"{loaded.scenario.name}: {loaded.collective} on {loaded.topology.name}"
    return FileRun("collective", title, results=results)


def explain(result: Result) -> str | None:
    """Why the algorithm of ``result`` chose what it chose (e.g. NCCL's algorithm and protocol).

    Returns
    -------
    str or None
        The algorithm's own explanation, or None if it makes no model choice.
    """
    from commsim.algorithms import make_algorithm

    check_argument(result, Result, "result", "a Result (from simulate or run_file)")
    algorithm = make_algorithm(result.algorithm, result.params)
    explain_problem = getattr(algorithm, "explain", None)
    if explain_problem is None or result.schedule is None or result.topology_obj is None:
        return None
    schedule = result.schedule
    problem = Problem(
        result.topology_obj, schedule.ranks, result.collective, result.nbytes, schedule.root or 0
    )
    return str(explain_problem(problem))
