"""Shipped models, computed from their architecture hyper-parameters (no downloads).

Each function returns a :class:`~commsim.training.workload.Workload` for a
per-GPU batch on a device of stated throughput. The layer lists (parameters
and forward FLOPs) come from :func:`resnet50_shapes`,
:func:`bert_large_shapes` and :func:`gpt2_xl_shapes`; their totals are
checked in the tests against the published counts.

Default device: :data:`DEFAULT_FLOPS_PER_S` (a V100's fp16 tensor-core peak,
125 TFLOPS) at :data:`DEFAULT_EFFICIENCY`; pass the figures of your device.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

from commsim.errors import UnknownNameError
from commsim.training.errors import TrainingError
from commsim.training.workload import LayerShape, Throughput, Workload, parse_flops, workload_from_flops

__all__ = [
    "DEFAULT_EFFICIENCY",
    "DEFAULT_FLOPS_PER_S",
    "MODELS",
    "SEQUENCE_MODELS",
    "bert_large",
    "bert_large_shapes",
    "get_model",
    "gpt2_xl",
    "gpt2_xl_shapes",
    "resnet50",
    "resnet50_shapes",
]

DEFAULT_FLOPS_PER_S = 125e12
"""V100 SXM2 fp16 tensor-core peak (NVIDIA V100 datasheet), FLOP/s."""

DEFAULT_EFFICIENCY = 0.25
"""An assumed share of the peak that training kernels reach; state your own."""


def _check_positive(**values: int) -> None:
    for what, value in values.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise TrainingError(f"{what} must be a whole number >= 1, got {value!r}")


# -- ResNet-50 --------------------------------------------------------------------------------


def _conv(name: str, k: int, c_in: int, c_out: int, hw_out: int, batch: int, norm: bool = True) -> LayerShape:
    """A convolution (no bias) followed by batch norm (2 parameters per output channel).

    FLOPs: 2 x k*k*c_in*c_out x H_out x W_out x batch (batch norm not counted).
    """
    weights = k * k * c_in * c_out
    return LayerShape(name, "conv", weights + (2 * c_out if norm else 0), 2.0 * weights * hw_out**2 * batch)


def resnet50_shapes(batch: int = 64, image: int = 224) -> list[LayerShape]:
    """ResNet-50 (v1.5, torchvision) as 53 conv+BN layers and the classifier.

    Stages of bottleneck blocks [3, 4, 6, 3] of widths 64, 128, 256, 512
    (output 4x the width); the stride-2 sits on the 3x3 convolution (v1.5);
    the first block of each stage has a 1x1 projection shortcut. The
    classifier is dense, 2048 -> 1000 with bias: FLOPs 2 x 2048 x 1000 x
    batch. Total 25,557,032 parameters; about 4.1 G multiply-adds per
    224x224 image.

    References
    ----------
    He, Zhang, Ren & Sun, "Deep Residual Learning for Image Recognition",
    CVPR 2016, Table 1 (50-layer column); torchvision ``resnet50``.
    """
    _check_positive(batch=batch, image=image)
    hw = image // 2  # conv1, stride 2
    shapes = [_conv("conv1", 7, 3, 64, hw, batch)]
    hw //= 2  # max pool, stride 2
    c_in = 64
    for stage, (blocks, width) in enumerate(zip((3, 4, 6, 3), (64, 128, 256, 512)), start=1):
        for block in range(blocks):
            stride = 2 if stage > 1 and block == 0 else 1
            hw_out = hw // stride
            prefix = f"layer{stage}.{block}"
            shapes.append(_conv(f"{prefix}.conv1", 1, c_in, width, hw, batch))
            shapes.append(_conv(f"{prefix}.conv2", 3, width, width, hw_out, batch))
            shapes.append(_conv(f"{prefix}.conv3", 1, width, 4 * width, hw_out, batch))
            if block == 0:
                shapes.append(_conv(f"{prefix}.downsample", 1, c_in, 4 * width, hw_out, batch))
            c_in, hw = 4 * width, hw_out
    shapes.append(LayerShape("fc", "linear", c_in * 1000 + 1000, 2.0 * c_in * 1000 * batch))
    return shapes


# -- transformers ---------------------------------------------------------------------------


def _attention(name: str, hidden: int, seq: int, batch: int) -> LayerShape:
    """Self-attention with Q, K, V and output projections (with biases) and its layer norm.

    FLOPs: 2 x 4 hidden^2 x tokens (projections) + 2 x 2 x seq^2 x hidden x
    batch (scores Q K^T and the weighted sum of V; the full matrix is
    computed even when causal).
    """
    params = 4 * (hidden * hidden + hidden) + 2 * hidden
    tokens = batch * seq
    flops = 2.0 * 4 * hidden * hidden * tokens + 4.0 * seq * seq * hidden * batch
    return LayerShape(name, "attention", params, flops)


def _mlp(name: str, hidden: int, inner: int, seq: int, batch: int) -> LayerShape:
    """Two dense layers hidden -> inner -> hidden (with biases) and a layer norm.

    FLOPs: 2 x 2 hidden x inner x tokens (= 2 x weight params x tokens).
    """
    params = 2 * hidden * inner + inner + hidden + 2 * hidden
    return LayerShape(name, "mlp", params, 2.0 * 2 * hidden * inner * batch * seq)


def bert_large_shapes(batch: int = 8, seq: int = 512) -> list[LayerShape]:
    """BERT-large: embeddings, 24 encoder layers (attention, feed-forward) and the pooler.

    L = 24, H = 1024, A = 16 heads, feed-forward 4096, WordPiece vocabulary
    30,522, 512 positions, 2 token types. Embedding lookups count 0 FLOPs;
    the pooler is dense on the [CLS] token only (2 x H^2 x batch). Total
    335,141,888 parameters (the paper rounds to 340 M).

    References
    ----------
    Devlin, Chang, Lee & Toutanova, "BERT: Pre-training of Deep
    Bidirectional Transformers for Language Understanding", NAACL 2019,
    section 3 (BERT_LARGE: L=24, H=1024, A=16, 340M parameters).
    """
    _check_positive(batch=batch, seq=seq)
    hidden, inner, vocab, positions = 1024, 4096, 30522, 512
    if seq > positions:
        raise TrainingError(f"BERT-large has {positions} positions; seq={seq} is longer")
    embeddings = (vocab + positions + 2) * hidden + 2 * hidden
    shapes = [LayerShape("embeddings", "embedding", embeddings, 0.0)]
    for i in range(24):
        shapes.append(_attention(f"encoder.{i}.attention", hidden, seq, batch))
        shapes.append(_mlp(f"encoder.{i}.ffn", hidden, inner, seq, batch))
    shapes.append(LayerShape("pooler", "linear", hidden * hidden + hidden, 2.0 * hidden * hidden * batch))
    return shapes


def gpt2_xl_shapes(batch: int = 4, seq: int = 1024) -> list[LayerShape]:
    """GPT-2 XL: token and position embeddings, 48 blocks, final norm, tied LM head.

    48 layers, d_model 1600, 25 heads, feed-forward 6400, BPE vocabulary
    50,257, 1024 positions. The LM head shares the token embedding's
    weights: it is a layer with no parameters of its own and
    2 x d_model x vocab x tokens FLOPs; the shared gradient is complete
    when the embedding's backward ends. Total 1,557,611,200 parameters
    (the released checkpoint; the paper's table says 1542M).

    References
    ----------
    Radford, Wu, Child, Luan, Amodei & Sutskever, "Language Models are
    Unsupervised Multitask Learners", OpenAI 2019, Table 2 (48 layers,
    d_model 1600); the released ``gpt2-xl`` checkpoint.
    """
    _check_positive(batch=batch, seq=seq)
    hidden, vocab, positions = 1600, 50257, 1024
    if seq > positions:
        raise TrainingError(f"GPT-2 XL has {positions} positions; seq={seq} is longer")
    shapes = [LayerShape("embeddings", "embedding", (vocab + positions) * hidden, 0.0)]
    for i in range(48):
        shapes.append(_attention(f"h.{i}.attn", hidden, seq, batch))
        shapes.append(_mlp(f"h.{i}.mlp", hidden, 4 * hidden, seq, batch))
    shapes.append(LayerShape("ln_f", "norm", 2 * hidden, 0.0))
    shapes.append(LayerShape("lm_head", "linear", 0, 2.0 * hidden * vocab * batch * seq))
    return shapes


# -- workloads --------------------------------------------------------------------------------


def _throughput(flops_per_s: float | str, efficiency: float) -> Throughput:
    return Throughput(parse_flops(flops_per_s), efficiency)


def resnet50(
    batch: int = 64,
    *,
    flops_per_s: float | str = DEFAULT_FLOPS_PER_S,
    efficiency: float = DEFAULT_EFFICIENCY,
    dtype: str | int = "fp32",
    image: int = 224,
) -> Workload:
    """ResNet-50 on ``batch`` images per GPU (see :func:`resnet50_shapes`).

    ``dtype`` is the gradient's: mixed precision keeps fp32 parameters, so
    data-parallel training all-reduces fp32 gradients (102.2 MB) by default.
    """
    shapes = resnet50_shapes(batch, image)
    return workload_from_flops("resnet50", shapes, _throughput(flops_per_s, efficiency), dtype, batch)


def bert_large(
    batch: int = 8,
    seq: int = 512,
    *,
    flops_per_s: float | str = DEFAULT_FLOPS_PER_S,
    efficiency: float = DEFAULT_EFFICIENCY,
    dtype: str | int = "fp32",
) -> Workload:
    """BERT-large on ``batch`` sequences of ``seq`` tokens per GPU (see :func:`bert_large_shapes`)."""
    shapes = bert_large_shapes(batch, seq)
    return workload_from_flops("bert_large", shapes, _throughput(flops_per_s, efficiency), dtype, batch)


def gpt2_xl(
    batch: int = 4,
    seq: int = 1024,
    *,
    flops_per_s: float | str = DEFAULT_FLOPS_PER_S,
    efficiency: float = DEFAULT_EFFICIENCY,
    dtype: str | int = "fp32",
) -> Workload:
    """GPT-2 XL on ``batch`` sequences of ``seq`` tokens per GPU (see :func:`gpt2_xl_shapes`)."""
    shapes = gpt2_xl_shapes(batch, seq)
    return workload_from_flops("gpt2_xl", shapes, _throughput(flops_per_s, efficiency), dtype, batch)


MODELS: dict[str, Callable[..., Workload]] = {
    "resnet50": resnet50,
    "bert_large": bert_large,
    "gpt2_xl": gpt2_xl,
}
"""Shipped models by name."""

SEQUENCE_MODELS = frozenset({"bert_large", "gpt2_xl"})
"""Models that take a sequence length ``seq``."""


def get_model(name: str, **options: Any) -> Workload:
    """The shipped model ``name`` built with ``options`` (batch, seq, flops_per_s, ...).

    Raises
    ------
    UnknownNameError
        If there is no such model; the message lists the valid names.
    """
    if name not in MODELS:
        raise UnknownNameError("model", name, list(MODELS))
    return MODELS[name](**options)
