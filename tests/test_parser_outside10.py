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
