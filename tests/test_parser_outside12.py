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


# 221: NVIDIA/nccl issue #1439 (2024-09-11 comment): 8 x RTX 3090 (-g 8); the excerpt ends
# inside the first row (device list cut to two ranks here).
FIRST_ROW_CUT = """\
(allspark) yaofengqin@9018:~/yaofengqin/nccl-tests$ ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 8
# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid 1717587 on       9018 device  0 [0x04] NVIDIA GeForce RTX 3090
#  Rank  1 Group  0 Pid 1717587 on       9018 device  1 [0x05] NVIDIA GeForce RTX 3090
#
#                                                              out-of-place                       in-place          
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       
           8             2     float     sum      -1    54.18    0.00    0.
"""  # noqa: E501, W291


def test_a_table_whose_only_row_is_cut_says_so() -> None:
    """221 (and 219, nccl-tests #249): refused with "no result rows found; expected nccl-tests' table
    (a '#  size  count  type ...' column header followed by one row per message size)", though the
    column header is there (line 9) and its one row is cut inside the busbw (8 of 13 fields): the
    refusal sent the user looking for a header the log has. It now names the header's line and the
    cut row."""
    with pytest.raises(ParseError) as caught:
        parse_nccl_tests(FIRST_ROW_CUT)
    message = str(caught.value)
    assert "the table's column header is at line 9, but its only row is cut short" in message
    assert "line 11: the last row of the table is truncated (8 of 13 fields)" in message
    assert "expected nccl-tests' table" not in message


# 220: NVIDIA/nccl-tests issue #217 (2024-05-22 comment): one RTX A6000, NCCL_SOCKET_IFNAME=lo;
# "the test hangs" after NCCL's socket warning (the excerpt ends inside the INFO lines).
HUNG_AFTER_WARN = """\
:~/nccl-tests$ ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 1
# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  70918 on NAME device  0 [0x01] NVIDIA RTX A6000
NAME :70918:70918 [0] NCCL INFO Bootstrap : Using lo:127.0.0.1<0>
NCCL version 2.21.5+cuda12.4
NAME :70918:70928 [0] NCCL INFO Using network Socket

NAME :70918:70927 [0] misc/socket.cc:50 NCCL WARN socketProgress: Connection closed by remote peer localhost<56086>
NAME :70918:70927 [0] NCCL INFO misc/socket.cc:752 -> 6
"""  # noqa: E501


def test_a_run_that_stops_before_its_table_says_so_and_names_nccls_warning() -> None:
    """220 (and 215, a README's 'NCCL tests are timing out' run): refused with "no result rows
    found; expected nccl-tests' table ...", as if the text were not nccl-tests output, though it
    holds the run header (line 2) and device list and then stops: the run hung. The refusal now says
    the run started and ended before its table, quoting its last line without NCCL's
    ``host:pid:tid [dev] NCCL INFO`` prefix, with NCCL's first warning (line 10)."""
    with pytest.raises(ParseError) as caught:
        parse_nccl_tests(HUNG_AFTER_WARN)
    message = str(caught.value)
    assert (
        "the run started (line 2) but its output ends at line 11 ('misc/socket.cc:752 -> 6') before"
        in message
    )
    assert "NCCL's first warning, line 10: socketProgress: Connection closed by remote peer" in message


def test_text_without_any_nccl_tests_line_keeps_the_general_refusal() -> None:
    """No run header, device list or column header: the refusal still says what a table looks like."""
    with pytest.raises(ParseError, match="expected nccl-tests' table"):
        parse_nccl_tests("hello\nworld\n")


# 224: NVIDIA/nccl issue #258 (2019-10-21 comment): `mpirun -np 1 ./build/all_reduce_perf -b 8 -e 128M
# -f 2 -g 4` on 4 x V100-SXM3-32GB, posted as inline code (a backtick before '# Using devices'); the
# issue's excerpt ends inside the 128 B row's last field ('3e' of an error like '3e-08').
LAST_FIELD_CUT = """\
`# Using devices
#   Rank  0 Pid  71327 on 51e6e7896958 device  0 [0x1a] Tesla V100-SXM3-32GB
#   Rank  1 Pid  71327 on 51e6e7896958 device  1 [0x1b] Tesla V100-SXM3-32GB
#   Rank  2 Pid  71327 on 51e6e7896958 device  2 [0x1c] Tesla V100-SXM3-32GB
#   Rank  3 Pid  71327 on 51e6e7896958 device  3 [0x1e] Tesla V100-SXM3-32GB
#
#                                                     out-of-place                       in-place
#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2   float     sum    158.3    0.00    0.00  1e-07    158.4    0.00    0.00  0e+00
          64            16   float     sum    159.3    0.00    0.00  3e-08    278.1    0.00    0.00  3e-08
         128            32   float     sum    427.0    0.00    0.00  3e-08    158.6    0.00    0.00  3e
"""


def test_a_last_row_cut_inside_its_last_field_is_read_as_truncated() -> None:
    """224: refused with "field 12 (in-place error) should be a number or N/A, found '3e'", although
    the text simply ends inside the last field of the table's last row: that row has all 12 fields,
    the last one cut. It is now the table's truncated last row (the fields before the cut one are
    read, with a warning naming it): 3 rows, the last 128 B in 427.0 us, in place 158.6 us, its
    in-place error unknown."""
    log = parse_nccl_tests(LAST_FIELD_CUT, collective="all_reduce")
    assert [row.nbytes for row in log.rows] == [8, 64, 128]
    assert log.rows[-1].oop_time_s == pytest.approx(427.0e-6)
    assert log.rows[-1].ip_time_s == pytest.approx(158.6e-6)
    assert log.rows[-1].ip_max_error is None
    assert any(
        "line 12: the last row of the table is truncated (cut inside its last field '3e'" in w
        for w in log.warnings
    )


def test_a_garbled_last_field_inside_the_table_is_still_refused() -> None:
    """The same bad field on a row that another row follows is no cut text: still an error."""
    text = LAST_FIELD_CUT.replace(
        "3e-08    278.1    0.00    0.00  3e-08", "3e-08    278.1    0.00    0.00  3e"
    )
    with pytest.raises(
        ParseError, match="field 12 \\(in-place error\\) should be a number or N/A, found '3e'"
    ):
        parse_nccl_tests(text, collective="all_reduce")


# 226: NVIDIA/nccl-tests issue #5 (2018-01-09): 8 x P100-PCIE with NCCL 1.0; the 2018 tests print
# the header and then NCCLCHECK's failure line (device list cut to one rank here).
OLD_FAILURE = """\
nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 validation: 1
# NCCL Tests compiled with NCCL 1.0
# Using devices
#   Rank  0 on     node03 device  0 [0x00] Tesla P100-PCIE-16GB

#                                                 out-of-place                    in-place
#      bytes             N    type      op     time  algbw  busbw      res     time  algbw  busbw      res
NCCL failure all_reduce.cu:95 'unhandled cuda error'
"""


def test_the_2018_tests_failure_line_is_read_as_a_failure() -> None:
    """226: refused as "no result rows found ... no result row follows" the header, although the
    next line is nccl-tests' own failure report: the 2017-2018 tests' NCCLCHECK printed 'NCCL
    failure <file>.cu:<line> '<error>'' (later 'Test NCCL failure'). The refusal now quotes it."""
    with pytest.raises(ParseError) as caught:
        parse_nccl_tests(OLD_FAILURE, collective="all_reduce")
    assert (
        "the run failed before printing a result row: line 8: NCCL failure all_reduce.cu:95 "
        "'unhandled cuda error'" in str(caught.value)
    )
