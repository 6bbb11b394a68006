"""Public nccl-tests logs from outside the development set (``tests/data/outside``) through ``validate``.

Each log runs through the command line in process, as a user first would (no options) and with the
facts its own page states (``OUTSIDE_OPTIONS`` in ``tools/validation_table.py``, the table the
validation page is built from). Either it validates (exit 0), or it is refused with exit 2 and one
``error:`` line that names the option giving the missing fact: never a traceback, never anything else.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.test_bad_inputs import run_cli

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "outside"
REFUSED_PLAIN = {
    "11_MI250X-SS11-4node-32rank-allgather.txt": "give --gpu ",
    "12_MI250X-SS11-4node-32rank-allreduce.txt": "give --gpu ",
    "17_H100PCIe+A100PCIe-2node-RoCE-hoststaged.txt": "give --collective ",
    "20_UnknownGPU-5KPro-2node-16gpu-alltoall-SpectrumX.txt": "give --gpu ",
    "23_AMD-RadeonGraphics-8gpu-rccl-allreduce.txt": "give --gpu ",
    "24_AMD-RadeonGraphics-8gpu-rccl-alltoall.txt": "give --gpu ",
    "25_MI355X-Pollara-OCI-2node-allreduce.txt": "give --gpu ",
    "26_MI355X-Pollara-OCI-4node-alltoall.txt": "give --gpu ",
    "30_MI355X-AINIC-2node-16rank-rccl-allreduce.txt": "give --gpu ",
    "31_MI355X-AINIC-2node-16rank-rccl-alltoall.txt": "give --gpu ",
    "33_RTX5090-2ranks-1gpu-socket-tagoutput.txt": "ranks 0-1 run on one GPU (device 0 of host lab)",
    "37_V100SXM2-2gpu-1host-broadcast-tapsocket-commented-row.txt": "no result rows found",
    "43_H100-GKE-A3High-2node-allgather-TCPX-nodevices-indented.txt": "give --gpu ",
    "46_A100-NVLink-8gpu-sendrecv-g8-nodevices.txt": "give --gpu ",
    "51_H100-p5-EKS-2node-16gpu-EFA-tagoutput-nodevices.txt": "give --gpu ",
    "68_MI300X-2node-splitmask-8x2rank-rccl-allreduce-bf16-AINIC.txt": "cannot tell the number of ranks",
    "69_MI300X-2node-splitmask-8x2rank-rccl-alltoall-bf16-AINIC.txt": "give --gpu ",
    "73_A100-80GB-p4de-2node-allreduce-EFA-nodevices.txt": "give --gpu ",
    "74_H100-p5-2node-allreduce-16GiB-EFA-nodevices.txt": "give --gpu ",
    "77_MetaX-C500-8gpu-mccl-allreduce-bf16-boxheader.txt": "is not in the catalogue",
    "79_H800-2node-16rank-alltoall-deviceAPI-D1-testfailure-issue355.txt": (
        "the run failed before printing a result row: line 30: Test CUDA failure"
    ),
    "92_H800-2node-4gpu-4CX7-crossnic0-allreduce-nodevices.txt": "give --gpu ",
    "93_H100-2node-1gpu-4NIC-Tree-allreduce.txt": "give --gpu ",
    "95_H20-2node-16gpu-NVLSTree-NCCL2215-oldformat-small.txt": (
        "its rows print bandwidths too small to give busbw/algbw"
    ),
    "96_MI250X-16rank-rccl-allreduce-small-oldformat.txt": "give --gpu ",
    "97_B200-AWS-p6-2node-EFA-allreduce-small.txt": (
        "print algbw 0.00 GB/s, so they give no busbw/algbw ratio at all"
    ),
    "99_A100-SXM4-40GB-3node-24rank-4HDR-linearstep-allreduce.txt": "give --gpu ",
    "101_A100-40GB-AWS-p4d-2node-EFA-allreduce-small.txt": (
        "print algbw 0.00 GB/s, so they give no busbw/algbw ratio at all"
    ),
    "102_StrixHalo-gfx1151-rccl-broadcast-unknownGPU.txt": (
        "busbw/algbw of broadcast does not depend on the number of ranks; pass --gpus N"
    ),
    "103_V100-8node-64gpu-IB100G-allreduce-oldformat.txt": (
        "ratio of the rows fits every number from 59 to 79; pass --gpus N"
    ),
    "104_V100-8node-64gpu-IB100G-alltoall-oldformat.txt": "give --gpu ",
    "105_H20-8gpu-1node-allgather-or-alltoall-small-zerosize.txt": "give --gpu ",
    "106_H20-8gpu-1node-allreduce-small.txt": "give --gpu ",
    "107_H100-VM-3node-24gpu-RoCE200-rankprefix-degraded.txt": "give --gpu ",
    "108_H100-16node-allreduce-NCCL2205-small-noheader.txt": (
        "ratio of the rows fits every number from 6 to 65536; pass --gpus N"
    ),
    "122_GH200-CSCS-Alps-64node-256rank-allreduce-extracted-table-nohash-header.txt": (
        "ratio of the rows fits every number from 253 to 259; pass --gpus N"
    ),
    "129_V100-PCIe-16GB-2gpu-g2-SHM-condensed-noroot-nocinplace-selectedrows.txt": (
        "all_reduce, reduce and send_recv fit; give --collective "
    ),
    "130_V100-PCIe-16GB-2node-4rank-RoCE-ConnectX3-noGDR-1row-keyparts.txt": (
        "the column header has no count column"
    ),
    "134_V100-SXM2-32GB-DGX1-k8s-2node-16rank-RoCE-2xCX5-100G-SRIOV-NCCL256-oldformat-indented.txt": (
        "give --gpu "
    ),
    "137_H100-Azure-NDv5-64node-512rank-IB-NDRx8-allreduce-8G-periteration-i0-abridged.txt": "give --gpu ",
    "138_H100-GCP-A3High-dstack-2node-16rank-allgather-TCPX-nohash-tableonly.txt": "give --gpu ",
    "150_A100-40GB-AWS-p4dn-1to4node-EFA-allreduce-1GiB-instancecount-column-NCCL299.txt": (
        "its 13 fields are not one of nccl-tests' standard rows"
    ),
    "151_H100-GKE-A3High-2node-16rank-allgather-TCPX-1to64MiB-NA-wrong.txt": "give --gpu ",
    "152_H100-GKE-A3-2node-16rank-allgather-2MiB-2GiB-rowsonly-noheader.txt": "give --gpu ",
    "153_H100-GCP-a3-highgpu-8g-2node-16rank-allgather-TCPX-dstack-1to64MiB.txt": "give --gpu ",
    "154_A100-SXM4-32node-256rank-4HDR-allreduce-small-oldformat-zerorows.txt": (
        "print algbw 0.00 GB/s, so they give no busbw/algbw ratio at all"
    ),
    "156_H100-AKS-MPIJob-2node-16rank-allreduce-factor4-rowsonly-afterINFO.txt": (
        "ratio of the rows fits every number from 8 to 65536; pass --gpus N"
    ),
    "157_H100-AWS-p5-allreduce-tagoutput-widetrailing-3rows-nodecountunstated.txt": (
        "print algbw 0.00 GB/s, so they give no busbw/algbw ratio at all"
    ),
    "158_RTX4090-5gpu-g5-tinygradP2P-allreduce-32MiB-blanklines.txt": "give --gpu ",
    "161_A100-NV12-8gpu-board-2of8-g2-CVD01-allgather-bf16-linearstep-nodevices.txt": "give --gpu ",
    "162_AMD-AINIC-2node-16rank-rccl-allreduce-2to16GiB-rowsonly.txt": "give --gpu ",
    "163_H100-Crusoe-2node-16rank-NVLSTree-allreduce-rowsonly-repeatedsizes-broken-inplace.txt": (
        "give --gpu "
    ),
    "166_A100-80GB-2node-1gpu-HDR-srun-allreduce-small-noheaderline.txt": (
        "print algbw 0.00 GB/s, so they give no busbw/algbw ratio at all"
    ),
    "167_unknownGPU-mpirun-8rank-alltoall-oldformat-rowsonly-noredop.txt": "give --gpu ",
    "168_RTX2080Ti-2gpu-NVLinkbridge-reduce-oldformat-rowsonly.txt": (
        "cannot tell the number of ranks: the log has no device list"
    ),
    "169_L4-2node-8gpu-2xCX7-400G-noGDR-uccl-allreduce-rowsonly-NA.txt": "give --gpu ",
    "170_H100-PCIe-2gpu-NVLinkbridge-g2-allreduce-1to4GiB-INFOabridged-nodevices.txt": "give --gpu ",
    "171_RTX2080Ti-2gpu-allgather-NCCL264-oldformat-11field-rowsonly.txt": "give --gpu ",
    "181_V100-AWS-p3dn-2node-EFA-allreduce-NCCL24-gist-small.txt": (
        "ratio of the rows fits every number from 13 to 23; pass --gpus N"
    ),
    "182_V100-AWS-p3dn-8node-EFA-allreduce-NCCL24-gist-small.txt": (
        "ratio of the rows fits every number from 8 to 65536; pass --gpus N"
    ),
    "183_V100-AWS-p3dn-4node-EFA-allreduce-NCCL24-gist-small.txt": (
        "ratio of the rows fits every number from 10 to 38; pass --gpus N"
    ),
    "184_MI250X-16rank-rccl-allgather-MSCCL-before-oldformat.txt": "give --gpu ",
    "185_V100-AWS-p3dn-2node-8gpu-EFA170-allreduce-1to8MiB.txt": "give --gpu ",
    "186_unknownGPU-2node-4gpu-CVD0246-reducescatter-sizezero-rows.txt": "give --gpu ",
    "194_AMD-8rank-rccl-allreduce-MSCCL-MT-sidebyside-tables.txt": (
        "the column header holds two tables side by side"
    ),
    "200_H100-Kestrel-16node-64rank-Slingshot-ofi-cxi-allreduce-rowsonly.txt": "give --gpu ",
    "205_H100-GCP-A3Mega-Slurm-2node-16rank-TCPXO-allgather-8MiB-8GiB-NA-indented.txt": "give --gpu ",
    "210_RTX4070TiSUPER-2gpu-g2-tinygradP2P-before-allreduce-pastebin-dashprefixed-partial.txt": (
        "no result rows found: a table's column header is at line 15, but its lines start with '-'"
    ),
    "212_RTXA6000-3gpu-g3-NV4pair-RoCE-NCCL2262-allreduce-failed-before-rows-nvml.txt": (
        "NCCL's first warning before it, line 22: Failed to open libnvidia-ml.so.1"
    ),
    "215_H100NVL+A100SXM-2node-g8-mixed-socket-timeout-before-rows-INFO.txt": (
        "the run started (line 11) but its output ends at line 63"
    ),
    "216_DGX-H100+DGX-A100-socket-bond100GbE-PROTO-SIMPLE-allreduce-wrong-results-ellipsis-excerpt.txt": (
        "give --gpu "
    ),
    "217_4GPU-PCIe-oldformat2020-allreduce-outofplace-only-columns-excerpt.txt": ("give --gpu "),
    "219_A10G-AWS-g5.8xlarge-1rank-noHashPrefix-blocking-allreduce-busbw0-excerpt.txt": (
        "its only row is cut short (line 22"
    ),
    "220_RTXA6000-1gpu-socket-lo-hang-WARN-connection-closed-before-rows.txt": (
        "NCCL's first warning, line 26: socketProgress: Connection closed by remote peer"
    ),
    "221_RTX3090-8gpu-g8-allreduce-1row-cut-excerpt.txt": ("its only row is cut short (line 23"),
    "226_P100-PCIE-8gpu-g8-NCCL10-format2018-bytes-N-op-res-failure-before-rows.txt": (
        "the run failed before printing a result row: line 20: NCCL failure all_reduce.cu:95"
    ),
    "227_V100-SXM2-AWS-2node-1gpu-nonMPI-2separate-runs-rank0-twice-headers-only.txt": (
        "but no result row (a line not starting with '#') follows it"
    ),
    "231_B200-Vultr-HGX-2node-16rank-NDRx8-allreduce-8B-16GiB-rowsonly.txt": "give --gpu ",
    "232_B200-Vultr-HGX-2node-16rank-NDRx8-allgather-size0rows-16GiB-rowsonly.txt": "give --gpu ",
    "233_B200-Vultr-HGX-2node-16rank-NDRx8-sendrecv-uint8-sum-16GiB-rowsonly.txt": (
        "which fits send_recv of any number of ranks"
    ),
    "234_B200-Vultr-HGX-1node-8rank-allreduce-8B-16GiB-rowsonly.txt": "give --gpu ",
    "235_H100-Nebius-mk8s-2node-IB-SkyPilot-allreduce-512MiB-8GiB-rowsonly.txt": "give --gpu ",
    "236_H100-Nebius-VM-2node-IB-SkyPilot-allreduce-512MiB-8GiB-noinplacewrong-rowsonly.txt": ("give --gpu "),
    "237_GB200-NVL4-1proc-g4-allreduce-4rows-noDevices-go-test-fixture.txt": "give --gpu ",
    "240_H100-GCP-A3Mega-Slurm-2node-16rank-TCPXO-allgather-c0-NA-srun-l-prefix.txt": ("give --gpu "),
    "243_A100-40GB-OCI-BM.GPU4.8-2node-2proc-g8-RoCE16x100G-allreduce-10G-1row-grep.txt": ("give --gpu "),
    "244_unknownGPU-8gpu-AMem-offload-plugin-alltoall-64MiB-1row-interleaved-AMEM-lines.txt": ("give --gpu "),
    "245_MI300X-OCI-OKE-2node-16rank-rccl-allreduce-2of8-RoCE-rails-1G-16G-rowsonly-RanksGPUs.txt": (
        "give --gpu "
    ),
    "246_MI300X-OCI-OKE-Slurm-2node-16rank-rccl-allreduce-8RoCE-1G-16G-rowsonly-RanksGPUs.txt": (
        "give --gpu "
    ),
    "261_GB10-DGXSpark-1gpu-kubemark-allreduce-4column-table-1M-16G.txt": (
        "the column header has no count column"
    ),
    "268_H100-VoltagePark-4node-32rank-allreduce-CUDAdriver-insufficient-failed-before-rows.txt": (
        "the run failed before printing a result row: line 47: Test NCCL failure common.cu:204"
    ),
    "286_unknownGPU-EKS-EFA-2pod-1gpu-allreduce-tagoutput-nodevices-nobinary-size0rows.txt": "give --gpu ",
    "287_GH200-CrayEX-Slingshot11-2node-8rank-srun-prompt-emptydevicelist-Tree-NCCL2205.txt": "give --gpu ",
    "289_RX7900XTX-2gpu-g2-RCCL2171-invalidkernelfile-failed-before-rows.txt": (
        "the run failed before printing a result row: line 29: Test NCCL failure common.cu:1285"
    ),
    "290_V100PCIe+V100S-2node-2gpu-ConnectX6-IB-allreduce-512M-1row-hashprefixed-optcast-doc.txt": (
        "no result rows found: the table's column header is at line 14, but no result row (a line not "
        "starting with '#') follows it; line 16 is a result row behind '#': remove the '#' to validate "
        "the rows"
    ),
    "302_MI250X-HPE-pinoak-2node-16rank-rccl-allreduce-1M-256M-rowsonly-cut.txt": "give --gpu ",
    "303_RTXPRO6000-BlackwellServer-GardenLinux-TP2-P2P-allreduce-8B-1K-NCCL2277-excerpt.txt": "give --gpu ",
    "310_MI355X-AAC14-2node-16rank-rccl-ANP-Pollara400-allreduce-8B-8G-RCCL2266-nodevicename.txt": (
        "end at the bus id, naming none); give --gpu "
    ),
    "311_MI325X-AAC11-Slurm-1node-8rank-rccl-allreduce-Ring-4G-16G-egrep-rowsonly.txt": "give --gpu ",
    "312_MI325X-AAC11-Slurm-2node-16rank-rccl-allreduce-Ring-8bnxt-4G-16G-egrep-rowsonly.txt": "give --gpu ",
    "313_MI325X-AAC11-Slurm-8node-64rank-rccl-allreduce-Ring-8bnxt-4G-16G-egrep-rowsonly.txt": "give --gpu ",
    "314_H200-2node-16rank-4CX7-IB-baremetal-allreduce-1G-9G-f3-rowsonly-issue380.txt": "give --gpu ",
    "315_H200-2VM-16rank-4CX7-passthrough-allreduce-1G-9G-f3-rowsonly-degraded-issue380.txt": "give --gpu ",
    "331_MI308X-2node-16rank-rccl-allreduce-8bnxtre-exactHCA-unknownGPU-RCCL2277.txt": (
        "GPU 'AMD Instinct MI308X' is not in the catalogue"
    ),
    "335_RX6800XT+MI100-2gpu-g2-RCCL2205-hipIpcGetMemHandle-failed-before-rows.txt": (
        "the run failed before printing a result row: line 32: Test NCCL failure"
    ),
    "336_Vega64x3+RadeonVII-4gpu-g4-rccl-allgather-32MiB-1row-format2020-unknownGPU.txt": (
        "GPU 'Vega 10 XT [Radeon RX Vega 64]' is not in the catalogue"
    ),
    "337_RadeonProVII-2gpu-g2-rccl-allreduce-oldformat-8B-128B-excerpt-unknownGPU.txt": (
        "GPU 'AMD Radeon (TM) Pro VII' is not in the catalogue"
    ),
}
"""Logs that cannot be validated alone, and what the refusal must say (the option that would settle it,
or why none does): 11, 12, 25, 26, 43, 46, 51, 69, 73 and 74 are rccl-tests or nccl-tests tables
pasted without their ``# Rank .. device`` lines (no GPU named); 68, such a table too, is refused first
for its rank count (no header either, and a busbw/algbw of 1 fits all_reduce of 2 ranks as well as
reduce or broadcast of any number); 17 names no binary, its two ranks' busbw/algbw of 1 fit both
all_reduce and send_recv and its page kept no in-place ``#wrong`` column to tell them apart (53, alike
but with that column, is all_reduce by it); 20 names its GPUs only as 'NVIDIA Graphics Device', and
23, 24, 30 and 31 only as 'AMD Radeon Graphics'; 77's 'MetaX C500' is not in the catalogue (60's RTX 6000D
and 160's Jetson Thor are catalogued now); 33 runs two ranks on one GPU, which the model does not
describe; 37's only result row starts with '#'; 79's run failed ('an illegal memory access was
encountered') before its only row.
Of the sixth and seventh batches, 92, 93, 96, 99, 104-107 are tables without device lines (no GPU
named); 95, 97 and 101 print only rows too small for a busbw/algbw ratio and no device list, so their
rank count is unknown; 103, 108 and 122 have ratios that fit a range of rank counts (all_reduce's count
column says nothing); 102's broadcast ratio is 1 whatever the rank count. Of the eighth and ninth batches,
134, 137, 138, 151-153, 158, 161-163, 167 and 169-171 are tables or issue excerpts without device lines
(no GPU named); 129's condensed 2-rank table (no root column, no in-place half) fits all_reduce, reduce
and send_recv alike; 130's column header has no count column; 150 is a user's composite table (an
instance-count column before nccl-tests' fields, no '#' header); 154, 157 and 166 print only rows too small
for a busbw/algbw ratio; 156's ratio fits any rank count from 8 up; 168's rows of busbw = algbw (reduce)
say nothing of the rank count. Of the tenth batch, 181-183 are 2019 gists of small all_reduce rows
without a device list whose ratios fit a range of rank counts (8 and more for 182); 184-186 are issue
excerpts without device lines (no GPU named); 194 prints two runs side by side under one doubled
column header (probe 10's REPORT: "two tables on one line"). Of the eleventh batch, 200 and 205 are rows
without device lines (no GPU named); 210's lines carry
a paste viewer's '- ' prefix, which no launcher prints; 212's run failed in NCCL's initialisation (its own
warning: libnvidia-ml.so.1 missing) before any row. Of the twelfth batch, 216 and 217 are issue excerpts
without device lines (no GPU named; 217's page names none either); 215 and 220 hung before their tables
(215's socket bootstrap timed out, 220's peer closed its connection); 219's and 221's excerpts end inside
their only row; 226 (NCCL 1.0) failed before its rows; 227's excerpt ends under its second column header
(two separate one-rank runs, nccl-tests built without MPI). Of the thirteenth batch, 231, 232, 234-237, 240
and 243-246 are rows without device lines (no GPU named); 233 is such a send_recv table too, whose rows fit
send_recv of any rank count. (208's 'GeForce GTX 1080' and 242's 'GeForce GTX 1660 SUPER' were refused as not
in the catalogue until their entries were added; both validate now.) Of the fifteenth batch, 261 is a
benchmark tool's condensed table (size, time, algbw and busbw only: no count or type column); 268's run
failed in NCCL's init ('CUDA driver version is insufficient for CUDA runtime version') before any row. Of
the sixteenth batch, 286 is a sample output without device lines (no GPU named) and 287's wrapper left its
device list empty; 289's run failed in RCCL's init ('invalid kernel file') before any row. Of the
seventeenth batch, 290's page prints its only row behind '#' (the Optcast tutorial's wrapper), so no
result row follows the column header. Of the eighteenth batch, 302 is rows without their device list and
303's excerpt leaves its device list out (its page names the GPU in an nvidia-smi list, which the parser
skips as a '##' line). Of the nineteenth batch, 310's rccl-tests device lines end at the bus id (no GPU
name printed; the page's section title names the MI355X), 311-313 are a README's egrep of three runs'
rows (MI325X in the section title only) and 314/315 an issue's two 3-row tables without device lines.
Of the twentieth batch, 331's 'AMD Instinct MI308X', 336's Radeon RX Vega 64 / Radeon VII ('Vega 20')
and 337's Radeon Pro VII are not in the catalogue; 335's run failed in RCCL's init ('hipIpcGetMemHandle
failed') before any row."""
UNSETTLED = {
    "20_UnknownGPU-5KPro-2node-16gpu-alltoall-SpectrumX.txt",
    "23_AMD-RadeonGraphics-8gpu-rccl-allreduce.txt",
    "24_AMD-RadeonGraphics-8gpu-rccl-alltoall.txt",
    "33_RTX5090-2ranks-1gpu-socket-tagoutput.txt",
    "37_V100SXM2-2gpu-1host-broadcast-tapsocket-commented-row.txt",
    "77_MetaX-C500-8gpu-mccl-allreduce-bf16-boxheader.txt",
    "79_H800-2node-16rank-alltoall-deviceAPI-D1-testfailure-issue355.txt",
    "102_StrixHalo-gfx1151-rccl-broadcast-unknownGPU.txt",
    "108_H100-16node-allreduce-NCCL2205-small-noheader.txt",
    "130_V100-PCIe-16GB-2node-4rank-RoCE-ConnectX3-noGDR-1row-keyparts.txt",
    "150_A100-40GB-AWS-p4dn-1to4node-EFA-allreduce-1GiB-instancecount-column-NCCL299.txt",
    "156_H100-AKS-MPIJob-2node-16rank-allreduce-factor4-rowsonly-afterINFO.txt",
    "157_H100-AWS-p5-allreduce-tagoutput-widetrailing-3rows-nodecountunstated.txt",
    "162_AMD-AINIC-2node-16rank-rccl-allreduce-2to16GiB-rowsonly.txt",
    "167_unknownGPU-mpirun-8rank-alltoall-oldformat-rowsonly-noredop.txt",
    "186_unknownGPU-2node-4gpu-CVD0246-reducescatter-sizezero-rows.txt",
    "194_AMD-8rank-rccl-allreduce-MSCCL-MT-sidebyside-tables.txt",
    "210_RTX4070TiSUPER-2gpu-g2-tinygradP2P-before-allreduce-pastebin-dashprefixed-partial.txt",
    "212_RTXA6000-3gpu-g3-NV4pair-RoCE-NCCL2262-allreduce-failed-before-rows-nvml.txt",
    "215_H100NVL+A100SXM-2node-g8-mixed-socket-timeout-before-rows-INFO.txt",
    "217_4GPU-PCIe-oldformat2020-allreduce-outofplace-only-columns-excerpt.txt",
    "219_A10G-AWS-g5.8xlarge-1rank-noHashPrefix-blocking-allreduce-busbw0-excerpt.txt",
    "220_RTXA6000-1gpu-socket-lo-hang-WARN-connection-closed-before-rows.txt",
    "221_RTX3090-8gpu-g8-allreduce-1row-cut-excerpt.txt",
    "226_P100-PCIE-8gpu-g8-NCCL10-format2018-bytes-N-op-res-failure-before-rows.txt",
    "227_V100-SXM2-AWS-2node-1gpu-nonMPI-2separate-runs-rank0-twice-headers-only.txt",
    "236_H100-Nebius-VM-2node-IB-SkyPilot-allreduce-512MiB-8GiB-noinplacewrong-rowsonly.txt",
    "244_unknownGPU-8gpu-AMem-offload-plugin-alltoall-64MiB-1row-interleaved-AMEM-lines.txt",
    "261_GB10-DGXSpark-1gpu-kubemark-allreduce-4column-table-1M-16G.txt",
    "268_H100-VoltagePark-4node-32rank-allreduce-CUDAdriver-insufficient-failed-before-rows.txt",
    "286_unknownGPU-EKS-EFA-2pod-1gpu-allreduce-tagoutput-nodevices-nobinary-size0rows.txt",
    "289_RX7900XTX-2gpu-g2-RCCL2171-invalidkernelfile-failed-before-rows.txt",
    "290_V100PCIe+V100S-2node-2gpu-ConnectX6-IB-allreduce-512M-1row-hashprefixed-optcast-doc.txt",
    "331_MI308X-2node-16rank-rccl-allreduce-8bnxtre-exactHCA-unknownGPU-RCCL2277.txt",
    "335_RX6800XT+MI100-2gpu-g2-RCCL2205-hipIpcGetMemHandle-failed-before-rows.txt",
    "336_Vega64x3+RadeonVII-4gpu-g4-rccl-allgather-32MiB-1row-format2020-unknownGPU.txt",
    "337_RadeonProVII-2gpu-g2-rccl-allreduce-oldformat-8B-128B-excerpt-unknownGPU.txt",
}
"""Refused logs whose page does not settle them either (20's and 23/24's pages never name the GPU model,
77's names only one the catalogue lacks; 33, 37 and 79, a failed run, are refused whatever is
given; 102's page does not name the rank count (its Strix Halo GPU is catalogued now);
108's says "16 H100 nodes" but not how many GPUs each ran; 130's page gives its hosts and GPUs but no option
adds the count column its header lacks; 150's thread states the machine of a composite table no option
makes readable; 156's and 162's threads give the hosts but not the GPU, 157's the GPU (p5.48xlarge) but not
the rank count; 167's unknown GPU is named by no option a user could give; 186's thread gives 2 hosts x
4 GPUs and reduce_scatter but not the GPU model; 194's two side-by-side tables need one file per side,
which no option gives; 210's prefixed lines and 212's failed run
are refused whatever is given; 217's page names no GPU; 215, 219-221, 226 and 227 have no result row
to validate; 236's page does not say whether its VMs ran H100 or H200, nor how many, and 244's names no
GPU; 261's condensed table lacks columns no option adds, and 268 has no result row; 286's page names no
instance type or GPU, and 289 has no result row; 290's one row is behind '#', which no option
undoes); 331's, 336's and 337's GPUs are not in the catalogue (no catalogue name a user could
give is theirs), and 335 has no result row; every other refused log validates with its page's facts."""


def _tool() -> ModuleType:
    """``tools/validation_table.py`` (not a package), for its table of page facts; its sibling modules
    (``validation_bias``) are imported as a script imports them, from ``tools/``."""
    if str(ROOT / "tools") not in sys.path:
        sys.path.insert(0, str(ROOT / "tools"))
    spec = importlib.util.spec_from_file_location("validation_table", ROOT / "tools" / "validation_table.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


TOOL = _tool()
LOGS = TOOL.outside_logs(DATA)


def _check(args: list[str], refused_by: str | None, capsys: pytest.CaptureFixture[str]) -> None:
    """Run ``validate ARGS``: exit 0 with a report, or exit 2 with one error that says ``refused_by``."""
    code, out, err = run_cli(["validate", *args], capsys)
    assert "Traceback" not in out + err
    if refused_by is None:
        assert code == 0, err
        assert out.strip() and "error:" not in err
    else:
        assert (code, out) == (2, ""), out
        assert err.startswith("error: ") and err.count("error:") == 1, err
        assert refused_by in " ".join(err.split()) + " ", err


def test_the_data_is_the_logs_and_the_readme_names_each() -> None:
    """269 logs (01-138, 150-171, 180-195, 200-227, 230-246, 250-257, 260-270, 280-292, 300-303,
    310-316, 331 and 335-338), each with its provenance lines first and one README row; every page fact is
    for a log, every topology file it names exists, and a refused log is either settled by its page or
    unsettled."""
    assert len(LOGS) == 269
    assert {int(p.name.split("_")[0]) for p in LOGS} == {
        *range(1, 139),
        *range(150, 172),
        *range(180, 196),
        *range(200, 228),
        *range(230, 247),
        *range(250, 258),
        *range(260, 271),
        *range(280, 293),
        *range(300, 304),
        *range(310, 317),
        331,
        *range(335, 339),
    }
    readme = (DATA / "README.md").read_text(encoding="utf-8")
    for path in LOGS:
        lines = path.read_text(encoding="utf-8").splitlines()
        assert lines[0].startswith("## source: ") and lines[1].startswith("## hardware: "), path.name
        assert f"| {path.name} |" in readme, path.name
    names = {p.name for p in LOGS}
    assert set(TOOL.OUTSIDE_OPTIONS) <= names and set(TOOL.OUTSIDE_TOPOLOGY) <= set(TOOL.OUTSIDE_OPTIONS)
    assert all((ROOT / topo).is_file() for topo in TOOL.OUTSIDE_TOPOLOGY.values())
    assert set(REFUSED_PLAIN) - UNSETTLED == set(REFUSED_PLAIN) & set(TOOL.OUTSIDE_OPTIONS)
    assert set(REFUSED_PLAIN) >= UNSETTLED and not UNSETTLED & set(TOOL.OUTSIDE_OPTIONS)


@pytest.mark.parametrize("path", LOGS, ids=[p.name.split("_")[0] for p in LOGS])
def test_validates_or_says_why_not(
    path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without options: validated, or refused as :data:`REFUSED_PLAIN` says. With the page's facts
    (topology files named relative to the repository, as the page shows them): validated."""
    _check([str(path)], REFUSED_PLAIN.get(path.name), capsys)
    if path.name in TOOL.OUTSIDE_OPTIONS:
        monkeypatch.chdir(ROOT)
        _check([str(path), *TOOL.page_flags(path.name)], None, capsys)


def test_page_facts_are_given_as_the_options_a_user_types() -> None:
    """The tool's table becomes the command-line options its page column shows: 12's page gives the GPU,
    the hosts, the ranks per host, the network and (by its binary) the collective; 115's the rank count."""
    options, collective = TOOL.OUTSIDE_OPTIONS["12_MI250X-SS11-4node-32rank-allreduce.txt"]
    assert TOOL.flags(options, collective) == [
        *["--collective", "all_reduce", "--gpu", "MI250X", "--nodes", "4"],
        *["--gpus-per-node", "8", "--nic", "slingshot_200g"],
    ]
    # 21's page prints "P2P CAN access" and its nvidia-smi topo -m, copied beside the log
    assert TOOL.page_flags("21_A100PCIe-4gpu-SYS-sm02.txt") == [
        *["--p2p", "--topology", "tests/data/outside/21_topo.txt"]
    ]
    # 115's page shows the MPIJob's "mpirun -np 1 -N 1": one rank (--gpus) on one host
    assert TOOL.page_flags("115_A10G-AWS-g5.12xlarge-EKS-1rank-allreduce-tagoutput-INFO-nofooter.txt") == [
        *["--gpus", "1", "--nodes", "1"]
    ]


def test_shipped_outside_figures_are_the_pages() -> None:
    """accuracy.json's ``outside`` figures are the page's summary row with the page's facts, to its printed
    precision (0.1 %), with the same count of validated logs (one command writes both)."""
    from commsim.calibrate.accuracy import expected_error
    from tests.test_accuracy import _summary_row

    files, page = _summary_row("outside logs, with the page's facts")
    outside = expected_error()["outside"]
    assert (outside["logs"], outside["validated"]) == (len(LOGS), files)
    shipped = [outside["as_shipped"][k] for k in ("all", "bandwidth_bound", "latency_bound")]
    assert shipped == pytest.approx(page, abs=0.0005)
