"""Workloads: a model as an ordered list of layers with parameters and compute time.

A :class:`Workload` is what the step simulation needs: per layer, in forward
order, the parameter count (its gradient is ``params x dtype_bytes`` bytes)
and the forward and backward compute times on one GPU for the per-GPU batch.
Times are given directly (:class:`Layer`) or derived from FLOP counts and a
stated device throughput (:func:`workload_from_flops`):
``time = flops / (flops_per_s x efficiency)``.

FLOP conventions (one multiply-add = 2 FLOPs; the architecture modules in
:mod:`commsim.training.models` say which formula each layer type uses):

- convolution: ``2 x k*k*c_in*c_out x H_out x W_out x batch``;
- dense (linear) layer: ``2 x params x tokens`` (tokens = batch x positions);
- attention scores and weighted sum: ``2 x 2 x seq^2 x hidden x batch``;
- embeddings, normalisation, activations, pooling: 0 (memory-bound, small);
- backward = 2 x forward (gradients with respect to the inputs and to the
  weights each cost about one forward).
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

from commsim.training.errors import TrainingError

__all__ = [
    "BACKWARD_FACTOR",
    "DTYPE_BYTES",
    "Layer",
    "LayerShape",
    "Throughput",
    "Workload",
    "dtype_bytes",
    "parse_flops",
    "workload_from_flops",
]

DTYPE_BYTES: dict[str, int] = {"fp64": 8, "fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1}
"""Bytes per gradient element by dtype name."""

BACKWARD_FACTOR = 2.0
"""Backward FLOPs over forward FLOPs (input and weight gradients, one forward each)."""

_PREFIX = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_FLOPS_RE = re.compile(
    r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKMGTPE]?)\s*(FLOPS|FLOP/s|flops|flop/s)?\s*$"
)


def dtype_bytes(dtype: str | int) -> int:
    """Bytes per element of ``dtype`` (a name such as ``"fp16"``, or a byte count).

    Raises
    ------
    TrainingError
        On an unknown name or a non-positive count.
    """
    if isinstance(dtype, int) and not isinstance(dtype, bool):
        if dtype < 1:
            raise TrainingError(f"dtype bytes must be at least 1, got {dtype}")
        return dtype
    if not isinstance(dtype, str) or dtype not in DTYPE_BYTES:  # a dict or list is unhashable
        raise TrainingError(f"unknown dtype {dtype!r}; valid: {', '.join(DTYPE_BYTES)} or a byte count")
    return DTYPE_BYTES[str(dtype)]


def parse_flops(value: str | float | int) -> float:
    """A throughput such as ``"125 TFLOPS"``, ``"19.5 TFLOP/s"`` or ``1.25e14`` in FLOP/s.

    Raises
    ------
    TrainingError
        If the text cannot be read or the figure is not positive.
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        figure = float(value)
    else:
        match = _FLOPS_RE.match(str(value))
        if match is None:
            raise TrainingError(
                f"cannot read device throughput {value!r}; write e.g. '125 TFLOPS', '19.5 TFLOP/s' or 1.25e14"
            )
        figure = float(match.group(1)) * _PREFIX[match.group(2)]
    if not figure > 0 or figure == float("inf"):
        raise TrainingError(f"device throughput must be positive and finite, got {value!r}")
    return figure


@dataclass(frozen=True)
class Layer:
    """One layer: its parameters and its compute time on one GPU for the per-GPU batch.

    Attributes
    ----------
    name : str
    params : int
        Trainable parameters (their gradient is synchronised).
    forward_s, backward_s : float
        Compute time of the forward and the backward pass, seconds.
    forward_flops : float
        FLOPs of the forward pass, when known (0 otherwise); informational.
    """

    name: str
    params: int
    forward_s: float
    backward_s: float
    forward_flops: float = 0.0

    def __post_init__(self) -> None:
        if self.params < 0:
            raise TrainingError(f"layer {self.name!r}: params must be zero or positive, got {self.params}")
        for what, value in (("forward_s", self.forward_s), ("backward_s", self.backward_s)):
            if not 0 <= value < float("inf"):
                raise TrainingError(f"layer {self.name!r}: {what} must be zero or positive, got {value!r}")


@dataclass(frozen=True)
class LayerShape:
    """A layer as its architecture describes it: parameters and forward FLOPs, no time yet.

    Attributes
    ----------
    name : str
    kind : str
        ``"conv"``, ``"linear"``, ``"attention"``, ``"mlp"``, ``"embedding"``, ``"norm"``, ...
    params : int
    forward_flops : float
        For the whole per-GPU batch.
    backward_flops : float or None
        None means :data:`BACKWARD_FACTOR` x forward.
    """

    name: str
    kind: str
    params: int
    forward_flops: float
    backward_flops: float | None = None


@dataclass(frozen=True)
class Throughput:
    """What a device delivers: its peak FLOP/s and the fraction the model's kernels reach.

    Attributes
    ----------
    flops_per_s : float
        Peak, e.g. 125e12 for a V100's fp16 tensor cores.
    efficiency : float
        Achieved fraction of the peak, in (0, 1].
    """

    flops_per_s: float
    efficiency: float = 1.0

    def __post_init__(self) -> None:
        for name in ("flops_per_s", "efficiency"):  # a text or list failed in the comparisons below
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise TrainingError(f"{name}: expected a number, got {value!r} ({type(value).__name__})")
        if not self.flops_per_s > 0 or self.flops_per_s == float("inf"):
            raise TrainingError(f"device throughput must be positive and finite, got {self.flops_per_s!r}")
        if self.efficiency != self.efficiency:
            raise TrainingError("efficiency must be a number in (0, 1], got nan")
        if not 0 < self.efficiency <= 1:
            raise TrainingError(f"efficiency must be in (0, 1], got {self.efficiency!r}")

    @property
    def effective_flops_per_s(self) -> float:
        """``flops_per_s x efficiency``."""
        return self.flops_per_s * self.efficiency

    def time_s(self, flops: float) -> float:
        """Seconds to compute ``flops``."""
        return flops / self.effective_flops_per_s


@dataclass(frozen=True)
class Workload:
    """A model to train data-parallel: layers in forward order and the gradient dtype.

    Attributes
    ----------
    name : str
    layers : tuple of Layer
        Forward order; the backward visits them in reverse.
    dtype_bytes : int
        Bytes per gradient element (4 for fp32, 2 for fp16/bf16).
    batch : int or None
        Samples per GPU per step (for throughput figures), if known.

    Raises
    ------
    TrainingError
        If there are no layers, or two layers share a name.
    """

    name: str
    layers: tuple[Layer, ...]
    dtype_bytes: int = 4
    batch: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "layers", tuple(self.layers))
        if not self.layers:
            raise TrainingError(f"workload {self.name!r} has no layers; give at least one Layer")
        names = [layer.name for layer in self.layers]
        if len(set(names)) != len(names):
            twice = sorted({n for n in names if names.count(n) > 1})
            raise TrainingError(f"workload {self.name!r}: layer names must be unique; repeated: {twice}")
        if self.dtype_bytes < 1:
            raise TrainingError(f"workload {self.name!r}: dtype_bytes must be at least 1")

    @cached_property
    def params(self) -> int:
        """Total trainable parameters."""
        return sum(layer.params for layer in self.layers)

    @property
    def nbytes(self) -> float:
        """Gradient bytes per GPU per step."""
        return float(self.params * self.dtype_bytes)

    @cached_property
    def forward_s(self) -> float:
        """Forward pass time, seconds."""
        return sum(layer.forward_s for layer in self.layers)

    @cached_property
    def backward_s(self) -> float:
        """Backward pass time, seconds."""
        return sum(layer.backward_s for layer in self.layers)

    @property
    def compute_s(self) -> float:
        """Forward plus backward, seconds."""
        return self.forward_s + self.backward_s

    @property
    def forward_flops(self) -> float:
        """Forward FLOPs of the per-GPU batch (0 where unknown)."""
        return sum(layer.forward_flops for layer in self.layers)

    def scaled(self, factor: float, name: str | None = None) -> Workload:
        """The same layers with every compute time multiplied by ``factor`` (0 allowed)."""
        if not 0 <= factor < float("inf"):
            raise TrainingError(f"compute scale factor must be zero or positive, got {factor!r}")
        layers = tuple(
            Layer(l.name, l.params, l.forward_s * factor, l.backward_s * factor, l.forward_flops)
            for l in self.layers
        )
        return Workload(name or self.name, layers, self.dtype_bytes, self.batch)


def workload_from_flops(
    name: str,
    shapes: Iterable[LayerShape],
    throughput: Throughput,
    dtype: str | int = "fp32",
    batch: int | None = None,
) -> Workload:
    """Turn architecture shapes into a :class:`Workload` on a device of ``throughput``.

    Each layer's time is its FLOPs over ``throughput.effective_flops_per_s``;
    a shape without ``backward_flops`` takes :data:`BACKWARD_FACTOR` x its
    forward FLOPs.
    """
    layers = []
    for shape in shapes:
        backward = (
            shape.backward_flops
            if shape.backward_flops is not None
            else BACKWARD_FACTOR * shape.forward_flops
        )
        layers.append(
            Layer(
                shape.name,
                shape.params,
                throughput.time_s(shape.forward_flops),
                throughput.time_s(backward),
                shape.forward_flops,
            )
        )
    return Workload(name, tuple(layers), dtype_bytes(dtype), batch)
