# ruff: noqa: E501  (the logs are quoted as nccl-tests prints them)
"""An *as expected* verdict at large sizes says so when the sizes below 64 KiB miss by more than expected.

Outside probe 7 (notes/outside7/REPORT.md, bug 8): log 115 (one A10G of an AWS g5.12xlarge, one
rank) takes 3.5 us a call where the model prices 6.25 us (measured on one H100 SXM host) at every size
under 512 KiB; log 114 (two AWS p5.48xlarge, 16 H100, 32 EFA v2 NICs each) takes 63-118 us at 8 B-32
KiB where the model gives 141-143 us (EFA's per-step figure from NCCL 2.4/2.7-era logs). Both were
judged only "as expected for this machine", at large sizes, beside a 75 % and a 98 % median miss
below 64 KiB. The threshold is the model's expected error there as the report prints it (the
larger of accuracy.json's leave-one-machine-out and outside figures), read here from the file.
"""

from __future__ import annotations

import json
from pathlib import Path

from commsim.calibrate.inference import RunOptions
from commsim.calibrate.parser import parse_nccl_tests
from commsim.calibrate.validate import validate_file, validate_log

DATA = Path(__file__).parent / "data"

A10G_115 = """# nThread 1 nGpus 1 minBytes 1 maxBytes 2147483648 step: 2(factor) warmup iters: 5 iters: 100 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid     21 on test-nccl-worker-0 device  0 [0x00] NVIDIA A10G
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           0             0     float     sum      -1     0.11    0.00    0.00      0     0.10    0.00    0.00      0
           0             0     float     sum      -1     0.10    0.00    0.00      0     0.10    0.00    0.00      0
           4             1     float     sum      -1     3.54    0.00    0.00      0     0.11    0.03    0.00      0
           8             2     float     sum      -1     3.51    0.00    0.00      0     0.11    0.07    0.00      0
          16             4     float     sum      -1     3.53    0.00    0.00      0     0.11    0.14    0.00      0
          32             8     float     sum      -1     3.48    0.01    0.00      0     0.12    0.28    0.00      0
          64            16     float     sum      -1     3.62    0.02    0.00      0     0.12    0.55    0.00      0
         128            32     float     sum      -1     3.50    0.04    0.00      0     0.12    1.11    0.00      0
         256            64     float     sum      -1     3.50    0.07    0.00      0     0.12    2.22    0.00      0
         512           128     float     sum      -1     3.50    0.15    0.00      0     0.12    4.42    0.00      0
        1024           256     float     sum      -1     3.49    0.29    0.00      0     0.11    9.01    0.00      0
        2048           512     float     sum      -1     3.51    0.58    0.00      0     0.11   17.95    0.00      0
        4096          1024     float     sum      -1     3.49    1.18    0.00      0     0.11   35.96    0.00      0
        8192          2048     float     sum      -1     3.53    2.32    0.00      0     0.12   70.86    0.00      0
       16384          4096     float     sum      -1     3.49    4.70    0.00      0     0.11  143.72    0.00      0
       32768          8192     float     sum      -1     3.57    9.18    0.00      0     0.12  282.73    0.00      0
       65536         16384     float     sum      -1     3.58   18.30    0.00      0     0.12  565.45    0.00      0
      131072         32768     float     sum      -1     3.52   37.19    0.00      0     0.12  1129.93    0.00      0
      262144         65536     float     sum      -1     3.58   73.13    0.00      0     0.12  2267.68    0.00      0
      524288        131072     float     sum      -1     4.18  125.28    0.00      0     0.12  4534.97    0.00      0
     1048576        262144     float     sum      -1     6.48  161.76    0.00      0     0.13  8236.40    0.00      0
     2097152        524288     float     sum      -1    11.21  187.15    0.00      0     0.12  18092.93    0.00      0
     4194304       1048576     float     sum      -1    21.11  198.71    0.00      0     0.12  36314.32    0.00      0
     8388608       2097152     float     sum      -1    38.56  217.57    0.00      0     0.12  72817.78    0.00      0
    16777216       4194304     float     sum      -1    72.82  230.40    0.00      0     0.12  145006.19    0.00      0
    33554432       8388608     float     sum      -1    141.3  237.54    0.00      0     0.12  289262.34    0.00      0
    67108864      16777216     float     sum      -1    278.1  241.31    0.00      0     0.12  580024.75    0.00      0
   134217728      33554432     float     sum      -1    552.0  243.15    0.00      0     0.12  1157049.38    0.00      0
   268435456      67108864     float     sum      -1   1099.5  244.14    0.00      0     0.12  2296086.36    0.00      0
   536870912     134217728     float     sum      -1   2194.7  244.62    0.00      0     0.12  4600436.26    0.00      0
  1073741824     268435456     float     sum      -1   4376.7  245.33    0.00      0     0.12  9240463.20    0.00      0
  2147483648     536870912     float     sum      -1   8741.9  245.65    0.00      0     0.12  18401745.06    0.00      0
"""
"""Log 115's header, device line and table (the ``[1,0]<stdout>:`` tags of mpirun --tag-output removed)."""

P5_EFA_114 = """# nThread 1 nGpus 1 minBytes 8 maxBytes 17179869184 step: 2(factor) warmup iters: 5 iters: 100 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid     25 on test-nccl-worker-0 device  0 [0x53] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid     26 on test-nccl-worker-0 device  1 [0x64] NVIDIA H100 80GB HBM3
#  Rank  2 Group  0 Pid     27 on test-nccl-worker-0 device  2 [0x75] NVIDIA H100 80GB HBM3
#  Rank  3 Group  0 Pid     28 on test-nccl-worker-0 device  3 [0x86] NVIDIA H100 80GB HBM3
#  Rank  4 Group  0 Pid     29 on test-nccl-worker-0 device  4 [0x97] NVIDIA H100 80GB HBM3
#  Rank  5 Group  0 Pid     32 on test-nccl-worker-0 device  5 [0xa8] NVIDIA H100 80GB HBM3
#  Rank  6 Group  0 Pid     34 on test-nccl-worker-0 device  6 [0xb9] NVIDIA H100 80GB HBM3
#  Rank  7 Group  0 Pid     37 on test-nccl-worker-0 device  7 [0xca] NVIDIA H100 80GB HBM3
#  Rank  8 Group  0 Pid     25 on test-nccl-worker-1 device  0 [0x53] NVIDIA H100 80GB HBM3
#  Rank  9 Group  0 Pid     26 on test-nccl-worker-1 device  1 [0x64] NVIDIA H100 80GB HBM3
#  Rank 10 Group  0 Pid     27 on test-nccl-worker-1 device  2 [0x75] NVIDIA H100 80GB HBM3
#  Rank 11 Group  0 Pid     28 on test-nccl-worker-1 device  3 [0x86] NVIDIA H100 80GB HBM3
#  Rank 12 Group  0 Pid     29 on test-nccl-worker-1 device  4 [0x97] NVIDIA H100 80GB HBM3
#  Rank 13 Group  0 Pid     30 on test-nccl-worker-1 device  5 [0xa8] NVIDIA H100 80GB HBM3
#  Rank 14 Group  0 Pid     33 on test-nccl-worker-1 device  6 [0xb9] NVIDIA H100 80GB HBM3
#  Rank 15 Group  0 Pid     37 on test-nccl-worker-1 device  7 [0xca] NVIDIA H100 80GB HBM3
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2     float     sum      -1    85.70    0.00    0.00      0    74.97    0.00    0.00      0
          16             4     float     sum      -1    63.44    0.00    0.00      0    63.31    0.00    0.00      0
          32             8     float     sum      -1    64.00    0.00    0.00      0    63.36    0.00    0.00      0
          64            16     float     sum      -1    66.94    0.00    0.00      0    64.14    0.00    0.00      0
         128            32     float     sum      -1    63.67    0.00    0.00      0    64.11    0.00    0.00      0
         256            64     float     sum      -1    71.01    0.00    0.01      0    64.55    0.00    0.01      0
         512           128     float     sum      -1    66.49    0.01    0.01      0    64.84    0.01    0.01      0
        1024           256     float     sum      -1    65.74    0.02    0.03      0    66.17    0.02    0.03      0
        2048           512     float     sum      -1    72.54    0.03    0.05      0    70.60    0.03    0.05      0
        4096          1024     float     sum      -1    81.02    0.05    0.09      0    80.44    0.05    0.10      0
        8192          2048     float     sum      -1    95.51    0.09    0.16      0    82.54    0.10    0.19      0
       16384          4096     float     sum      -1    105.5    0.16    0.29      0    83.11    0.20    0.37      0
       32768          8192     float     sum      -1    117.6    0.28    0.52      0    84.10    0.39    0.73      0
       65536         16384     float     sum      -1    107.4    0.61    1.14      0    86.01    0.76    1.43      0
      131072         32768     float     sum      -1    96.47    1.36    2.55      0    97.28    1.35    2.53      0
      262144         65536     float     sum      -1    99.51    2.63    4.94      0    110.7    2.37    4.44      0
      524288        131072     float     sum      -1    120.7    4.34    8.14      0    119.0    4.40    8.26      0
     1048576        262144     float     sum      -1    138.1    7.59   14.24      0    122.1    8.59   16.10      0
     2097152        524288     float     sum      -1    148.5   14.12   26.48      0    146.9   14.28   26.77      0
     4194304       1048576     float     sum      -1    170.0   24.67   46.25      0    166.8   25.14   47.15      0
     8388608       2097152     float     sum      -1    203.4   41.23   77.31      0    202.5   41.42   77.67      0
    16777216       4194304     float     sum      -1    283.1   59.27  111.13      0    282.3   59.44  111.44      0
    33554432       8388608     float     sum      -1    459.2   73.07  137.01      0    434.2   77.27  144.89      0
    67108864      16777216     float     sum      -1    600.4  111.78  209.59      0    599.7  111.91  209.83      0
   134217728      33554432     float     sum      -1    874.1  153.55  287.91      0    874.4  153.49  287.79      0
   268435456      67108864     float     sum      -1   1469.4  182.68  342.52      0   1461.3  183.70  344.44      0
   536870912     134217728     float     sum      -1   2593.9  206.97  388.08      0   2567.0  209.14  392.14      0
  1073741824     268435456     float     sum      -1   4575.2  234.69  440.04      0   4572.1  234.85  440.34      0
  2147483648     536870912     float     sum      -1   9058.9  237.06  444.48      0   9070.0  236.77  443.94      0
  4294967296    1073741824     float     sum      -1    17232  249.24  467.32      0    17261  248.83  466.55      0
  8589934592    2147483648     float     sum      -1    33594  255.70  479.43      0    33528  256.20  480.38      0
 17179869184    4294967296     float     sum      -1    66023  260.21  487.90      0    65990  260.34  488.14      0
"""
"""Log 114's header, device list and table (tags removed; the tag repeated inside each row too)."""


def _expected_there() -> str:
    """The expected error below 64 KiB as the report prints it: the larger of the two figures."""
    data = json.loads((Path(__file__).parents[1] / "commsim/calibrate/accuracy.json").read_text())
    figures = (data["leave_one_machine_out"]["latency_bound"], data["outside"]["as_shipped"]["latency_bound"])
    return f"{max(figures):.0%}"


def _verdict(text: str, options: RunOptions) -> str:
    log = parse_nccl_tests(text, n_ranks=options.gpus)
    return validate_log(log, text, options=options, collective="all_reduce").verdict()


def test_one_a10g_rank_at_half_the_models_floor_is_qualified_below_64_kib() -> None:
    """Log 115: 14 sizes 4 B-32 KiB below 64 KiB, measured 3.48-3.62 us against the model's flat
    6.25 us. The median measured time is (3.50 + 3.51) / 2 = 3.505 us: 3.505 / 6.25 = 0.5608 -> 0.56x;
    the median |error| is 6.25 / 3.505 - 1 = 78.3 % -> 78 %. Large sizes (64 MiB-2 GiB) are 9 % off:
    as expected there. One rank, so the floor is the one-rank call's, measured on an H100 SXM."""
    verdict = _verdict(A10G_115, RunOptions(gpus=1, nodes=1))
    assert verdict.startswith(
        "as expected at large sizes; below 64 KiB the run's time is 0.56x the model's (median over 14 "
        f"sizes; the model misses there by a median 78%, more than the {_expected_there()} it is expected "
        "to miss by there, docs/validation.md): the model's per-call floor does not fit this machine (a "
        "one-GPU call is priced with constants measured on one H100 SXM (the host's 6.25 us per call, "
        "copies at 0.449 of the memory bandwidth), not on this GPU); the model misses this log by a "
        "median 75% over all sizes"
    )
    assert "as expected for this machine" not in verdict


def test_p5_efa_small_sizes_at_half_the_model_name_the_efa_per_step_figure() -> None:
    """Log 114: 13 sizes 8 B-32 KiB; the median of measured / predicted is the 256 B row's, 71.01 us
    against the model's 140.8 us (0.50x); the median |error| is 98 % (the report's latency_bound
    line, 98.3 %) -- when priced with aws-ofi-nccl's SENDRECV protocol (forced here with
    ``OFI_NCCL_PROTOCOL=SENDRECV``), whose per-step overhead comes from NCCL 2.4.8/2.7.8-era
    development logs: the verdict names that note. With p5's default protocol, RDMA (the real log prints
    ``Using transport protocol RDMA``; these rows alone leave it assumed), the small sizes fit."""
    options = RunOptions(nic="efa_v2", nics_per_node=32)
    assert _verdict(P5_EFA_114, options) == "as expected for this machine"
    verdict = _verdict("export OFI_NCCL_PROTOCOL=SENDRECV\n" + P5_EFA_114, options)
    assert verdict.startswith(
        "as expected at large sizes; below 64 KiB the run's time is 0.50x the model's (median over 13 "
        f"sizes; the model misses there by a median 98%, more than the {_expected_there()} it is expected "
        "to miss by there, docs/validation.md): the model's per-call floor and per-step overheads do not "
        "fit this machine; what the model's network latency rests on: the efa transport's overhead per "
        "network step (38 us) is derived from the logs of 2 development machines"
    )
    assert "(runs of NCCL 2.4.8 and 2.7.8 with aws-ofi-nccl's SENDRECV protocol" in verdict
    assert "'commsim calibrate' on this machine's logs fits a latency scale for it" in verdict


def test_a_run_whose_small_sizes_fit_stays_simply_as_expected() -> None:
    """The 8 x H100 SXM HGX all_gather development log: a median 6.5 % off at >= 64 MiB and 11.8 %
    below 64 KiB, under the expected error there: the verdict is unchanged."""
    validation = validate_file(DATA / "nccl-tests" / "H100-SXM-HGX_all_gather_8gpu_1.txt")
    assert validation.verdict() == "as expected for this machine"
