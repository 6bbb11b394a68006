"""Which collective ``commsim validate`` models, checked and reported as a fact.

The parser decides the collective with its evidence
(:mod:`~commsim.calibrate.parser_collective`); here it is checked against
``--collective`` and the collectives the model covers, a log parsed without
a given collective is read again with it (so its busbw is checked with it),
and the choice becomes the ``collective`` :class:`~commsim.calibrate.evidence.Fact`
of the report, or a refusal that names the ``--collective`` values that fit.
"""

from __future__ import annotations

from commsim.calibrate.evidence import Evidence, Fact
from commsim.calibrate.parser import NcclTestsLog, parse_nccl_tests_runs
from commsim.calibrate.parser_collective import BINARY, FILE_NAME, GIVEN, TABLE, TABLE_AMBIGUOUS
from commsim.calibrate.parser_ranks import EXACT_SOURCES
from commsim.collectives import Collective, get_collective
from commsim.errors import CommsimError, ParseError

__all__ = ["collective_fact", "modelled_collective", "with_collective"]


def modelled_collective(log: NcclTestsLog, collective: str | None) -> Collective:
    """The collective to model: ``collective`` (``--collective``) or the one the parser decided."""
    binary = next((e for e in log.collective_evidence if e.source == BINARY), None)
    if collective and binary is not None and get_collective(collective) != get_collective(binary.value):
        raise ParseError(
            f"the log measured {binary.value}, not {collective} (it runs {binary.text}); --collective is "
            "only for logs that do not name theirs",
            log.source,
        )
    name = collective or log.collective
    if name is None:
        raise ParseError(_unknown_collective(log), log.source)
    if name == "hypercube" and not collective:
        said = next((e for e in log.collective_evidence if e.value == "hypercube"), None)
        how = f" ({said.source}: {said.text})" if said is not None and said.text else ""
        raise ParseError(
            f"the log measured nccl-tests' hypercube test{how}, which commsim does not model (its "
            "exchanges along a hypercube's dimensions are no NCCL collective)"
            + (
                "" if binary is not None else "; if the table is another collective's, give --collective NAME"
            ),
            log.source,
        )
    return get_collective(name)


def with_collective(log: NcclTestsLog, raw: str, collective: str | None) -> NcclTestsLog:
    """``log`` read again with ``collective`` given, so its busbw is checked with it.

    :func:`validate_runs` and :func:`validate_file` parse with it already; this
    is for a log parsed without it. Unchanged when ``raw`` is not its text.
    """
    if not collective or any(e.source == GIVEN for e in log.collective_evidence):
        return log
    given = log.rank_evidence[0].source == EXACT_SOURCES[0] if log.rank_evidence else False
    try:
        runs = parse_nccl_tests_runs(raw, log.source, collective, n_ranks=log.n_ranks if given else None)
    except CommsimError:
        return log
    again = runs[log.run_index - 1] if len(runs) >= log.run_index else None
    return again if again is not None and again.rows == log.rows else log


def _unknown_collective(log: NcclTestsLog) -> str:
    """Why the collective is unknown, and which ``--collective`` values would fit."""
    table = next((e for e in log.collective_evidence if e.source == TABLE_AMBIGUOUS), None)
    by_name = next((e for e in log.collective_evidence if e.source == FILE_NAME), None)
    fits: tuple[str, ...] = table.value if table is not None else ()
    why = f"; its result table (line {table.line}): {table.text}" if table is not None else ""
    if by_name is not None:
        names = by_name.value if isinstance(by_name.value, tuple) else (by_name.value,)
        why += f"; the file name {by_name.text!r} names {_and(names)}"
        why += ", which the table rules out" if table is not None else ""
    give = " or ".join(f"--collective {name}" for name in fits) if fits else "--collective NAME"
    return (
        f"the log does not say which collective it measured: it names no nccl-tests binary{why}; give {give}"
    )


def _fits(table: Evidence) -> tuple[str, ...]:
    return table.value if isinstance(table.value, tuple) else (table.value,)


def _and(names: tuple[str, ...]) -> str:
    return ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else "".join(names)


def collective_fact(log: NcclTestsLog, coll: Collective, collective: str | None) -> Fact:
    """The collective modelled as a reported fact: where it comes from, in one sentence.

    Parameters
    ----------
    log : NcclTestsLog
        The parsed run (its ``collective_evidence``).
    coll : Collective
        The collective modelled.
    collective : str or None
        The ``--collective`` given, if any.
    """
    evidence = log.collective_evidence
    if collective and not any(e.source == GIVEN for e in evidence):
        evidence = (Evidence(coll.value, GIVEN), *evidence)
    chosen = evidence[0] if evidence else Evidence(coll.value, GIVEN)
    table = next((e for e in evidence if e.source in (TABLE, TABLE_AMBIGUOUS)), None)
    if chosen.source == BINARY:
        note = f"the log runs {chosen.text}"
    elif chosen.source == TABLE:
        note = str(chosen.text)
    elif chosen.source == FILE_NAME and table is not None:
        note = f"the file name {chosen.text!r} picks it from what the table allows ({table.text})"
    elif chosen.source == FILE_NAME:
        return Fact(
            "collective",
            coll.value,
            tuple(evidence),
            assumed=True,
            option="--collective",
            note=f"only the file name {chosen.text!r} names it (no binary in the log; the table is silent)",
        )
    elif table is not None and coll.value in _fits(table):
        note = f"given; the result table agrees ({table.text})"
    else:
        note = f"given, against the result table ({table.text})" if table is not None else ""
    return Fact("collective", coll.value, tuple(evidence), option="--collective", note=note)
