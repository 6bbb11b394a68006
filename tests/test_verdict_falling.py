# ruff: noqa: E501  (the logs are quoted as nccl-tests prints them)
"""A sustained fall of bandwidth with growing size, anywhere in the sweep, is noted as something in the run.

Outside probe 7 (notes/outside7/REPORT.md, bug 9): log 123, an ABCI 2.0 broadcast over 4 V-nodes (16
V100, NCCL 2.8.4, aistabci/abci2.0benchmark bcast/inter_vnode/job04), falls from 7.0 GB/s busbw at
2 MiB to 2.5 and 2.0 GB/s at 16 and 32 MiB. The verdict noted a persistent step only among sizes >=
64 MiB, which this log never reaches, and said nothing.
"""

from __future__ import annotations

from pathlib import Path

from commsim.calibrate.inference import RunOptions
from commsim.calibrate.parser import parse_nccl_tests
from commsim.calibrate.validate import validate_file, validate_log
from commsim.calibrate.verdict_causes import falling_bandwidth

OUTSIDE = Path(__file__).parent / "data" / "outside"

V100_BCAST_123 = """#
# Using devices
#   Rank  0 Pid  27619 on      g0240 device  0 [0x3d] Tesla V100-SXM2-16GB
#   Rank  1 Pid  27620 on      g0240 device  1 [0x3e] Tesla V100-SXM2-16GB
#   Rank  2 Pid  27621 on      g0240 device  2 [0xb1] Tesla V100-SXM2-16GB
#   Rank  3 Pid  27622 on      g0240 device  3 [0xb2] Tesla V100-SXM2-16GB
#   Rank  4 Pid 211331 on      g0243 device  0 [0x3d] Tesla V100-SXM2-16GB
#   Rank  5 Pid 211332 on      g0243 device  1 [0x3e] Tesla V100-SXM2-16GB
#   Rank  6 Pid 211333 on      g0243 device  2 [0xb1] Tesla V100-SXM2-16GB
#   Rank  7 Pid 211334 on      g0243 device  3 [0xb2] Tesla V100-SXM2-16GB
#   Rank  8 Pid  73977 on      g0248 device  0 [0x3d] Tesla V100-SXM2-16GB
#   Rank  9 Pid  73991 on      g0248 device  1 [0x3e] Tesla V100-SXM2-16GB
#   Rank 10 Pid  73992 on      g0248 device  2 [0xb1] Tesla V100-SXM2-16GB
#   Rank 11 Pid  73993 on      g0248 device  3 [0xb2] Tesla V100-SXM2-16GB
#   Rank 12 Pid  44548 on      g0249 device  0 [0x3d] Tesla V100-SXM2-16GB
#   Rank 13 Pid  44549 on      g0249 device  1 [0x3e] Tesla V100-SXM2-16GB
#   Rank 14 Pid  44550 on      g0249 device  2 [0xb1] Tesla V100-SXM2-16GB
#   Rank 15 Pid  44551 on      g0249 device  3 [0xb2] Tesla V100-SXM2-16GB
#
#                                                     out-of-place                       in-place
#       size         count    type    root     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           4             1   float       0     5.49    0.00    0.00  0e+00     5.59    0.00    0.00  0e+00
           8             2   float       0     4.86    0.00    0.00  0e+00     4.87    0.00    0.00  0e+00
          16             4   float       0     4.94    0.00    0.00  0e+00     4.84    0.00    0.00  0e+00
          32             8   float       0     4.86    0.01    0.01  0e+00     4.85    0.01    0.01  0e+00
          64            16   float       0     4.88    0.01    0.01  0e+00     4.85    0.01    0.01  0e+00
         128            32   float       0     4.85    0.03    0.03  0e+00     4.85    0.03    0.03  0e+00
         256            64   float       0     4.87    0.05    0.05  0e+00     4.84    0.05    0.05  0e+00
         512           128   float       0     4.87    0.11    0.11  0e+00     4.85    0.11    0.11  0e+00
        1024           256   float       0     5.25    0.20    0.20  0e+00     5.23    0.20    0.20  0e+00
        2048           512   float       0     6.97    0.29    0.29  0e+00     6.93    0.30    0.30  0e+00
        4096          1024   float       0    10.49    0.39    0.39  0e+00    10.42    0.39    0.39  0e+00
        8192          2048   float       0    17.76    0.46    0.46  0e+00    17.79    0.46    0.46  0e+00
       16384          4096   float       0    18.48    0.89    0.89  0e+00    18.48    0.89    0.89  0e+00
       32768          8192   float       0    20.55    1.59    1.59  0e+00    20.37    1.61    1.61  0e+00
       65536         16384   float       0    29.56    2.22    2.22  0e+00    29.25    2.24    2.24  0e+00
      131072         32768   float       0    79.88    1.64    1.64  0e+00    68.18    1.92    1.92  0e+00
      262144         65536   float       0    108.9    2.41    2.41  0e+00    81.88    3.20    3.20  0e+00
      524288        131072   float       0    117.4    4.47    4.47  0e+00    117.0    4.48    4.48  0e+00
     1048576        262144   float       0    178.2    5.88    5.88  0e+00    192.4    5.45    5.45  0e+00
     2097152        524288   float       0    300.0    6.99    6.99  0e+00    297.2    7.06    7.06  0e+00
     4194304       1048576   float       0    849.8    4.94    4.94  0e+00    868.3    4.83    4.83  0e+00
     8388608       2097152   float       0   1627.0    5.16    5.16  0e+00   1641.0    5.11    5.11  0e+00
    16777216       4194304   float       0   6827.7    2.46    2.46  0e+00   5383.3    3.12    3.12  0e+00
    33554432       8388608   float       0    17065    1.97    1.97  0e+00    17919    1.87    1.87  0e+00
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 1.78095
#
"""
"""Log 123 from its header line (line 21 of the file) to its footer: file line L is line L - 20 here."""

A100_BCAST_112 = """#       size         count    type    root     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
      131072         32768   float       0    42.61    3.08    3.08  0e+00    41.11    3.19    3.19  0e+00
      262144         65536   float       0    108.6    2.41    2.41  0e+00    105.3    2.49    2.49  0e+00
      524288        131072   float       0    151.1    3.47    3.47  0e+00    148.2    3.54    3.54  0e+00
     1048576        262144   float       0    253.1    4.14    4.14  0e+00    252.7    4.15    4.15  0e+00
     2097152        524288   float       0    278.5    7.53    7.53  0e+00    272.5    7.70    7.70  0e+00
     4194304       1048576   float       0    474.2    8.85    8.85  0e+00    469.4    8.94    8.94  0e+00
     8388608       2097152   float       0    673.7   12.45   12.45  0e+00    701.5   11.96   11.96  0e+00
    16777216       4194304   float       0    961.2   17.45   17.45  0e+00    962.0   17.44   17.44  0e+00
    33554432       8388608   float       0   1520.6   22.07   22.07  0e+00   1522.2   22.04   22.04  0e+00
"""
"""Probe 7's log 112 (the same benchmark on 4 A-nodes), 128 KiB-32 MiB: busbw keeps rising."""


def test_a_broadcast_whose_busbw_falls_from_2_mib_is_noted_even_when_not_judged() -> None:
    """Best bandwidth below 16 MiB: the 2 MiB row, 2097152 B / 300.0 us = 6.99 GB/s. 4 and 8 MiB reach
    4.94 and 5.16 GB/s (0.71x and 0.74x: within 1 / 1.5 = 0.67x); 16 MiB 16777216 / 6827.7 us = 2.457
    GB/s (0.35x) and 32 MiB 33554432 / 17065 us = 1.966 GB/s (0.28x) are two fallen rows in a row, at
    file lines 65-66 (45-46 of the excerpt). The board and network are assumed (the log does not name
    them), so the verdict is withheld; the fall is the run's whatever the machine, so it is said."""
    options = RunOptions(gpus=16, nodes=4, gpus_per_node=4, nccl_version="2.8.4")
    log = parse_nccl_tests(V100_BCAST_123, n_ranks=16)
    verdict = validate_log(log, V100_BCAST_123, options=options, collective="broadcast").verdict()
    assert verdict.startswith("cannot judge: the machine is partly assumed (")
    assert verdict.endswith(
        "; note: bandwidth falls with size: the 16 MiB-32 MiB rows (2 rows, lines 45-46) reach 0.28-0.35x "
        "the bandwidth of the smaller 2 MiB row (busbw 1.97 GB/s at 32 MiB against 6.99 GB/s, "
        "out-of-place): bandwidth holds or grows with size in nccl-tests, so something in the run slowed "
        "these sizes (contention, a degraded link, throttling), not the model"
    )


def test_a_rising_sweep_with_one_slower_row_is_no_fall() -> None:
    """Log 112: the 256 KiB row (2.41 GB/s) is 0.78x the 128 KiB one (3.08 GB/s), within 0.67x, and
    every larger size is faster: no fall."""
    assert falling_bandwidth(parse_nccl_tests(A100_BCAST_112, n_ranks=32).rows) == []


def test_a_below_verdict_on_busy_gpus_names_the_fallen_sizes() -> None:
    """Outside log 53 (two RTX 4090 of a host holding another job's memory, one 30 % busy): 256 KiB
    at 262144 B / 264.4 us = 0.991 GB/s; 512 KiB 0.403 (0.41x), 1 MiB 0.512 (0.52x), 2 MiB 0.650
    (0.66x) are under 0.67x; 4 MiB 0.831 (0.84x) is not. Lines 61-63 of the file."""
    verdict = validate_file(OUTSIDE / "53_RTX4090-2gpu-container-g2-SHM-busyGPUs.txt").verdict()
    assert verdict.startswith("17.3x below what this machine should reach at large sizes;")
    assert (
        "; note: bandwidth falls with size: the 512 KiB-2 MiB rows (3 rows, lines 61-63) reach 0.41-0.66x "
        "the bandwidth of the smaller 256 KiB row (busbw 0.4 GB/s at 512 KiB against 0.99 GB/s, "
        "out-of-place)"
    ) in verdict
