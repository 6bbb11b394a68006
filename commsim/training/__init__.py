"""From collectives to training steps: workloads, gradient buckets, overlap and scaling.

A :class:`Workload` (layers with parameters and compute times; shipped
models :func:`resnet50`, :func:`bert_large`, :func:`gpt2_xl`) is trained
data-parallel on a topology: :func:`simulate_step` packs gradients into
buckets as the backward pass produces them and times each bucket's
all-reduce with any registered algorithm. Training scenario files (a
top-level ``workload`` key) run with :func:`run_training_scenario`.
"""

from commsim.training.buckets import DEFAULT_BUCKET_BYTES, Bucket, pack_buckets
from commsim.training.collective import CollectiveCost, CollectiveTimer
from commsim.training.config import (
    LoadedTrainingScenario,
    TrainingScenario,
    is_training_scenario,
    load_training_scenario,
    parse_training_scenario,
)
from commsim.training.errors import TrainingError
from commsim.training.models import (
    MODELS,
    bert_large,
    bert_large_shapes,
    get_model,
    gpt2_xl,
    gpt2_xl_shapes,
    resnet50,
    resnet50_shapes,
)
from commsim.training.report import best_steps, scaling_table, training_json, training_report, training_table
from commsim.training.runner import run_loaded_training, run_training_scenario
from commsim.training.step import BucketTiming, Span, StepResult, simulate_step
from commsim.training.trace import step_trace, write_step_trace
from commsim.training.workload import Layer, LayerShape, Throughput, Workload, workload_from_flops

__all__ = [
    "DEFAULT_BUCKET_BYTES",
    "MODELS",
    "Bucket",
    "BucketTiming",
    "CollectiveCost",
    "CollectiveTimer",
    "Layer",
    "LayerShape",
    "LoadedTrainingScenario",
    "Span",
    "StepResult",
    "Throughput",
    "TrainingError",
    "TrainingScenario",
    "Workload",
    "bert_large",
    "bert_large_shapes",
    "best_steps",
    "get_model",
    "gpt2_xl",
    "gpt2_xl_shapes",
    "is_training_scenario",
    "load_training_scenario",
    "pack_buckets",
    "parse_training_scenario",
    "resnet50",
    "resnet50_shapes",
    "run_loaded_training",
    "run_training_scenario",
    "scaling_table",
    "simulate_step",
    "step_trace",
    "training_json",
    "training_report",
    "training_table",
    "workload_from_flops",
    "write_step_trace",
]
