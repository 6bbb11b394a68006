# ruff: noqa: E501  (the logs are quoted as nccl-tests prints them)
"""The verdict on a run that reports wrong results, and on a log without bandwidth-bound sizes.

The excerpts are public logs written as their pages print them: two hosts x
one RTX 3090 whose in-network-compute path sums wrongly (every row has
``#wrong`` > 0, e-notation from 2 MiB on; footer ``108 FAILED``), and
2 hosts x 2 H100 NVL run with a fixed step from 500000 to 1500000 B
(NVIDIA/nccl issue #2441).
"""

from __future__ import annotations

from commsim.calibrate.inference import RunOptions
from commsim.calibrate.parser import parse_nccl_tests
from commsim.calibrate.validate import validate_log
from commsim.calibrate.verdict import Verdict, judge

WRONG_LOG = """\
+ mpirun --allow-run-as-root -c 2 --hostfile ./hostfile ./local_run_inc.sh
# nThread 1 nGpus 1 minBytes 8 maxBytes 1000000000 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  29443 on    worker1 device  0 [0x31] NVIDIA GeForce RTX 3090
#  Rank  1 Group  0 Pid  12020 on    worker2 device  0 [0x31] NVIDIA GeForce RTX 3090
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
      524288        131072     float     sum      -1    92.84    5.65    5.65      0    91.64    5.72    5.72      0
     1048576        262144     float     sum      -1    192.5    5.45    5.45  524288    233.4    4.49    4.49  524288
     2097152        524288     float     sum      -1    311.5    6.73    6.73  1.04858e+06    311.3    6.74    6.74  1.04858e+06
     4194304       1048576     float     sum      -1    619.0    6.78    6.78  2.09715e+06    619.0    6.78    6.78  2.09715e+06
    67108864      16777216     float     sum      -1   8948.6    7.50    7.50  3.35544e+07   8782.3    7.64    7.64  3.35544e+07
   134217728      33554432     float     sum      -1    18679    7.19    7.19  6.71089e+07    17885    7.50    7.50  6.71089e+07
# Out of bounds values : 108 FAILED
# Avg bus bandwidth    : 6.54
#
"""

SMALL_LOG = """\
# nccl-tests version 2.18.3 nccl-headers=23005 nccl-library=23005
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 1 minBytes 500000 maxBytes 1500000 step: 100000(bytes) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0
#
# Using devices
#  Rank  0 Group  0 Pid 516704 on   gpu-0001 device  0 [0000:61:00] NVIDIA H100 NVL
#  Rank  1 Group  0 Pid 516703 on   gpu-0001 device  1 [0000:81:00] NVIDIA H100 NVL
#  Rank  2 Group  0 Pid 102501 on   gpu-0003 device  0 [0000:61:00] NVIDIA H100 NVL
#  Rank  3 Group  0 Pid 102505 on   gpu-0003 device  1 [0000:81:00] NVIDIA H100 NVL
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)
     1100000        275000     float     sum      -1   152.97    7.19   10.79       0   155.83    7.06   10.59       0
     1200000        300000     float     sum      -1   169.20    7.09   10.64       0   167.52    7.16   10.74       0
     1300000        325000     float     sum      -1   179.04    7.26   10.89       0   179.55    7.24   10.86       0
     1400000        350000     float     sum      -1   188.43    7.43   11.14       0   192.10    7.29   10.93       0
     1500000        375000     float     sum      -1   199.46    7.52   11.28       0   198.58    7.55   11.33       0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 10.95
#
# Collective test concluded: all_reduce_perf
"""


def _verdict(text: str, options: RunOptions | None = None) -> Verdict:
    log = parse_nccl_tests(text, "test.log")
    return judge(validate_log(log, text, options=options), text)


def test_wrong_results_are_one_warning_with_their_lines_and_printed_precision() -> None:
    """Rows on lines 12-16 (1 MiB to 128 MiB) have #wrong > 0, line 11 (512 KiB) has 0: one warning,
    not ten; the largest count is shown as printed (6.71089e+07), not as 67108900."""
    log = parse_nccl_tests(WRONG_LOG, "test.log")
    assert log.out_of_bounds == 108 and log.out_of_bounds_line == 17
    wrong = [w for w in log.warnings if "wrong" in w]
    assert wrong == [
        "5 of 6 rows report wrong elements (#wrong > 0, up to 6.71089e+07 in one row; lines 12-16): "
        "the results are wrong"
    ]
    assert "line 17: nccl-tests reports 108 out-of-bounds values" in log.warnings
    assert not any("67108900" in w for w in log.warnings)


def test_a_run_with_wrong_results_is_doubtful_before_any_performance_judgement() -> None:
    """7.5 GB/s busbw is far below a 100 Gb/s RoCE NIC (12.5 GB/s), which alone would be 'below';
    the run's own check failed, so the verdict says so and judges no speed."""
    verdict = _verdict(WRONG_LOG, RunOptions(nic="roce_100g", nics_per_node=1))
    assert verdict.kind == "doubtful" and verdict.causes == ()
    assert verdict.doubts[0] == (
        "the run reports wrong results: 5 of 6 rows have #wrong > 0 (lines 12-16); "
        "footer line 17 reports 108 out-of-bounds values (FAILED)"
    )
    assert verdict.text.startswith("doubtful run: the run reports wrong results: ")
    assert "below what this machine" not in verdict.text


def test_a_clean_run_has_no_wrong_results_doubt() -> None:
    """The same rows with every #wrong 0 and the footer '0 OK' raise no such doubt."""
    lines = []
    for line in WRONG_LOG.splitlines():
        fields = line.split()
        if fields and fields[0].isdigit():
            fields[8] = fields[12] = "0"
            line = "  ".join(fields)
        lines.append(line.replace("108 FAILED", "0 OK"))
    clean = "\n".join(lines) + "\n"
    assert not any("wrong" in w for w in parse_nccl_tests(clean, "test.log").warnings)
    verdict = _verdict(clean, RunOptions(nic="roce_100g", nics_per_node=1))
    assert not any("wrong results" in d for d in verdict.doubts)


def test_a_log_without_bandwidth_bound_sizes_names_the_sizes_compared() -> None:
    """The largest size is 1500000 B = 1.5 MB (< 64 MiB): the ratio is not 'at large sizes'."""
    verdict = _verdict(SMALL_LOG)
    assert "at its largest sizes (up to 1.5 MB)" in verdict.text
    assert "at large sizes" not in verdict.text
