# ruff: noqa: E501  (the logs are quoted as nccl-tests prints them)
"""A run that failed (``Test CUDA failure ...``) is named as such, not as a log without a table.

The excerpt is NVIDIA/nccl-tests issue #355 (2 x 8 H800, alltoall_perf with
the device API, ranks 2-15 cut here): the column header is there (lines
8-10), and the only row breaks off with the failure on line 11.
"""

from __future__ import annotations

import pytest

from commsim.calibrate.parser import parse_nccl_tests
from commsim.errors import ParseError

HEAD = """\
# nccl-tests version 2.17.6 nccl-headers=22807 nccl-library=22807
# Collective test starting: alltoall_perf
# nThread 1 nGpus 1 minBytes 2097152 maxBytes 2097152 step: 0(bytes) warmup iters: 0 iters: 1 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  62767 on node0 device  0 [0000:19:00] NVIDIA H800
#  Rank  1 Group  0 Pid  62768 on node0 device  1 [0000:3b:00] NVIDIA H800
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)
"""
FAILURE = """\
     2097152         32768     float    none      -1 node0: Test CUDA failure common.cu:389 'an illegal memory access was encountered'
 .. node0 pid 62767: Test failure common.cu:519
 .. node0 pid 62767: Test failure common.cu:532
"""


def test_a_run_that_failed_before_its_first_row_is_refused_with_the_failure() -> None:
    with pytest.raises(ParseError) as caught:
        parse_nccl_tests(HEAD + FAILURE, "issue355.log")
    assert str(caught.value) == (
        "issue355.log: the run failed before printing a result row: line 11: Test CUDA failure "
        "common.cu:389 'an illegal memory access was encountered'; no result to validate"
    )


def test_a_run_that_failed_after_some_rows_keeps_them_and_warns() -> None:
    """One good 1 MiB row (line 11; 1048576 B / 100 us = 10.49 GB/s, all_to_all busbw = algbw x 1/2),
    then the failure on line 12: the row is read and the failure is a warning."""
    row = "     1048576         16384     float    none      -1   100.00   10.49    5.24       0   100.00   10.49    5.24     N/A\n"
    log = parse_nccl_tests(HEAD + row + FAILURE, "issue355.log")
    assert [r.nbytes for r in log.rows] == [1048576]
    assert (
        "line 12: the run failed (Test CUDA failure common.cu:389 'an illegal memory access was "
        "encountered'): later sizes are missing"
    ) in log.warnings
