"""Back-to-back broadcast and reduce calls pipeline along NCCL's chain: each costs NCCL's per-call
``baseLat`` plus size / bandwidth, not the chain's hops (:mod:`commsim.nccl.overlap`)."""

from __future__ import annotations

import pytest

from commsim.algorithms.base import Problem
from commsim.collectives import Collective
from commsim.nccl.model import NcclModel
from commsim.nccl.params import NcclParams
from commsim.topology import get_topology

NODES = get_topology("cluster", box="dgx_a100", nodes=4, nic="ib_hdr")
GPUS = tuple(NODES.devices_of_kind("gpu"))


def _predict(collective: Collective, nbytes: float):  # type: ignore[no-untyped-def]
    model = NcclModel.of(NODES, NcclParams())
    return model, model.predict(Problem(NODES, GPUS, collective, nbytes))


@pytest.mark.parametrize("collective", [Collective.BROADCAST, Collective.REDUCE])
def test_a_rooted_call_costs_its_base_latency_not_the_chains_hops(collective: Collective) -> None:
    """32 ranks on 4 nodes, 8 B: NCCL's ring/LL latency counts 31 hops (3 of them network); back to back,
    a call costs baseLat (6.6 us, ring/LL, NCCL's tables) + 8 B / algbw, plus the few ns NCCL's one
    launched channel adds (commsim.nccl.channel_cut: 8 B at 1/channels of the bandwidth). The hidden
    part is the rest of the latency, reported on the chosen candidate; ``times`` gives the same time."""
    model, prediction = _predict(collective, 8.0)
    chosen = prediction.chosen
    assert (chosen.algorithm, chosen.protocol) == ("ring", "LL")
    base = model.table.base_latency_s["ring"]["LL"]
    assert base == pytest.approx(6.6e-6)
    assert chosen.overlap_s == pytest.approx(chosen.latency_s - base, rel=1e-12)
    assert chosen.latency_s > 30e-6  # the chain's hops, as NCCL estimates them
    assert 0 < chosen.cut_s < 5e-9
    assert chosen.time_s == pytest.approx(base + 8.0 / chosen.algbw_Bps + chosen.cut_s, rel=1e-12)
    assert model.times(Problem(NODES, GPUS, collective, 8.0), [8.0]) == [prediction.time_s]


def test_ring_collectives_where_every_rank_works_every_step_hide_nothing() -> None:
    """An all-reduce or all-gather ring keeps every rank busy to its last step: no overlap, and the time
    is latency + size / algbw (+ the few ns of ring LL's one launched channel, commsim.nccl.channel_cut)."""
    for collective in (Collective.ALL_REDUCE, Collective.ALL_GATHER):
        _, prediction = _predict(collective, 8.0)
        chosen = prediction.chosen
        assert chosen.overlap_s == 0.0
        assert chosen.cut_s < 5e-9
        expected = chosen.latency_s + 8.0 / chosen.algbw_Bps + chosen.cut_s
        assert chosen.time_s == pytest.approx(expected, rel=1e-12)


def test_nccl_chooses_with_the_hops() -> None:
    """The choice is NCCL's: every candidate but the chosen keeps its full latency, and the chosen is
    the fastest by it (the hidden part is taken off after choosing)."""
    for nbytes in (8.0, 2.0**20, 2.0**28):
        _, prediction = _predict(Collective.BROADCAST, nbytes)
        chosen = prediction.chosen
        full = chosen.time_s + chosen.overlap_s - chosen.fill_s
        assert all(full <= c.time_s for c in prediction.candidates if c is not chosen)
        assert all(c.overlap_s == 0.0 for c in prediction.candidates if c is not chosen)


def test_a_calibrated_latency_scale_scales_the_base_latency_kept() -> None:
    """With latency_scale 2 a broadcast call keeps 2 x baseLat (13.2 us at ring/LL) + 8 B / algbw: the
    overlap hides the chain's hops, not the machine's calibrated per-call latency (the few ns of ring
    LL's one launched channel, commsim.nccl.channel_cut, are not scaled)."""
    model = NcclModel.of(NODES, NcclParams(latency_scale=2.0))
    chosen = model.predict(Problem(NODES, GPUS, Collective.BROADCAST, 8.0)).chosen
    assert (chosen.algorithm, chosen.protocol) == ("ring", "LL")
    assert chosen.time_s == pytest.approx(2 * 6.6e-6 + 8.0 / chosen.algbw_Bps + chosen.cut_s, rel=1e-9)
