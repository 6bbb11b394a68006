"""NCCL's channels on direct GPU fabrics, point-to-point collectives and one-rank calls, by closed form."""

from __future__ import annotations

import pytest

from commsim.algorithms import Problem
from commsim.collectives import Collective
from commsim.nccl.channels import ring_packing_busbw
from commsim.nccl.model import NcclModel, predict
from commsim.nccl.params import NcclParams
from commsim.topology import get_topology
from commsim.topology.model import Device, PhysicalLink, Topology


def _mesh(links_per_pair: int) -> Topology:
    devices = [Device(f"gpu{i}", "gpu", 0, "H100") for i in range(4)]
    links = [
        PhysicalLink(f"gpu{i}", f"gpu{j}", "nvlink4", links_per_pair)
        for i in range(4)
        for j in range(i + 1, 4)
    ]
    return Topology("mesh4", devices, links)


def test_four_gpu_mesh_rings_use_every_link() -> None:
    """HGX H100 4-GPU: 6 NVLink 4 links of 25 GB/s per pair, 150 GB/s per pair and direction.

    One Hamiltonian ring in both directions uses 4 of the 6 pairs: 300 GB/s of bus bandwidth.
    The three Hamiltonian cycles of K4, each in both directions, use every directed pair twice,
    so each of the six rings runs at 75 GB/s: 6 x 75 = 450 GB/s, every GPU's 3 x 150 GB/s out.
    """
    mesh = _mesh(6)
    assert ring_packing_busbw(mesh, tuple(mesh.gpus)) == pytest.approx(450e9, rel=1e-9)


def test_dgx1_v100_rings_are_the_textbook_double_ring() -> None:
    """DGX-1 V100: 6 NVLink 2 links of 25 GB/s per GPU; NVLink-only rings carry at most 6 x 25 = 150 GB/s
    out of each GPU, which the double ring (NV2 ring + NV1 ring, both directions) reaches."""
    dgx1 = get_topology("dgx1_v100")
    assert ring_packing_busbw(dgx1, tuple(dgx1.gpus)) == pytest.approx(150e9, rel=1e-9)


def test_bridged_pairs_mix_nvlink_and_pcie_hops() -> None:
    """Four PCIe GPUs bridged in pairs (0-1, 2-3) have no NVLink-only ring; rings mix in PCIe hops.

    Each ring crosses between the pairs twice over PCIe, so the PCIe links bound it: the total is
    at least a plain PCIe ring's and below the bridges' bandwidth plus PCIe's.
    """
    box = get_topology("bridged_pairs_box", gpus=4)
    plain = get_topology("pcie_box", gpus=4)
    mixed = ring_packing_busbw(box, tuple(box.gpus))
    pcie_only = ring_packing_busbw(plain, tuple(plain.gpus))
    assert mixed is not None and pcie_only is not None
    assert pcie_only <= mixed


def test_rings_are_not_enumerated_past_eight_gpus() -> None:
    """Above 8 GPUs ((n-1)! cycles) the search declines and the caller replays one ring instead."""
    ring = get_topology("ring", gpus=9)
    assert ring_packing_busbw(ring, tuple(ring.gpus)) is None


def test_all_to_all_across_nodes_is_bound_by_each_nodes_nics() -> None:
    """10 hosts x 1 H100, one 400 Gb/s NIC each (50 GB/s, InfiniBand efficiency 0.90).

    nccl-tests' all-to-all of S bytes sends S/10 to each rank: 9 S/10 leaves each node. At
    S = 16 GiB the time is 9/10 x 16 GiB / 45 GB/s plus a latency of microseconds.
    """
    machine = get_topology("cluster", box="hgx_h100", nodes=10, nic="ib_ndr", nics_per_node=8)
    ranks = tuple(machine.gpus[k * 8] for k in range(10))
    size = 16 * 2**30
    chosen = predict(Problem(machine, ranks, Collective.ALL_TO_ALL, float(size)), NcclParams()).chosen
    assert chosen.algorithm == "p2p"
    assert chosen.time_s == pytest.approx(0.9 * size / 45e9, rel=1e-3)


def test_one_rank_is_a_local_copy() -> None:
    """One GPU: the larger of the host's 6.25 us and the GPU's 3.6 us kernel + the bytes at 0.449 x
    the H100 SXM's 3.35 TB/s (NcclParams' sources).

    1 GiB: 3.6 us + 2^30 / 1.504e12 B/s = 717.5 us (GPU-bound); 8 B: 3.6 us + 0.005 ns < 6.25 us,
    so the host's 6.25 us; 8 MiB: 3.6 + 5.58 = 9.18 us (GPU-bound again).
    """
    box = get_topology("hgx_h100")
    for size, expected in (
        (2**30, 3.6e-6 + 2**30 / (0.449 * 3.35e12)),
        (8, 6.25e-6),
        (2**23, 3.6e-6 + 2**23 / (0.449 * 3.35e12)),
    ):
        problem = Problem(box, ("gpu0",), Collective.ALL_REDUCE, float(size))
        prediction = predict(problem, NcclParams(), gpus_per_thread=1)
        assert prediction.chosen.algorithm == "local_copy"
        assert prediction.time_s == pytest.approx(expected, rel=1e-9)


def test_mi300x_rings_run_at_rccls_usable_xgmi_bandwidth() -> None:
    """An 8 x MI300X board: every GPU has 7 xGMI links of 64 GB/s per direction, one to each peer.

    NCCL's (RCCL's) packed rings use every link, so the ring bus bandwidth is 7 x 64 GB/s at RCCL's
    usable fraction 48/64 (src/graph/topo.h, GFX94X_XGMI_WIDTH 48.0): 7 x 48 = 336 GB/s.
    """
    box = get_topology("xgmi_box")
    model = NcclModel.of(box)
    _, bandwidths = model.bandwidths(tuple(box.gpus), Collective.ALL_REDUCE)
    assert bandwidths.intra_Bps == pytest.approx(7 * 48e9, rel=1e-9)
