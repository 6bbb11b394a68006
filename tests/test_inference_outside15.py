"""Public nccl-tests logs of out-of-sample probe 15 whose run was inferred wrong.

Each test holds a real excerpt inline (the probe's file number and source in the comment above it)
and asserts what the log, read as NCCL reads its settings, says about the run.
"""

from __future__ import annotations

from pathlib import Path

from commsim.calibrate.validate import validate_file

# 270: blog post "DGX Sparks Clustering - RoCE/RDMA Networking Setup & NCCL Benchmarking" (code index
# id 62504129790, 2026-07-21): two DGX Spark (GB10) joined by one QSFP112 cable, which the GB10's
# ConnectX-7 presents as two RDMA devices, rocep1s0f1 (PCI domain 0) and roceP2p1s0f1 (PCI domain 2);
# the post lists both in NCCL_IB_HCA with NCCL's exact-match '='. (Rows kept: the first and the last.)
SPARK_TWO_HCAS = """\
mpirun -np 2 -H 192.168.100.101:1,192.168.100.102:1 \\
  --mca plm_rsh_agent "ssh -o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no" \\
  --mca btl_tcp_if_include enP7s7 \\
  --mca oob_tcp_if_include enP7s7 \\
  -x LD_LIBRARY_PATH -x NCCL_SOCKET_IFNAME=enP7s7 \\
  -x NCCL_IB_HCA==rocep1s0f1,roceP2p1s0f1 \\
  -x NCCL_IB_MERGE_NICS=1 -x NCCL_CROSS_NIC=1 -x NCCL_IB_GID_INDEX=3 \\
  ~/nccl-tests/build/all_gather_perf -b 512M -e 16G -f 2 -g 1
# nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22809
# Collective test starting: all_gather_perf
# nThread 1 nGpus 1 minBytes 536870912 maxBytes 17179869184 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0
#
# Using devices
#  Rank  0 Group  0 Pid 1668270 on  spark-101 device  0 [000f:01:00] NVIDIA GB10
#  Rank  1 Group  0 Pid 1563448 on  spark-102 device  0 [000f:01:00] NVIDIA GB10
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)
   536870912      67108864     float    none      -1  14594.4   36.79   18.39       0  13778.0   38.97   19.48       0
 17179869184    2147483648     float    none      -1   361820   47.48   23.74       0   354934   48.40   24.20       0
# Out of bounds values : 0 OK
"""  # noqa: E501


def test_an_rdma_device_in_a_nonzero_pci_domain_is_a_whole_hca_name(tmp_path: Path) -> None:
    """270: 'roceP2p1s0f1' (the kernel's PCI-based RDMA name of a card in PCI domain 2) was not read
    as a device name, so the whole NCCL_IB_HCA list was dropped and one NIC per host was assumed
    ("assumed nics_per_node = 1 ... one per GPU"). NCCL opens a net device per HCA port it matches:
    the list names two, and the count is known from the log's own setting."""
    path = tmp_path / "spark.txt"
    path.write_text(SPARK_TWO_HCAS)
    result = validate_file(path)
    nics = result.inference.facts["nics_per_node"]
    assert (nics.value, nics.assumed) == (2, False)
    assert "NCCL_IB_HCA" in str(nics.evidence[0].source) and "names 2 HCA(s)" in str(nics.evidence[0].source)


def test_a_prefix_that_is_no_device_name_still_says_nothing(tmp_path: Path) -> None:
    """The domain form is a whole name only with its bus and slot: 'roceP2' alone (no 'p<bus>s<slot>')
    is no device NCCL would match exactly, so the list says nothing and the count stays assumed."""
    path = tmp_path / "spark.txt"
    path.write_text(SPARK_TWO_HCAS.replace("roceP2p1s0f1", "roceP2"))
    nics = validate_file(path).inference.facts["nics_per_node"]
    assert nics.assumed
