"""A ring channel's network connection carries at most a measured rate (commsim.nccl.ring_net).

Runs on 400 Gb/s InfiniBand (NDR) NICs with NCCL's two ring channels per NIC measure about 19.6 GB/s
per channel and direction, below the 22.5 GB/s the NICs' InfiniBand efficiency (0.90 x 50 GB/s / 2)
gives; the chosen ring across nodes is priced at the channels' rate, NCCL's choice is made without it.
"""

from __future__ import annotations

import statistics

import pytest
from pydantic import ValidationError

from commsim.algorithms import make_algorithm
from commsim.algorithms.base import Problem
from commsim.calibrate.defaults import RING_CHANNEL_LOGS, ring_channel_rate_Bps
from commsim.calibrate.validate import Validation
from commsim.collectives import Collective
from commsim.nccl.model import NcclModel
from commsim.nccl.params import DEFAULT_RING_CHANNEL_NET_Bps, NcclParams
from commsim.topology import get_topology
from commsim.units import format_time
from tests.test_efa_protocol import _outside

MiB = 1024.0 * 1024.0
GiB = 1024.0 * MiB
NO_LIMIT = NcclParams(ring_channel_net_Bps={"ib_ndr": 1e30})


def _ndr_cluster(nodes: int = 2):  # type: ignore[no-untyped-def]
    topo = get_topology("cluster", box="hgx_h100", nodes=nodes, nic="ib_ndr")
    return topo, tuple(topo.devices_of_kind("gpu"))


@pytest.fixture(scope="module")
def ndr_machines() -> list[list[Validation]]:
    return [[_outside(name)] for name in RING_CHANNEL_LOGS["ib_ndr"]]


def test_the_ndr_rate_is_the_median_of_two_outside_machines(ndr_machines: list[list[Validation]]) -> None:
    """Per log, the median over its ring sizes from 256 MiB of measured bus bandwidth / 16 channels:
    2 x 8 B200 on 8 NDR NICs each (232, all_gather) 19.09 GB/s; 4 x 8 H100 on 8 (266, all_gather)
    20.09 GB/s. 2 x 8 H100 (56, NCCL_ALGO=Ring all_reduce) measures 0.29-0.34 of the model's rate at
    those sizes: degraded, no evidence. The median of two is their mean, 19.59 GB/s: the default."""
    per_machine = [ring_channel_rate_Bps([m], "ib_ndr") for m in ndr_machines]
    assert per_machine[0] == pytest.approx(19.09e9, abs=0.01e9)
    assert per_machine[1] == pytest.approx(20.09e9, abs=0.01e9)
    assert per_machine[2] is None
    derived = ring_channel_rate_Bps(ndr_machines, "ib_ndr")
    assert derived == pytest.approx(statistics.mean([per_machine[0], per_machine[1]]))  # type: ignore[list-item]
    assert DEFAULT_RING_CHANNEL_NET_Bps["ib_ndr"] == pytest.approx(derived, abs=0.01e9)
    assert ring_channel_rate_Bps(ndr_machines, "ib_hdr") is None


def test_a_ring_across_ndr_nodes_runs_at_its_channels_rate() -> None:
    """2 HGX H100 hosts with 8 NDR NICs each: NCCL's ring bus bandwidth is the NICs' 8 x 50 GB/s x 0.90 =
    360 GB/s (the box's NVSwitch ring, 370.8 GB/s, is faster), so a 1 GiB all_gather's ring Simple
    candidate runs at 360 x 16 / 15 = 384 GB/s algorithm bandwidth. Its 16 channels carry at most
    16 x 19.6 = 313.6 GB/s: the chosen call takes latency + 1 GiB / (313.6 GB/s x 16 / 15), and the
    difference is its channel_cap_s; ``times`` gives the same."""
    topo, gpus = _ndr_cluster()
    model = NcclModel.of(topo, NcclParams())
    problem = Problem(topo, gpus, Collective.ALL_GATHER, 1.0 * GiB)
    m, bw = model.bandwidths(gpus, Collective.ALL_GATHER)
    assert (m.net_kind, m.nics, model.channel_count(m)) == ("ib_ndr", 8, 16)
    assert bw.busbw_Bps == pytest.approx(360e9)
    chosen = model.predict(problem).chosen
    assert (chosen.algorithm, chosen.protocol) == ("ring", "Simple")
    assert chosen.algbw_Bps == pytest.approx(384e9)
    capped = 16 * 19.6e9 * 16 / 15
    assert chosen.time_s == pytest.approx(chosen.latency_s + GiB / capped, rel=1e-12)
    assert chosen.channel_cap_s == pytest.approx(GiB / capped - GiB / 384e9, rel=1e-12)
    assert model.times(problem, [GiB]) == [pytest.approx(chosen.time_s, rel=1e-12)]


def test_ll128_channels_carry_their_flags() -> None:
    """Ring LL128 sends 128 bytes per 120 of data, so its 16 channels carry 16 x 19.6 x 120/128 = 294 GB/s
    of data, below the candidate's 360 x 0.92 = 331.2 GB/s bus bandwidth: at 256 MiB, forced, the call
    takes latency + 256 MiB / (294 GB/s x 16 / 15)."""
    topo, gpus = _ndr_cluster()
    model = NcclModel.of(topo, NcclParams())
    problem = Problem(topo, gpus, Collective.ALL_GATHER, 256 * MiB)
    chosen = model.predict(problem, algorithms=("ring",), protocols=("LL128",)).chosen
    assert chosen.algbw_Bps == pytest.approx(360e9 * 0.92 * 16 / 15)
    data = 16 * 19.6e9 * 120 / 128 * 16 / 15
    assert chosen.time_s == pytest.approx(chosen.latency_s + 256 * MiB / data, rel=1e-12)


def test_nccl_chooses_at_its_nics_rate() -> None:
    """NCCL prices its rings at the NICs' rate, so the model's choice at every size is the one it makes
    without the channels' limit; only the chosen ring's time grows, never shrinks."""
    topo, gpus = _ndr_cluster()
    with_limit, without = NcclModel.of(topo, NcclParams()), NcclModel.of(topo, NO_LIMIT)
    for collective in (Collective.ALL_GATHER, Collective.ALL_REDUCE, Collective.REDUCE_SCATTER):
        for nbytes in (64 * 1024.0, 4 * MiB, 64 * MiB, 1 * GiB, 8 * GiB):
            problem = Problem(topo, gpus, collective, nbytes)
            a, b = with_limit.predict(problem).chosen, without.predict(problem).chosen
            assert (a.algorithm, a.protocol) == (b.algorithm, b.protocol)
            assert a.time_s >= b.time_s and b.channel_cap_s == 0.0


def test_where_the_limit_does_not_apply() -> None:
    """None on one box, for trees and NVLS-tree, for LL (NCCL's own llMaxBw), on NICs of a kind without
    a measured figure (HDR), on AMD GPUs (RCCL runs more channels per NIC), and where enough channels
    share the NICs (NCCL_MIN_NCHANNELS=32: 32 x 19.6 = 627 GB/s above the NICs' 360)."""
    topo, gpus = _ndr_cluster()
    model = NcclModel.of(topo, NcclParams())
    big = Problem(topo, gpus, Collective.ALL_REDUCE, 1.0 * GiB)
    for algorithm, protocol in (("tree", "Simple"), ("nvls_tree", "Simple"), ("ring", "LL")):
        assert model.predict(big, algorithms=(algorithm,), protocols=(protocol,)).chosen.channel_cap_s == 0
    assert (
        NcclModel(topo, NcclParams(), channel_limits=(32, None))
        .predict(big, algorithms=("ring",))
        .chosen.channel_cap_s
        == 0
    )
    box = get_topology("hgx_h100")
    one = Problem(box, tuple(box.devices_of_kind("gpu")), Collective.ALL_GATHER, 1.0 * GiB)
    assert NcclModel.of(box, NcclParams()).predict(one).chosen.channel_cap_s == 0
    for other in (
        get_topology("cluster", box="hgx_h100", nodes=2, nic="ib_hdr"),
        get_topology("cluster", box="xgmi_box", nodes=2, nic="ib_ndr"),  # MI300X
    ):
        problem = Problem(other, tuple(other.devices_of_kind("gpu")), Collective.ALL_GATHER, 1.0 * GiB)
        assert (
            NcclModel.of(other, NcclParams()).predict(problem, algorithms=("ring",)).chosen.channel_cap_s == 0
        )


def test_a_given_rate_overrides_the_default_and_must_be_positive() -> None:
    """``ring_channel_net_Bps`` in the parameters (a calibrated topology's ``nccl:``) replaces the default
    for its NIC kind: at 10 GB/s per channel the 1 GiB all_gather takes latency + 1 GiB / (160 GB/s x
    16 / 15). Zero or negative rates are refused."""
    topo, gpus = _ndr_cluster()
    model = NcclModel.of(topo, NcclParams(ring_channel_net_Bps={"ib_ndr": 10e9}))
    chosen = model.predict(Problem(topo, gpus, Collective.ALL_GATHER, 1.0 * GiB)).chosen
    assert chosen.time_s == pytest.approx(chosen.latency_s + GiB / (160e9 * 16 / 15), rel=1e-12)
    for bad in (0.0, -1e9):
        with pytest.raises(ValidationError):
            NcclParams(ring_channel_net_Bps={"ib_ndr": bad})


def test_explain_names_the_channels_rate() -> None:
    """The nccl algorithm's explanation of a capped call says how many channels, at what rate, over which
    NICs, and what it costs."""
    topo, gpus = _ndr_cluster()
    problem = Problem(topo, gpus, Collective.ALL_GATHER, 1.0 * GiB)
    chosen = NcclModel.of(topo, NcclParams()).predict(problem).chosen
    text = make_algorithm("nccl").explain(problem)  # type: ignore[attr-defined]
    cost = format_time(chosen.channel_cap_s)
    assert (
        "network channels: each of NCCL's 16 ring channels carries at most 19.6 GB/s per direction over "
        f"the ib_ndr NICs (a measured rate NCCL's estimate does not hold), {cost} more than at the NICs' "
        "rate" in text
    )


def test_calibration_recovers_a_channel_rate() -> None:
    """A synthetic all_gather of 2 HGX H100 hosts on 8 NDR NICs each, timed by the model with 15 GB/s per
    ring channel (2 % noise), 64 MiB to 8 GiB: the fit finds ring_channel_net.ib_ndr within three
    sigma of 15 GB/s, and says it in GB/s."""
    from commsim.calibrate.fit import fit
    from commsim.calibrate.validate import validate_log
    from tests.test_calibrate import synthetic_log

    topo, _ = _ndr_cluster()
    truth = NcclParams(ring_channel_net_Bps={"ib_ndr": 15e9})
    sizes = [2**k for k in range(26, 34)]
    log = synthetic_log(topo, truth, collective="all_gather", sizes=sizes, seed=3)
    calibration = fit([validate_log(log, "", topology=topo)], fit=["ring_channel_net.ib_ndr"])
    value, sigma = calibration.fitted["ring_channel_net.ib_ndr"]
    assert abs(value - 15e9) <= 3 * sigma and sigma < 0.5e9
    assert "ring_channel_net.ib_ndr = 15" in calibration.describe() and "GB/s +-" in calibration.describe()
