# ruff: noqa: E501  (the logs are quoted as nccl-tests prints them)
"""An assumed NIC count fits the machine modelled, and one rank per host needs no board to be judged.

Logs are excerpts of public runs (device lists and a few rows kept as printed): a V100-SXM2 job on two
hosts of two GPUs each (the NIG supercomputer's NVIDIA HPC SDK page), and one GH200 on each of two
Alps nodes (CSCS's Sarus/Podman page).
"""

from __future__ import annotations

import pytest

from commsim.calibrate.inference import RunOptions, infer_run
from commsim.calibrate.parser import parse_nccl_tests
from commsim.calibrate.validate import validate_log
from commsim.nccl.machine import analyse

_TABLE_HEAD = """#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
"""

V100_TWO_BY_TWO = (
    """mpirun ./alltoall_perf -b 2 -e 128M -f 2 -g 2
# nThread 1 nGpus 2 minBytes 2 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid 3020421 on     igt002 device  0 [0x15] Tesla V100-SXM2-16GB
#  Rank  1 Group  0 Pid 3020421 on     igt002 device  1 [0x16] Tesla V100-SXM2-16GB
#  Rank  2 Group  0 Pid 1788088 on     igt007 device  0 [0x15] Tesla V100-SXM2-16GB
#  Rank  3 Group  0 Pid 1788088 on     igt007 device  1 [0x16] Tesla V100-SXM2-16GB
"""
    + _TABLE_HEAD
    + """          16             1     float    none      -1    24.52    0.00    0.00      0    24.88    0.00    0.00    N/A
    67108864       4194304     float    none      -1   8972.2    7.48    5.61      0   9271.3    7.24    5.43    N/A
   134217728       8388608     float    none      -1    17761    7.56    5.67      0    17276    7.77    5.83    N/A
"""
)

GH200_ONE_PER_HOST = (
    """$ srun -N2 --gpus-per-node=4 --mpi=pmix all_reduce_perf -b 1M -e 128M -f2
# nccl-tests version 2.18.2 nccl-headers=23007 nccl-library=23007
# nThread 1 nGpus 1 minBytes 1048576 maxBytes 134217728 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0
#
# Using devices
#  Rank  0 Group  0 Pid  15784 on  nid007106 device  0 [0009:01:00] NVIDIA GH200 120GB
#  Rank  1 Group  0 Pid  24926 on  nid007109 device  0 [0009:01:00] NVIDIA GH200 120GB
"""
    + _TABLE_HEAD
    + """     1048576        262144     float     sum      -1   339.61    3.09    3.09       0   335.85    3.12    3.12       0
    67108864      16777216     float     sum      -1  2982.38   22.50   22.50       0  2983.25   22.50   22.50       0
   134217728      33554432     float     sum      -1  5871.07   22.86   22.86       0  5867.43   22.88   22.88       0
"""
)


def test_an_assumed_nic_count_never_exceeds_the_dgx1_boards_four() -> None:
    """Two hosts of two V100-SXM2 each: the board is the DGX-1 cube mesh, which has 4 NICs. The log
    names no network; one NIC per GPU of the board (8) used to be assumed, and the machine builder then
    refused its own assumption ("give at most 4"). Now 4 are assumed, and the run validates."""
    log = parse_nccl_tests(V100_TWO_BY_TWO, "nig.txt")
    inference = infer_run(log, V100_TWO_BY_TWO)
    nics = inference.facts["nics_per_node"]
    assert nics.assumed and nics.value == 4 and "4 NIC slots" in nics.note
    assert len(inference.topology.devices_of_kind("nic")) == 8  # 4 per host, 2 hosts
    validation = validate_log(log, V100_TWO_BY_TWO)
    assert [row.nbytes for row in validation.rows] == [16, 67108864, 134217728]


def test_a_transports_nics_per_host_are_shared_by_the_gpus_modelled() -> None:
    """One GH200 per Alps node over Slingshot: an HPE Cray EX node has 4 GPUs and 4 Slingshot NICs,
    so a host modelled with its one used GPU gets 4 x 1 / 4 = 1 NIC (not 4, which priced one rank
    at 4 x 25 GB/s striped where the log measures 22.9 GB/s bus bandwidth at 128 MiB). Given
    --nics-per-node, the given count stands."""
    log = parse_nccl_tests(GH200_ONE_PER_HOST, "alps.txt")
    inference = infer_run(log, GH200_ONE_PER_HOST, RunOptions(nic="slingshot_200g"))
    nics = inference.facts["nics_per_node"]
    assert nics.assumed and nics.value == 1
    assert "usually have 4 NICs for 4 GPUs, and a host modelled with 1 GPU(s) gets its share" in nics.note
    machine = analyse(inference.topology, inference.ranks)
    assert machine.nic_Bps == pytest.approx(25e9)
    given = infer_run(log, GH200_ONE_PER_HOST, RunOptions(nic="slingshot_200g", nics_per_node=2))
    assert given.facts["nics_per_node"].value == 2 and not given.facts["nics_per_node"].assumed


def test_one_rank_per_host_is_judged_without_knowing_the_board() -> None:
    """With one rank per host no traffic crosses a host's GPUs, so the board (like peer-to-peer) does
    not withhold the verdict; the NIC count and network, given, settle the rest: measured 22.9 GB/s
    against one 200 Gb/s Slingshot NIC at 0.90 (22.5 GB/s) is as expected."""
    log = parse_nccl_tests(GH200_ONE_PER_HOST, "alps.txt")
    options = RunOptions(nic="slingshot_200g", nics_per_node=1)
    validation = validate_log(log, GH200_ONE_PER_HOST, options=options)
    board = validation.inference.facts["board"]
    assert (board.assumed, board.note) == (False, "one GPU per host: no GPU-to-GPU link of a host is used")
    assert "board" not in [f.name for f in validation.inference.assumed]
    assert validation.verdict().startswith("as expected")


SENDRECV_TABLE_ONLY = (
    _TABLE_HEAD
    + """   134217728      33554432     float     sum      -1   1211.2  110.81  110.81      0   1211.8  110.76  110.76    N/A
  1073741824     268435456     float     sum      -1   5503.4  195.10  195.10      0   5490.5  195.56  195.56    N/A
"""
)


def test_nodes_times_gpus_per_node_give_the_rank_count(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A send/recv table alone (busbw/algbw is 1 for any rank count, no device list) cannot tell its
    ranks; --nodes 1 and --gpus-per-node 8 say 8 as well as --gpus 8 does."""
    from commsim.calibrate.validate import validate_file
    from commsim.errors import CommsimError

    path = tmp_path / "sendrecv.txt"
    path.write_text(SENDRECV_TABLE_ONLY)
    with pytest.raises(CommsimError, match="cannot tell the number of ranks"):
        validate_file(path, collective="send_recv", options=RunOptions(gpu="A100 SXM"))
    options = RunOptions(gpu="A100 SXM", nodes=1, gpus_per_node=8)
    validation = validate_file(path, collective="send_recv", options=options)
    assert validation.inference.facts["ranks"].value == 8 and len(validation.inference.ranks) == 8


def _eight_a100(prelude: str, info: str = "") -> str:
    rows = "".join(
        f"#  Rank {r:2d} Group  0 Pid  {1000 + r} on node1 device {r:2d} [0x{r:02x}] NVIDIA A100-SXM4-80GB\n"
        for r in range(8)
    )
    return (
        prelude
        + "\n# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n"
        + rows
        + info
        + _TABLE_HEAD
        + "  1073741824     268435456     float     sum      -1    93000   11.55   20.21      0    93000   11.55   20.21      0\n"
    )


def test_nccls_p2p_transport_off_drops_the_nvlink_fabric_from_the_machine() -> None:
    """NCCL_P2P_DISABLE=1, or NCCL's own channel lines joining GPUs through host memory (SHM), turn off
    NCCL's P2P transport over NVLink too: an HGX A100 is then priced through host memory (its NVSwitch
    dropped). Peer-to-peer off for another reason (a GeForce card's PCIe, here --no-p2p given as the
    PCIe fact) leaves the NVLink fabric in use."""
    from commsim.calibrate.inference import infer_run

    run = "$ mpirun -np 8 ./build/all_reduce_perf -b 1G -e 1G -g 1"
    for text in (
        _eight_a100("$ export NCCL_P2P_DISABLE=1\n" + run),
        _eight_a100(run, "node1:1000:1000 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct\n"),
    ):
        inference = infer_run(parse_nccl_tests(text, "a100.txt"), text)
        assert analyse(inference.topology, inference.ranks).transport == "shm"
        assert not inference.topology.devices_of_kind("nvswitch")
    text = _eight_a100(run)
    kept = infer_run(parse_nccl_tests(text, "a100.txt"), text, RunOptions(p2p=False))
    assert analyse(kept.topology, kept.ranks).transport == "nvswitch"


def test_a_geforce_pairs_nvlink_bridge_works_without_pcie_peer_to_peer() -> None:
    """An NVLink-bridged pair of GeForce cards with PCIe peer-to-peer off (a stock driver): the bridge
    still joins the pair, as NCCL's P2P transport over NVLink, so the box is NVLink to NCCL."""
    from commsim.topology.machines import bridged_pairs_box

    box = bridged_pairs_box(gpus=2, fabric="nvlink2", links=2, link_bandwidth=25e9, p2p=False)
    assert not box.peer_to_peer
    assert analyse(box, tuple(box.gpus)).transport == "nvlink"
