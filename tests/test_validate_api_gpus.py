"""``RunOptions(gpus=N)`` settles the rank count through the Python API as ``--gpus N`` does on the CLI.

Outside log 168 (nccl-tests issue #44): reduce rows of 2 RTX 2080 Ti without a header or device
list. busbw = algbw for reduce at any rank count, so only the user can give it: the CLI passed
``--gpus`` to the parser, but ``validate_file(path, options=RunOptions(gpus=2))`` dropped it and
refused the log with "pass --gpus N" (found when tools/validation_table.py gave it that way).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from commsim.calibrate.inference import RunOptions
from commsim.calibrate.validate import validate_file
from commsim.errors import ParseError

LOG = next((Path(__file__).parent / "data" / "outside").glob("168_*.txt"))


def test_gpus_in_run_options_reaches_the_parser() -> None:
    """With gpus=2 the log validates on 2 ranks as reduce."""
    validation = validate_file(LOG, options=RunOptions(gpus=2, gpu="RTX 2080 Ti", nodes=1))
    assert len(validation.inference.ranks) == 2
    assert validation.collective == "reduce"


def test_without_gpus_the_log_is_refused_naming_the_option() -> None:
    """Without it the rank count is open, and the refusal says how to give it."""
    with pytest.raises(ParseError, match="pass --gpus N"):
        validate_file(LOG, options=RunOptions(gpu="RTX 2080 Ti", nodes=1))
