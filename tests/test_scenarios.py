"""Every shipped scenario runs, and its headline numbers are asserted."""

from __future__ import annotations

from pathlib import Path

import pytest

from commsim.api import run_scenario
from commsim.config import load_scenario

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"

# scenario file -> {label: time in seconds} for its (single) size
HEADLINES: dict[str, dict[str, float]] = {
    # SEED_FACTS.md section 1: 60 / 80 / 15 ms, and the chunked ring also 15 ms
    "pcie_4gpu_sync_strategies.yaml": {
        "aggregate on one GPU": 0.060,
        "aggregate on the CPU": 0.080,
        "sharded over the 4 GPUs": 0.015,
        "chunked ring": 0.015,
    },
}


def test_every_scenario_has_headlines() -> None:
    """A new scenario must come with its asserted numbers."""
    files = sorted(p.name for p in SCENARIOS.glob("*.yaml"))
    assert files, "no scenarios shipped"
    assert sorted(HEADLINES) == files


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
