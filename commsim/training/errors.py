"""The error a training-step question raises when its inputs cannot make sense."""

from __future__ import annotations

from commsim.errors import CommsimError

__all__ = ["TrainingError"]


class TrainingError(CommsimError):
    """A workload, bucket size or step option is invalid.

    Examples: a model with no layers, a bucket larger than the model's
    gradients, overlap requested for a workload without backward compute.
    The message says what was wrong and what would be valid.
    """
