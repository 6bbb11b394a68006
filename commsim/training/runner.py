"""Running a training scenario: every machine x sync strategy x overlap x bucket size."""

from __future__ import annotations

from pathlib import Path

from commsim.training.collective import CollectiveTimer
from commsim.training.config import LoadedTrainingScenario, load_training_scenario
from commsim.training.step import StepResult, simulate_step

__all__ = ["run_loaded_training", "run_training_scenario"]


def run_loaded_training(loaded: LoadedTrainingScenario) -> list[StepResult]:
    """Every step of a loaded scenario.

    Order: node counts (outermost), sync strategies, overlap, bucket sizes
    (innermost). One :class:`CollectiveTimer` per machine and strategy, so
    each distinct bucket size is simulated once for all overlap settings.
    """
    scenario = loaded.scenario
    results = []
    for nodes, topology in loaded.machines:
        for entry in scenario.sync:
            timer = CollectiveTimer(topology, entry.algorithm, entry.params, scenario.ranks)
            for overlap in scenario.overlap:
                for nbytes in loaded.bucket_nbytes:
                    results.append(
                        simulate_step(
                            loaded.workload,
                            timer,
                            bucket_bytes=nbytes,
                            overlap=overlap,
                            optimizer=loaded.optimizer_s,
                            label=entry.label or entry.algorithm,
                            nodes=nodes,
                        )
                    )
    return results


def run_training_scenario(path: str | Path) -> list[StepResult]:
    """Load the training scenario at ``path`` and simulate every step it asks for.

    Raises
    ------
    ScenarioError, TrainingError
        With ``file:line:col`` when the file is invalid (see
        :func:`commsim.training.config.parse_training_scenario`).
    """
    return run_loaded_training(load_training_scenario(path))
