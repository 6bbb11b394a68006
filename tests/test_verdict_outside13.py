"""Public nccl-tests logs of out-of-sample probe 13 (notes/outside13) whose verdict misled.

Each test holds a real excerpt inline (the probe's file number and source in the comment above it)
and asserts what the verdict says about the run.
"""

from __future__ import annotations

from pathlib import Path

from commsim.calibrate.inference import RunOptions
from commsim.calibrate.validate import validate_file
from commsim.calibrate.verdict import judge

# 237: a Go test file of a GPU health checker (code-index file id 67244393525), constant
# healthyAllReduceOutput: "a trimmed but format-faithful capture from a real GB200 NVL4 run of
# `all_reduce_perf -b 8 -e 8G -f 2 -g 4`"; four rows, one of them below 64 KiB.
ONE_SMALL_ROW = """\
# nccl-tests version 2.20.0 (b4d5bee) nccl-headers=23102 nccl-library=23102
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 4 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)
           8             2     float     sum      -1    55.18    0.00    0.00       0    38.83    0.00    0.00       0
     1048576        262144     float     sum      -1    35.39   29.63   44.44       0    34.44   30.45   45.68       0
   268435456      67108864     float     sum      -1   713.27  376.34  564.51       0   713.56  376.19  564.29       0
  8589934592    2147483648     float     sum      -1  21286.0  403.55  605.32       0  21267.4  403.90  605.85       0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 191.494
#
# Collective test concluded: all_reduce_perf
"""  # noqa: E501


def test_one_small_size_is_named_not_called_a_median(tmp_path: Path) -> None:
    """237: the latency note read "below 64 KiB the run's time is 2.82x the model's (median over 1
    sizes; the model misses there by a median 64% ...)": one 8 B row is no median. It now names the
    size: "at its one size below 64 KiB (8 B) the run's time is ...x the model's (the model misses
    it by ...%"."""
    path = tmp_path / "gb200_four_rows.txt"
    path.write_text(ONE_SMALL_ROW)
    options = RunOptions(gpu="GB200", nodes=1, gpus_per_node=4)
    text = judge(validate_file(path, options=options)).text
    assert "at its one size below 64 KiB (8 B) the run's time is " in text
    assert "median over 1 sizes" not in text
