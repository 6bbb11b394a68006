"""Wrong answers and misleading messages a fresh-eyes review of the stop's diff found.

Each test builds the input the review used (from a development log or a few lines) and asserts
what the tool should say; the docstring says what it said before.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from commsim.calibrate.infer_layout import InferenceError
from commsim.calibrate.inference import infer_run
from commsim.calibrate.parser import load_nccl_tests

DATA = Path(__file__).parent / "data" / "nccl-tests"
A100 = DATA / "A100-SXM4-80GB-HGX-NVSwitch_all_reduce_8gpu_1.txt"


def _a100_text() -> str:
    """The 8 x A100 development log without its provenance lines (30 rows, 8 B to 4 GiB)."""
    lines = A100.read_text(encoding="utf-8").splitlines(keepends=True)
    return "".join(line for line in lines if not line.startswith("##"))


def test_a_gpu_name_several_entries_print_is_refused_as_ambiguous_naming_each(tmp_path: Path) -> None:
    """'AMD Instinct MI250X/MI250' is what rocm-smi prints for both the MI250X and the MI250 (the
    catalogue lists it under both). It was refused as "GPU ... is not in the catalogue (name ... is
    printed by several GPUs (mi250x, mi250))"; it is in the catalogue, twice, so the refusal says the
    name cannot be told apart and offers --gpu mi250x or --gpu mi250."""
    text = _a100_text().replace("NVIDIA A100-SXM4-80GB", "AMD Instinct MI250X/MI250")
    path = tmp_path / "mi250.txt"
    path.write_text(text)
    with pytest.raises(InferenceError) as refused:
        infer_run(load_nccl_tests(path), text)
    message = str(refused.value)
    assert "not in the catalogue" not in message
    assert "cannot be told apart" in message
    assert "--gpu mi250x or --gpu mi250" in message
