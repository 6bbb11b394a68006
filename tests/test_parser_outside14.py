"""Public nccl-tests logs of out-of-sample probe 14 (notes/outside14) the reader got wrong.

Each test holds a real excerpt inline (its source in the comment above it) and asserts what
nccl-tests' own output says the text means.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from commsim.calibrate.parser import load_nccl_tests
from commsim.calibrate.validate import validate_file
from commsim.errors import ParseError

# Outside log 218: NVIDIA/nccl issue 583 (elevenxiang, 2021), 2 x A100-SXM4-40GB in one process,
# posted without the lines' '#'. Its rows print size = count x 4 B (32 B = 8 floats): the count of
# the whole buffer, which nccl-tests' common.cu prints for all_reduce, reduce, broadcast and
# send_recv; all_gather, reduce_scatter, all_to_all, gather and scatter print count / nranks, so
# their rows of 2 ranks would print size = 2 x count x 4 B.
A100_TWO_RANKS_FULL_COUNT = """\
nThread 1 nGpus 2 minBytes 32 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 validation: 1

Using devices
  Rank  0 Pid 1533050 on AI-A100-Beethoven01 device  0 [0x00] NVIDIA A100-SXM4-40GB
  Rank  1 Pid 1533050 on AI-A100-Beethoven01 device  1 [0x00] NVIDIA A100-SXM4-40GB

                                                       out-of-place                       in-place
       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error
        (B)    (elements)                       (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
          32             8     float     sum    10.14    0.00    0.00  0e+00    10.21    0.00    0.00  0e+00
          64            16     float     sum    10.14    0.01    0.01  0e+00    10.31    0.01    0.01  0e+00
"""


def test_a_full_count_of_two_ranks_rules_out_the_per_rank_count_tests(tmp_path: Path) -> None:
    """Before: "all_reduce, reduce_scatter and send_recv fit"; reduce_scatter of 2 ranks would
    print count 4 beside 32 B (32 / (2 x 4 B)), not 8."""
    path = tmp_path / "x.txt"
    path.write_text(A100_TWO_RANKS_FULL_COUNT)
    with pytest.raises(ParseError) as raised:
        validate_file(path)
    message = str(raised.value)
    assert "size = count x type size" in message
    assert "all_reduce and send_recv fit; give --collective all_reduce or --collective send_recv" in message


def test_a_per_rank_count_keeps_reduce_scatter(tmp_path: Path) -> None:
    """The same rows with count = size / (2 ranks x 4 B) leave reduce_scatter in (busbw = algbw
    as nccl-tests printed it before June 2020)."""
    text = A100_TWO_RANKS_FULL_COUNT.replace("   8     float", "   4     float").replace(
        "  16     float", "   8     float"
    )
    path = tmp_path / "x.txt"
    path.write_text(text)
    with pytest.raises(ParseError, match="all_reduce, reduce_scatter and send_recv fit"):
        validate_file(path)


# 256: Chinese server-setup notes (code index id 34568999262) quote the output of
# 'all_reduce_perf -b 8 -e 128M -f 2 -g 8' on 8 GeForce RTX 2080 Ti as a Markdown block quote:
# every line starts with '> '. (Rows kept: the first, two middle and the last of 25.)
QUOTED_2080TI = """\
测试结果会返回

> ```
> # nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 validation: 1
> #
> # Using devices
> #   Rank  0 Pid  12164 on   jungpu30 device  0 [0x1a] GeForce RTX 2080 Ti
> #   Rank  1 Pid  12164 on   jungpu30 device  1 [0x1b] GeForce RTX 2080 Ti
> #   Rank  2 Pid  12164 on   jungpu30 device  2 [0x3d] GeForce RTX 2080 Ti
> #   Rank  3 Pid  12164 on   jungpu30 device  3 [0x3e] GeForce RTX 2080 Ti
> #   Rank  4 Pid  12164 on   jungpu30 device  4 [0x88] GeForce RTX 2080 Ti
> #   Rank  5 Pid  12164 on   jungpu30 device  5 [0x89] GeForce RTX 2080 Ti
> #   Rank  6 Pid  12164 on   jungpu30 device  6 [0xb1] GeForce RTX 2080 Ti
> #   Rank  7 Pid  12164 on   jungpu30 device  7 [0xb2] GeForce RTX 2080 Ti
> #
> #                                                     out-of-place                       in-place
> #       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
> #        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
>            8             2   float     sum    35.93    0.00    0.00  1e-07    35.72    0.00    0.00  1e-07
>       524288        131072   float     sum    325.5    1.61    2.82  2e-07    325.4    1.61    2.82  2e-07
>      1048576        262144   float     sum    615.4    1.70    2.98  2e-07    613.0    1.71    2.99  2e-07
>    134217728      33554432   float     sum    95470    1.41    2.46  2e-07    95477    1.41    2.46  2e-07
> # Out of bounds values : 0 OK
> # Avg bus bandwidth    : 1.20304
> #
> ```
"""


def test_a_markdown_block_quote_is_read_like_a_launcher_prefix(tmp_path: Path) -> None:
    """Before: "no result rows found: ... its lines start with '>', which is not a launcher prefix".
    The quote marks go; the table is nccl-tests' own: 4 rows, 8 ranks of one host, all_reduce
    (busbw/algbw 2.98/1.70 = 1.75 = 2 x 7/8), the 128 MiB row 95470 us out of place."""
    path = tmp_path / "x.txt"
    path.write_text(QUOTED_2080TI)
    log = load_nccl_tests(path)
    assert [row.nbytes for row in log.rows] == [8, 524288, 1048576, 134217728]
    assert log.rows[-1].oop_time_s == pytest.approx(95470e-6)
    assert len(log.devices) == 8
    assert {device.host for device in log.devices} == {"jungpu30"}
    assert validate_file(path).collective == "all_reduce"


# 257: CoreWeave's nccl-tests README (code index id 28231401859) shows ranks 0-4 of its MPIJob's device
# list, then '...'; busbw/algbw 115.64 / 59.68 = 1.9377 is 2 x 31/32 (32 ranks) on every large row.
# (SHARP lines dropped; rows kept: the first and the four largest.)
CUT_DEVICE_LIST = """\
# nThread 1 nGpus 1 minBytes 4 maxBytes 2147483648 step: 2(factor) warmup iters: 50 iters: 50 validation: 1
#
# Using devices
#   Rank  0 Pid     33 on nccl-test-128-worker-0 device  0 [0x27] NVIDIA A100-SXM4-80GB
#   Rank  1 Pid     34 on nccl-test-128-worker-0 device  1 [0x2a] NVIDIA A100-SXM4-80GB
#   Rank  2 Pid     35 on nccl-test-128-worker-0 device  2 [0x51] NVIDIA A100-SXM4-80GB
#   Rank  3 Pid     36 on nccl-test-128-worker-0 device  3 [0x57] NVIDIA A100-SXM4-80GB
#   Rank  4 Pid     37 on nccl-test-128-worker-0 device  4 [0x9e] NVIDIA A100-SXM4-80GB
...
#
#                                                       out-of-place                       in-place
#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                       (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2     float     sum    58.23    0.00    0.00  0e+00    56.02    0.00    0.00  0e+00
  1073741824     268435456     float     sum    18266   58.78  113.89  5e-07    18301   58.67  113.68  5e-07
  2147483648     536870912     float     sum    36391   59.01  114.34  5e-07    36710   58.50  113.34  5e-07
  4294967296    1073741824     float     sum    72501   59.24  114.78  5e-07    72344   59.37  115.03  5e-07
  8589934592    2147483648     float     sum   143927   59.68  115.64  5e-07   143961   59.67  115.61  5e-07
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 37.7108
#
"""


def test_a_cut_device_list_no_collective_fits_gives_way_to_the_rows(tmp_path: Path) -> None:
    """Before: "busbw/algbw 1.94 with 5 ranks (device list) ...: no collective fits every row; give
    --collective NAME". 2(n-1)/n = 1.9375 needs n = 32 (1.6 at 5 ranks; no other factor exceeds 1),
    so the list is a lower bound: all_reduce of 32 ranks, the list called cut."""
    path = tmp_path / "x.txt"
    path.write_text(CUT_DEVICE_LIST)
    log = validate_file(path).log
    assert log.collective == "all_reduce"
    assert log.n_ranks == 32
    (evidence,) = [e for e in log.collective_evidence if e.source == "result table"]
    assert evidence.text is not None and evidence.text.endswith(
        "no collective fits the device list's 5 ranks: the list looks cut"
    )
