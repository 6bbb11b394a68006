"""Measured against predicted: the NCCL model on a real nccl-tests log.

``validate_log`` infers the machine, predicts NCCL's time for every size in
the log, and summarises the error overall, for bandwidth-bound sizes
(>= 64 MiB) and for latency-bound ones (< 64 KiB), with a verdict.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from commsim.algorithms.base import Problem
from commsim.calibrate.inference import RunInference, RunOptions, infer_run
from commsim.calibrate.parser import NcclTestsLog, parse_nccl_tests, parse_nccl_tests_runs
from commsim.calibrate.validate_collective import (
    collective_fact,
    modelled_collective,
    with_collective,
)
from commsim.collectives import busbw_factor
from commsim.errors import ParseError, TopologyError
from commsim.nccl.params import NcclParams
from commsim.textfile import read_text_file
from commsim.topology.model import Topology

__all__ = [
    "BANDWIDTH_BOUND_BYTES",
    "LATENCY_BOUND_BYTES",
    "Validation",
    "error_summary",
    "validate_file",
    "validate_log",
    "validate_runs",
]

BANDWIDTH_BOUND_BYTES = 64 * 2**20
"""Sizes from here on are called bandwidth-bound."""
LATENCY_BOUND_BYTES = 64 * 2**10
"""Sizes below this are called latency-bound."""


@dataclass(frozen=True)
class Row:
    """One size: measured and predicted."""

    nbytes: int
    measured_time_s: float
    predicted_time_s: float
    measured_busbw_Bps: float
    predicted_busbw_Bps: float
    algorithm: str
    protocol: str
    alternatives: tuple[tuple[str, str, float], ...] = ()
    """The other candidates NCCL could have run at this size: ``(algorithm, protocol, time_s)``, each
    time the call's (the host's issue time if longer) without the pipeline fill and back-to-back
    overlap the chosen one is priced with (NCCL chooses without them)."""

    @property
    def error(self) -> float:
        """Relative error of the predicted time (positive: predicted slower)."""
        return self.predicted_time_s / self.measured_time_s - 1


def error_summary(errors: Iterable[tuple[float, float]]) -> dict[str, dict[str, float | int | None]]:
    """Median and max absolute time error: all sizes, >= 64 MiB and < 64 KiB.

    Parameters
    ----------
    errors : iterable of (nbytes, relative error)
        One pair per size; an error is ``predicted / measured - 1``.

    Returns
    -------
    dict
        ``{"all" | "bandwidth_bound" | "latency_bound": {"sizes", "median_abs_error",
        "max_abs_error"}}``; the error figures are None for a regime without sizes.
    """
    pairs = list(errors)
    return {
        "all": _regime_summary([e for _, e in pairs]),
        "bandwidth_bound": _regime_summary([e for n, e in pairs if n >= BANDWIDTH_BOUND_BYTES]),
        "latency_bound": _regime_summary([e for n, e in pairs if n < LATENCY_BOUND_BYTES]),
    }


def _regime_summary(errors: list[float]) -> dict[str, float | int | None]:
    absolute = [abs(e) for e in errors]
    return {
        "sizes": len(absolute),
        "median_abs_error": statistics.median(absolute) if absolute else None,
        "max_abs_error": max(absolute) if absolute else None,
    }


_COLLNET_NOTE = (
    "CollNet is priced with NCCL's own formulas (tuning.cc: the channels' bus bandwidth x 0.5, Chain x 0.75 "
    "before NCCL 2.18, Direct by the GPU-per-NIC ratio; the NVLS across nodes it enables at the GPU's NVLS "
    "rate capped by the node's NICs), not validated: the one public log known to run CollNet (CoreWeave, "
    "12 x 8 H100, its README's job forcing CollNet Chain, the run's settings not printed) runs a median "
    "1.08x faster than Chain's figure"
)


@dataclass(frozen=True)
class Validation:
    """A validation report."""

    source: str
    log: NcclTestsLog
    inference: RunInference
    collective: str
    rows: list[Row]
    params: NcclParams = field(default_factory=NcclParams)

    def summary(self) -> dict[str, dict[str, float | int | None]]:
        """Median and max absolute time error: all sizes, >= 64 MiB, < 64 KiB."""
        return error_summary((r.nbytes, r.error) for r in self.rows)

    def notes(self) -> list[str]:
        """What the prediction rests on that neither the log nor NCCL's tables say (for the user)."""
        from commsim.calibrate.defaults import host_note, one_gpu_note, transport_note
        from commsim.topology.linkkinds import LINK_KINDS

        inference, ranks = self.inference, len(self.inference.ranks)
        network = inference.facts.get("network")
        entry = LINK_KINDS.get(str(network.value)) if network is not None else None
        gpu = inference.facts.get("gpu")
        notes = [
            transport_note(
                entry.transport if entry else None,
                self.params,
                inference.net_protocol,
                inference.per_node,
                small_sizes=any(r.nbytes < LATENCY_BOUND_BYTES for r in self.rows),
            ),
            None if inference.cuda_graph else host_note(inference.gpus_per_thread, ranks, self.params),
            one_gpu_note(str(gpu.value) if gpu is not None else None, ranks, self.params),
            _COLLNET_NOTE if self._priced_collnet() else None,
        ]
        return [note for note in notes if note]

    def _priced_collnet(self) -> bool:
        """Whether a row's choice is one only CollNet enables: CollNet Direct or Chain, or NVLS across
        nodes."""
        inference = self.inference
        across = inference.per_node is not None and len(inference.ranks) > inference.per_node
        return inference.collnet and any(
            r.algorithm.startswith("collnet") or (across and r.algorithm == "nvls") for r in self.rows
        )

    def verdict(self) -> str:
        """Whether the measurement is what this machine should reach at large sizes.

        Withheld ("cannot judge ...") when a fact the judgement rests on (the
        board, the network, peer-to-peer ...) is only assumed: a wrong
        assumption would blame the user's hardware for the tool's guess.
        """
        from commsim.calibrate.verdict import verdict_text  # here: verdict imports this module

        return verdict_text(self)

    def _judgement(self) -> dict[str, Any]:
        """The verdict for scripts: its kind, the busbw ratio it rests on, causes and doubts."""
        from commsim.calibrate.verdict import judge

        verdict = judge(self)
        return {
            "kind": verdict.kind,
            "measured_over_model_busbw": verdict.ratio,
            "causes": list(verdict.causes),
            "doubts": list(verdict.doubts),
        }

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` object."""
        log, topo, inference = self.log, self.inference.topology, self.inference
        facts = inference.facts
        return {
            "run": inference.to_json(),
            "machine": {
                "gpu_model": facts["gpu"].value if "gpu" in facts else log.gpu_model,
                "gpus": len(inference.ranks),
                "nodes": facts["nodes"].value,
                "hosts": log.hosts,
                "nccl_version": inference.nccl_version,
                "gpus_per_thread": inference.gpus_per_thread,
                "cuda_graph": inference.cuda_graph,
                "reasons": inference.reasons,
            },
            "topology": {
                "name": topo.name,
                "description": topo.description,
                "peer_to_peer": topo.peer_to_peer,
            },
            "collective": self.collective,
            # the series of a '-d all' / '-o all' table: what tells its runs apart
            "data_type": log.rows[0].dtype,
            "redop": log.rows[0].redop,
            "root": log.rows[0].root,
            "ranks": len(inference.ranks),
            "nodes": facts["nodes"].value,
            "rows": [
                {
                    "nbytes": r.nbytes,
                    "measured_time_s": r.measured_time_s,
                    "predicted_time_s": r.predicted_time_s,
                    # null where the log printed busbw nan: NaN is not JSON
                    "measured_busbw_Bps": None if math.isnan(r.measured_busbw_Bps) else r.measured_busbw_Bps,
                    "predicted_busbw_Bps": r.predicted_busbw_Bps,
                    "algorithm": r.algorithm,
                    "protocol": r.protocol,
                }
                for r in self.rows
            ],
            "summary": self.summary(),
            "expected_error": _expected_error(),
            "warnings": list(self.log.warnings) + list(inference.warnings) + self.notes(),
            "verdict": self.verdict(),
            "judgement": self._judgement(),
        }


def _expected_error() -> dict[str, Any]:
    """The model's error on development logs (``accuracy.json``), for scripts reading ``--json``."""
    from commsim.calibrate.accuracy import expected_error

    data = expected_error()
    keys = ("logs", "machines", "as_shipped", "leave_one_machine_out", "outside")
    return {k: data[k] for k in keys if k in data}


def _raw_tool_text(raw: str) -> str:
    """The log with our ``## `` commentary lines blanked (so the others keep their line numbers)."""
    return "\n".join("" if line.lstrip().startswith("## ") else line for line in raw.splitlines())


def validate_log(
    log: NcclTestsLog,
    raw: str,
    *,
    options: RunOptions | None = None,
    topology: Topology | None = None,
    nic: str | None = None,
    params: NcclParams | None = None,
    collective: str | None = None,
) -> Validation:
    """Predict every size of ``log`` with the NCCL model and compare.

    Parameters
    ----------
    log : NcclTestsLog
        One parsed run.
    raw : str
        The log's text (for matrices and settings it may hold).
    options : RunOptions, optional
        What the user says about the run; wins over the log.
    topology, nic : optional
        Shorthands for ``options.topology`` and ``options.nic``.
    params : NcclParams, optional
        The model's parameters (the datasheet defaults when None).
    collective : str, optional
        For logs that do not name their collective (``--collective``); a log
        that names its binary must agree. Reported as the ``collective``
        fact with its evidence (:func:`~commsim.calibrate.validate_collective.collective_fact`).

    Raises
    ------
    ParseError
        When the collective is unknown, not modelled, or a needed fact is
        missing (:class:`~commsim.calibrate.inference.InferenceError`
        names the option that supplies it).
    """
    coll = modelled_collective(log, collective)
    log = with_collective(log, raw, collective)
    options = options or RunOptions()
    if topology is not None or nic is not None:
        options = replace(options, topology=topology or options.topology, nic=nic or options.nic)
    inference = infer_run(log, _raw_tool_text(raw), options)
    facts = {"collective": collective_fact(log, coll, collective), **inference.facts}
    inference = replace(inference, facts=facts)
    params = params or NcclParams()
    topo, ranks = inference.topology, inference.ranks
    if len(ranks) < 1:
        raise TopologyError(f"machine {topo.name!r} holds none of the run's ranks")
    factor = busbw_factor(coll, len(ranks)) if len(ranks) > 1 else 1.0
    rows = []
    model = inference.nccl_model(params)
    for row in log.rows:
        if row.nbytes <= 0:
            continue
        prediction = model.predict(
            Problem(topo, ranks, coll, float(row.nbytes)),
            inference.gpus_per_thread,
            inference.algorithms,
            inference.protocols,
            cuda_graph=inference.cuda_graph,
        )
        guess, time_s = prediction.chosen, prediction.time_s
        rows.append(
            Row(
                row.nbytes,
                row.oop_time_s,
                time_s,
                row.oop_busbw_Bps,
                row.nbytes / time_s * factor,
                guess.algorithm,
                guess.protocol,
                tuple(
                    (c.algorithm, c.protocol, max(c.time_s, prediction.host_s))
                    for c in prediction.candidates
                    if (c.algorithm, c.protocol) != (guess.algorithm, guess.protocol)
                ),
            )
        )
    if not rows:
        raise ParseError("the log has no row with a size above 0 bytes to compare", log.source)
    return Validation(log.source or "<log>", log, inference, coll.value, rows, params)


def validate_runs(
    path: str | Path, *, collective: str | None = None, n_ranks: int | None = None, **kwargs: Any
) -> list[Validation]:
    """Validate every run of an nccl-tests log file (scripts often write several into one).

    Keyword arguments are those of :func:`validate_log`; ``n_ranks`` (else
    the options' ``nodes`` x ``gpus_per_node``, when both are given) is
    passed to the parser for logs that do not show their rank count, and so
    is ``collective`` (for logs that name no binary), so the rows' busbw is
    checked with it. Without it the collective is the binary the log names,
    else the one the result table leaves, else the one the file name names
    among those the table allows (:mod:`~commsim.calibrate.parser_collective`).
    """
    raw = _read(path)
    given = _given_to_parser(path, n_ranks, kwargs.get("options"))
    logs = parse_nccl_tests_runs(raw, str(path), collective, **given)
    return [validate_log(log, raw, collective=collective, **kwargs) for log in logs]


def validate_file(path: str | Path, **kwargs: Any) -> Validation:
    """Load an nccl-tests log of one run and validate the model against it.

    The collective is decided as for :func:`validate_runs`.

    Raises
    ------
    ParseError
        If the file holds several runs (use :func:`validate_runs`).
    """
    collective = kwargs.pop("collective", None)
    raw = _read(path)
    given = _given_to_parser(path, kwargs.pop("n_ranks", None), kwargs.get("options"))
    return validate_log(
        parse_nccl_tests(raw, str(path), collective, **given), raw, collective=collective, **kwargs
    )


def _given_to_parser(path: str | Path, n_ranks: int | None, options: RunOptions | None) -> dict[str, Any]:
    """What the parser takes from the user: the rank count, the file's name (which may name the
    collective) and the NCCL release (a release before 2.7 rules out the send/recv tests)."""
    version = options.nccl_version if options is not None else None
    return {"n_ranks": _ranks_given(n_ranks, options), "name_hint": Path(path).name, "nccl_version": version}


def _ranks_given(n_ranks: int | None, options: RunOptions | None) -> int | None:
    """The rank count the user gave: ``--gpus``, else ``--nodes`` x ``--gpus-per-node``."""
    if n_ranks is not None or options is None:
        return n_ranks
    if options.gpus is not None:
        return options.gpus
    if options.nodes is not None and options.gpus_per_node is not None:
        return options.nodes * options.gpus_per_node
    return None


def _read(path: str | Path) -> str:
    return read_text_file(path, "nccl-tests log")
