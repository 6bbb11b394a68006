"""Every shipped scenario runs, and its headline numbers are asserted.

Closed forms are written out where the scenario's comment derives them;
the rest are golden figures of this engine (seeded regressions).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from commsim.api import run_scenario
from commsim.config import load_scenario

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"
MB = 1e6
G = 160 * MB  # the textbooks' gradient

# scenario file -> {label: time in seconds} for its size (single-size scenarios)
HEADLINES: dict[str, dict[str, float]] = {
    # SEED_FACTS.md section 1: 60 / 80 / 15 ms, and the chunked ring also 15 ms
    "pcie_4gpu_sync_strategies.yaml": {
        "aggregate on one GPU": 0.060,
        "aggregate on the CPU": 0.080,
        "sharded over the 4 GPUs": 0.015,
        "chunked ring": 0.015,
    },
    # SEED_FACTS.md section 2: rings of 36 + 18 GB/s; 2(n-1)/n g / 54 GB/s, then halved
    "dgx1_double_ring.yaml": {
        "double ring, one direction": 2 * 7 / 8 * G / 54e9,
        "double ring, both directions": 2 * 7 / 8 * G / 108e9,
    },
    # SEED_FACTS.md section 4: two rings of BW each: 2(n-1)/n g / (2 BW); the
    # packed trees: golden figures of the pipelined trees (limit g / (3 BW))
    "dgx1_4gpu_rings_vs_trees.yaml": {
        "two rings": 2 * 3 / 4 * G / 36e9,
        "three trees, 8 chunks": 10 * (G / 3 / 8) / 18e9,
        "three trees, 64 chunks": 66 * (G / 3 / 64) / 18e9,
    },
    # SEED_FACTS.md section 4: direct sends 40 MB per link per step, two steps;
    # the ring moves 2(n-1)/n g over one 18 GB/s link per rank, or two with both directions
    "fully_connected_4_direct_vs_ring.yaml": {
        "tree all-reduce (direct)": 2 * (G / 4) / 18e9,
        "ring, one direction": 2 * 3 / 4 * G / 18e9,
        "ring, both directions": 2 * 3 / 4 * G / 36e9,
    },
    # SEED_FACTS.md section 4: NVLink rings 108 GB/s both directions; PCIe ring 10 GB/s;
    # equal finish at f = (1/10) / (1/108 + 1/10); a 95/5 split leaves NVLink the last
    "dgx1_hybrid_pcie_nvlink.yaml": {
        "NVLink rings only": 1.75 * G / 108e9,
        "hybrid, equal finish": 1.75 * G * (108 / 118) / 108e9,
        "hybrid, 95/5 split": 1.75 * G * 0.95 / 108e9,
    },
}
MULTI_SIZE = {"dgx1_allreduce_algorithms.yaml"}
# training scenarios (top-level `workload:`); their numbers are asserted in tests/test_training.py
TRAINING = {"resnet50_dgx1_overlap.yaml", "resnet50_a100_cluster_scaling.yaml"}


def test_every_scenario_has_headlines() -> None:
    """A new scenario must come with its asserted numbers."""
    files = sorted(p.name for p in SCENARIOS.glob("*.yaml"))
    assert files, "no scenarios shipped"
    assert sorted(set(HEADLINES) | MULTI_SIZE | TRAINING) == files


@pytest.mark.parametrize("name", sorted(HEADLINES))
def test_scenario_headlines(name: str) -> None:
    loaded = load_scenario(SCENARIOS / name)
    results = run_scenario(loaded, verify=True)
    times = {r.label: r.time_s for r in results}
    assert times == pytest.approx(HEADLINES[name], rel=1e-9)


def test_sync_strategies_name_their_bottlenecks() -> None:
    """SEED_FACTS.md section 1: the server's own links limit the parameter servers."""
    results = {r.label: r for r in run_scenario(load_scenario(SCENARIOS / "pcie_4gpu_sync_strategies.yaml"))}
    on_gpu = {b.link for b in results["aggregate on one GPU"].bottleneck}
    assert on_gpu == {"gpu0->pcie_switch0", "pcie_switch0->gpu0"}
    on_cpu = {b.link for b in results["aggregate on the CPU"].bottleneck}
    assert on_cpu == {"cpu0->pcie_switch0", "pcie_switch0->cpu0"}
    sharded = results["sharded over the 4 GPUs"].bottleneck
    assert len(sharded) == 8 and all(b.utilisation == pytest.approx(1.0) for b in sharded)
    assert results["aggregate on the CPU"].bottleneck[0].utilisation == pytest.approx(0.5)


def test_four_gpu_trees_use_every_link_and_rings_leave_one_idle() -> None:
    """SEED_FACTS.md section 4: 9 NVLinks (18 directed capacities with 3 bonded pairs)."""
    results = {r.label: r for r in run_scenario(load_scenario(SCENARIOS / "dgx1_4gpu_rings_vs_trees.yaml"))}
    nvlink_pairs = 6  # gpu0-3 have 6 linked pairs, 3 of them bonded (NV2): 9 links
    rings = {l.link for l in results["two rings"].links}
    trees = {l.link for l in results["three trees, 64 chunks"].links}
    assert len(trees) == 2 * nvlink_pairs  # every pair, both directions
    assert len(rings) < len(trees)
    assert results["three trees, 64 chunks"].time_s < results["two rings"].time_s
    assert results["three trees, 64 chunks"].time_s > G / (3 * 18e9)


@pytest.mark.parametrize("pieces", [8, 64, 512])
def test_three_trees_converge_to_g_over_3bw(pieces: int) -> None:
    """SEED_FACTS.md section 4: the three packed trees approach g / (3 BW) as pipelining deepens.

    Each tree carries g/3 in c pieces over its own NVLink units (18 GB/s, no latency): a
    pipelined reduce + broadcast along a tree of height h takes (2h + c - 1) pieces' times,
    t = (2h + c - 1) g / (3 c BW) = g/(3 BW) (1 + (2h - 1)/c). On four GPUs h <= 3, so
    g/(3 BW) < t <= g/(3 BW) (1 + 5/c): the excess vanishes like 1/c.
    """
    from commsim.api import simulate

    overrides = {"nvlink": {"bandwidth": "18 GB/s", "latency": "0 s"}}
    limit = G / (3 * 18e9)
    result = simulate(
        "dgx1_v100", "tree_packing", size=G, ranks=4, params={"chunks": pieces}, overrides=overrides
    )
    assert limit < result.time_s <= limit * (1 + 5 / pieces) * (1 + 1e-12)


def test_fully_connected_direct_keeps_all_links_busy() -> None:
    """SEED_FACTS.md section 4: all 6 links busy both ways; the ring leaves the diagonals idle."""
    results = {
        r.label: r for r in run_scenario(load_scenario(SCENARIOS / "fully_connected_4_direct_vs_ring.yaml"))
    }
    direct = results["tree all-reduce (direct)"]
    assert len(direct.links) == 12 and all(l.utilisation == pytest.approx(1.0) for l in direct.links)
    ring_links = {l.link for l in results["ring, both directions"].links}
    assert len(ring_links) == 8
    assert not ring_links & {"gpu0->gpu2", "gpu2->gpu0", "gpu1->gpu3", "gpu3->gpu1"}


def test_dgx1_algorithms_winners() -> None:
    """Every algorithm runs at every size; closed forms where they hold; sensible winners."""
    results = run_scenario(load_scenario(SCENARIOS / "dgx1_allreduce_algorithms.yaml"), verify=True)
    assert len(results) == 9 * 6
    by = {(r.label, r.nbytes): r for r in results}
    # multi_ring: 2(n-1) steps of (0.5 us + g/8 / 150 GB/s) with datasheet NVLink 2.0 (25 GB/s/link)
    assert by[("multi_ring", G)].time_s == pytest.approx(14 * (0.5e-6 + G / 8 / 150e9), rel=1e-9)
    best = {}
    for r in results:
        if r.nbytes not in best or r.time_s < best[r.nbytes].time_s:
            best[r.nbytes] = r
    assert best[1e3].label == "halving_doubling"  # few latency steps win small messages
    assert best[1e9].label in {"hybrid", "multi_ring"}  # all links at once win large ones
    for size in (1e3, 1e9):
        assert by[("parameter_server (cpu)", size)].time_s > best[size].time_s


def test_hybrid_equal_finish_split_beats_every_other_split() -> None:
    """SEED_FACTS.md section 4: splitting R/(1+R) makes both parts finish together; others are slower."""
    from commsim.api import simulate

    overrides = {
        "nvlink": {"bandwidth": "18 GB/s", "latency": "0 s"},
        "pcie": {"bandwidth": "10 GB/s", "latency": "0 s"},
        "inter_socket": {"latency": "0 s"},
    }
    best = simulate("dgx1_v100", "hybrid", size="160 MB", overrides=overrides)
    r = 108 / 10  # NVLink rings (both directions) against the PCIe ring
    assert best.time_s == pytest.approx(1.75 * G * (r / (1 + r)) / 108e9, rel=1e-9)
    for nvlink_share in (0.5, 0.8, 0.9, 0.95, 0.99):
        other = simulate(
            "dgx1_v100",
            "hybrid",
            size="160 MB",
            overrides=overrides,
            params={"split": [nvlink_share, 1 - nvlink_share]},
        )
        assert other.time_s > best.time_s
