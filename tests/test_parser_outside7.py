"""Public nccl-tests logs of out-of-sample probe 7 (notes/outside7) the reader got wrong.

Each test holds a real excerpt inline (the probe's file number in the docstring)
and asserts what nccl-tests' own source says the text means.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from commsim.calibrate.parser import parse_nccl_tests
from commsim.calibrate.validate import validate_file
from commsim.errors import ParseError

# 112: aistabci/abci2.0benchmark bcast/inter_anode/job04 (NCCL 2.8.4, nccl-tests 0b30de5), 4 ABCI A-nodes
# x 8 A100: the run header, the whole device list and 7 of its 24 rows as printed (trailing blanks cut).
# Its broadcast.cu prints its own header, 'size count type root' without a redop column.
OLD_BROADCAST = """\
# nThread 1 nGpus 1 minBytes 4 maxBytes 33554432 step: 2(factor) warmup iters: 5 iters: 100 validation: 1
#
# Using devices
#   Rank  0 Pid 1762917 on      a0015 device  0 [0x27] A100-SXM4-40GB
#   Rank  1 Pid 1762918 on      a0015 device  1 [0x2a] A100-SXM4-40GB
#   Rank  2 Pid 1762919 on      a0015 device  2 [0x51] A100-SXM4-40GB
#   Rank  3 Pid 1762920 on      a0015 device  3 [0x57] A100-SXM4-40GB
#   Rank  4 Pid 1762921 on      a0015 device  4 [0x9e] A100-SXM4-40GB
#   Rank  5 Pid 1762922 on      a0015 device  5 [0xa4] A100-SXM4-40GB
#   Rank  6 Pid 1762923 on      a0015 device  6 [0xc7] A100-SXM4-40GB
#   Rank  7 Pid 1762924 on      a0015 device  7 [0xca] A100-SXM4-40GB
#   Rank  8 Pid 3174648 on      a0016 device  0 [0x27] A100-SXM4-40GB
#   Rank  9 Pid 3174649 on      a0016 device  1 [0x2a] A100-SXM4-40GB
#   Rank 10 Pid 3174650 on      a0016 device  2 [0x51] A100-SXM4-40GB
#   Rank 11 Pid 3174651 on      a0016 device  3 [0x57] A100-SXM4-40GB
#   Rank 12 Pid 3174652 on      a0016 device  4 [0x9e] A100-SXM4-40GB
#   Rank 13 Pid 3174653 on      a0016 device  5 [0xa4] A100-SXM4-40GB
#   Rank 14 Pid 3174654 on      a0016 device  6 [0xc7] A100-SXM4-40GB
#   Rank 15 Pid 3174655 on      a0016 device  7 [0xca] A100-SXM4-40GB
#   Rank 16 Pid 1872205 on      a0017 device  0 [0x27] A100-SXM4-40GB
#   Rank 17 Pid 1872206 on      a0017 device  1 [0x2a] A100-SXM4-40GB
#   Rank 18 Pid 1872207 on      a0017 device  2 [0x51] A100-SXM4-40GB
#   Rank 19 Pid 1872208 on      a0017 device  3 [0x57] A100-SXM4-40GB
#   Rank 20 Pid 1872209 on      a0017 device  4 [0x9e] A100-SXM4-40GB
#   Rank 21 Pid 1872210 on      a0017 device  5 [0xa4] A100-SXM4-40GB
#   Rank 22 Pid 1872211 on      a0017 device  6 [0xc7] A100-SXM4-40GB
#   Rank 23 Pid 1872212 on      a0017 device  7 [0xca] A100-SXM4-40GB
#   Rank 24 Pid 1664487 on      a0018 device  0 [0x27] A100-SXM4-40GB
#   Rank 25 Pid 1664488 on      a0018 device  1 [0x2a] A100-SXM4-40GB
#   Rank 26 Pid 1664489 on      a0018 device  2 [0x51] A100-SXM4-40GB
#   Rank 27 Pid 1664490 on      a0018 device  3 [0x57] A100-SXM4-40GB
#   Rank 28 Pid 1664491 on      a0018 device  4 [0x9e] A100-SXM4-40GB
#   Rank 29 Pid 1664492 on      a0018 device  5 [0xa4] A100-SXM4-40GB
#   Rank 30 Pid 1664493 on      a0018 device  6 [0xc7] A100-SXM4-40GB
#   Rank 31 Pid 1664494 on      a0018 device  7 [0xca] A100-SXM4-40GB
#
#                                                     out-of-place                       in-place
#       size         count    type    root     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           4             1   float       0    12.07    0.00    0.00  0e+00     7.40    0.00    0.00  0e+00
        2048           512   float       0     9.14    0.22    0.22  0e+00     8.30    0.25    0.25  0e+00
     2097152        524288   float       0    278.5    7.53    7.53  0e+00    272.5    7.70    7.70  0e+00
     4194304       1048576   float       0    474.2    8.85    8.85  0e+00    469.4    8.94    8.94  0e+00
     8388608       2097152   float       0    673.7   12.45   12.45  0e+00    701.5   11.96   11.96  0e+00
    16777216       4194304   float       0    961.2   17.45   17.45  0e+00    962.0   17.44   17.44  0e+00
    33554432       8388608   float       0   1520.6   22.07   22.07  0e+00   1522.2   22.04   22.04  0e+00
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 3.652
#
"""


def test_an_old_header_without_a_redop_column_is_broadcast_not_reduce() -> None:
    """112: busbw = algbw on every row (22.07 = 22.07 at 32 MiB) and root 0 fit broadcast and reduce
    (factor 1, rooted); reduce_perf prints a redop column in every nccl-tests format, so the header of
    line 38 without one leaves broadcast. The evidence is the table, its first row line 40."""
    log = parse_nccl_tests(OLD_BROADCAST, "job04.sh.7194647.nccl")
    assert (log.collective, log.n_ranks) == ("broadcast", 32)
    (evidence,) = log.collective_evidence
    assert (evidence.source, evidence.value, evidence.line, evidence.text) == (
        "result table",
        "broadcast",
        40,
        "busbw/algbw 1 with 32 ranks (device list), root 0, no redop column in the old-format column "
        "header (line 38): only broadcast fits",
    )
    assert not any("collective unknown" in w for w in log.warnings)


def test_the_same_rows_under_a_reduce_header_are_reduce() -> None:
    """112's rows under old reduce.cu's header 'size count type redop root' (each row with 'sum'):
    factor 1 and root 0 with a reduction leave reduce alone; the header rules nothing out."""
    text = OLD_BROADCAST.replace("type    root", "type   redop    root").replace(
        "float       0", "float  sum  0"
    )
    log = parse_nccl_tests(text, "job04.sh.7194647.nccl")
    assert log.collective == "reduce"
    assert log.collective_evidence[0].text == (
        "busbw/algbw 1 with 32 ranks (device list), redop sum, root 0: only reduce fits"
    )


def test_a_wrong_count_header_without_a_redop_column_still_leaves_both(tmp_path: Path) -> None:
    """The same table with '#wrong' columns (the common.cu header, which prints redop and root for every
    test): a missing redop column there is an edit, not evidence, so broadcast and reduce both fit and
    validate refuses naming both."""
    text = OLD_BROADCAST.replace("busbw  error", "busbw #wrong").replace("0e+00", "    0")
    path = tmp_path / "job04.txt"
    path.write_text(text)
    with pytest.raises(
        ParseError,
        match=r"its result table \(line 40\): busbw/algbw 1 with 32 ranks \(device list\), root 0: "
        r"broadcast and reduce fit; give --collective broadcast or --collective reduce$",
    ):
        validate_file(path)
