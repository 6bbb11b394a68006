"""The pipeline fill of NVLS and NVLS-tree calls (commsim.nccl.chunking), from NCCL's chunk rules.

NCCL's enqueue.cc (calcCollChunking) cuts an NVLS-tree call into chunks of 128 KiB (64 KiB from 4 nodes
on), smaller when the buffer holds few chunks per concurrent operation; NVLS channels (16 on Hopper)
times one head per GPU of a node make the concurrent operations. A chunk crosses 1 + 2 log2(nodes)
stages after the first, each taking (operations x chunk) / algbw; the call pays that fill beyond the
latency NCCL's table already charges.
"""

from __future__ import annotations

import math

import pytest

from commsim.algorithms.base import Problem
from commsim.collectives import Collective
from commsim.nccl.chunking import fill_s, nvls_channels
from commsim.nccl.machine import NcclMachine
from commsim.nccl.model import NcclModel
from commsim.nccl.params import NcclParams
from commsim.topology import get_topology

MiB = 2**20


def _machine(nodes: int, per_node: int = 8, arch: str = "hopper") -> NcclMachine:
    return NcclMachine(nodes, per_node, "nvswitch", arch, True, 400e9, "infiniband", "ib_ndr", "ib")


def test_two_node_nvls_tree_fill_at_64_mib() -> None:
    """2 nodes x 8 H100: 16 channels x 8 heads = 128 operations of 128 KiB (64 MiB is not under
    4 x 128 x 128 KiB = 64 MiB, so the chunk stays): 16 MiB per round; at 360 GB/s a round takes
    46.60 us, three stages beyond the first (1 + 2 log2 2) 139.81 us, less the 30 us of latency."""
    fill = fill_s("nvls_tree", _machine(2), 64 * MiB, 360e9, 30e-6, (2, 26))
    assert fill == pytest.approx(3 * 16 * MiB / 360e9 - 30e-6, rel=1e-12)
    assert fill == pytest.approx(109.81e-6, abs=0.01e-6)


def test_nvls_tree_chunks_shrink_for_small_buffers_and_from_four_nodes() -> None:
    """At 4 MiB on 2 nodes NCCL's rules go 128 KiB -> 64 KiB (4 MiB < 4 x 128 x 128 KiB) -> 32 KiB
    (4 MiB < 1 x 128 x 64 KiB): a round of 128 x 32 KiB = 4 MiB, the whole buffer. On 8 nodes (from 2.19)
    the chunk starts at 64 KiB: at 1 GiB a round is 128 x 64 KiB = 8 MiB, with 1 + 2 x 3 = 7 stages."""
    small = fill_s("nvls_tree", _machine(2), 4 * MiB, 360e9, 0.0, (2, 26))
    assert small == pytest.approx(3 * 4 * MiB / 360e9, rel=1e-12)
    wide = fill_s("nvls_tree", _machine(8), 1024 * MiB, 180e9, 0.0, (2, 26))
    assert wide == pytest.approx(7 * 8 * MiB / 180e9, rel=1e-12)
    old = fill_s("nvls_tree", _machine(8), 1024 * MiB, 180e9, 0.0, (2, 18))
    assert old == pytest.approx(7 * 16 * MiB / 180e9, rel=1e-12)


def test_nvls_in_one_box_fills_one_stage() -> None:
    """One box of 8 H100: 128 operations of at most 128 KiB; at 1 GiB (not under 64 x 16 MiB) the chunk
    is 128 KiB and the fill one round, 16 MiB / algbw; at 256 MiB (under 64 x 16 MiB = 1 GiB) the chunk
    is 64 KiB, then (256 MiB not under 8 x 8 MiB) stays: 8 MiB / algbw."""
    one = _machine(1)
    assert fill_s("nvls", one, 1024 * MiB, 256e9, 0.0, None) == pytest.approx(16 * MiB / 256e9, rel=1e-12)
    assert fill_s("nvls", one, 256 * MiB, 256e9, 0.0, None) == pytest.approx(8 * MiB / 256e9, rel=1e-12)


def test_no_fill_below_the_latency_or_for_rings_and_trees() -> None:
    """The fill counts only beyond the latency NCCL's table charges (one small chunk through every hop);
    rings (every rank sends at step 0) and trees have none here."""
    assert fill_s("nvls_tree", _machine(2), 1 * MiB, 360e9, 40e-6, (2, 26)) == 0.0
    for algorithm in ("ring", "tree", "p2p", "pat"):
        assert fill_s(algorithm, _machine(2), 1024 * MiB, 360e9, 0.0, None) == 0.0


def test_nvls_channels_by_generation_and_release() -> None:
    """NVLS_NCHANNELS is 16; from 2.27 Blackwell uses 24 in one NVLink domain and 32 across nodes."""
    assert nvls_channels(_machine(1), None) == 16
    assert nvls_channels(_machine(1, 72, "blackwell"), None) == 24
    assert nvls_channels(_machine(2, 4, "blackwell"), (2, 28)) == 32
    assert nvls_channels(_machine(1, 72, "blackwell"), (2, 26)) == 16


def test_the_model_adds_the_fill_to_the_chosen_nvls_tree_call_only() -> None:
    """Two HGX H100 boxes: at 256 MiB NCCL's choice is NVLS-tree; the call's time is the candidate's
    latency + size / algbw (no kernel cost beyond NCCL's latency for a call of several ranks) plus the
    fill computed from the same figures, and the fill is reported on the chosen candidate; ``times``
    gives the same time."""
    topo = get_topology("cluster", box="hgx_h100", nodes=2, nic="ib_ndr")
    gpus = tuple(topo.devices_of_kind("gpu"))
    model = NcclModel.of(topo, NcclParams())
    problem = Problem(topo, gpus, Collective.ALL_REDUCE, 256.0 * MiB)
    prediction = model.predict(problem)
    chosen = prediction.chosen
    assert chosen.algorithm == "nvls_tree" and chosen.fill_s > 0
    bare = chosen.latency_s + problem.nbytes / chosen.algbw_Bps
    expected = fill_s(
        "nvls_tree", prediction.machine, problem.nbytes, chosen.algbw_Bps, chosen.latency_s, None
    )
    assert chosen.fill_s == pytest.approx(expected, rel=1e-12)
    assert chosen.time_s == pytest.approx(bare + expected, rel=1e-12)
    assert model.times(problem, [problem.nbytes]) == [prediction.time_s]
    others = [c for c in prediction.candidates if c is not chosen]
    assert all(c.fill_s == 0.0 for c in others) and math.isfinite(chosen.time_s)


def test_explain_names_the_fill_of_the_chosen_call() -> None:
    """The nccl algorithm's explanation says the chosen NVLS-tree call pays a pipeline fill, with its
    time, and that NCCL chooses without it."""
    from commsim.algorithms import make_algorithm
    from commsim.units import format_time

    topo = get_topology("cluster", box="hgx_h100", nodes=2, nic="ib_ndr")
    problem = Problem(topo, tuple(topo.devices_of_kind("gpu")), Collective.ALL_REDUCE, 256.0 * MiB)
    fill = NcclModel.of(topo, NcclParams()).predict(problem).chosen.fill_s
    text = make_algorithm("nccl").explain(problem)  # type: ignore[attr-defined]
    assert (
        f"pipeline fill: the chosen nvls_tree call streams its chunks through its stages, {format_time(fill)}"
        in text
    )
    assert "NCCL chooses without it" in text


def test_the_fill_counts_beyond_the_scaled_latency() -> None:
    """With latency_scale 2 the table's latency doubles, and the fill is what the pipeline adds beyond
    that doubled latency: the chosen call's time is 2 x latency + size / algbw + fill, with the fill
    computed against 2 x latency."""
    topo = get_topology("cluster", box="hgx_h100", nodes=2, nic="ib_ndr")
    gpus = tuple(topo.devices_of_kind("gpu"))
    params = NcclParams(latency_scale=2.0)
    problem = Problem(topo, gpus, Collective.ALL_REDUCE, 256.0 * MiB)
    prediction = NcclModel.of(topo, params).predict(problem)
    chosen = prediction.chosen
    assert chosen.algorithm == "nvls_tree"
    fill = fill_s(
        "nvls_tree", prediction.machine, problem.nbytes, chosen.algbw_Bps, 2 * chosen.latency_s, None
    )
    assert fill > 0 and chosen.fill_s == pytest.approx(fill, rel=1e-12)
    bare = 2 * chosen.latency_s + problem.nbytes / chosen.algbw_Bps
    assert chosen.time_s == pytest.approx(bare + fill, rel=1e-12)


def test_nvls_across_nodes_fills_three_stages() -> None:
    """NVLS across nodes (CollNet's, with the network switch reducing): a chunk goes through the box's
    reduction, up to the switch and back, and the box's broadcast, 3 stages beyond the first. 2 nodes x 8
    H100 at 1 GiB: 16 channels x 8 heads = 128 operations; the NVLS chunk is 128 KiB (1 GiB is not under
    64 x 128 x 128 KiB = 1 GiB), a round 16 MiB, at 256 GB/s 65.54 us; the fill is 3 rounds less the
    43 us of latency, where one box fills one round."""
    fill = fill_s("nvls", _machine(2), 1024 * MiB, 256e9, 43e-6, (2, 26))
    assert fill == pytest.approx(3 * 16 * MiB / 256e9 - 43e-6, rel=1e-12)
    one_box = fill_s("nvls", _machine(1), 1024 * MiB, 256e9, 0.0, (2, 26))
    assert one_box == pytest.approx(16 * MiB / 256e9, rel=1e-12)
