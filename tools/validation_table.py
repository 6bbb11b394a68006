"""Regenerate docs/validation.md: the NCCL model against the development nccl-tests logs.

Usage (from the repository root)::

    python tools/validation_table.py --write docs/validation.md
    python tools/validation_table.py > docs/validation.md     # the same, through stdout

Every figure in the page comes from this script: what ``validate`` infers
about every real log in ``tests/data/nccl-tests`` and ``tests/data/h100-1gpu``
(with its evidence or "assumed"), the model's prediction with datasheet
defaults, a leave-one-machine-out calibration (fit on the logs of every
other machine whose machine is known, predict this one), and the sizes where
the model misses by more than 20 %, with the reason for each kind of miss;
then the same defaults against the logs in ``tests/data/outside``, public runs
from outside the development set, without options and with the facts their
pages state. Only the prose explanations (``EXPLANATIONS``) and the options a
log needs that it does not print (``OPTIONS``, ``OUTSIDE_OPTIONS``) are
written by hand.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from validation_bias import bias_lines

from commsim.calibrate.defaults import without_machine
from commsim.calibrate.fit import Calibration, fit
from commsim.calibrate.fit_checks import scaled
from commsim.calibrate.inference import RunOptions
from commsim.calibrate.validate import (
    BANDWIDTH_BOUND_BYTES,
    LATENCY_BOUND_BYTES,
    Row,
    Validation,
    validate_file,
    validate_runs,
)
from commsim.cli.calibrate import logs_machine
from commsim.errors import CalibrationError, CommsimError
from commsim.nccl.machine import NcclMachine, analyse
from commsim.units import format_bandwidth, format_size, format_time

COMMAND = "python tools/validation_table.py --write docs/validation.md"
ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "nccl-tests"
ACCURACY = Path(__file__).resolve().parent.parent / "commsim" / "calibrate" / "accuracy.json"
MISS = 0.20
"""A size is a miss when the predicted time is off by more than this fraction."""
REGIMES = {
    "latency": f"latency-bound (< {format_size(LATENCY_BOUND_BYTES)})",
    "middle": f"in between ({format_size(LATENCY_BOUND_BYTES)} to {format_size(BANDWIDTH_BOUND_BYTES)})",
    "bandwidth": f"bandwidth-bound (>= {format_size(BANDWIDTH_BOUND_BYTES)})",
}

EXPLANATIONS: dict[tuple[str | None, str], str] = {
    ("host_memory", "latency"): (
        "Host-memory transport without peer-to-peer (SHM): NCCL stages every byte through pinned host "
        "memory. The measured time stays flat up to several KiB, while the model's LL time over this "
        "path grows with size from about 1 KiB: the model's LL bandwidth through host memory is too "
        "low, and its latency floor (NCCL's PCIe hop latencies) a little too high on one host."
    ),
    ("host_memory", "middle"): (
        "Host-memory transport, in between: the sizes the model runs with LL miss as the latency-bound "
        "ones do (its LL bandwidth through host memory is too low), those it runs with Simple miss as "
        "the bandwidth-bound ones do."
    ),
    ("host_memory", "bandwidth"): (
        "Host-memory transport: one shm_efficiency stands for every collective, but a broadcast, which "
        "moves data one way only, gets a larger share of the host-memory path than the ring all-reduce "
        "and all-gather, where every GPU sends and receives through host memory at the same time. The "
        "per-file calibrations above show the spread of shm_efficiency."
    ),
    ("efa", "latency"): (
        "AWS EFA network latency: EFA is reached through the libfabric plugin (NET/OFI) and its SRD "
        "protocol, and with the plugin's SENDRECV protocol (the only one before aws-ofi-nccl 1.7, still "
        "the default on p3dn and p4d) a small message costs far more than on InfiniBand. The model adds "
        "one EFA overhead per network step (38 us, the median of the two EFA machines' sizes up to 1 KiB: "
        "32 us on p3dn, EFA v1 with NCCL 2.4, and 43 us on p4d, EFA v2 with NCCL 2.7; 1.6 us with the "
        "RDMA protocol of p5 and p6, from public logs); the p4d log pays far more than that from about "
        "1 KiB on, which one figure per protocol cannot follow."
    ),
    ("efa", "middle"): (
        "AWS EFA: up to a few MiB, each of the ring's network steps still waits for EFA's latency, which "
        "the model underestimates on p4d (see the latency-bound rows)."
    ),
    (None, "latency"): (
        "Latency floor: NCCL's base and per-step latencies (baseLat and hwLat of tuning.cc) are one "
        "table per algorithm, protocol and hop type; this machine's floor differs from it. latency_scale "
        "and launch_s calibrate it."
    ),
    (None, "middle"): (
        "Protocol and algorithm crossovers: between the two regimes NCCL moves from LL to LL128 to "
        "Simple and between ring and tree, and a call of a few MiB does not keep every channel's "
        "pipeline full. The model's time per candidate is latency + size / bandwidth (with a pipeline fill "
        "for NVLS and NVLS-tree calls, and on NVIDIA GPUs for ring LL calls the channels NCCL leaves idle "
        "below 4 KiB x ranks per channel), so the sizes around a crossover are where it errs most, in "
        "either direction."
    ),
    (None, "bandwidth"): (
        "Start of the bandwidth-bound regime: at 64 MiB to a few hundred MiB the measured bandwidth is "
        "still rising towards its asymptote, which the model (latency + size / bandwidth, plus NCCL's chunk "
        "pipeline fill for NVLS and NVLS-tree) reaches sooner. On rings this ramp shows no step at NCCL's "
        "loop sizes and differs 2-3x between two runs of one A100 board, so it is not modelled."
    ),
}
"""Why the model misses, by machine feature and regime; None: any machine."""
OUTLIERS = (
    "Measurement outliers: a size measured slower than the next larger size (by more than 20 %) is "
    "noise in the run (a preempted iteration, a first-call cost), not a property of the machine; no "
    "model should follow it."
)


_NDR200X4 = RunOptions(nic="ib_ndr200", nics_per_node=4)
OPTIONS: dict[str, RunOptions] = {
    "H100-SXM-CoreWeave_all_reduce_96gpu_12node-IB-SHARP_1.txt": RunOptions(gpu="h100_sxm"),
    # NCCL_ALGO=ring is on the command line the source shows, not in the log's own output
    "A100-SXM4-p4d_all_reduce_16gpu_2node-EFA400_1.txt": RunOptions(
        nic="efa_v2", nics_per_node=4, algorithms=("ring",)
    ),
    "V100-SXM2-p3dn_all_reduce_16gpu_2node-EFA100_1.txt": RunOptions(nic="efa_v1", nics_per_node=1),
    # AWS lists g5.2xlarge networking as "up to 10 Gbps"
    "A10G-AWS-g5.2xlarge_all_reduce_2gpu_2node-TCP-socket_1.txt": RunOptions(nic="tcp_10g", nics_per_node=1),
    "H100-SXM-GCP-A3Mega_all_reduce_16gpu_2node-TCPXO-8x200G_1.txt": RunOptions(
        nic="tcpxo_200g", nics_per_node=8
    ),
    "H100-SXM-DellXE9680_all_reduce_16gpu_2node-IB-NDR400x8_1.txt": RunOptions(nic="ib_ndr", nics_per_node=8),
    # a patched driver (tinygrad's 550.90.07-p2p) turns GeForce peer-to-peer on: the README says so
    "RTX4090-PCIe-P2Punlocked-8NUMA_all_reduce_8gpu_1.txt": RunOptions(p2p=True),
    "H100-SXM-HGX_all_reduce_64gpu_8node-IB-NDR400x8_1.txt": RunOptions(nic="ib_ndr", nics_per_node=8),
    "H100-SXM5-4GPU-NVLink_all_gather_8gpu_2node-IB-NDR200x4_1.txt": _NDR200X4,
    "H100-SXM5-4GPU-NVLink_all_reduce_8gpu_2node-IB-NDR200x4_1.txt": _NDR200X4,
    "H100-SXM5-4GPU-NVLink_reduce_scatter_8gpu_2node-IB-NDR200x4_1.txt": _NDR200X4,
    # the README: one GB200 NVL72 rack, its 18 trays on the NVL72 NVLink switch fabric (MNNVL, IMEX)
    "GB200-NVL72-CoreWeave_all_reduce_72gpu_1rack_1.txt": RunOptions(nvlink_domain="shared"),
}
"""Facts a log does not print, given as a user would (from the data README's hardware column)."""

ONE_GPU = DATA.parent / "h100-1gpu"
OUTSIDE = DATA.parent / "outside"

_MI250X_SS11 = RunOptions(gpu="MI250X", nodes=4, gpus_per_node=8, nic="slingshot_200g")
_ROCE400X8 = RunOptions(nic="roce_400g", nics_per_node=8)
_GB300_2RACKS = replace(_ROCE400X8, nvlink_domain="shared")
_MI355X_AINIC = RunOptions(gpu="MI355X", nic="roce_400g", nics_per_node=8)
_MI300X_SPLIT = RunOptions(gpu="MI300X", nodes=2, gpus_per_node=1, nics_per_node=1)
_MI355X_POLLARA = RunOptions(gpu="MI355X", nodes=2, gpus_per_node=8, nic="roce_400g", nics_per_node=8)
_NCCL284 = RunOptions(nccl_version="2.8.4")
_ALPS_4X4 = RunOptions(nodes=4, gpus_per_node=4, nic="slingshot_200g", nccl_version="2.23.4")
OUTSIDE_OPTIONS: dict[str, tuple[RunOptions, str | None]] = {
    # each fact below is stated by the log's own page (tests/data/outside/README.md), not printed in the log
    # "2 nodes x 8x NVIDIA H200 ... through a single RDMA shared interface"
    "03_H200-2node-8gpu-socket.txt": (RunOptions(nics_per_node=1), None),
    # BlueField-3 "400GbE" run as RoCE (NCCL_IB_GID_INDEX=3), 8 rails (net1..net8)
    "04_H200-Dell-2node-16gpu-RoCE-BF3.txt": (RunOptions(nic="roce_400g", nics_per_node=8), None),
    # the page's command is ./build/all_reduce_perf
    "05_MI300X-VF-Azure-8gpu-rccl.txt": (RunOptions(), "all_reduce"),
    # an all_gather run on 2 A4 VMs of 8 B200 and 8 RDMA NICs each
    "06_B200-GKE-A4-2node-16gpu-allgather-gIB.txt": (RunOptions(nics_per_node=8), "all_gather"),
    # each pod claims one H200 and one dedicated RDMA NIC
    "07_H200-GKE-2pod-1gpu-1nic-RDMA.txt": (RunOptions(nics_per_node=1), None),
    # NCCL_IB_HCA lists 16 HCAs per BM.GPU.B4.8 node in the batch script
    "08_A100-40GB-OCI-B4.8-2node-16gpu-RoCE.txt": (RunOptions(nics_per_node=16), None),
    # the page's command is all_reduce_perf -g 4
    "09_RTX4090-4gpu-docker.txt": (RunOptions(), "all_reduce"),
    # a Kubeflow all_reduce_perf job
    "10_A800-kubeflow-12pod-24gpu.txt": (RunOptions(), "all_reduce"),
    # 4 nodes x 4 MI250X (8 GCDs), srun --nodes=4 --ntasks-per-node=8, HPE Slingshot 11 (200 Gbit/s)
    "11_MI250X-SS11-4node-32rank-allgather.txt": (_MI250X_SS11, None),
    # the same node pool "on all_reduce_perf"
    "12_MI250X-SS11-4node-32rank-allreduce.txt": (_MI250X_SS11, "all_reduce"),
    # CSCS Alps GH200 nodes over HPE Slingshot (CXI)
    "14_GH200-CSCS-2node-8gpu-Slingshot.txt": (RunOptions(nic="slingshot_200g"), None),
    # the modified build prints "NCCL version: 22602"
    "15_V100-SXM2-4gpu-gdr116-modified-build.txt": (RunOptions(nccl_version="2.26.2"), None),
    # "NCCL AllReduce" over one ConnectX-7 (mlx5_0) with RoCEv2, compared against "92 Gb/s"
    "17_H100PCIe+A100PCIe-2node-RoCE-hoststaged.txt": (
        RunOptions(nic="roce_100g", nics_per_node=1),
        "all_reduce",
    ),
    # the page prints nvidia-smi topo -m (21_topo.txt) and p2pBandwidthLatencyTest's "P2P CAN access"
    "21_A100PCIe-4gpu-SYS-sm02.txt": (RunOptions(p2p=True), None),
    # the issue prints nvidia-smi topo -m (22_topo.txt; GPU-NIC SYS) and names a ConnectX-6 HDR per server
    "22_A100PCIe-2node-1gpu-HDR-GDR-SYS.txt": (RunOptions(nic="ib_hdr"), None),
    # 2 (4) nodes x 8 MI355X, 8 Pollara 400G RoCE NICs per node
    "25_MI355X-Pollara-OCI-2node-allreduce.txt": (_MI355X_POLLARA, None),
    "26_MI355X-Pollara-OCI-4node-alltoall.txt": (replace(_MI355X_POLLARA, nodes=4), None),
    # 16 BM.GPU.GB300.4 hosts in one NVL72 rack, run with NCCL_MNNVL_ENABLE=1 (multi-host NVLink)
    "27_GB300-OCI-NVL72-16node-1rack-allreduce.txt": (RunOptions(nvlink_domain="shared"), None),
    # 2 such racks (MNNVL), joined by 8 x 400 Gbps RoCE NICs per BM.GPU.GB300.4 host
    "28_GB300-OCI-NVL72-32node-2rack-allreduce.txt": (_GB300_2RACKS, None),
    "29_GB300-OCI-32host-2rack-alltoall.txt": (_GB300_2RACKS, None),
    # "AMD Instinct MI355X, gfx950", 8 AMD AI NICs (ionic, RoCE 400G) per host
    "30_MI355X-AINIC-2node-16rank-rccl-allreduce.txt": (_MI355X_AINIC, None),
    "31_MI355X-AINIC-2node-16rank-rccl-alltoall.txt": (_MI355X_AINIC, None),
    # "If Pods are scheduled on nodes in distinct NVLink domains, this test represents cross-domain RDMA
    # throughput, as shown in the provided output": each A4X Max host an NVLink domain of its own
    "35_GB300-GKE-A4XMax-2node-8gpu-allgather-collapsed-ws.txt": (RunOptions(nvlink_domain="separate"), None),
    # the same machines as 22 (its topo -m) after NUMA Nodes Per Socket = 4
    "39_A100PCIe-2node-1gpu-HDR-NPS4-hoststaged.txt": (RunOptions(nic="ib_hdr"), None),
    # a CSCS Alps page (its srun has Slingshot's --network=disable_rdzv_get): HPE Slingshot (CXI)
    "40_GH200-Alps-Sarus-2node-1gpu-allreduce.txt": (RunOptions(nic="slingshot_200g"), None),
    # each pod is given one B200 and one aligned RDMA NIC (gpu0rdma0)
    "41_B200-GKE-dranet-2pod-1gpu-allgather-gIB.txt": (RunOptions(nics_per_node=1), None),
    # GKE A3 High: 2 a3-highgpu-8g nodes of 8 H100 80GB, GPUDirect-TCPX over 4 x 200 Gb/s NICs, all_gather
    "43_H100-GKE-A3High-2node-allgather-TCPX-nodevices-indented.txt": (
        RunOptions(gpu="H100 SXM", nodes=2, gpus_per_node=8, nic="tcpx_200g", nics_per_node=4),
        "all_gather",
    ),
    # the issue prints nvidia-smi topo -m (44_topo.txt: 8 H20 on NV18, 8 NICs)
    "44_H20-3e-VM-2node-2gpu-alltoall-RoCEbond.txt": (RunOptions(), None),
    # "Tested on 8 A100 NVLink GPUs with 600GB/s bi-directional bandwidth"
    "46_A100-NVLink-8gpu-sendrecv-g8-nodevices.txt": (RunOptions(gpu="A100 SXM"), None),
    # 2 p5.48xlarge nodes: "p5.48xlarge has 8 GPUs and 32 EFA interfaces" (8 x H100)
    "51_H100-p5-EKS-2node-16gpu-EFA-tagoutput-nodevices.txt": (
        RunOptions(gpu="H100 SXM", nodes=2, gpus_per_node=8, nic="efa_v2", nics_per_node=32),
        None,
    ),
    # a comment of the issue: NDR 400 Gb/s InfiniBand (ConnectX-7, Quantum-2), 8 HCAs per node
    "55_H100-2node-16gpu-IB-NDR-srunlabel-default.txt": (RunOptions(nic="ib_ndr", nics_per_node=8), None),
    # the same machines, and the page sets NCCL_ALGO=RING
    "56_H100-2node-16gpu-IB-NDR-srunlabel-RING.txt": (
        RunOptions(nic="ib_ndr", nics_per_node=8, algorithms=("ring",)),
        None,
    ),
    # the same BlueField-3 400GbE rails as 04 (RoCE, net1..net8)
    "65_H200-Dell-2node-16gpu-RoCE-BF3-datatype-all-NCCL2304.txt": (_ROCE400X8, None),
    # the cluster network of BM.GPU4.8: RoCEv2, "100 Gbps x 16"
    "67_A100-40GB-OCI-BM.GPU4.8-2node-16gpu-RoCE16x100G-10GiB.txt": (
        RunOptions(nic="roce_100g", nics_per_node=16),
        None,
    ),
    # "SMC300x MI300X (2 nodes)", all_reduce; NCCL_TESTS_SPLIT_MASK=0x7 makes the table one of 8 concurrent
    # communicators of 2 ranks (one per node), each rank on one NIC ("NICs per rank: 1", a NIC per GPU pair)
    "68_MI300X-2node-splitmask-8x2rank-rccl-allreduce-bf16-AINIC.txt": (_MI300X_SPLIT, "all_reduce"),
    "69_MI300X-2node-splitmask-8x2rank-rccl-alltoall-bf16-AINIC.txt": (_MI300X_SPLIT, None),
    # the page's nodes are g4dn.metal: one first-generation EFA (100 Gb/s)
    "70_T4-EKS-2node-1gpu-EFA-NCCL2127-tagoutput.txt": (RunOptions(nic="efa_v1"), None),
    # each worker pod requests "nvidia.com/sriov-rdma-vf: 16"
    "71_A100-40GB-k8s-volcano-2pod-16gpu-16SRIOV-VF.txt": (RunOptions(nics_per_node=16), None),
    # "on 2x p4de.24xlarg": 8 A100-SXM4-80GB and 4 x 100 Gb/s EFA each
    "73_A100-80GB-p4de-2node-allreduce-EFA-nodevices.txt": (
        RunOptions(gpu="A100 SXM 80GB", nodes=2, gpus_per_node=8, nic="efa_v2", nics_per_node=4),
        None,
    ),
    # "on 2x p5.48xlarge": 8 H100 and 32 EFA each (as 51)
    "74_H100-p5-2node-allreduce-16GiB-EFA-nodevices.txt": (
        RunOptions(gpu="H100 SXM", nodes=2, gpus_per_node=8, nic="efa_v2", nics_per_node=32),
        None,
    ),
    # 2 A4 nodes, "指定 8 个 InfiniBand 适配器" (8 RDMA adapters per node; their speed is not stated)
    "76_B200-GKE-A4-2node-16gpu-gIB-allreduce-abridged.txt": (RunOptions(nics_per_node=8), None),
    # the post: one "Mellanox ConnectX-5 200 Gbps" per node (InfiniBand, as the log's NET/IB lines show)
    "78_A100PCIe-2node-1gpu-CX5-gather-stepbytes-NCCL2165-issue350.txt": (
        RunOptions(nic="ib_hdr", nics_per_node=1),
        None,
    ),
    # the and the page's own nvidia-smi topo -m (OUTSIDE_TOPOLOGY), nothing else
    "82_A100-SXM-64GB-Leonardo-4gpuNV4-sendrecv-t2-INFO-issue331.txt": (RunOptions(), None),
    "83_A100-80GB-PCIe-AzureNC96adsA100v4-4gpu-NV12pairs-allgather-g4-1size.txt": (RunOptions(), None),
    # "2 GPU 2 NIC": one RDMA NIC per host (its kind and speed are not stated)
    "84_RTX3090-2node-1gpu-INC-MTU256-wrong-nonzero-enotation.txt": (RunOptions(nics_per_node=1), None),
    "85_RTX3090-2node-1gpu-noINC-RDMA-MTU1024.txt": (RunOptions(nics_per_node=1), None),
    # the nodes are joined by Slingshot-200
    "87_H100NVL-2node-2gpu-Slingshot200-allreduce-step100000-BAD-issue2441.txt": (
        RunOptions(nic="slingshot_200g"),
        None,
    ),
    "88_H100NVL-2node-2gpu-Slingshot200-allreduce-step100000-GOOD-issue2441.txt": (
        RunOptions(nic="slingshot_200g"),
        None,
    ),
    # a patched driver (tinygrad's P2P kernel modules) turns GeForce peer-to-peer on: the pages say so
    "89_RTX4090-tinybox-6gpu-P2Ppatched-allreduce-g6-1size.txt": (RunOptions(p2p=True), None),
    "90_RTX4090-8gpu-box-4used-P2Ppatched-allreduce-g4.txt": (RunOptions(p2p=True), None),
    # "ring allreduce on 2 H800 nodes" ("NV8"), "4 CX7 NICs, 194GB/s in total" (their kind is not stated)
    "92_H800-2node-4gpu-4CX7-crossnic0-allreduce-nodevices.txt": (
        RunOptions(gpu="H800", nodes=2, gpus_per_node=4, nics_per_node=4, algorithms=("ring",)),
        "all_reduce",
    ),
    # "2 nodes allreduce test, 1 H100 each node, using 4 nics" (its topo -m: NV18, an SXM board)
    "93_H100-2node-1gpu-4NIC-Tree-allreduce.txt": (
        RunOptions(gpu="H100 SXM", nodes=2, gpus_per_node=1, nics_per_node=4),
        None,
    ),
    # "2 nodes, 16 H20 GPUs, 16 cx7 NICs(IB NDR) with NCCL-2.21.5", run with NCCL_ALGO=NVLSTree, allreduce
    "95_H20-2node-16gpu-NVLSTree-NCCL2215-oldformat-small.txt": (
        RunOptions(
            gpu="H20",
            nodes=2,
            gpus_per_node=8,
            nic="ib_ndr",
            nics_per_node=8,
            algorithms=("nvls_tree",),
            nccl_version="2.21.5",
        ),
        "all_reduce",
    ),
    # "Introduce 1-shot allreduce to MI250X": the GPU (the log's mpirun gives 16 ranks, hosts unstated)
    "96_MI250X-16rank-rccl-allreduce-small-oldformat.txt": (RunOptions(gpu="MI250X"), None),
    # "NCCL tests on 2x p6-b200" (8 B200 and 8 x 400 Gb/s EFAv4 each), dstack's all_reduce_perf task
    "97_B200-AWS-p6-2node-EFA-allreduce-small.txt": (
        RunOptions(gpu="B200", nodes=2, gpus_per_node=8, nic="efa_v4", nics_per_node=8),
        "all_reduce",
    ),
    # 2 DGX Spark on "a single QSFP cable" at "full 200 Gbps" by NCCL_IB_HCA (RDMA over the Ethernet port)
    "98_GB10-DGXSpark-2node-QSFP200G-allreduce-small.txt": (
        RunOptions(nic="roce_200g", nics_per_node=1),
        None,
    ),
    # "3x servers ... 8x NVIDIA A100 SXM4 40G GPU, and 4x Mellanox HDR Infiniband cards"
    "99_A100-SXM4-40GB-3node-24rank-4HDR-linearstep-allreduce.txt": (
        RunOptions(gpu="A100 SXM4 40GB", nodes=3, gpus_per_node=8, nic="ib_hdr", nics_per_node=4),
        None,
    ),
    # "2x p4d.24xlarge" (8 A100-SXM4-40GB and 4 x 100 Gb/s EFA each), dstack's all_reduce_perf task
    "101_A100-40GB-AWS-p4d-2node-EFA-allreduce-small.txt": (
        RunOptions(gpu="A100 SXM4 40GB", nodes=2, gpus_per_node=8, nic="efa_v2", nics_per_node=4),
        "all_reduce",
    ),
    # "8nodes which node have 8v100 and using IB network which bw is 100G/s" (NIC count not stated)
    "103_V100-8node-64gpu-IB100G-allreduce-oldformat.txt": (
        RunOptions(gpu="V100", nodes=8, gpus_per_node=8, nic="ib_edr"),
        "all_reduce",
    ),
    "104_V100-8node-64gpu-IB100G-alltoall-oldformat.txt": (
        RunOptions(gpu="V100", nodes=8, gpus_per_node=8, nic="ib_edr"),
        "alltoall",
    ),
    # "H20 intra-node": one H20 node (which collective the first table measured is not stated)
    "105_H20-8gpu-1node-allgather-or-alltoall-small-zerosize.txt": (RunOptions(gpu="H20", nodes=1), None),
    "106_H20-8gpu-1node-allreduce-small.txt": (RunOptions(gpu="H20", nodes=1), None),
    # "Three nodes", "8 x H100 GPUs with NVlink in each node", "8 x ConnectX-7 dual-port NICs on each node,
    # with 200 Gb links" (RoCE), NCCL 2.22.3
    "107_H100-VM-3node-24gpu-RoCE200-rankprefix-degraded.txt": (
        RunOptions(
            gpu="H100 SXM", nodes=3, gpus_per_node=8, nic="roce_200g", nics_per_node=8, nccl_version="2.22.3"
        ),
        None,
    ),
    # the ABCI 2.0 benchmark repository's README: NCCL 2.8.4-1 (the logs do not print it)
    "109_A100-40GB-ABCI-Anode-2node-16rank-allreduce-NCCL284.txt": (_NCCL284, None),
    "110_A100-40GB-ABCI-Anode-16node-128rank-allreduce-NCCL284.txt": (_NCCL284, None),
    "111_V100-SXM2-16GB-ABCI-Vnode-8node-32rank-allreduce-NCCL284.txt": (_NCCL284, None),
    "112_A100-40GB-ABCI-Anode-4node-32rank-broadcast-NCCL284.txt": (_NCCL284, None),
    "113_V100-SXM2-16GB-ABCI-Vnode-1node-4rank-allreduce-NCCL284.txt": (_NCCL284, None),
    # the MPIJob on the page runs mpirun -np 1 -N 1: one rank on one host
    "115_A10G-AWS-g5.12xlarge-EKS-1rank-allreduce-tagoutput-INFO-nofooter.txt": (
        RunOptions(gpus=1, nodes=1),
        None,
    ),
    # 2 x BM.GPU4.8, cluster network RoCEv2 "100 Gbps x 16", NCCL 2.25.1 (the container's)
    "116_A100-40GB-OCI-BM.GPU4.8-2node-16rank-RoCE16x100G-10GiB-containerd.txt": (
        RunOptions(nic="roce_100g", nics_per_node=16, nccl_version="2.25.1"),
        None,
    ),
    # CSCS Alps over HPE Slingshot-11; the results path: 16 tasks on 4 nodes (n-00016-N-0004), nccl-2.23.4
    "118_GH200-CSCS-Alps-4node-16rank-Slingshot-awsofi-allreduce-4GiB-srunlabel.txt": (_ALPS_4X4, None),
    "119_GH200-CSCS-Alps-4node-16rank-Slingshot-FI_CXI_COMPAT0-allreduce-FAILED-wrong.txt": (_ALPS_4X4, None),
    "120_A100-40GB-ABCI-Anode-1node-4of8-allreduce-NCCL284.txt": (_NCCL284, None),
    # the repository's extract of a 64-node run (n-00256-N-0064) of NVIDIA GH200 120GB, as 118
    "122_GH200-CSCS-Alps-64node-256rank-allreduce-extracted-table-nohash-header.txt": (
        replace(_ALPS_4X4, gpu="GH200 120GB", nodes=64),
        None,
    ),
    "123_V100-SXM2-16GB-ABCI-Vnode-4node-16rank-broadcast-NCCL284-declining.txt": (_NCCL284, None),
    # eighth batch (probe 8: the facts its pages give)
    # "2-node cluster with 16x H200 GPUs (8 per node)", the yaml's all_gather test
    "125_H200-GKE-a3ultra-2node-16rank-allgather-gIB-RDMA-skypilot-rayprefix-tagoutput.txt": (
        RunOptions(gpu="H200 SXM", nodes=2, gpus_per_node=8),
        "all_gather",
    ),
    # the same page's GCP pods: run_nccl_tests.sh -t all_gather on nccl-host-1 and nccl-host-2 (8 H200 each)
    "126_H200-GKE-a3ultra-2node-16rank-allgather-gIB-RDMA-gcpdoc-pods-NCCL2266.txt": (
        RunOptions(nodes=2, gpus_per_node=8),
        "all_gather",
    ),
    # "32 BM.GPU.GB200-v3.4 nodes across two racks" (4 GB200 each), the README's all_reduce test
    "128_GB200-OCI-OKE-32node-128rank-2rack-allreduce-NCCL2292-lastdevice.txt": (
        RunOptions(gpu="GB200", nodes=32, gpus_per_node=4, nccl_version="2.29.2"),
        "all_reduce",
    ),
    # the guide's ./all_reduce_perf -g 2 and "NCCL 2.21.5+cuda12.4"
    "129_V100-PCIe-16GB-2gpu-g2-SHM-condensed-noroot-nocinplace-selectedrows.txt": (
        RunOptions(nccl_version="2.21.5"),
        "all_reduce",
    ),
    # (130, the same guide's 2 hosts x 2 GPUs over 40 GbE RoCE, is refused with its page's facts too:
    # its column header has no count column)
    # one Azure ML compute node with 4 K80 GPUs
    "131_K80-AzureML-1node-4rank-oldformat-allreduce-32MB-2GB.txt": (
        RunOptions(nodes=1, gpus_per_node=4),
        None,
    ),
    # the page's Dockerfile installs nccl 2.12.12
    "132_T4-3node-1gpu-socket-ens5-oldformat-allreduce-100-110MB-iters1-srun.txt": (
        RunOptions(nccl_version="2.12.12"),
        None,
    ),
    # p3dn.24xlarge nodes (one first-generation EFA each), the MPI job's all_reduce_perf
    "133_V100-SXM2-32GB-p3dn-EKS-2node-1gpu-EFA-NCCL264-oldformat-INFO.txt": (
        RunOptions(nic="efa_v1", nics_per_node=1),
        "all_reduce",
    ),
    # 2 DGX-1 pods x 8 V100 32GB, 2 x ConnectX-5 100G in RoCE mode per node, NCCL 2.5.6, "NCCL ring test"
    "134_V100-SXM2-32GB-DGX1-k8s-2node-16rank-RoCE-2xCX5-100G-SRIOV-NCCL256-oldformat-indented.txt": (
        RunOptions(
            gpu="Tesla V100 SXM2 32GB",
            nodes=2,
            gpus_per_node=8,
            nic="roce_100g",
            nics_per_node=2,
            nccl_version="2.5.6",
        ),
        "all_reduce",
    ),
    # the thread: RCCL 2.18.3 (and for 136, NCCL_P2P_DISABLE=1 exported in the shell)
    "135_MI100-2gpu-g2-PCIe-Threadripper-rccl2183-allreduce-iommupt-P2P.txt": (
        RunOptions(nccl_version="2.18.3"),
        None,
    ),
    "136_MI100-2gpu-g2-PCIe-Threadripper-rccl2183-allreduce-P2P_DISABLE-notinlog.txt": (
        RunOptions(nccl_version="2.18.3", p2p=False),
        None,
    ),
    # 64 ND96isr_H100_v5 VMs (8 H100, 8 x 400 Gb/s NDR each), all_reduce_perf -b 8G -e 8G
    "137_H100-Azure-NDv5-64node-512rank-IB-NDRx8-allreduce-8G-periteration-i0-abridged.txt": (
        RunOptions(gpu="H100 SXM", nodes=64, gpus_per_node=8, nic="ib_ndr", nics_per_node=8),
        "all_reduce",
    ),
    # 2 a3-highgpu-8g VMs: 8 H100 80GB and "four extra data NICs" for GPUDirect-TCPX each
    "138_H100-GCP-A3High-dstack-2node-16rank-allgather-TCPX-nohash-tableonly.txt": (
        RunOptions(gpu="H100 SXM", nodes=2, gpus_per_node=8, nic="tcpx_200g", nics_per_node=4),
        None,
    ),
    # ninth batch (probe 9: what the issue threads state)
    # (150, 156, 157 and 162 are refused with their threads' facts too: UNSETTLED in test_outside_logs.py)
    # GKE A3 High (a3-highgpu-8g: 8 H100, GPUDirect-TCPX over 4 x 200 Gb/s), the toolkit's all_gather test
    "151_H100-GKE-A3High-2node-16rank-allgather-TCPX-1to64MiB-NA-wrong.txt": (
        RunOptions(gpu="H100 SXM", nodes=2, gpus_per_node=8, nic="tcpx_200g", nics_per_node=4),
        "all_gather",
    ),
    # the same thread's GKE A3 (8 H100 per node) all_gather test; the variant is not stated
    "152_H100-GKE-A3-2node-16rank-allgather-2MiB-2GiB-rowsonly-noheader.txt": (
        RunOptions(gpu="H100 SXM", nodes=2, gpus_per_node=8),
        "all_gather",
    ),
    # "NCCL tests on a3-highgpu-8g" (as 151)
    "153_H100-GCP-a3-highgpu-8g-2node-16rank-allgather-TCPX-dstack-1to64MiB.txt": (
        RunOptions(gpu="H100 SXM", nodes=2, gpus_per_node=8, nic="tcpx_200g", nics_per_node=4),
        "all_gather",
    ),
    # "a 32 node 8xA100-SXM4 cluster each node of which has 4 IB HDR cards", all_reduce
    "154_A100-SXM4-32node-256rank-4HDR-allreduce-small-oldformat-zerorows.txt": (
        RunOptions(gpu="A100 SXM", nodes=32, gpus_per_node=8, nic="ib_hdr", nics_per_node=4),
        "all_reduce",
    ),
    # 8 RTX 4090 with tinygrad's P2P kernel modules, one host (5 used: ncclCommInitAll)
    "158_RTX4090-5gpu-g5-tinygradP2P-allreduce-32MiB-blanklines.txt": (
        RunOptions(gpu="RTX 4090", nodes=1, p2p=True),
        None,
    ),
    # 8 NV12 GPUs of an A100-class NVSwitch board (the thread's topo -m), 2 of them used
    "161_A100-NV12-8gpu-board-2of8-g2-CVD01-allgather-bf16-linearstep-nodevices.txt": (
        RunOptions(gpu="A100 SXM"),
        None,
    ),
    # "two H100s" nodes, mpirun -np 16 -N 8
    "163_H100-Crusoe-2node-16rank-NVLSTree-allreduce-rowsonly-repeatedsizes-broken-inplace.txt": (
        RunOptions(gpu="H100 SXM", nodes=2, gpus_per_node=8),
        None,
    ),
    # "two nodes, both of which have 8 A100 80GB gpus", "an infiniband HDR network", "one per node"
    "166_A100-80GB-2node-1gpu-HDR-srun-allreduce-small-noheaderline.txt": (
        RunOptions(gpu="A100 SXM", nodes=2, gpus_per_node=1, nic="ib_hdr"),
        None,
    ),
    # "2 2080ti and NVlink bridge" on one host
    "168_RTX2080Ti-2gpu-NVLinkbridge-reduce-oldformat-rowsonly.txt": (
        RunOptions(gpu="RTX 2080 Ti", gpus=2, nodes=1, board="bridged_pairs"),
        None,
    ),
    # "Eight l4 GPUs across two nodes, each node with 2 CX-7 400G"
    "169_L4-2node-8gpu-2xCX7-400G-noGDR-uccl-allreduce-rowsonly-NA.txt": (
        RunOptions(gpu="L4", nodes=2, gpus_per_node=4, nic="roce_400g", nics_per_node=2),
        None,
    ),
    # "NVLINK connected H100 PCIe GPUs"
    "170_H100-PCIe-2gpu-NVLinkbridge-g2-allreduce-1to4GiB-INFOabridged-nodevices.txt": (
        RunOptions(gpu="H100 PCIe", board="bridged_pairs"),
        None,
    ),
    # one host, 2 RTX 2080 Ti
    "171_RTX2080Ti-2gpu-allgather-NCCL264-oldformat-11field-rowsonly.txt": (
        RunOptions(gpu="RTX 2080 Ti", nodes=1),
        None,
    ),
    # tenth batch (probe 10: what the sources state; 187, 188, 190, 193-195 state
    # nothing the logs do not print; 186 is refused with its thread's facts too: UNSETTLED in
    # test_outside_logs.py)
    # 4 nodes x 2 A100-SXM4-80GB of 8-GPU NV12 boards, ConnectX-6 HDR InfiniBand
    "180_A100-SXM4-80GB-4node-2gpu-HDR-SHARP-CollNetfallback-allreduce-INFOinterleaved.txt": (
        RunOptions(nic="ib_hdr", board="nvswitch8"),
        None,
    ),
    # "NCCL Tests on 2 (8, 4) node p3dn.24xlarge + EFA - all_reduce_perf" (8 V100-SXM2-32GB, one EFA each)
    "181_V100-AWS-p3dn-2node-EFA-allreduce-NCCL24-gist-small.txt": (
        RunOptions(gpu="Tesla V100 SXM2 32GB", nodes=2, gpus_per_node=8, nic="efa_v1", nics_per_node=1),
        "all_reduce",
    ),
    "182_V100-AWS-p3dn-8node-EFA-allreduce-NCCL24-gist-small.txt": (
        RunOptions(gpu="Tesla V100 SXM2 32GB", nodes=8, gpus_per_node=8, nic="efa_v1", nics_per_node=1),
        "all_reduce",
    ),
    "183_V100-AWS-p3dn-4node-EFA-allreduce-NCCL24-gist-small.txt": (
        RunOptions(gpu="Tesla V100 SXM2 32GB", nodes=4, gpus_per_node=8, nic="efa_v1", nics_per_node=1),
        "all_reduce",
    ),
    # "Introduce allgather MSCCL XML specification for MI250X": mpirun.mpich -np 16 ... all_gather_perf
    "184_MI250X-16rank-rccl-allgather-MSCCL-before-oldformat.txt": (
        RunOptions(gpu="MI250X", gpus=16),
        "all_gather",
    ),
    # "2 p3dn.24xlarge instances" / "between 2 hosts with 8 GPUs each", EFA, all_reduce_perf
    "185_V100-AWS-p3dn-2node-8gpu-EFA170-allreduce-1to8MiB.txt": (
        RunOptions(gpu="Tesla V100 SXM2 32GB", nodes=2, gpus_per_node=8, nic="efa_v1", nics_per_node=1),
        "all_reduce",
    ),
    # the title: "the bandwidth performance of alltoall"
    "189_H800-8node-64rank-alltoall-elided-devicelist-1row.txt": (RunOptions(), "all_to_all"),
    # 4 GH200 nodes on HPE Slingshot (cxi)
    "191_GH200-Olivia-4node-16rank-Slingshot-allreduce-int8-corrupted-wrong.txt": (
        RunOptions(nic="slingshot_200g"),
        None,
    ),
    # Alps' Slingshot-11 through the aws-ofi-nccl hook: the page's first run (rerun.sh's --run 1), the one
    # this table validates of a file of two (the second fell back to sockets)
    "192_GH200-Alps-2node-8rank-Slingshot-allreduce-ofi-vs-socket-tworuns-indented.txt": (
        RunOptions(nic="slingshot_200g"),
        None,
    ),
    # NREL's README: "a run of 64 GPU devices across 16 nodes", H100s, 4 per node (its srun script),
    # Slingshot through the CXI libfabric plugin
    "200_H100-Kestrel-16node-64rank-Slingshot-ofi-cxi-allreduce-rowsonly.txt": (
        RunOptions(gpu="H100", nodes=16, gpus_per_node=4, nic="slingshot_200g"),
        None,
    ),
    # CCI-MOC's README: RoCE, "Largest possible bandwidth value: 400 Gbps"
    "201_H100-2node-1gpu-RoCE-1NIC-GDR0-NCCL2262-RING-allreduce-1to25GiB-linearstep-INFO.txt": (
        RunOptions(nic="roce_400g"),
        None,
    ),
    "202_H100-2node-4gpu-g4-RoCE-1NIC-NCCL2262-RING-sendrecv-1to25GiB-linearstep-INFO.txt": (
        RunOptions(nic="roce_400g"),
        None,
    ),
    # the page: one 100 Gb/s EFA NIC per g7e.8xlarge (EFA of the current generation)
    "203_RTXPRO6000-AWS-g7e-2node-1gpu-EFA100G-ofi1180-NCCL2292-allreduce-INFO.txt": (
        RunOptions(nic="efa_v2"),
        None,
    ),
    # the toolkit's A3 Mega script: 2 nodes x 8 tasks, all_gather_perf over GPUDirect-TCPXO (8 x 200G)
    "205_H100-GCP-A3Mega-Slurm-2node-16rank-TCPXO-allgather-8MiB-8GiB-NA-indented.txt": (
        RunOptions(gpu="H100 SXM", nodes=2, gpus_per_node=8, nic="tcpxo_200g", nics_per_node=8),
        "all_gather",
    ),
    # the page: the pair's "200GB network" (RoCE)
    "211_GB10-DellProMax-2node-1gpu-RoCE200G-allgather-16GiB-1row.txt": (
        RunOptions(nic="roce_200g"),
        None,
    ),
    # twelfth batch (probe 12: what the pages state)
    # two A3 Ultra pods, one H200 and one RDMA NIC each (ib_write_bw 381 Gb/s over RoCE)
    "214_H200-GKE-A3Ultra-2pod-1gpu-1NIC-dranet-gIB-allgather-NCCL2251.txt": (
        RunOptions(nic="roce_400g", nics_per_node=1),
        None,
    ),
    # a DGX-H100 and a DGX-A100 over one bonded 100GbE NIC, one GPU each (-g 1): the slower GPU
    "216_DGX-H100+DGX-A100-socket-bond100GbE-PROTO-SIMPLE-allreduce-wrong-results-ellipsis-excerpt.txt": (
        RunOptions(gpu="A100 SXM", nodes=2, gpus_per_node=1, nic="tcp_100g"),
        None,
    ),  # thirteenth batch (probe 13: what the pages state)
    # a Vultr HGX B200 cluster report: 2 nodes x 8 B200, 8 ConnectX-7 NDR per node
    "231_B200-Vultr-HGX-2node-16rank-NDRx8-allreduce-8B-16GiB-rowsonly.txt": (
        RunOptions(gpu="B200", nodes=2, gpus_per_node=8, nic="ib_ndr", nics_per_node=8),
        None,
    ),
    "232_B200-Vultr-HGX-2node-16rank-NDRx8-allgather-size0rows-16GiB-rowsonly.txt": (
        RunOptions(gpu="B200", nodes=2, gpus_per_node=8, nic="ib_ndr", nics_per_node=8),
        None,
    ),
    "233_B200-Vultr-HGX-2node-16rank-NDRx8-sendrecv-uint8-sum-16GiB-rowsonly.txt": (
        RunOptions(gpu="B200", nodes=2, gpus_per_node=8, nic="ib_ndr", nics_per_node=8),
        "send_recv",
    ),
    # the same report's one-node run
    "234_B200-Vultr-HGX-1node-8rank-allreduce-8B-16GiB-rowsonly.txt": (
        RunOptions(gpu="B200", nodes=1, gpus_per_node=8),
        None,
    ),
    # Nebius mk8s, 2 nodes of the gpu-h100-sxm 8-GPU preset, InfiniBand mlx5_0..7
    "235_H100-Nebius-mk8s-2node-IB-SkyPilot-allreduce-512MiB-8GiB-rowsonly.txt": (
        RunOptions(gpu="H100 SXM", nodes=2, gpus_per_node=8, nic="ib_ndr", nics_per_node=8),
        None,
    ),
    # a GB200 NVL4 capture, one process -g 4 (no NVL4 board in the catalogue: the GPU and count only)
    "237_GB200-NVL4-1proc-g4-allreduce-4rows-noDevices-go-test-fixture.txt": (
        RunOptions(gpu="GB200", nodes=1, gpus_per_node=4),
        None,
    ),
    # OCI OKE GB300 across 4 hosts in one IMEX channel: one NVLink domain
    "238_GB300-OCI-OKE-Slinky-4node-4gpu-IMEX-NCCL2293-allreduce-8M-8G-markdown.txt": (
        RunOptions(nvlink_domain="shared"),
        None,
    ),
    # 2 OCI BM.GPU.B4.8 (8 A100 40GB) with 16 RDMA VFs; 100 Gb/s RoCE is OCI's shape figure, not the page's
    "239_A100-SXM4-40GB-OCI-BM.GPU.B4.8-OKE-2node-16rank-RoCE-SRIOV-NCCL2143-allreduce-1G-10G.txt": (
        RunOptions(nic="roce_100g", nics_per_node=16),
        None,
    ),
    # cluster-toolkit's A3 Mega how-to: 2 a3-megagpu-8g over GPUDirect-TCPXO, all_gather
    "240_H100-GCP-A3Mega-Slurm-2node-16rank-TCPXO-allgather-c0-NA-srun-l-prefix.txt": (
        RunOptions(gpu="H100 SXM", nodes=2, gpus_per_node=8, nic="tcpxo_200g", nics_per_node=8),
        "all_gather",
    ),
    # a DigitalOcean bare-metal node of 8 H100 (2 used)
    "241_H100-DigitalOcean-baremetal-1node-g2-allreduce-1K-1G.txt": (
        RunOptions(board="nvswitch8"),
        None,
    ),
    # 2 OCI BM.GPU4.8 (8 A100 40GB), 16 x 100 Gb/s RoCEv2
    "243_A100-40GB-OCI-BM.GPU4.8-2node-2proc-g8-RoCE16x100G-allreduce-10G-1row-grep.txt": (
        RunOptions(gpu="A100 SXM4 40GB", nodes=2, gpus_per_node=8, nic="roce_100g", nics_per_node=16),
        None,
    ),
    # 2 OCI BM.GPU.MI300X.8 over RoCE (400 Gb/s from OCI's shape), NCCL_IB_HCA naming 2 rails
    "245_MI300X-OCI-OKE-2node-16rank-rccl-allreduce-2of8-RoCE-rails-1G-16G-rowsonly-RanksGPUs.txt": (
        RunOptions(gpu="MI300X", nodes=2, gpus_per_node=8, nic="roce_400g", nics_per_node=2),
        None,
    ),
    # the same cluster's Slurm re-test with all 8 HCAs
    "246_MI300X-OCI-OKE-Slurm-2node-16rank-rccl-allreduce-8RoCE-1G-16G-rowsonly-RanksGPUs.txt": (
        RunOptions(gpu="MI300X", nodes=2, gpus_per_node=8, nic="roce_400g", nics_per_node=8),
        None,
    ),  # fourteenth batch (probe 14: what the pages state)
    # a GPU P2P kernel-module fork's README: P2P on, NCCL_P2P_LEVEL=SYS
    "252_RTX5090-crazy-8gpu-g8-P2Pmodule-P2PLEVELSYS-allreduce-nofooter.txt": (
        RunOptions(p2p=True),
        None,
    ),
    # an NVIDIA/nccl issue thread, posted after trying NCCL 2.26.2
    "253_RTX5090-GENOA01-4gpu-g4-allreduce-NCCL2262-issue.txt": (
        RunOptions(nccl_version="2.26.2"),
        None,
    ),
    "254_RTX5090-GENOA01-1rank-alltoall-32MiB-inplace-0.78us-issue.txt": (
        RunOptions(nccl_version="2.26.2"),
        None,
    ),
    # ABCI's 'Using SHARP' page loads the nccl/2.8 module (its network is not on the page)
    "255_A100SXM4-40GB-ABCI-2node-16rank-SHARP-CollNet-oldformat-allreduce-snip.txt": (
        RunOptions(nccl_version="2.8"),
        None,
    ),  # fifteenth batch (probe 15: what the pages state)
    # Argonne's OCI how-to: 8 RDMA interfaces (rdma0-7) per H200 node; their speed is not on the page
    "262_H200-OCI-superant-2node-16rank-allreduce-1G-16G-NCCL2275-slurm-machinefile.txt": (
        RunOptions(nics_per_node=8),
        None,
    ),
    # GKE n1-standard-8 nodes with gVNIC: one NIC per VM, TCP (no RDMA); its speed is not on the page
    "264_V100-SXM2-GKE-n1-standard-8-2node-1gpu-gVNIC-mtu9k-flux-allreduce-blankline-ellipsis.txt": (
        RunOptions(nics_per_node=1),
        None,
    ),
    # the Voltage Park README: "3.2 Tbps InfiniBand" per node of 8 H100 (8 x 400 Gb/s NDR)
    "265_H100-VoltagePark-4node-32rank-IB3.2T-reduce-8B-8G-NCCL2243.txt": (
        RunOptions(nic="ib_ndr", nics_per_node=8),
        None,
    ),
    "266_H100-VoltagePark-4node-32rank-IB3.2T-allgather-size0rows-8B-8G-NCCL2243.txt": (
        RunOptions(nic="ib_ndr", nics_per_node=8),
        None,
    ),
    "267_H100-VoltagePark-4node-32rank-IB3.2T-broadcast-8B-8G-NCCL2243.txt": (
        RunOptions(nic="ib_ndr", nics_per_node=8),
        None,
    ),
    # the blog: one QSFP112 cable shown as two RoCE devices, ib_write_bw 98 + 98 Gb/s
    "270_GB10-DGXSpark-2node-1gpu-RoCE-2links-IB_MERGE_NICS-allgather-512M-16G-NCCL2289.txt": (
        RunOptions(nic="roce_100g", nics_per_node=2),
        None,
    ),  # sixteenth batch (probe 16: what the pages state)
    # the page's 'rdma link': 8 mlx5 RDMA links per MI300X host (RoCE, GID index 3); their speed is not on it
    "280_MI300X-AAC10-Slurm-2node-16rank-rccl-allreduce-8RoCE-HCAexclude-RankNoGroup-RCCL2223.txt": (
        RunOptions(nics_per_node=8),
        None,
    ),
    # OCI's GB300 page: the 2 hosts sit "on a Single Rack" (one NVL72 NVLink domain, NCCL_MNNVL_ENABLE=1)
    "284_GB300-OCI-NVL72-2node-8rank-MNNVL-allreduce-8G-16G-elided.txt": (
        RunOptions(nvlink_domain="shared"),
        None,
    ),
    # "two nodes using four GPUs per node" on a Slingshot (SS11) Cray EX system; the page's topo -m of
    # those nodes: 4 GPUs joined by NV6, 72 CPU cores each (GH200)
    "287_GH200-CrayEX-Slingshot11-2node-8rank-srun-prompt-emptydevicelist-Tree-NCCL2205.txt": (
        RunOptions(gpu="GH200", nodes=2, gpus_per_node=4, nic="slingshot_200g"),
        None,
    ),
    # the page's hardware table: one Intel 10GbE NIC (enp3s0f0) per host, NCCL over TCP sockets
    "288_H100PCIe+A100PCIe-2node-TCP10GbE-allreduce-selectedrows-outofplaceonly.txt": (
        RunOptions(nic="tcp_10g", nics_per_node=1),
        None,
    ),
    # seventeenth batch (probe 17: what the pages state)
    # the repository's README: "Largest possible bandwidth value: 400 Gbps" (one RoCE NIC, mlx5_5), as 201
    "291_H100-MOC-2node-1gpu-RoCE-1NIC-NCCL2262-RING-sendrecv-1to25GiB-linearstep-INFO.txt": (
        RunOptions(nic="roce_400g"),
        None,
    ),
    # the thread: "a Slingshot11 system" (Cray EX, libfabric cxi through aws-ofi-nccl), as 191 and 287
    "292_GH200-Olivia-CrayEX-2node-1gpu-Slingshot11-allreduce-wrong1MiB-OOBfailed-issue369.txt": (
        RunOptions(nic="slingshot_200g"),
        None,
    ),
    # eighteenth batch (probe 18: what the pages state)
    # the issue's title and comment: two p4 instances (p4d: 4 x 100 Gb/s EFA), "nccl-2.7.8, with
    # aws-ofi-nccl-1.1.2"; the log's INFO lines in the excerpt name neither
    "300_A100SXM4-40GB-AWS-p4d-2node-16rank-EFA-ofi112-NCCL278-allreduce-32M-46M-step2M-INFO-midheader.txt": (
        RunOptions(nic="efa_v2", nics_per_node=4, nccl_version="2.7.8"),
        None,
    ),
    # the PR's "Results" run: hosts pinoak0003/0004, one process each driving 8 MI250X GCDs (-g 8)
    "302_MI250X-HPE-pinoak-2node-16rank-rccl-allreduce-1M-256M-rowsonly-cut.txt": (
        RunOptions(gpu="MI250X", nodes=2, gpus_per_node=8),
        None,
    ),
    # the comment's nvidia-smi list names the RTX PRO 6000 Blackwell Server Edition; "TP=2: P2P enabled
    # (NCCL default)", one process (nGpus 2)
    "303_RTXPRO6000-BlackwellServer-GardenLinux-TP2-P2P-allreduce-8B-1K-NCCL2277-excerpt.txt": (
        RunOptions(gpu="RTX PRO 6000 Blackwell", nodes=1, gpus_per_node=2, p2p=True),
        None,
    ),
    # "RCCL Tests with MPI (AAC14 MI355X with Pollara 400 Slurm)": two hosts of 8 MI355X (-H
    # mi355-gpu-23:8,mi355-gpu-24:8), "AMD AI NIC Pollara 400", 8 HCAs in NCCL_IB_HCA
    "310_MI355X-AAC14-2node-16rank-rccl-ANP-Pollara400-allreduce-8B-8G-RCCL2266-nodevicename.txt": (
        _MI355X_POLLARA,
        None,
    ),
    # "RCCL Tests with MPI (AAC11 MI325X Slurm)": "====== 1-node ======", mpirun -np 8 -H $list_1 (8 slots)
    "311_MI325X-AAC11-Slurm-1node-8rank-rccl-allreduce-Ring-4G-16G-egrep-rowsonly.txt": (
        RunOptions(gpu="MI325X", nodes=1, gpus_per_node=8),
        None,
    ),
    # the same section, "====== 2-node ======": mpirun -np 16, 8 slots per host, 8 bnxt_re HCAs (speed not
    # stated on the page)
    "312_MI325X-AAC11-Slurm-2node-16rank-rccl-allreduce-Ring-8bnxt-4G-16G-egrep-rowsonly.txt": (
        RunOptions(gpu="MI325X", nodes=2, gpus_per_node=8, nics_per_node=8),
        None,
    ),
    # the same section, "====== 8-node ======": mpirun -np 64, 8 slots per host
    "313_MI325X-AAC11-Slurm-8node-64rank-rccl-allreduce-Ring-8bnxt-4G-16G-egrep-rowsonly.txt": (
        RunOptions(gpu="MI325X", nodes=8, gpus_per_node=8, nics_per_node=8),
        None,
    ),
    # "Each physical server is equipped with: 8x NVIDIA H200 GPUs, 4x NVIDIA/Mellanox ConnectX-7 NICs";
    # "across the two bare-metal hosts" (the ConnectX-7s' link speed is not stated)
    "314_H200-2node-16rank-4CX7-IB-baremetal-allreduce-1G-9G-f3-rowsonly-issue380.txt": (
        RunOptions(gpu="H200", nodes=2, gpus_per_node=8, nics_per_node=4),
        None,
    ),
    # "one full-passthrough VM per host, with all 8 GPUs and all 4 NICs passed through to the guest"
    "315_H200-2VM-16rank-4CX7-passthrough-allreduce-1G-9G-f3-rowsonly-degraded-issue380.txt": (
        RunOptions(gpu="H200", nodes=2, gpus_per_node=8, nics_per_node=4),
        None,
    ),
    # "Supermicro HGX SYS-821GE-TNHR with 8xH100 and 8x CX-7 IB 400Gbps"
    "316_H100-SMC-HGX-2node-16rank-8CX7-IB-DOCA-allreduce-8B-16G-NCCL2262-degraded-issue319.txt": (
        RunOptions(nic="ib_ndr"),
        None,
    ),
    # twentieth batch (probe 20: what the pages state)
    # the page: "ノード間接続 ： クラスタ・ネットワーク （100Gbps x 16 /ノード）" (RoCEv2), "NCCL ： 2.26.5"
    "338_A100-40GB-OCI-BM.GPU4.8-Ubuntu-2node-16rank-allreduce-10G-1row-NCCL2265-japanese.txt": (
        RunOptions(nic="roce_100g", nics_per_node=16, nccl_version="2.26.5"),
        None,
    ),
}
"""What each outside log's page states that the log does not print (options and collective), as a user
would give it; logs not listed have no such fact beyond what they print."""

OUTSIDE_TOPOLOGY: dict[str, str] = {
    "21_A100PCIe-4gpu-SYS-sm02.txt": "tests/data/outside/21_topo.txt",
    "22_A100PCIe-2node-1gpu-HDR-GDR-SYS.txt": "tests/data/outside/22_topo.txt",
    "39_A100PCIe-2node-1gpu-HDR-NPS4-hoststaged.txt": "tests/data/outside/22_topo.txt",
    "44_H20-3e-VM-2node-2gpu-alltoall-RoCEbond.txt": "tests/data/outside/44_topo.txt",
    "82_A100-SXM-64GB-Leonardo-4gpuNV4-sendrecv-t2-INFO-issue331.txt": "tests/data/outside/82_topo.txt",
    "83_A100-80GB-PCIe-AzureNC96adsA100v4-4gpu-NV12pairs-allgather-g4-1size.txt": (
        "tests/data/outside/83_topo.txt"
    ),
}
"""The ``nvidia-smi topo -m`` text an outside log's page prints (``--topology``), relative to the
repository; these files are not logs (:func:`outside_logs` leaves them out)."""


@dataclass(frozen=True)
class Entry:
    """One development log: its validation with datasheet defaults and what NCCL sees."""

    path: Path
    validation: Validation
    machine: NcclMachine

    @property
    def known(self) -> bool:
        """Whether every machine fact the verdict rests on is known (such logs train the fits)."""
        return not self.validation.inference.assumed

    @property
    def features(self) -> list[str]:
        """Keys of :data:`EXPLANATIONS` that describe this machine."""
        network = self.validation.inference.facts.get("network")
        found = ["host_memory"] if self.machine.transport == "shm" else []
        return found + (["efa"] if network is not None and str(network.value).startswith("efa") else [])

    @property
    def rows(self) -> list[Row]:
        """The validated sizes."""
        return self.validation.rows

    @property
    def nodes(self) -> int:
        """Hosts the run spans."""
        return self.machine.nodes


def real_logs(folder: Path) -> list[Path]:
    """The real logs (not ``synthetic_*``) of the development data, and the one-GPU H100 set."""
    paths = sorted(p for p in folder.glob("*.txt") if not p.name.startswith("synthetic_"))
    return paths + sorted(ONE_GPU.glob("*_1gpu*.txt")) if folder == DATA else paths


def load(folder: Path) -> list[Entry]:
    """Every real log, validated with datasheet defaults."""
    entries = []
    for path in real_logs(folder):
        validation = validate_file(path, options=OPTIONS.get(path.name))
        machine = analyse(validation.inference.topology, validation.inference.ranks)
        entries.append(Entry(path, validation, machine))
    return entries


def same_machine(a: Entry, b: Entry) -> bool:
    """Logs of one machine: the same GPU and at least one host in common (or the same file)."""
    ga = a.validation.inference.facts["gpu"].value
    gb = b.validation.inference.facts["gpu"].value
    shared = set(a.validation.log.hosts) & set(b.validation.log.hosts)
    return a.path == b.path or (ga == gb and bool(shared))


def regime(nbytes: int) -> str:
    """``latency``, ``middle`` or ``bandwidth``."""
    if nbytes < LATENCY_BOUND_BYTES:
        return "latency"
    return "bandwidth" if nbytes >= BANDWIDTH_BOUND_BYTES else "middle"


def percent(value: float | int | None, signed: bool = False) -> str:
    """``12.3 %`` (``+12.3 %`` if signed), ``-`` for None."""
    if value is None:
        return "-"
    return f"{value:+.1%}" if signed else f"{value:.1%}"


def errors_cell(summary: dict[str, float | int | None]) -> str:
    """``median / max`` of absolute errors."""
    if summary["median_abs_error"] is None:
        return "-"
    return f"{percent(summary['median_abs_error'])} / {percent(summary['max_abs_error'])}"


def machine_text(entry: Entry) -> str:
    """``8 x A100 SXM4 80GB, 1 host, nvswitch8`` and the network; assumed facts marked with *."""
    facts = entry.validation.inference.facts

    def shown(name: str) -> str:
        fact = facts[name]
        return f"{fact.value}{'*' if fact.assumed else ''}"

    hosts = facts["nodes"].value
    text = f"{len(entry.validation.inference.ranks)} x {facts['gpu'].value}, {shown('nodes')} host"
    text += ("s" if hosts > 1 else "") + f", {shown('board')}"
    if "network" in facts:
        text += f", {shown('nics_per_node')} x {shown('network')}"
    if entry.validation.inference.topology.peer_to_peer is False:
        text += ", no P2P" + ("*" if facts["p2p"].assumed else "")
    return text


def sizes_text(rows: Sequence[Row]) -> str:
    """``8 B - 4 GiB (30)``."""
    return f"{format_size(rows[0].nbytes)} - {format_size(rows[-1].nbytes)} ({len(rows)})"


HOST_SPECIFIC = ("latency_scale", "launch_s")
"""Parameters a leave-one-machine-out fit leaves at their defaults: they describe one host's software
stack (CPU, driver, CUDA, launch path), so a value fitted on other machines says nothing about this one."""


def bandwidth_rows(validation: Validation) -> Validation:
    """The log's bandwidth-bound sizes (>= 64 MiB) only, or all of it if it has none: the efficiencies
    a leave-one-machine-out fit transfers are bandwidth figures, and smaller sizes would let the model's
    latency and ramp errors on other machines pull them."""
    from dataclasses import replace

    large = [row for row in validation.rows if row.nbytes >= BANDWIDTH_BOUND_BYTES]
    return replace(validation, rows=large) if len(large) >= 2 else validation


def leave_one_machine_out(entries: list[Entry]) -> dict[Path, Calibration | str]:
    """For each log: a fit on every other machine's logs whose machine is known (or why it failed)."""
    out: dict[Path, Calibration | str] = {}
    fits: dict[tuple[Path, ...], Calibration | str] = {}
    groups = machine_groups(entries)
    for entry in entries:
        training = tuple(e.path for e in entries if e.known and not same_machine(e, entry))
        if training not in fits:
            group = next(g for g in groups if entry in g)
            others = [[e.validation for e in g] for g in groups if g is not group]
            try:
                fits[training] = fit(
                    [bandwidth_rows(e.validation) for e in entries if e.path in training],
                    base=without_machine([e.path.name for e in group], others),
                    keep=HOST_SPECIFIC,
                    across_machines=True,
                    out_of_sample=False,
                )
            except CalibrationError as exc:
                fits[training] = f"fit refused: {exc}"
        out[entry.path] = fits[training]
    return out


def predicted_with(entry: Entry, calibration: Calibration) -> dict[str, dict[str, float | int | None]]:
    """The error summary of ``entry`` predicted with ``calibration``'s parameters."""
    again = validate_file(entry.path, options=OPTIONS.get(entry.path.name), params=calibration.params)
    return again.summary()


def medians(summaries: list[dict[str, dict[str, float | int | None]]], regime_key: str) -> float | None:
    """Median over files of the per-file median |error| of one regime (files without it left out)."""
    found = (s[regime_key]["median_abs_error"] for s in summaries)
    values = [float(v) for v in found if v is not None]
    return statistics.median(values) if values else None


Summaries = dict[Path, dict[str, dict[str, float | int | None]]]


def summary_row(label: str, summaries: list[dict[str, dict[str, float | int | None]]]) -> str:
    """``| label | files | all | >= 64 MiB | < 64 KiB |`` of median per-file errors."""
    return (
        f"| {label} | {len(summaries)} | "
        + " | ".join(percent(medians(summaries, k)) for k in ("all", "bandwidth_bound", "latency_bound"))
        + " |"
    )


def summary_lines(entries: list[Entry], lomo: Summaries, pooled: Summaries) -> list[str]:
    """The headline: median over files of the per-file median error, in sample and leave-one-machine-out,
    over every log and over the multi-GPU nccl-tests logs alone (the one-GPU H100 set left out)."""
    assumed = sum(1 for e in entries if not e.known)
    multi = [e for e in entries if e.path.parent == DATA]

    def rows(chosen: list[Entry], suffix: str) -> list[str]:
        return [
            summary_row(f"defaults as shipped{suffix}", [e.validation.summary() for e in chosen]),
            summary_row(
                f"leave-one-machine-out (defaults){suffix}", [lomo[e.path] for e in chosen if e.path in lomo]
            ),
            summary_row(
                f"leave-one-machine-out (calibrated on the others){suffix}",
                [pooled[e.path] for e in chosen if e.path in pooled],
            ),
        ]

    return [
        "| | files | all sizes | >= 64 MiB | < 64 KiB |",
        "|---|---|---|---|---|",
        *rows(entries, ""),
        *rows(multi, ", multi-GPU logs only"),
        "",
        "Defaults as shipped include the few constants fitted on these logs, so for those logs they are "
        "in sample. Leave-one-machine-out (defaults) predicts each log with those constants derived again "
        "without its machine's logs (`commsim.calibrate.defaults.without_machine`): `launch_s` from the "
        "other machines' single-process `-g N` logs, the EFA and TCPXO overheads per network step from "
        "the other machines over that transport (none when there is none), and a constant fitted only on "
        "this machine falls back to the model without it (listed in `commsim.calibrate.defaults.FITTED`). "
        "This is the error to expect from `commsim validate` on a machine the project never saw. "
        "Leave-one-machine-out (calibrated on the others) instead fits the model's transferable "
        "parameters to every other machine's logs and predicts this one with them (details below the "
        "table). The last three rows leave out the ten one-GPU H100 logs (one machine, whose copy "
        "constants no other machine measures).",
        "",
        f"{assumed} of {len(entries)} logs leave a machine fact to an assumption (marked * below): their "
        "verdict is withheld, and they do not train the leave-one-machine-out fits.",
    ]


def machine_groups(entries: list[Entry]) -> list[list[Entry]]:
    """The logs grouped by machine (:func:`same_machine`, joined transitively)."""
    groups: list[list[Entry]] = []
    for entry in entries:
        joined = [g for g in groups if any(same_machine(entry, e) for e in g)]
        merged = [entry] + [e for g in joined for e in g]
        groups = [g for g in groups if g not in joined] + [merged]
    return groups


def lomo_defaults(entries: list[Entry]) -> Summaries:
    """Each log predicted with the defaults derived without its machine's logs."""
    groups = machine_groups(entries)
    out: Summaries = {}
    for group in groups:
        others = [[e.validation for e in g] for g in groups if g is not group]
        params = without_machine([e.path.name for e in group], others)
        for entry in group:
            again = validate_file(entry.path, options=OPTIONS.get(entry.path.name), params=params)
            out[entry.path] = again.summary()
    return out


def defaults_table(
    entries: list[Entry], lomo: Summaries, loo: dict[Path, Calibration | str]
) -> tuple[list[str], Summaries]:
    """The main table: what was inferred, errors with the defaults, and both leave-one-machine-out studies."""
    lines = [
        "| log | inferred run (* assumed) | collective | sizes | all: median / max | >= 64 MiB | < 64 KiB "
        "| LOMO defaults: all | >= 64 MiB | LOMO calibrated: all | >= 64 MiB |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    held: Summaries = {}
    for entry in entries:
        v, summary = entry.validation, entry.validation.summary()
        other = loo[entry.path]
        if isinstance(other, Calibration):
            held[entry.path] = predicted_with(entry, other)
            cells = [errors_cell(held[entry.path][k]) for k in ("all", "bandwidth_bound")]
        else:
            cells = [other, ""]
        given = OPTIONS.get(entry.path.name)
        name = entry.path.name + (" (given --gpu)" if given is not None and given.gpu else "")
        lines.append(
            f"| {name} | {machine_text(entry)} | {v.collective} | {sizes_text(v.rows)} | "
            + " | ".join(errors_cell(summary[k]) for k in ("all", "bandwidth_bound", "latency_bound"))
            + " | "
            + " | ".join(errors_cell(lomo[entry.path][k]) for k in ("all", "bandwidth_bound"))
            + " | "
            + " | ".join(cells)
            + " |"
        )
    return lines, held


def fit_value(name: str, value: float, sigma: float) -> str:
    """``efficiency.nvlink 0.674 +- 0.028``."""
    (number, unit), (spread, _) = scaled(name, value), scaled(name, sigma)
    return f"{name} {number:.3g}{unit} +- {spread:.2g}{unit}"


def calibration_table(entries: list[Entry]) -> list[str]:
    """Each file calibrated on its own: fitted values and median error before and after."""
    lines = [
        "| log | fitted (1 sigma) | not separable in this log | median error before -> after |",
        "|---|---|---|---|",
    ]
    for entry in entries:
        try:
            calibration = fit([entry.validation])
        except CalibrationError as exc:
            lines.append(f"| {entry.path.name} | fit refused: {exc} | | |")
            continue
        fitted = "<br>".join(fit_value(n, v, s) for n, (v, s) in calibration.fitted.items())
        fitted += "".join(f"<br>({note})" for note in calibration.notes + calibration.warnings)
        unseparated = ", ".join(n for n, why in calibration.dropped.items() if not why.startswith("no "))
        before, after = calibration.before["all"], calibration.after["all"]
        lines.append(
            f"| {entry.path.name} | {fitted} | {unseparated or '-'} | "
            f"{percent(before['median_abs_error'])} -> {percent(after['median_abs_error'])} |"
        )
    return lines


def outliers(rows: Sequence[Row]) -> list[Row]:
    """Sizes measured more than 20 % slower than the next larger size."""
    return [a for a, b in zip(rows, rows[1:]) if a.measured_time_s > (1 + MISS) * b.measured_time_s]


def span(rows: Sequence[Row]) -> str:
    """``1 MiB to 32 MiB``, or ``64 MiB`` for one size."""
    first, last = format_size(rows[0].nbytes), format_size(rows[-1].nbytes)
    return first if first == last else f"{first} to {last}"


def direction(misses: Sequence[Row]) -> str:
    """``model too slow``, ``model too fast``, or how many of each."""
    slow = sum(r.error > 0 for r in misses)
    if slow in (0, len(misses)):
        return "model too slow" if slow else "model too fast"
    return f"model too slow at {slow}, too fast at {len(misses) - slow}"


def errors_range(low: float, high: float) -> str:
    """``errors -24.5% to +38.1%``, or ``error -21.3%`` when they are one."""
    if percent(low, True) == percent(high, True):
        return f"error {percent(low, True)}"
    return f"errors {percent(low, True)} to {percent(high, True)}"


def regime_line(name: str, rows: list[Row], misses: list[Row]) -> str:
    """One bullet: how many sizes of a regime miss, where, in which direction, with what NCCL choice."""
    low, high = min(r.error for r in misses), max(r.error for r in misses)
    choices = ", ".join(dict.fromkeys(f"{r.algorithm}/{r.protocol}" for r in misses))
    text = (
        f"- {REGIMES[name]}: {len(misses)} of {len(rows)} sizes off by more than {MISS:.0%} "
        f"({span(misses)}), {errors_range(low, high)} ({direction(misses)}); "
        f"the model chose {choices}"
    )
    if name == "latency":
        floor = min(rows, key=lambda r: r.measured_time_s)
        text += (
            f"; smallest measured time {format_time(floor.measured_time_s, 3)}, "
            f"model {format_time(floor.predicted_time_s, 3)}"
        )
    if name == "bandwidth":
        last = rows[-1]
        text += (
            f"; bus bandwidth at {format_size(last.nbytes)}: measured "
            f"{format_bandwidth(last.measured_busbw_Bps, 3)}, model "
            f"{format_bandwidth(last.predicted_busbw_Bps, 3)}"
        )
    return text + "."


def misses_section(entry: Entry) -> list[str]:
    """The misses of one log, by regime, and why."""
    rows = entry.validation.rows
    noise = outliers(rows)
    by_regime: dict[str, list[Row]] = {}
    for row in rows:
        by_regime.setdefault(regime(row.nbytes), []).append(row)
    lines, keys = [], []
    for name, members in by_regime.items():
        misses = [r for r in members if abs(r.error) > MISS and r not in noise]
        if misses:
            lines.append(regime_line(name, members, misses))
            feature = next((f for f in entry.features if (f, name) in EXPLANATIONS), None)
            keys.append((feature, name))
    if noise:
        sizes = ", ".join(f"{format_size(r.nbytes)} ({format_time(r.measured_time_s, 3)})" for r in noise)
        lines.append(f"- measurement outliers, slower than the next larger size: {sizes}.")
    if not lines:
        return []
    why = [EXPLANATIONS[key] for key in dict.fromkeys(keys)] + ([OUTLIERS] if noise else [])
    return [
        f"### {entry.path.name}",
        "",
        f"{machine_text(entry)}, {entry.validation.collective}.",
        "",
        *lines,
        "",
        "*Why.*",
        "",
        *(f"- {text}" for text in why),
        "",
    ]


_FLAGS = (
    ("gpu", "--gpu"),
    ("gpus", "--gpus"),
    ("nodes", "--nodes"),
    ("gpus_per_node", "--gpus-per-node"),
    ("nic", "--nic"),
    ("nics_per_node", "--nics-per-node"),
    ("nccl_version", "--nccl-version"),
    ("nvlink_domain", "--nvlink-domain"),
)
"""The :class:`RunOptions` fields the outside logs use, and their ``commsim validate`` options."""


def flags(options: RunOptions, collective: str | None, topology: str | None = None) -> list[str]:
    """``commsim validate`` arguments that give ``options``, ``collective`` and the ``topology`` file
    (relative to the repository) as a user would."""
    out = [] if collective is None else ["--collective", collective]
    for name, flag in _FLAGS:
        value = getattr(options, name)
        out += [] if value is None else [flag, str(value)]
    out += [] if options.p2p is None else ["--p2p" if options.p2p else "--no-p2p"]
    out += [] if options.algorithms is None else ["--algo", ",".join(options.algorithms)]
    out += [] if options.protocols is None else ["--proto", ",".join(options.protocols)]
    out += [] if options.board is None else ["--topology", options.board]
    return out + ([] if topology is None else ["--topology", topology])


def page_flags(name: str) -> list[str]:
    """The ``commsim validate`` options the page of the outside log ``name`` justifies."""
    return flags(*OUTSIDE_OPTIONS.get(name, (RunOptions(), None)), OUTSIDE_TOPOLOGY.get(name))


def outside_logs(folder: Path) -> list[Path]:
    """The logs of ``folder``: its ``.txt`` files but the ``nvidia-smi topo -m`` texts they use."""
    topologies = {Path(t).name for t in OUTSIDE_TOPOLOGY.values()}
    return [p for p in sorted(folder.glob("*.txt")) if p.name not in topologies]


@dataclass(frozen=True)
class Outside:
    """One log from outside the development set: validated without options and with its page's facts
    (an :class:`Entry`), or the first line of the error that refused it."""

    path: Path
    plain: Entry | str
    given: Entry | str

    @property
    def flags(self) -> list[str]:
        """The options its page justifies."""
        return page_flags(self.path.name)


def attempt(
    path: Path, options: RunOptions, collective: str | None, topology: str | None = None
) -> Entry | str:
    """The log validated with datasheet defaults, or the refusal's first line (its path left out);
    ``topology`` is an ``nvidia-smi topo -m`` file relative to the repository, read as ``--topology``
    reads it (with ``--gpu``, else the GPU the log names). A file of several runs (``-d all``) is
    represented by its float run, nccl-tests' default data type (else its first)."""
    try:
        if topology is not None:
            options = replace(
                options, topology=logs_machine(str(ROOT / topology), None, None, options.gpu, path)[0]
            )
        runs = validate_runs(path, options=options, collective=collective, n_ranks=options.gpus)
        validation = next((v for v in runs if v.log.rows and v.log.rows[0].dtype == "float"), runs[0])
    except CommsimError as exc:
        text = str(exc).splitlines()[0]
        return text.replace(f"{path}: ", "").replace(str(path), path.name)
    return Entry(path, validation, analyse(validation.inference.topology, validation.inference.ranks))


def load_outside(folder: Path) -> list[Outside]:
    """Every log of ``folder``, without options and with the facts of :data:`OUTSIDE_OPTIONS`."""
    out = []
    for path in outside_logs(folder):
        options, collective = OUTSIDE_OPTIONS.get(path.name, (RunOptions(), None))
        plain = attempt(path, RunOptions(), None)
        given = (
            plain
            if path.name not in OUTSIDE_OPTIONS
            else attempt(path, options, collective, OUTSIDE_TOPOLOGY.get(path.name))
        )
        out.append(Outside(path, plain, given))
    return out


def outcome(result: Entry | str) -> str:
    """``validated`` or ``refused: ...``."""
    return "validated" if isinstance(result, Entry) else f"refused: {result}"


def verdict_start(validation: Validation) -> str:
    """The verdict's first two clauses (what it says and the ratio it rests on)."""
    return "; ".join(validation.verdict().split("; ")[:2])


def outside_row(log: Outside) -> str:
    """One row: options, outcomes, inferred run, errors and verdict."""
    given = f"`{' '.join(log.flags)}`" if log.flags else "-"
    head = f"| {log.path.name} | {given} | {outcome(log.plain)} | "
    if not isinstance(log.given, Entry):
        return head + f"{outcome(log.given)} | - | - | - | - | - |"
    v, summary = log.given.validation, log.given.validation.summary()
    return (
        head
        + f"validated | {machine_text(log.given)}, {v.collective} | "
        + " | ".join(errors_cell(summary[k]) for k in ("all", "bandwidth_bound", "latency_bound"))
        + f" | {verdict_start(v)} |"
    )


def validated(logs: list[Outside], attr: str) -> list[Entry]:
    """The entries of the logs that validate without options (``plain``) or with them (``given``)."""
    return [e for e in (getattr(log, attr) for log in logs) if isinstance(e, Entry)]


def outside_lines(logs: list[Outside]) -> list[str]:
    """The section on logs from outside the development set."""
    plain, given = validated(logs, "plain"), validated(logs, "given")
    return [
        "## Logs from outside the development set",
        "",
        f"The {len(logs)} logs in `tests/data/outside` are public nccl-tests and rccl-tests runs found "
        "after the model was built. Two fitted defaults were derived from some of them, so those logs' "
        "errors are not out of sample: the step overhead of aws-ofi-nccl's RDMA protocol over EFA (51, "
        "74, 97, 114) and a ring channel's rate over 400 Gb/s InfiniBand (232, 266; 56 left out as "
        "degraded). Beyond those, two decisions used some "
        "of them as corroboration, 112 and 123 are the evidence that led to the overlap of back-to-back "
        "broadcast and reduce calls (nothing fitted, but their errors are not out of sample), every log "
        "from 21 on served to find and fix bugs in parsing, inference and verdict wording, and 202 a bug "
        "in the price of send/recv between nodes: see that folder's README, "
        "which also gives each log's source, hardware and trust. Each is validated as a user first "
        "would, without options, and then with "
        "the facts its own page states that the log does not print (`OUTSIDE_OPTIONS` in the tool); "
        "errors and verdict are those with the page's facts, with datasheet defaults.",
        "",
        "| log | page's facts (options) | without options | with them | inferred run (* assumed), "
        "collective | all: median / max | >= 64 MiB | < 64 KiB | verdict |",
        "|---|---|---|---|---|---|---|---|---|",
        *(outside_row(log) for log in logs),
        "",
        f"{len(plain)} of {len(logs)} logs validate without any option, {len(given)} with the facts "
        "their pages state. Median over files of each file's median |time error|:",
        "",
        "| | files | all sizes | >= 64 MiB | < 64 KiB |",
        "|---|---|---|---|---|",
        summary_row("outside logs, without options", [e.validation.summary() for e in plain]),
        summary_row("outside logs, with the page's facts", [e.validation.summary() for e in given]),
        "",
        "### Signed error by size",
        "",
        *bias_lines(given, f"the {len(given)} logs validated with their pages' facts"),
    ]


def outside_accuracy(logs: list[Outside]) -> dict[str, object]:
    """``accuracy.json``'s ``outside`` figures: counts, and the medians with the page's facts."""
    summaries = [e.validation.summary() for e in validated(logs, "given")]
    return {
        "logs": len(logs),
        "validated_without_options": len(validated(logs, "plain")),
        "validated": len(summaries),
        "as_shipped": {k: medians(summaries, k) for k in ("all", "bandwidth_bound", "latency_bound")},
    }


def accuracy(entries: list[Entry], lomo: Summaries) -> dict[str, object]:
    """What ``commsim validate`` tells every user about the model's error (``accuracy.json``): the
    medians over logs of each log's median |time error|, as shipped and leave-one-machine-out."""

    def row(summaries: list[dict[str, dict[str, float | int | None]]]) -> dict[str, float | None]:
        return {k: medians(summaries, k) for k in ("all", "bandwidth_bound", "latency_bound")}

    return {
        "generated_by": COMMAND,
        "logs": len(entries),
        "machines": len(machine_groups(entries)),
        "as_shipped": row([e.validation.summary() for e in entries]),
        "leave_one_machine_out": row([lomo[e.path] for e in entries if e.path in lomo]),
    }


def render(entries: list[Entry], outside: list[Outside] | None = None) -> str:
    """The whole page."""
    return render_all(entries, outside)[0]


def render_all(entries: list[Entry], outside: list[Outside] | None = None) -> tuple[str, dict[str, object]]:
    """The whole page, and the accuracy figures ``validate`` prints; with ``outside``, a last section
    on those logs and their figures under ``outside``."""
    loo = leave_one_machine_out(entries)
    lomo = lomo_defaults(entries)
    table, held = defaults_table(entries, lomo, loo)
    multi = [e for e in entries if len(e.validation.inference.ranks) > 1]
    lines = [
        f"<!-- Generated by `{COMMAND}`; do not edit: change the code and run it again. -->",
        "",
        "# Validation against real nccl-tests logs",
        "",
        f"Regenerate this page with `{COMMAND}` (about six minutes of CPU on one core, most of it "
        "the leave-one-machine-out fits).",
        "",
        "Each log in `tests/data/nccl-tests` (and the one-GPU H100 set in `tests/data/h100-1gpu`) is a "
        "real nccl-tests or rccl-tests run (provenance in the file's `## ` lines and the folder's "
        "README). `commsim validate` first infers the run and the machine from the log alone (one log, "
        "which prints no GPU name, is given `--gpu` as a user would), then predicts every size with the "
        "NCCL model (`commsim.nccl`). The error is predicted / measured - 1 of the out-of-place time, "
        "shown as the median and the maximum of its absolute value over all sizes, the bandwidth-bound "
        f"sizes (>= {format_size(BANDWIDTH_BOUND_BYTES)}) and the latency-bound ones "
        f"(< {format_size(LATENCY_BOUND_BYTES)}).",
        "",
        "## Summary",
        "",
        "Median over files of each file's median |time error|:",
        "",
        *summary_lines(entries, lomo, held),
        "",
        "## Every log",
        "",
        "Defaults are `NcclParams()` as shipped; LOMO defaults are those derived without the log's "
        "machine (see the summary). LOMO calibrated (leave one machine out) fits the model's "
        "physical parameters (`commsim.calibrate.fit`) on the logs of every *other* machine (logs that "
        "share a host name and GPU are one machine) whose machine facts are all known, and predicts this "
        "log with the result. It fits only what carries over between machines (link efficiencies per "
        "NVLink generation or link family, network efficiencies per NIC kind (one generation of one "
        "transport: a log's `efa_v1` NICs are never priced with a figure fitted on `efa_v2`), NVLS and "
        "host-memory efficiency), on the training logs' bandwidth-bound sizes (>= 64 MiB); "
        "`latency_scale` and `launch_s` describe one host's software stack and keep their defaults.",
        "",
        *table,
        "",
        "## Each log calibrated on its own",
        "",
        "In-sample: `fit` on one log alone, every parameter that log determines (least squares on "
        "log(predicted / measured)). This shows what each machine's figures are, not how well the model "
        "predicts unseen data. Parameters no size of a log depends on are not listed; those it cannot "
        "separate from others are.",
        "",
        *calibration_table(entries),
        "",
        "## Where the model misses and why",
        "",
        *bias_lines(multi, f"the {len(multi)} multi-GPU development logs"),
        "",
        f"Sizes whose predicted time is off by more than {MISS:.0%} with datasheet defaults, by regime.",
        "",
    ]
    for entry in entries:
        lines += misses_section(entry)
    figures = accuracy(entries, lomo)
    if outside:
        lines += outside_lines(outside)
        figures["outside"] = outside_accuracy(outside)
    return "\n".join(lines).rstrip() + "\n", figures


def main(argv: Sequence[str] | None = None) -> int:
    """Print the page, or write it with ``--write PATH``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, help="write the page here instead of printing it")
    parser.add_argument("--data", type=Path, default=DATA, help="folder of real nccl-tests logs")
    parser.add_argument("--outside", type=Path, default=OUTSIDE, help="folder of logs from outside it")
    parser.add_argument(
        "--accuracy",
        type=Path,
        default=ACCURACY,
        help="with --write, also write the headline figures 'commsim validate' prints here",
    )
    args = parser.parse_args(argv)
    page, figures = render_all(load(args.data), load_outside(args.outside))
    if args.write is None:
        sys.stdout.write(page)
    else:
        args.write.write_text(page, encoding="utf-8")
        args.accuracy.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
