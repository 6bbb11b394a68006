"""`commsim recommend`: where a tuned choice beats NCCL's default by more than a threshold."""

from __future__ import annotations

import json

import pytest

from commsim.algorithms.base import Problem
from commsim.api import simulate
from commsim.collectives import Collective
from commsim.errors import CommsimError
from commsim.nccl.model import predict
from commsim.nccl.params import NcclParams
from commsim.recommend import DEFAULT_THRESHOLD, TunedGain, TunedRange, tuned_gains, tuned_ranges
from commsim.topology import get_topology
from tests.test_cli import commsim

KIB = 1024

# gains: 1.0, 0.5, 0.05 (under any threshold here), 0.2, 0.3, then 0.25 with another default
POINTS = [
    TunedGain(1 * KIB, "ring/LL", 2.0, "tree_packing", 1.0),
    TunedGain(4 * KIB, "ring/LL", 1.5, "tree_packing", 1.0),
    TunedGain(16 * KIB, "ring/LL", 1.05, "tree_packing", 1.0),
    TunedGain(64 * KIB, "ring/LL128", 1.2, "NCCL tree/LL128", 1.0),
    TunedGain(256 * KIB, "ring/LL128", 1.3, "NCCL tree/LL128", 1.0),
    TunedGain(1024 * KIB, "ring/Simple", 1.25, "NCCL tree/LL128", 1.0),
]


def test_neighbouring_sizes_with_the_same_choices_form_one_range() -> None:
    """At 10 %: 1-4 KiB (gains 1.0 and 0.5), 64-256 KiB (0.2, 0.3), and 1 MiB alone (other default).

    16 KiB's 5 % breaks the first range; the change of default at 1 MiB starts a new one.
    """
    ranges = tuned_ranges(POINTS)
    assert [(r.first_bytes, r.last_bytes, r.best) for r in ranges] == [
        (1 * KIB, 4 * KIB, "tree_packing"),
        (64 * KIB, 256 * KIB, "NCCL tree/LL128"),
        (1024 * KIB, 1024 * KIB, "NCCL tree/LL128"),
    ]
    assert (ranges[0].min_gain, ranges[0].max_gain) == (0.5, 1.0)
    assert [r.describe() for r in ranges] == [
        "1 KiB to 4 KiB: tree_packing beats NCCL's default (ring/LL) by 50-100 %",
        "64 KiB to 256 KiB: NCCL tree/LL128 beats NCCL's default (ring/LL128) by 20-30 %",
        "1 MiB: NCCL tree/LL128 beats NCCL's default (ring/Simple) by 25 %",
    ]


def test_the_threshold_is_strict_and_defaults_to_10_percent() -> None:
    """At 50 % only 1 KiB (100 %) counts: 4 KiB's gain is exactly 0.5, not more."""
    assert DEFAULT_THRESHOLD == 0.10
    assert tuned_ranges(POINTS, 0.5) == [TunedRange(1 * KIB, 1 * KIB, "ring/LL", "tree_packing", 1.0, 1.0)]
    assert tuned_ranges(POINTS, 1.0) == []
    with pytest.raises(CommsimError, match="threshold must be a non-negative fraction"):
        tuned_ranges(POINTS, -0.1)


def test_without_calibration_the_nccl_model_agrees_with_the_default() -> None:
    """An uncalibrated machine prices NCCL's default with NCCL's own parameters: nothing to tune."""
    gains = tuned_gains(
        get_topology("dgx1_v100"), "all_reduce", [KIB, 2**20, 2**30], commsim_algorithms=False
    )
    assert [g.gain for g in gains] == [0.0, 0.0, 0.0]
    assert all(g.best == f"NCCL {g.default}" for g in gains)


def test_a_commsim_algorithm_against_the_default_at_1_gib() -> None:
    """1 GiB all-reduce on a DGX-1 V100: NCCL's pick (a replay of the NCCL model) against the fastest
    commsim algorithm, each computed here on its own; the gain is their ratio less one."""
    topology = get_topology("dgx1_v100")
    problem = Problem(topology, tuple(topology.gpus), Collective.ALL_REDUCE, float(2**30))
    default = predict(problem, NcclParams()).chosen
    fastest = min(
        (simulate(topology, name, "all_reduce", 2**30) for name in ("hybrid", "multi_ring", "tree_packing")),
        key=lambda r: r.time_s,
    )
    (gain,) = tuned_gains(topology, "all_reduce", [2**30])
    assert gain.default == f"{default.algorithm}/{default.protocol}"
    assert gain.default_s == default.time_s
    assert gain.best == fastest.algorithm and gain.best_s == fastest.time_s
    assert gain.gain == default.time_s / fastest.time_s - 1 > DEFAULT_THRESHOLD


def test_the_command_names_the_size_range_and_takes_a_threshold() -> None:
    """The line is the range's own description; a threshold above the gain says there is none."""
    (gain,) = tuned_gains(get_topology("dgx1_v100"), "all_reduce", [2**30])
    proc = commsim("recommend", "--topology", "dgx1_v100", "--size", "1 MB", "--tuned-sizes", "1G..1G")
    assert proc.returncode == 0, proc.stderr
    assert "tuned vs NCCL's default (more than 10 % faster):" in proc.stdout
    assert f"  {tuned_ranges([gain])[0].describe()}" in proc.stdout.splitlines()
    high = f"{100 * gain.gain + 1:.0f}"
    proc = commsim(
        "recommend", "--topology", "dgx1_v100", "--tuned-sizes", "1G..1G", "--threshold", high, "--json"
    )
    tuned = json.loads(proc.stdout)["tuned"]
    assert tuned["ranges"] == [] and tuned["sizes"] == [2**30]
    assert (
        tuned["note"] == f"no tuned choice beats NCCL's default by more than {high} % between 1 GiB and 1 GiB"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--threshold", "-5"), "Invalid value for '--threshold'"),
        (("--tuned-sizes", "1G..1K"), "the first size must be positive and at most the last"),
    ],
)
def test_bad_tuning_options_exit_2(args: tuple[str, ...], message: str) -> None:
    proc = commsim("recommend", "--topology", "dgx1_v100", *args)
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr
