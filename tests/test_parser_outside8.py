# ruff: noqa: E501  (the logs are quoted as nccl-tests prints them)
"""Public nccl-tests logs of out-of-sample probe 8 (notes/outside8) the reader got wrong.

Each test holds a real excerpt inline (the probe's file number and ``## source:`` in the docstring or
comment) and asserts what the text means.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from commsim.calibrate.infer_launch import gpus_per_thread, infer_launch
from commsim.calibrate.inference import RunOptions, infer_run
from commsim.calibrate.parser import parse_nccl_tests, parse_nccl_tests_runs
from commsim.calibrate.parser_lines import clean_text
from commsim.calibrate.validate import validate_runs
from commsim.calibrate.verdict import judge
from commsim.errors import ParseError

# 125: SkyPilot docs page "Using High-Performance GPU Networking on GCP and GKE with SkyPilot"
# (examples/gcp_gpu_direct_tcpx README), section "Running nccl_rdma_gke_h200.yaml on SkyPilot":
# 2 x a3-ultragpu-8g (16 H200). Every line carries SkyPilot's Ray prefix before mpirun's
# --tag-output tag; the header, the device list, the first and last of its 24 rows and the footer.
RAY_PREFIXED = """\
(head, rank=0, pid=3808) All nodes: 10.100.9.12:8,10.100.10.12:8
(worker1, rank=1, pid=2769, ip=10.100.10.12) Worker nodes
(head, rank=0, pid=3808) [1,0]<stdout>:# nThread 1 nGpus 1 minBytes 1024 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 100 agg iters: 1 validation: 1 graph: 0
(head, rank=0, pid=3808) [1,0]<stdout>:#
(head, rank=0, pid=3808) [1,0]<stdout>:# Using devices
(head, rank=0, pid=3808) [1,0]<stdout>:#  Rank  0 Group  0 Pid   7774 on nc-d87e1263-head device  0 [0000:8f:00] NVIDIA H200
(head, rank=0, pid=3808) [1,0]<stdout>:#  Rank  1 Group  0 Pid   7775 on nc-d87e1263-head device  1 [0000:90:00] NVIDIA H200
(head, rank=0, pid=3808) [1,0]<stdout>:#  Rank  2 Group  0 Pid   7776 on nc-d87e1263-head device  2 [0000:96:00] NVIDIA H200
(head, rank=0, pid=3808) [1,0]<stdout>:#  Rank  3 Group  0 Pid   7778 on nc-d87e1263-head device  3 [0000:97:00] NVIDIA H200
(head, rank=0, pid=3808) [1,0]<stdout>:#  Rank  4 Group  0 Pid   7783 on nc-d87e1263-head device  4 [0000:c4:00] NVIDIA H200
(head, rank=0, pid=3808) [1,0]<stdout>:#  Rank  5 Group  0 Pid   7786 on nc-d87e1263-head device  5 [0000:c5:00] NVIDIA H200
(head, rank=0, pid=3808) [1,0]<stdout>:#  Rank  6 Group  0 Pid   7789 on nc-d87e1263-head device  6 [0000:cb:00] NVIDIA H200
(head, rank=0, pid=3808) [1,0]<stdout>:#  Rank  7 Group  0 Pid   7792 on nc-d87e1263-head device  7 [0000:cc:00] NVIDIA H200
(head, rank=0, pid=3808) [1,0]<stdout>:#  Rank  8 Group  0 Pid   4926 on nc-d87e1263-worker1 device  0 [0000:8f:00] NVIDIA H200
(head, rank=0, pid=3808) [1,0]<stdout>:#  Rank  9 Group  0 Pid   4927 on nc-d87e1263-worker1 device  1 [0000:90:00] NVIDIA H200
(head, rank=0, pid=3808) [1,0]<stdout>:#  Rank 10 Group  0 Pid   4928 on nc-d87e1263-worker1 device  2 [0000:96:00] NVIDIA H200
(head, rank=0, pid=3808) [1,0]<stdout>:#  Rank 11 Group  0 Pid   4929 on nc-d87e1263-worker1 device  3 [0000:97:00] NVIDIA H200
(head, rank=0, pid=3808) [1,0]<stdout>:#  Rank 12 Group  0 Pid   4931 on nc-d87e1263-worker1 device  4 [0000:c4:00] NVIDIA H200
(head, rank=0, pid=3808) [1,0]<stdout>:#  Rank 13 Group  0 Pid   4934 on nc-d87e1263-worker1 device  5 [0000:c5:00] NVIDIA H200
(head, rank=0, pid=3808) [1,0]<stdout>:#  Rank 14 Group  0 Pid   4937 on nc-d87e1263-worker1 device  6 [0000:cb:00] NVIDIA H200
(head, rank=0, pid=3808) [1,0]<stdout>:#  Rank 15 Group  0 Pid   4940 on nc-d87e1263-worker1 device  7 [0000:cc:00] NVIDIA H200
(head, rank=0, pid=3808) [1,0]<stdout>:#
(head, rank=0, pid=3808) [1,0]<stdout>:#                                                              out-of-place                       in-place
(head, rank=0, pid=3808) [1,0]<stdout>:#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
(head, rank=0, pid=3808) [1,0]<stdout>:#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
(head, rank=0, pid=3808) [1,0]<stdout>:        1024            16     float    none      -1    28.39    0.04    0.03      0    28.07    0.04    0.03      0
(head, rank=0, pid=3808) [1,0]<stdout>:        2048            32     float    none      -1    28.29    0.07    0.07      0    28.24    0.07    0.07      0
(head, rank=0, pid=3808) [1,0]<stdout>:  8589934592     134217728     float    none      -1    24724  347.44  325.72      0    24214  354.75  332.58      0
(head, rank=0, pid=3808) [1,0]<stdout>:# Out of bounds values : 0 OK
(head, rank=0, pid=3808) [1,0]<stdout>:# Avg bus bandwidth    : 122.073
(head, rank=0, pid=3808) [1,0]<stdout>:#
"""


def test_a_ray_worker_prefix_before_the_mpirun_tag_is_removed() -> None:
    """125: '(head, rank=0, pid=3808) [1,0]<stdout>:' before every line. Ray prints a worker's output
    after '(<name> pid=N, ip=A)' (docs.ray.io, Configuring Logging); SkyPilot adds the node rank. With
    both prefixes removed the table reads: 16 ranks on 2 hosts from the device list, 1 KiB and 8 GiB
    rows, all_gather (redop none, busbw/algbw 0.03/0.04 ~ 15/16 read from the 8 GiB row:
    325.72/347.44 = 0.9375 = 15/16)."""
    log = parse_nccl_tests(RAY_PREFIXED, "125.txt")
    assert (log.collective, log.n_ranks, log.nodes) == ("all_gather", 16, 2)
    assert [row.nbytes for row in log.rows] == [1024, 2048, 8589934592]


def test_the_ray_prefix_keeps_the_rank_it_names() -> None:
    """The worker line '(worker1, rank=1, pid=2769, ip=10.100.10.12) Worker nodes' (125, line 2 of the
    excerpt) names rank 1; Ray's own '(pid=45601) task' (docs.ray.io) names none and is still removed."""
    text = clean_text(RAY_PREFIXED.splitlines()[1] + "\n(pid=45601) task\n(MyActor pid=7, ip=10.0.0.1) x")
    assert text.lines == ["Worker nodes", "task", "x"]
    assert text.prefix_ranks == {1: 1}


def test_a_table_behind_an_unknown_prefix_is_named_in_the_refusal() -> None:
    """125 with a prefix no reader knows ('node-0 | ', as docker compose writes) before every line:
    the refusal names the column header's line (24 in the excerpt: 2 Ray lines, the run header, '#', 'Using devices', 16
    device lines, '#', the 'out-of-place' line, then the header) and the text before it."""
    hidden = "\n".join("node-0 | " + line.split(") ", 1)[1] for line in RAY_PREFIXED.splitlines())
    with pytest.raises(ParseError) as raised:
        parse_nccl_tests(hidden, "125.txt")
    message = str(raised.value)
    assert "a table's column header is at line 24" in message
    assert "'node-0 | [1,0]<stdout>:'" in message


# 133: AWS "Getting started with EFA on EKS" README (p3dn.24xlarge, Kubeflow MPI operator), Step 7:
# 2 nodes x 1 V100, NCCL 2.6.4 over EFA. The run header, device list, the version line, the old
# per-test header (no root column), NCCL's 'Launch mode' line, 3 of its 29 rows and the footer.
NCCL_2_6 = """\
# nThread 1 nGpus 1 minBytes 8 maxBytes 2147483648 step: 2(factor) warmup iters: 5 iters: 1000 validation: 1
#
# Using devices
#   Rank  0 Pid     14 on ip-192-168-2-54 device  0 [0x00] Tesla V100-SXM2-32GB
#   Rank  1 Pid     14 on ip-192-168-16-52 device  0 [0x00] Tesla V100-SXM2-32GB
NCCL version 2.6.4+cuda10.2
#                                                     out-of-place                       in-place
#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
ip-192-168-2-54:14:14 [0] NCCL INFO Launch mode Parallel
           8             2   float     sum    52.16    0.00    0.00  0e+00    52.04    0.00    0.00  0e+00
          16             4   float     sum    52.04    0.00    0.00  0e+00    51.83    0.00    0.00  0e+00
          32             8   float     sum    51.91    0.00    0.00  0e+00    51.74    0.00    0.00  0e+00
  2147483648     536870912   float     sum   826687    2.60    2.60  0e+00   828420    2.59    2.59  0e+00
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 1.16154
"""


def test_nccl_before_2_7_rules_out_send_recv() -> None:
    """133: with 2 ranks all_reduce's factor 2(n-1)/n is 1, as send_recv's, and both print 'sum': the
    table leaves both. NCCL 2.6.4 has no ncclSend/ncclRecv (new in 2.7.0; nccl-tests' sendrecv.cu
    needs NCCL_VERSION(2,7,0)), so only all_reduce ran."""
    log = parse_nccl_tests(NCCL_2_6, "133.txt")
    assert log.collective == "all_reduce"
    (evidence,) = log.collective_evidence
    assert evidence.source == "result table"
    assert "NCCL 2.6.4+cuda10.2 (printed) predates ncclSend/ncclRecv (2.7.0)" in str(evidence.text)


def test_a_given_nccl_version_before_2_7_rules_out_send_recv() -> None:
    """133 without its version line: the table leaves all_reduce and send_recv; --nccl-version 2.6.4
    leaves all_reduce, and 2.7.8 (which has send/recv) leaves both."""
    unversioned = NCCL_2_6.replace("NCCL version 2.6.4+cuda10.2\n", "")
    assert parse_nccl_tests_runs(unversioned, "133.txt")[0].collective is None
    (given,) = parse_nccl_tests_runs(unversioned, "133.txt", nccl_version="2.6.4")
    assert given.collective == "all_reduce"
    assert "NCCL 2.6.4 (given) predates" in str(given.collective_evidence[0].text)
    (newer,) = parse_nccl_tests_runs(unversioned, "133.txt", nccl_version="2.7.8")
    assert newer.collective is None


# 137: blog post "NCCL All-Reduce Scaling: From 2 to 64 H100 Nodes on Azure" (jingchaozhang.github.io):
# 64 x 8 H100 over 8 x NDR InfiniBand, 'all_reduce_perf -b 8G -e 8G ... -i 0' (a step of 0 bytes never
# leaves 8 GiB: one row per timing loop); the command and the table as the page prints it, with its '...'.
ONE_SIZE = """\
mpirun -np 512 --map-by ppr:8:node -hostfile hostfile_good \\
  -x UCX_TLS=rc -x UCX_NET_DEVICES=mlx5_ib0:1 \\
  -x NCCL_MIN_NCHANNELS=32 -x NCCL_IB_QPS_PER_CONNECTION=4 \\
  -x NCCL_P2P_NET_CHUNKSIZE=524288 -x NCCL_PXN_DISABLE=1 \\
  -x NCCL_TOPO_FILE=/opt/microsoft/ndv5-topo.xml \\
  -x NCCL_IGNORE_CPU_AFFINITY=1 \\
  /opt/nccl-tests/build/all_reduce_perf -b 8G -e 8G -g 1 -t 1 -i 0 -R 1
#       size         count      type   redop     time   algbw   busbw  #wrong
#        (B)    (elements)                        (us)  (GB/s)  (GB/s)
  8589934592    2147483648     float     sum    47850   179.52  358.33       0
  8589934592    2147483648     float     sum   100855    85.17  170.01       0
  8589934592    2147483648     float     sum    97920    87.72  175.10       0
  8589934592    2147483648     float     sum    79879   107.54  214.65       0
  8589934592    2147483648     float     sum   117113    73.35  146.41       0
  8589934592    2147483648     float     sum    74107   115.91  231.37       0
  8589934592    2147483648     float     sum    93984    91.40  182.44       0
  8589934592    2147483648     float     sum   102055    84.17  168.01       0
  8589934592    2147483648     float     sum    86831    98.93  197.47       0
  8589934592    2147483648     float     sum    89917    95.53  190.69       0
  ...
  8589934592    2147483648     float     sum   131082    65.53  130.81       0
  8589934592    2147483648     float     sum    94940    90.48  180.60       0
  8589934592    2147483648     float     sum   130218    65.97  131.67       0
  8589934592    2147483648     float     sum    82236   104.45  208.50       0
  8589934592    2147483648     float     sum   117674    73.00  145.71       0
  8589934592    2147483648     float     sum   104503    82.20  164.07       0
  8589934592    2147483648     float     sum    97453    88.14  175.94       0
"""
ONE_SIZE_OPTIONS = RunOptions(gpu="H100 SXM", nodes=64, gpus_per_node=8, nic="ib_ndr", nics_per_node=8)


def test_rows_repeating_one_size_are_said_to_be_one_size_with_their_spread() -> None:
    """137: 17 rows of 8589934592 B (lines 10-27 of the excerpt, the '...' line 20 between them) are one size measured
    17 times. Their busbw sorted: 130.81 131.67 145.71 146.41 164.07 168.01 170.01 175.10 175.94 ...
    231.37 358.33, so min 130.8, median (the 9th) 175.9, max 358.3 GB/s; times 47850 to 131082 us:
    131082 / 47850 = 2.74x."""
    log = parse_nccl_tests(ONE_SIZE, "137.txt")
    assert {row.nbytes for row in log.rows} == {8589934592} and len(log.rows) == 17
    (note,) = [w for w in log.warnings if "rows of one size" in w]
    assert note.startswith("lines 10-27: 17 rows of one size, 8 GiB: the same size measured again")
    assert note.endswith("busbw min 130.8, median 175.9, max 358.3 GB/s (2.74x in time)")


def test_a_large_spread_of_one_size_is_a_disturbed_run_not_a_slow_machine(tmp_path: Path) -> None:
    """137: the same 8 GiB all_reduce measured 2.74x apart (above the 1.5x that makes in-place and
    out-of-place times doubtful) says the run was disturbed; it was judged '2.0x below ... no cause'."""
    path = tmp_path / "137.txt"
    path.write_text(ONE_SIZE)
    (validation,) = validate_runs(path, options=ONE_SIZE_OPTIONS, collective="all_reduce")
    verdict = judge(validation)
    assert verdict.kind == "doubtful"
    assert "the 17 rows of 8 GiB (lines 10-27) measure the same work 2.74x apart" in verdict.text


# 129: a markdown cluster-setup guide ("Guide created during hands-on cluster setup session, January
# 2026"): host gpuserver2, 2 x V100 PCIe, one process './all_reduce_perf -b 8 -e 128M -f 2 -g 2'. The
# page's "Actual Output" as printed: no run header, both ranks on Pid 11155, 6 of the 25 rows.
ONE_PROCESS_TWO_GPUS = """\
# nccl-tests version 2.17.8
# Using devices
#  Rank  0 Group  0 Pid  11155 on gpuserver2 device  0 [0000:02:00] Tesla V100-PCIE-16GB
#  Rank  1 Group  0 Pid  11155 on gpuserver2 device  1 [0000:03:00] Tesla V100-PCIE-16GB
#
#       size         count    type   redop     time   algbw   busbw  #wrong
#        (B)    (elements)                     (us)  (GB/s)  (GB/s)
           8             2   float     sum    10.09    0.00    0.00       0
        1024           256   float     sum    10.29    0.10    0.10       0
       65536         16384   float     sum    29.63    2.21    2.21       0
     1048576        262144   float     sum   165.33    6.34    6.34       0
     8388608       2097152   float     sum  1201.02    6.98    6.98       0
   134217728      33554432   float     sum  18927.2    7.09    7.09       0
# Avg bus bandwidth    : 2.97489
"""


def test_ranks_sharing_a_pid_are_one_thread_driving_them() -> None:
    """129: ranks 0 and 1 print Pid 11155 on gpuserver2 (lines 3-4) and no '# nThread' header says
    more: one process drives both GPUs, taken as one thread (-g 2), where it read '1 GPU(s) per thread
    (assumed: one GPU per process assumed)'."""
    log = parse_nccl_tests(ONE_PROCESS_TWO_GPUS, "129.txt", "all_reduce")
    assert gpus_per_thread(log) == 2
    fact = infer_launch(log)
    assert (fact.value, fact.assumed) == ("threads, 2 GPU(s) per thread", False)
    assert (fact.evidence[0].source, fact.evidence[0].line) == ("device list: ranks sharing a Pid", 4)
    assert fact.note.startswith("ranks 0-1 share Pid 11155 on gpuserver2: one process drives 2 GPUs")


# 128: OCI "oci-hpc-oke" README (oracle-quickstart/oci-hpc-oke), section "RUN NCCL tests", 32
# BM.GPU.GB200-v3.4 nodes (4 GB200 each) across two NVL72 racks: the last device line, the version,
# the header, the first and the last 3 of its rows and the footer.
TWO_RACKS = """\
#  Rank 127 Group  0 Pid    137 on instance20260116093132 device  3 [0019:06:00] NVIDIA GB200
NCCL version 2.29.2+cuda13.1
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)
           8             2     float     sum      -1   183.82    0.00    0.00       0   184.74    0.00    0.00       0
  8589934592    2147483648     float     sum      -1  25812.5  332.78  660.36       0  26264.9  327.05  648.99       0
 17179869184    4294967296     float     sum      -1  50409.2  340.81  676.29       0  50431.7  340.66  675.99       0
 34359738368    8589934592     float     sum      -1  99744.6  344.48  683.57       0  99756.3  344.44  683.49       0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 152.682
#
# Collective test concluded: all_reduce_perf
#
"""


def test_the_machine_line_of_two_nvl72_racks_says_the_nics_per_gpu(tmp_path: Path) -> None:
    """128: 128 ranks, 4 per host, on 2 NVL72 racks (each rack one box of 72 GPUs); 4 NICs per 4-GPU
    host assumed is 72 per rack, one per GPU. The line said '72 ib_ndr NIC(s) per box (72 per node)'
    while the facts say 4 per host."""
    path = tmp_path / "128.txt"
    path.write_text(TWO_RACKS)
    (validation,) = validate_runs(path)
    assert validation.inference.facts["nics_per_node"].value == 4
    description = validation.inference.topology.description
    assert description.startswith("2 x nvl72_rack (72 GPUs each), 72 ib_ndr NIC(s) per box (one per GPU);")


@pytest.mark.parametrize(("nics", "share"), [(8, "one per GPU"), (2, "one per 4 GPUs"), (3, "3 for 8 GPUs")])
def test_the_machine_line_counts_a_boxs_nics_against_its_gpus(nics: int, share: str) -> None:
    """A DGX A100 box holds 8 GPUs: 8 NICs are one per GPU, 2 one per 4 GPUs, 3 do not divide 8."""
    from commsim.topology.cluster import cluster

    description = cluster("dgx_a100", nodes=2, nic="ib_hdr", nics_per_node=nics).description
    assert f"{nics} ib_hdr NIC(s) per box ({share});" in description


# 138: dstack docs example "GCP A3 High" (examples/misc/a3high-clusters README), "Run NCCL Tests with
# GPUDirect-TCPX support": the run header, the table and its footer without their '#', as the page
# prints them (the first 3 and last 3 of its 11 rows), then dstack's 'Done'.
NO_HASH = """\
$ dstack apply -f examples/misc/a3high-clusters/nccl-tests.dstack.yml

nccl-tests provisioning completed (running)
nThread 1 nGpus 1 minBytes 8388608 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 200 agg iters: 1 validation: 0 graph: 0

                                                              out-of-place                       in-place
       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     8388608        131072     float    none      -1    784.9   10.69   10.02      0    775.9   10.81   10.14      0
    16777216        262144     float    none      -1   1010.3   16.61   15.57      0    999.3   16.79   15.74      0
    33554432        524288     float    none      -1   1161.6   28.89   27.08      0   1152.9   29.10   27.28      0
  2147483648      33554432     float    none      -1    40254   53.35   50.01      0    39923   53.79   50.43      0
  4294967296      67108864     float    none      -1    80896   53.09   49.77      0    78875   54.45   51.05      0
  8589934592     134217728     float    none      -1   160505   53.52   50.17      0   160117   53.65   50.29      0
Out of bounds values : 0 OK
Avg bus bandwidth    : 40.6043

Done
"""


def test_a_footer_without_its_hash_ends_the_table() -> None:
    """138: 'Out of bounds values : 0 OK' and 'Avg bus bandwidth : 40.6043' without their '#' are the
    table's footer (read: 0 out of bounds at line 15 of the excerpt), not rows inside the table; the
    'Done' after them is outside the table."""
    log = parse_nccl_tests(NO_HASH, "138.txt", n_ranks=16)
    assert (log.out_of_bounds, log.out_of_bounds_line) == (0, 15)
    assert log.avg_busbw_Bps == pytest.approx(40.6043e9)
    assert not [w for w in log.warnings if "not result rows" in w]


def test_nccl_launch_mode_line_before_the_first_row_is_no_warning() -> None:
    """133: NCCL <= 2.7 prints 'NCCL INFO Launch mode Parallel' on the first call, between the column
    header and the first row (line 10 of the excerpt): NCCL's own line, not a broken row."""
    log = parse_nccl_tests(NCCL_2_6, "133.txt")
    assert not [w for w in log.warnings if "not result rows" in w]
    assert len(log.rows) == 4


# 132: Korean wiki page "NCCL" (MLOps & HPC), last block (srun -N3): 3 hosts x 1 Tesla T4 over
# sockets. The command, run header, device list, header, the first 2 and the last of its 11 rows, the
# footer.
ONE_GPU_HOSTS = """\
$ srun --gres=gpu:1 -N3 --export="OMPI_MCA_btl_tcp_if_include=ens5,OMPI_MCA_pml=^ucx,NCCL_SOCKET_IFNAME=ens" --container-image=./pytorch-nccl-tests.sqsh all_reduce_perf -b 100M -e 110M -c 0 -n 1
# nThread 1 nGpus 1 minBytes 104857600 maxBytes 115343360 step: 1048576(bytes) warmup iters: 5 iters: 1 validation: 0
#
# Using devices
#   Rank  0 Pid  30938 on      gpu01 device  0 [0x00] Tesla T4
#   Rank  1 Pid  24859 on      gpu02 device  0 [0x00] Tesla T4
#   Rank  2 Pid  16393 on      gpu03 device  0 [0x00] Tesla T4
#
#                                                       out-of-place                       in-place
#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                       (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
   104857600      26214400     float     sum   202872    0.52    0.69    N/A   224616    0.47    0.62    N/A
   105906176      26476544     float     sum   249852    0.42    0.57    N/A   261420    0.41    0.54    N/A
   115343360      28835840     float     sum   305408    0.38    0.50    N/A   307126    0.38    0.50    N/A
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 0.58536
"""


def test_hosts_of_one_gpu_list_no_assumed_board_or_p2p() -> None:
    """132: ranks 0-2 on gpu01-gpu03, one each (the device list): no two GPUs of a host talk, so the
    board a T4 is assumed to sit on and its peer-to-peer are no assumptions that matter; they were
    listed as 'assumed board = pcie' and 'assumed p2p = True'."""
    log = parse_nccl_tests(ONE_GPU_HOSTS, "132.txt")
    inference = infer_run(log, ONE_GPU_HOSTS, RunOptions(nccl_version="2.12.12"))
    assert (inference.facts["gpus_per_node"].value, inference.facts["gpus_per_node"].assumed) == (1, False)
    board = inference.facts["board"]
    assert (board.assumed, board.note) == (False, "one GPU per host: no GPU-to-GPU link of a host is used")
    assert "p2p" not in inference.facts
    assert [f.name for f in inference.facts.values() if f.assumed] == ["network", "nics_per_node"]


def test_a_command_saying_g_1_wins_over_a_shared_pid() -> None:
    """The command's ``-g 1`` says one GPU per thread; ranks sharing a Pid then say nothing more
    (review: 129's device list after a command with '-g 1' read '2 GPU(s) per thread')."""
    log = parse_nccl_tests(
        "./all_reduce_perf -b 8 -e 128M -f 2 -g 1\n" + ONE_PROCESS_TWO_GPUS, "x.txt", "all_reduce"
    )
    assert gpus_per_thread(log) == 1


def test_one_small_size_measured_again_is_no_doubtful_run(tmp_path: Path) -> None:
    """A spread of repeated rows makes a run doubtful only at a bandwidth-bound size (>= 64 MiB):
    137's 17 rows of 8 GiB at 8 B instead (2.74x apart) are latency jitter, not a disturbed run."""
    small = "\n".join(
        line.replace("  8589934592    2147483648", "           8             2") if "float" in line else line
        for line in ONE_SIZE.splitlines()
    )
    path = tmp_path / "small.txt"
    path.write_text(small + "\n")
    (validation,) = validate_runs(path, options=ONE_SIZE_OPTIONS, collective="all_reduce")
    assert judge(validation).kind != "doubtful"


def test_prose_naming_columns_is_no_hidden_column_header() -> None:
    """A sentence naming 'size' and 'algbw' is no column header behind a prefix: the refusal says
    there are no result rows, not that a header's lines start with 'I compared the' (review)."""
    text = "I compared the size column against algbw for my run but there is no table here\nnothing\n"
    with pytest.raises(ParseError) as info:
        parse_nccl_tests(text, "prose.txt", "all_reduce", n_ranks=1)
    assert "no result rows found" in str(info.value)
    assert "I compared" not in str(info.value)


ONE_RANK_NO_DEVICES = """\
# nThread 1 nGpus 1 minBytes 8 maxBytes 1024 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144     float     sum      -1    10.00  104.86    0.00      0    10.00  104.86    0.00      0
"""


def test_a_one_rank_run_lists_no_assumed_host_count(tmp_path: Path) -> None:
    """One rank (given, the list being absent) copies on one GPU of one host: nodes and GPUs per
    host are no assumption that matters, so they are not listed as assumed and withhold nothing
    (as b7bccd0 did for the board and p2p; review)."""
    path = tmp_path / "one.txt"
    path.write_text(ONE_RANK_NO_DEVICES)
    (validation,) = validate_runs(path, options=RunOptions(gpu="H100 SXM", gpus=1), collective="all_reduce")
    facts = validation.inference.facts
    assert not facts["nodes"].assumed and not facts["gpus_per_node"].assumed
    assert "nodes" not in {f.name for f in validation.inference.assumed}
