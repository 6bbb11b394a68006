"""send_recv across nodes: the one rank of a node that sends to the next node has its own NIC only.

nccl-tests' send_recv has every rank send the whole buffer to the next rank; across two nodes one rank
of each node sends to the other node, through the NIC nearest its GPU (NCCL's p2p sends a peer's data
through its GPU's NIC). So the call runs at one NIC's rate however many NICs the node has: a node's
other NICs serve ranks whose peers are in the same box. Outside log 202 (CCI-MOC RoCE, 2 x 4 H100, one
400G NIC per host) was priced at 4 NICs' rate (179 GB/s) by dividing the node's NIC bandwidth by its
ranks instead.
"""

from __future__ import annotations

import pytest

from commsim.algorithms.base import Problem
from commsim.collectives import Collective
from commsim.nccl.candidates import own_nics
from commsim.nccl.machine import NcclMachine
from commsim.nccl.model import predict
from commsim.nccl.params import NcclParams
from commsim.topology import get_topology

GiB = 2.0**30


@pytest.mark.parametrize("nics", [1, 4, 8])
def test_send_recv_across_two_h100_nodes_runs_at_one_nic(nics: int) -> None:
    """2 x HGX H100 (8 GPUs each) joined by 1, 4 or 8 NDR NICs per node: NDR is 400 Gb/s = 50 GB/s
    per direction, at the model's InfiniBand efficiency 0.9 = 45 GB/s, the send/recv algorithm
    bandwidth in every case (the NVSwitch box, at hundreds of GB/s, is not the limit)."""
    topology = get_topology("cluster", box="hgx_h100", nodes=2, nic="ib_ndr", nics_per_node=nics)
    params = NcclParams()
    assert params.network_efficiency("ib_ndr", "ib", "infiniband") == pytest.approx(0.9)
    chosen = predict(Problem(topology, tuple(topology.gpus), Collective.SEND_RECV, GiB), params).chosen
    assert chosen.algbw_Bps == pytest.approx(50e9 * 0.9, rel=1e-6)


@pytest.mark.parametrize(
    ("nics", "per_node", "own"),
    [(1, 4, 1), (8, 8, 1), (4, 8, 1), (16, 8, 2), (1, 1, 1)],
)
def test_a_rank_sends_through_its_own_nics(nics: int, per_node: int, own: int) -> None:
    """A rank's own NICs are the node's NICs over its ranks, at least one: 1 NIC for 4 ranks -> 1;
    8 for 8 -> 1; 4 for 8 (p4d) -> 1; 16 for 8 -> 2; 1 for 1 -> 1."""
    m = NcclMachine(2, per_node, "nvswitch", "hopper", True, nics * 50e9, "infiniband", "ib_ndr", "ib", nics)
    assert own_nics(m) == own


@pytest.mark.parametrize("oversubscription", [1, 2, 8])
def test_an_oversubscribed_fabric_does_not_slow_send_recvs_two_flows(oversubscription: int) -> None:
    """2 x HGX H100 with 8 NDR NICs each on a fat tree of 8-port leaves (one leaf per node) whose
    uplinks carry 1/oversubscription of the leaf's 8 x 50 GB/s: 400, 200 and 50 GB/s per direction.
    send/recv sends across with two flows only (gpu7 -> gpu8 and gpu15 -> gpu0), one per direction, so
    even the 8:1 uplink (50 GB/s) carries its flow at the NIC's 50 GB/s; at the InfiniBand efficiency
    0.9 the algorithm bandwidth is 45 GB/s in every case. (Pricing it as a share of the node's
    bandwidth with all 8 channels crossing gave 45 / 8 = 5.6 GB/s at 8:1 and 22.5 at 2:1.)"""
    topology = get_topology(
        "cluster",
        box="hgx_h100",
        nodes=2,
        nic="ib_ndr",
        fabric="fat_tree",
        leaf_size=8,
        oversubscription=oversubscription,
    )
    chosen = predict(Problem(topology, tuple(topology.gpus), Collective.SEND_RECV, GiB), NcclParams()).chosen
    assert chosen.algbw_Bps == pytest.approx(50e9 * 0.9, rel=1e-6)
