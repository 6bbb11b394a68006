"""Gradient buckets: gradients packed in the order the backward pass produces them.

PyTorch DDP style (Li et al., "PyTorch Distributed: Experiences on
Accelerating Data Parallel Training", VLDB 2020, section 3.2): walking the
layers in reverse (backward) order, gradients go into the current bucket;
a bucket closes as soon as it holds at least ``bucket_bytes``, so a bucket
may exceed the cap by less than one layer's gradient, and the last bucket
holds what is left. A cap at least as large as the model's gradients gives
one bucket (DDP does the same: the cap is an upper bound, not a size that
must be filled). A bucket is *ready* when the backward of its last layer
(the earliest in forward order) ends. Layers without parameters add no
bytes. Unlike DDP, the first bucket is not special-cased (DDP caps it at
1 MiB, ``dist._DEFAULT_FIRST_BUCKET_BYTES``) and layers are not split.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from commsim.training.errors import TrainingError
from commsim.training.workload import Workload

__all__ = ["DEFAULT_BUCKET_BYTES", "Bucket", "backward_ends", "check_bucket_bytes", "pack_buckets"]

DEFAULT_BUCKET_BYTES = 25 * 2**20
"""PyTorch DDP's default ``bucket_cap_mb=25``: 25 MiB = 26,214,400 B (DDP multiplies by 2**20).

``torch.nn.parallel.DistributedDataParallel``'s docs: "bucket_cap_mb ... Default: 25";
its constructor computes ``int(bucket_cap_mb * 1024 * 1024)`` bytes.
"""


@dataclass(frozen=True)
class Bucket:
    """One bucket of gradients.

    Attributes
    ----------
    index : int
        0 is the first to become ready (the last layers of the model).
    layers : tuple of str
        Layer names, in the order their gradients became ready.
    nbytes : float
        Gradient bytes.
    ready_s : float
        When its last gradient is ready, seconds from the start of the step.
    """

    index: int
    layers: tuple[str, ...]
    nbytes: float
    ready_s: float


def backward_ends(workload: Workload) -> list[float]:
    """Per layer (forward order), when its backward ends: forward, then layers in reverse.

    The first layer's end is ``workload.compute_s`` exactly (not a rounding away).
    """
    ends = [0.0] * len(workload.layers)
    clock = workload.forward_s
    for i in range(len(workload.layers) - 1, -1, -1):
        clock += workload.layers[i].backward_s
        ends[i] = clock
    ends[0] = workload.compute_s
    return ends


def check_bucket_bytes(workload: Workload, bucket_bytes: float) -> None:
    """Raise :class:`TrainingError` unless ``bucket_bytes`` is a positive, finite number of bytes.

    A cap larger than the model's gradients is valid: the model fits in one bucket.
    """
    if not 0 < bucket_bytes < math.inf:
        raise TrainingError(
            f"bucket size must be a positive number of bytes (e.g. '25 MiB', PyTorch DDP's default), "
            f"got {bucket_bytes!r} for {workload.name}"
        )


def pack_buckets(workload: Workload, bucket_bytes: float) -> list[Bucket]:
    """The buckets of ``workload`` with cap ``bucket_bytes``, in the order they become ready.

    Raises
    ------
    TrainingError
        If ``bucket_bytes`` is not positive. A cap of at least the model's
        gradient bytes gives one bucket.
    """
    check_bucket_bytes(workload, bucket_bytes)
    ends = backward_ends(workload)
    buckets: list[Bucket] = []
    names: list[str] = []
    nbytes = 0.0
    for i in range(len(workload.layers) - 1, -1, -1):
        layer = workload.layers[i]
        if layer.params == 0:
            continue
        names.append(layer.name)
        nbytes += layer.params * workload.dtype_bytes
        if nbytes >= bucket_bytes:
            buckets.append(Bucket(len(buckets), tuple(names), nbytes, ends[i]))
            names, nbytes = [], 0.0
    if names:
        buckets.append(Bucket(len(buckets), tuple(names), nbytes, ends[_first_with_params(workload)]))
    return buckets


def _first_with_params(workload: Workload) -> int:
    return next(i for i, layer in enumerate(workload.layers) if layer.params > 0)
