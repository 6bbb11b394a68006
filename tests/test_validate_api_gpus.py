"""``RunOptions`` reaches the parser through the Python API as the CLI's options do.

Outside log 168 (nccl-tests issue #44): reduce rows of 2 RTX 2080 Ti without a header or device
list. busbw = algbw for reduce at any rank count, so only the user can give it: the CLI passed
``--gpus`` to the parser, but ``validate_file(path, options=RunOptions(gpus=2))`` dropped it and
refused the log with "pass --gpus N" (found when tools/validation_table.py gave it that way).
Likewise ``RunOptions(nccl_version=...)``: ``validate_runs`` gave it to the parser (a release before
2.7 rules out the send/recv-based tests) but ``validate_file`` did not.
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


TWO_A100 = """# nThread 1 nGpus 1 minBytes 8 maxBytes 1024 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid   1000 on node0 device  0 [0x00] NVIDIA A100-SXM4-80GB
#  Rank  1 Group  0 Pid   1001 on node0 device  1 [0x01] NVIDIA A100-SXM4-80GB
#
#       size         count      type   redop    root     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144     float     sum      -1    10.49  100.00  100.00  0e+00    10.49  100.00  100.00  0e+00
    16777216       4194304     float     sum      -1   167.77  100.00  100.00  0e+00   167.77  100.00  100.00  0e+00
"""  # noqa: E501


def test_nccl_version_in_run_options_reaches_the_parser(tmp_path: Path) -> None:
    """busbw = algbw on 2 ranks with redop sum and root -1 fits all_reduce and send_recv; NCCL 2.6.4
    predates ncclSend/ncclRecv (2.7.0), so with it given the table is all_reduce."""
    path = tmp_path / "two.txt"
    path.write_text(TWO_A100)
    with pytest.raises(ParseError, match="all_reduce and send_recv fit"):
        validate_file(path)
    assert validate_file(path, options=RunOptions(nccl_version="2.6.4")).collective == "all_reduce"
