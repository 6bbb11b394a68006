# ruff: noqa: E501  (the logs are quoted as nccl-tests prints them)
"""Reading bugs found by probe 17's public logs (tests/data/outside 290-299)."""

from __future__ import annotations

from commsim.calibrate.parser import parse_nccl_tests

ISSUE369 = """\
# nccl-tests version 2.17.8 nccl-headers=22902 nccl-library=22902
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 1 minBytes 65536 maxBytes 2097152 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid 662195 on    gpu-1-1 device  0 [0009:01:00] NVIDIA GH200 120GB
#  Rank  1 Group  0 Pid 2448661 on    gpu-1-7 device  0 [0009:01:00] NVIDIA GH200 120GB
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)
       65536         16384     float     sum      -1    45.91    1.43    1.43       0    49.37    1.33    1.33       0
     1048576        262144     float     sum      -1   477.32    2.20    2.20      96   492.81    2.13    2.13      32
     2097152        524288     float     sum      -1   338.61    6.19    6.19       0   351.38    5.97    5.97       0
# Out of bounds values : 4 FAILED
# Avg bus bandwidth    : 3.20833
#
# Collective test concluded: all_reduce_perf
#

 .. gpu-1-1 pid 662195: Test failure common.cu:1189
 .. gpu-1-7 pid 2448661: Test failure common.cu:1189
"""


def test_a_failure_after_the_footer_is_not_read_as_missing_sizes() -> None:
    """NVIDIA/nccl-tests issue #369 (probe 17's 292, cut to three rows): wrong values at 1 MiB make
    nccl-tests end with 'Test failure common.cu:1189' (line 21) after its footer (line 15: 4
    out-of-bounds values) and after the last size (2 MiB = maxBytes). The table is whole, so the
    failure must not be read as a run cut short ('later sizes are missing', as it was)."""
    log = parse_nccl_tests(ISSUE369, "issue369.log")
    assert [r.nbytes for r in log.rows] == [65536, 1048576, 2097152]
    assert not [w for w in log.warnings if "later sizes are missing" in w]
    assert (
        "line 21: the run exited with a failure (Test failure common.cu:1189) after its footer "
        "(line 15) reported 4 out-of-bounds values: no size is missing"
    ) in log.warnings


def test_a_failure_before_the_footer_still_says_sizes_are_missing() -> None:
    """The same log with the failure before its footer (a run cut short after its 2 MiB row) keeps
    the warning that later sizes are missing."""
    head, _, tail = ISSUE369.partition("# Out of bounds values")
    cut = head + " .. gpu-1-1 pid 662195: Test failure common.cu:1189\n# Out of bounds values" + tail
    log = parse_nccl_tests(cut, "issue369.log")
    assert "line 15: the run failed (Test failure common.cu:1189): later sizes are missing" in log.warnings


def test_a_row_behind_hash_is_named_in_the_refusal() -> None:
    """Outside 290 (the Optcast tutorial) prints its only row behind '#', like nccl-tests' own
    comment lines; the refusal said only that no row follows the header. It now names the line that
    is a whole result row behind '#' (its fields fit the header's columns) and what would read it.
    nccl-tests' own '#' lines in the table (the units line, the footer) are not rows."""
    import pytest

    from commsim.errors import ParseError

    text = """\
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
#  536870912     134217728     float     sum      -1    80965    6.63    9.95      0    77677    6.91   10.37      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 10.1569
"""
    with pytest.raises(
        ParseError, match="line 4 is a result row behind '#': remove the '#' to validate"
    ) as info:
        parse_nccl_tests(text, collective="all_reduce", n_ranks=4)
    assert "line 3 is" not in str(info.value) and "line 5 is" not in str(info.value)
