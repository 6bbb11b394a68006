"""Public nccl-tests logs of out-of-sample probe 12 (notes/outside12) the reader got wrong.

Each test holds a real excerpt inline (the probe's file number and source in the comment above it)
and asserts what nccl-tests' own output says the text means.
"""

from __future__ import annotations

import pytest

from commsim.calibrate.parser import parse_nccl_tests
from commsim.errors import ParseError

# 217: NVIDIA/nccl issue #445 (2020-12-29), the description: "a nccl-tests run on 1 node-4 GPU
# setting, with NCCL running over PCIe"; every row prints only its out-of-place half, and the
# issue's excerpt ends inside the 1 GiB row.
OUT_OF_PLACE_ONLY = """\
#
#                                                     out-of-place                       in-place          
#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       
      262144         65536   float     sum    122.3    2.14    3.22    N/A
      524288        131072   float     sum    198.8    2.64    3.96    N/A
     1048576        262144   float     sum    349.1    3.00    4.51    N/A
   536870912     134217728   float     sum   164854    3.26    4.88    N/A
  1073741824     268435456   float     sum   328867    3.26    4.
"""  # noqa: W291


def test_rows_of_only_the_out_of_place_half_are_read() -> None:
    """217: refused as "result row has 8 fields but the column header at line 3 announces 12 ... the
    row is truncated or garbled", although every row is the header's whole out-of-place half (size
    count type redop time algbw busbw error) and no in-place field: the page left them empty. The
    out-of-place figures are what validate compares; the last row, cut inside its busbw ('4.'), is
    still dropped as truncated.

    Expected: 4 rows, sizes as printed; 262144 B in 122.3 us; busbw 3.22 GB/s; the in-place time
    unknown; one warning naming lines 5-8 and the out-of-place labels.
    """
    log = parse_nccl_tests(OUT_OF_PLACE_ONLY, collective="all_reduce", n_ranks=4)
    assert [row.nbytes for row in log.rows] == [262144, 524288, 1048576, 536870912]
    first = log.rows[0]
    assert first.oop_time_s == pytest.approx(122.3e-6)
    assert first.oop_busbw_Bps == pytest.approx(3.22e9)
    assert first.ip_time_s is None
    half = [w for w in log.warnings if "only the out-of-place half" in w]
    assert len(half) == 1
    assert half[0].startswith("lines 5-8: ")
    assert "(size count type redop time algbw busbw error)" in half[0]
    assert any("line 9: the last row of the table is truncated (7 of 12 fields)" in w for w in log.warnings)


def test_a_short_row_that_is_not_the_out_of_place_half_is_still_refused() -> None:
    """A row of 6 fields inside the table (cut before the out-of-place busbw) followed by another row
    stays an error: only the exact out-of-place half is read."""
    text = OUT_OF_PLACE_ONLY.replace(
        "      524288        131072   float     sum    198.8    2.64    3.96    N/A",
        "      524288        131072   float     sum    198.8    2.64",
    )
    with pytest.raises(ParseError, match="result row has 6 fields but the column header at line 3"):
        parse_nccl_tests(text, collective="all_reduce", n_ranks=4)
