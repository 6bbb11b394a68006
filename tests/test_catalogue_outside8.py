# ruff: noqa: E501  (the logs are quoted as nccl-tests prints them)
"""GPUs and NIC kinds out-of-sample probe 8 (notes/outside8) found missing from the catalogue.

Each addition's figures come from its vendor's datasheet, cited in the data file; the logs that were
refused ('... is not in the catalogue') are quoted inline and now read.
"""

from __future__ import annotations

from commsim.calibrate.inference import RunOptions, infer_run
from commsim.calibrate.parser import parse_nccl_tests
from commsim.hardware import find_gpu
from commsim.topology.linkkinds import get_link_kind

# 131: Azure ML example README "Run NCCL tests on gpu to check perf and health", "Example stdout":
# one node with 4 Tesla K80 GPUs (two K80 boards), old nccl-tests format; the whole log.
K80 = """\
# nThread 1 nGpus 1 minBytes 33554432 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 validation: 1
#
# Using devices
#   Rank  0 Pid    195 on 2e3f9af7241040529530e810ce60fe5d000002 device  0 [0x00] Tesla K80
#   Rank  1 Pid    196 on 2e3f9af7241040529530e810ce60fe5d000002 device  1 [0x00] Tesla K80
#   Rank  2 Pid    198 on 2e3f9af7241040529530e810ce60fe5d000002 device  2 [0x00] Tesla K80
#   Rank  3 Pid    197 on 2e3f9af7241040529530e810ce60fe5d000002 device  3 [0x00] Tesla K80
#
#                                                       out-of-place                       in-place
#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                       (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
2e3f9af7241040529530e810ce60fe5d000002:195:195 [0] NCCL INFO Launch mode Parallel
    33554432       8388608     float     sum    19902    1.69    2.53  2e-07    19898    1.69    2.53  2e-07
    67108864      16777216     float     sum    39770    1.69    2.53  2e-07    39763    1.69    2.53  2e-07
   134217728      33554432     float     sum    79427    1.69    2.53  2e-07    79379    1.69    2.54  2e-07
   268435456      67108864     float     sum   158444    1.69    2.54  2e-07   158617    1.69    2.54  2e-07
   536870912     134217728     float     sum   315771    1.70    2.55  2e-07   316350    1.70    2.55  2e-07
  1073741824     268435456     float     sum   631353    1.70    2.55  2e-07   630534    1.70    2.55  2e-07
  2147483648     536870912     float     sum  1258554    1.71    2.56  2e-07  1258876    1.71    2.56  2e-07
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 2.54225
#
"""

# 135: https://github.com/ROCm/rccl/issues/1129, comment of 2024-04-01: 2 x AMD Instinct MI100 on PCIe
# (Threadripper PRO 5975WX), one process -g 2; the command, header, devices, first and last rows.
MI100 = """\
$ ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 2
# nThread 1 nGpus 2 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
rccl-tests: Version develop:3f7f785
# Using devices
#   Rank  0 Pid   2303 on deep-visionscaper3 device  0 [0000:2f:00.0] AMD Instinct MI100
#   Rank  1 Pid   2303 on deep-visionscaper3 device  1 [0000:03:00.0] AMD Instinct MI100
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2     float     sum      -1    13.10    0.00    0.00      0    13.92    0.00    0.00      0
          16             4     float     sum      -1    13.46    0.00    0.00      0    13.64    0.00    0.00      0
          32             8     float     sum      -1    13.00    0.00    0.00      0    11.62    0.00    0.00      0
    67108864      16777216     float     sum      -1   2904.3   23.11   23.11      0   2911.0   23.05   23.05      0
   134217728      33554432     float     sum      -1   5749.8   23.34   23.34      0   5762.7   23.29   23.29      0
# Errors with asterisks indicate errors that have exceeded the maximum threshold.
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 8.06342
#
"""


def test_a_k80_log_is_read_with_the_k80s_datasheet_figures() -> None:
    """131: 'Tesla K80' was 'not in the catalogue'. One GK210 of a K80 board: 12 GB of GDDR5 at 240 GB/s
    (half the board's 480), PCIe Gen3 x16, no NVLink, kepler; 4 of them are a PCIe host of 4 GPUs."""
    spec = find_gpu("Tesla K80").spec
    assert spec is not None
    assert (spec.key, spec.arch, spec.pcie, spec.fabric, spec.memory_GB, spec.memory_Bps) == (
        "k80",
        "kepler",
        "pcie3_x16",
        None,
        12,
        240e9,
    )
    log = parse_nccl_tests(K80, "131.txt")
    inference = infer_run(log, K80, RunOptions())
    assert (inference.facts["gpu"].value, inference.facts["board"].value) == ("Tesla K80", "pcie")
    assert len(inference.ranks) == 4


def test_an_mi100_log_is_read_with_the_mi100s_datasheet_figures() -> None:
    """135: 'AMD Instinct MI100' was 'not in the catalogue'. CDNA (cdna1), 32 GB HBM2 at 1.2288 TB/s,
    PCIe Gen4 x16, 3 Infinity Fabric bridge links of 92 GB/s both ways (276 GB/s / 3), 46 GB/s each way."""
    spec = find_gpu("AMD Instinct MI100").spec
    assert spec is not None and spec.bridge is not None
    assert (spec.key, spec.arch, spec.pcie, spec.memory_GB, spec.memory_Bps) == (
        "mi100",
        "cdna1",
        "pcie4_x16",
        32,
        1.2288e12,
    )
    assert (spec.bridge.fabric, spec.bridge.links, spec.bridge.link_Bps) == ("xgmi_gpu", 3, 46e9)
    log = parse_nccl_tests(MI100, "135.txt")
    inference = infer_run(log, MI100, RunOptions())
    assert inference.facts["gpu"].value == "Instinct MI100"
    assert inference.gpus_per_thread == 2


def test_slower_roce_kinds_can_be_named() -> None:
    """--nic roce_10g and roce_40g (ConnectX-3/4 Lx class Ethernet, log 130's 40 GbE): line rate / 8."""
    assert get_link_kind("roce_10g").bandwidth_Bps == 10e9 / 8
    assert get_link_kind("roce_40g").bandwidth_Bps == 40e9 / 8
    assert get_link_kind("roce_40g").transport == "roce"
