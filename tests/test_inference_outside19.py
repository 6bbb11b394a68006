"""Public rccl-tests logs of out-of-sample probe 19 whose run was inferred wrong.

Each test holds a real excerpt inline (the probe's file number and source in the comment above it)
and asserts what the log, read as the shell and RCCL read it, says about the run.
"""

from __future__ import annotations

from pathlib import Path

from commsim.calibrate.inference_records import RunOptions
from commsim.calibrate.validate import validate_file

# 313: github.com/hisohara/ai-scripts training/01_rccl-smoketest/README.md @0780bb3, "RCCL Tests with
# MPI (AAC11 MI325X Slurm)": the script's 8-node mpirun and the author's egrep of its log (8 MI325X
# hosts, 8 Broadcom RoCE NICs each, whose RDMA devices the bnxt_re driver names bnxt_re0, bnxt_re1, ...).
# (Rows kept: 2 of 3.)
BNXT_HCAS = """\
mpirun -np 64 -H $list_8 --mca pml ucx --mca btl ^openib -x NCCL_IB_GID_INDEX=3 -x NCCL_NET_GDR_LEVEL=3 \\
        -x NCCL_IB_HCA=bnxt_re0:1,bnxt_re1:1,bnxt_re2:1,bnxt_re3:1,bnxt_re4:1,bnxt_re5:1,bnxt_re7:1,bnxt_re8:1 \\
        -x UCX_NET_DEVICES=bnxt_re0:1,bnxt_re1:1,bnxt_re2:1,bnxt_re3:1,bnxt_re4:1,bnxt_re5:1,bnxt_re7:1,bnxt_re8:1 \\
        -x NCCL_SOCKET_IFNAME=enp49s0f1np1 \\
        -x NCCL_ALGO=Ring /shared/apps/ubuntu/rocm-6.4.1/rccl-tests/build/all_reduce_perf -b 8 -e 16G -f 2 -g 1
====== 8-node ======
  4294967296    1073741824     float     sum      -1    24572  174.79  344.13      0    24588  174.68  343.89      0
 17179869184    4294967296     float     sum      -1    96405  178.21  350.84      0    96498  178.03  350.50      0
"""  # noqa: E501


def test_broadcom_rdma_devices_are_whole_hca_names(tmp_path: Path) -> None:
    """313: 'bnxt_re0:1,...,bnxt_re8:1' names 8 HCA ports, as NCCL_IB_HCA lists of mlx5_N do; the
    name was taken for a family prefix (no '_' before its index), so the list was dropped and the
    NIC count called 'assumed: 8 per host (one per GPU)', right here only because the host has 8
    GPUs."""
    path = tmp_path / "mi325x.txt"
    path.write_text(BNXT_HCAS)
    fact = validate_file(path, options=RunOptions(gpu="MI325X")).inference.facts["nics_per_node"]
    assert not fact.assumed
    assert fact.value == 8
    assert "NCCL_IB_HCA" in fact.evidence[0].source
    two = BNXT_HCAS.replace("bnxt_re0:1,bnxt_re1:1,bnxt_re2:1,bnxt_re3:1,bnxt_re4:1,bnxt_re5:1,", "")
    path.write_text(two)
    fact = validate_file(path, options=RunOptions(gpu="MI325X")).inference.facts["nics_per_node"]
    assert (fact.value, fact.assumed) == (2, False)
