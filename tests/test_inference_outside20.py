"""Public rccl-tests / nccl-tests logs of out-of-sample probe 20 whose machine was inferred wrong.

Each test holds a real excerpt inline (the probe's file number and source in the comment above it)
and asserts what the log says about the machine.
"""

from __future__ import annotations

from pathlib import Path

from commsim.calibrate.inference_records import RunOptions
from commsim.calibrate.validate import validate_file

# 331: "MiMo-V2-Flash 1P1D Disaggregated Inference Guide on 12N MI308X" (code index id 56725087763),
# "4.3. Run RCCL All Reduce test on 2 GPU nodes": the hosts' Broadcom RDMA devices are renamed
# bnxt_re_benic1b ... bnxt_re_benic8b and listed exactly ('='). (Device lines kept: ranks 0, 7, 8
# and 15 of 16; rows kept: 2 of 22.)
EXACT_RENAMED_HCAS = """\
mpirun -np 16 \\
  --map-by ppr:8:node \\
  --hostfile mpi_hosts \\
  -x NCCL_IB_HCA="=bnxt_re_benic1b,bnxt_re_benic2b,bnxt_re_benic3b,bnxt_re_benic4b,bnxt_re_benic5b,bnxt_re_benic6b,bnxt_re_benic7b,bnxt_re_benic8b" \\
  -x NCCL_IB_GID_INDEX=3 \\
  ./build/all_reduce_perf -b 1K -e 2G -f 2 -g 1
# nThread 1 nGpus 1 minBytes 1024 maxBytes 2147483648 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
rccl-tests: Version develop_deprecated:40b1b17
# Using devices
#  Rank  0 Group  0 Pid 224254 on mi308-ccs-aus-e06-01 device  0 [0000:05:00] AMD Instinct MI308X
#  Rank  7 Group  0 Pid 224261 on mi308-ccs-aus-e06-01 device  7 [0000:e5:00] AMD Instinct MI308X
#  Rank  8 Group  0 Pid 420341 on mi308-ccs-aus-e06-10 device  0 [0000:05:00] AMD Instinct MI308X
#  Rank 15 Group  0 Pid 420348 on mi308-ccs-aus-e06-10 device  7 [0000:e5:00] AMD Instinct MI308X
RCCL version : 2.27.7-HEAD:0d2c4fd
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
        1024           256     float     sum      -1    40.86    0.03    0.05      0    39.88    0.03    0.05      0
  2147483648     536870912     float     sum      -1    12816  167.56  314.17      0    12829  167.39  313.87      0
"""  # noqa: E501


def test_an_exact_hca_list_counts_renamed_devices(tmp_path: Path) -> None:
    """331: an '=' list makes NCCL match each token as an exact device name, so its 8 renamed
    Broadcom devices are 8 NICs; they were not read (not of the 'name_N' shape) and 8 per host was
    'assumed (one per GPU)', withholding the verdict for --nics-per-node."""
    path = tmp_path / "mi308x.txt"
    path.write_text(EXACT_RENAMED_HCAS)
    facts = validate_file(path, options=RunOptions(gpu="MI300X")).inference.facts
    assert facts["nics_per_node"].value == 8
    assert not facts["nics_per_node"].assumed
