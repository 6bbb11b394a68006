"""Public nccl-tests logs of out-of-sample probe 6 (notes/outside6) the reader got wrong.

Each test holds a real excerpt inline (the probe's file number in the docstring)
and asserts what nccl-tests' own source says the text means.
"""

from __future__ import annotations

import pytest

from commsim.calibrate.parser import parse_nccl_tests
from commsim.errors import ParseError

# 104: NVIDIA/nccl-tests issue #78 (ngc7292, 2021-12-08), alltoall on 8 nodes x 8 V100. nccl-tests of
# that time print alltoall's redop with '%6s' of "" (src/alltoall.cu print_line_header), so its rows
# have 11 fields under a 12-column header.
OLD_ALLTOALL = """\
#                                                       out-of-place                       in-place
#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                       (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
   268435456       1048576     float           520935    0.52    0.51  0e+00   519562    0.52    0.51  1e+00
   536870912       2097152     float          1041974    0.52    0.51  0e+00  1041299    0.52    0.51  1e+00
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 0.507636
"""


def test_old_alltoall_rows_with_a_blank_redop_are_read() -> None:
    """104: both rows read (lines 4, 5), without a reduction; times 520935 and 1041974 us out of place,
    519562 and 1041299 us in place, algbw 0.52 GB/s."""
    log = parse_nccl_tests(OLD_ALLTOALL, collective="all_to_all", n_ranks=64)
    assert [(row.line, row.nbytes, row.count, row.dtype, row.redop) for row in log.rows] == [
        (4, 268435456, 1048576, "float", None),
        (5, 536870912, 2097152, "float", None),
    ]
    assert [row.oop_time_s for row in log.rows] == pytest.approx([0.520935, 1.041974])
    assert [row.ip_time_s for row in log.rows] == pytest.approx([0.519562, 1.041299])
    assert [row.oop_algbw_Bps for row in log.rows] == pytest.approx([0.52e9, 0.52e9])


def test_a_row_cut_short_under_the_same_header_is_still_refused() -> None:
    """104's header with an all_reduce row cut after its in-place busbw (11 fields, the first 11 columns:
    it has its redop) and another row after it: truncated, so the width error names line 4."""
    cut = "   268435456   67108864  float  sum   520935  0.52  0.51  0e+00   519562  0.52  0.51"
    whole = "   536870912  134217728  float  sum  1041974  0.52  0.51  0e+00  1041299  0.52  0.51  0e+00"
    head = "\n".join(OLD_ALLTOALL.splitlines()[:3])
    with pytest.raises(
        ParseError, match=r"^line 4: result row has 11 fields but the column header at line 2 announces 12"
    ):
        parse_nccl_tests(f"{head}\n{cut}\n{whole}\n", n_ranks=64)


def test_old_rows_with_a_blank_root_are_read() -> None:
    """nccl-tests' common.cu of 2019 prints root -1 as '%6s' of "" under a 'root' column: two of 96's
    rows (ROCm/rccl PR #929, MI250X all_reduce, 'root' absent there) as that version prints them,
    12 fields under 13 columns: read with the root unknown, 25.06 and 31.25 us out of place."""
    text = """\
#  size  count   type  redop   root   time  algbw  busbw  error   time  algbw  busbw  error
      8      2  float    sum         25.06   0.00   0.00  4e-07  25.95   0.00   0.00  4e-07
   1024    256  float    sum         31.25   0.03   0.06  4e-07  16.80   0.06   0.11  2e-07
"""
    log = parse_nccl_tests(text, n_ranks=16)
    assert [(row.nbytes, row.redop, row.root) for row in log.rows] == [(8, "sum", None), (1024, "sum", None)]
    assert [row.oop_time_s for row in log.rows] == pytest.approx([25.06e-6, 31.25e-6])
    assert log.collective == "all_reduce"
