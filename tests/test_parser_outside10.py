"""Public nccl-tests logs of out-of-sample probe 10 (notes/outside10) the reader got wrong.

Each test holds a real excerpt inline (the probe's file number and source in the comment above it)
and asserts what nccl-tests' own output says the text means.
"""

from __future__ import annotations

import pytest

from commsim.calibrate.parser import parse_nccl_tests
from commsim.errors import ParseError

# 191: "NCCL on Olivia" (NRIS documentation of the Olivia GH200 system, code-index file id 56163000066):
# a run pasted into a Markdown code block that closes right after the last row (no footer).
FENCED_NO_FOOTER = """\
```
# nccl-tests version 2.17.9 nccl-headers=22902 nccl-library=22902
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 1 minBytes 1 maxBytes 134217728 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0
#
#                                                              out-of-place                       in-place          
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong 
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         
    67108864      67108864      int8     sum      -1  34125.2    1.97    3.69  113492  43656.8    1.54    2.88       0
   134217728     134217728      int8     sum      -1  2800.93   47.92   89.85       0  3023.61   44.39   83.23       0

```
"""  # noqa: E501, W291


def test_a_code_fence_after_the_last_row_is_page_markup_not_a_skipped_line() -> None:
    """191: the closing ``` of the page's code block was warned about as "line 59: not result rows
    inside the table (skipped); the first reads '```'". Both rows are read; no such warning."""
    log = parse_nccl_tests(FENCED_NO_FOOTER, n_ranks=16)
    assert [row.nbytes for row in log.rows] == [67108864, 134217728]
    assert (log.rows[0].oop_wrong, log.rows[1].oop_wrong) == (113492, 0)
    assert not [w for w in log.warnings if "not result rows" in w]


# 194: ROCm/rccl pull request #1352 (corey-derochie-amd, 2024-09-26): two runs printed side by side,
# one line holding both tables' header and rows, separated by ' |  '.
SIDE_BY_SIDE = """\
#                                                              out-of-place                       in-place            |  #                                                              out-of-place                       in-place          
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong  |  #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)         |  #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       
     1048576        262144     float     sum      -1    28.15   37.25   65.19      0    27.52   38.10   66.67      0  |       1048576        262144     float     sum      -1    27.84   37.66   65.91      0    27.41   38.26   66.95      0
"""  # noqa: E501, W291


def test_two_tables_side_by_side_are_named_as_such() -> None:
    """194: the refusal said "result row has 27 fields but the column header at line 2 announces 28
    (size count ... | # size count ...)", as if a row were cut. The header holds two tables; the
    message now says so and how to read them (one file per side)."""
    with pytest.raises(ParseError, match="two tables side by side") as caught:
        parse_nccl_tests(SIDE_BY_SIDE, n_ranks=8)
    assert caught.value.line == 2


# 188: a GitHub "Parser for RCCL test output" module's embedded sample (code-index file id 70415062978):
# an MI350X all_reduce whose device list keeps 2 lines, with rccl-tests' algo/proto/nchannels columns.
CUT_DEVICE_LIST = """\
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 1 minBytes 1048576 maxBytes 17179869184 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
rccl-tests: Version develop:6405c76
# Using devices
#  Rank  0 Group  0 Pid 3252337 on amd-mi350x-ses2-1 device  0 [0000:05:00] AMD Instinct MI350X
#  Rank  1 Group  0 Pid 3252338 on amd-mi350x-ses2-1 device  1 [0000:15:00] AMD Instinct MI350X
RCCL version : 2.27.7-develop:29e1567
#
#                                                              out-of-place                       in-place          
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong     algo     proto   nchannels
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)                                      
     1048576        262144     float     sum      -1    76.26   13.75   25.78      0    76.43   13.72   25.72      0  Direct    SIMPLE          32
     2097152        524288     float     sum      -1    87.02   24.10   45.18      0    86.52   24.24   45.45      0    RING    SIMPLE          32
   268435456      67108864     float     sum      -1   1377.7  194.84  365.33      0   1376.1  195.07  365.76      0    RING    SIMPLE          32
"""  # noqa: E501, W291


def test_a_device_list_shorter_than_the_rows_computed_with_is_cut() -> None:
    """188: two device lines, but every all_reduce row prints busbw/algbw = 2 x 15/16 (25.78 / 13.75,
    365.33 / 194.84 = 1.875), which nccl-tests computes with the communicator's 16 ranks. The log was
    read as 2 ranks with a warning, and every row then 'disagreed' (6 warnings, a 239 % miss at
    256 MiB). 16 ranks now, and the warning says the list looks cut."""
    log = parse_nccl_tests(CUT_DEVICE_LIST)
    assert log.n_ranks == 16
    assert log.rank_evidence[0].source == "busbw/algbw ratio"
    assert any("the device list looks cut" in w for w in log.warnings)
    assert not [w for w in log.warnings if "disagrees with size / time" in w]
