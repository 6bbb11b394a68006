"""CollNet (the network switch's reduction, InfiniBand SHARP): NCCL's CollNet Direct and Chain, and NVLS
across nodes, priced as NCCL's ``tuning.cc`` does, only in runs that enable it.

NCCL does not use CollNet unless the run sets ``NCCL_COLLNET_ENABLE=1`` and a SHARP plugin connects it
(NCCL then prints ``rank 0 Connected CollNet``); a run that sets the variable without a working plugin
falls back to ring and tree (outside log 180, nccl-tests issue #311).
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from commsim.algorithms.base import Problem
from commsim.calibrate.infer_collnet import infer_collnet
from commsim.calibrate.inference import RunOptions
from commsim.calibrate.settings import read_settings
from commsim.collectives import Collective
from commsim.errors import AlgorithmError
from commsim.nccl.candidates import Bandwidths, collnet
from commsim.nccl.machine import NcclMachine
from commsim.nccl.model import NcclModel
from commsim.nccl.params import NcclParams
from commsim.nccl.tuning import table_for
from commsim.topology import get_topology
from tests.test_bad_inputs import run_cli

GB = 1e9
US = 1e-6


def _machine(per_node: int = 8, nics: int = 8, transport: str = "nvswitch", nvls: bool = True) -> NcclMachine:
    return NcclMachine(
        4, per_node, transport, "hopper", nvls, nics * 50 * GB, "infiniband", "ib_ndr", "ib", nics
    )


BW = Bandwidths(
    intra_Bps=370 * GB, net_Bps=360 * GB, net_latency_s=0.0, nvlink_port_Bps=256 * GB, version=None
)


def test_collnet_candidates_on_four_hopper_nvswitch_nodes_follow_nccls_formulas() -> None:
    """4 nodes x 8 Hopper GPUs on NVSwitch, 8 NICs per node, NCCL 2.21+ tables.

    Bus bandwidth: the box's 370 GB/s or the network's 360, the lower: 360 GB/s. CollNet Direct:
    GPU-per-NIC ratio f = 8/8 = 1 (softened f - (f-1)/2 = 1), x 0.85 (Hopper), x 0.5 (NCCL's ratio for
    non-ring algorithms) = 153 GB/s. CollNet Chain: 360 x 0.5 = 180 GB/s. NVLS across nodes: the
    GPU's NVLS rate 256 GB/s, below the node's NICs (360). Latencies (2.21 era, route latency 0): Direct
    baseLat 0 + network hwLat 31 us + 2 x (1 x NVLink hwLat 3.7 + 7 x 0.4 arity) = 44 us; Chain 0 +
    2 x 7 x 2.8 + 30 = 69.2 us; NVLS NVLink hwLat 25 + network 18 = 43 us.
    """
    got = {a: (lat, rate) for a, p, lat, rate in collnet(_machine(), BW, table_for(None))}
    assert got["collnet_direct"] == pytest.approx((44 * US, 153 * GB))
    assert got["collnet_chain"] == pytest.approx((69.2 * US, 180 * GB))
    assert got["nvls"] == pytest.approx((43 * US, 256 * GB))


def test_collnet_direct_slows_with_more_gpus_per_nic() -> None:
    """8 GPUs sharing 2 NICs: f = 8/2 = 4, softened 4 - 3/2 = 2.5; Direct = 360 / 2.5 x 0.85 x 0.5 =
    61.2 GB/s (Chain does not depend on it: 180 GB/s)."""
    got = {a: rate for a, _, _, rate in collnet(_machine(nics=2), BW, table_for(None))}
    assert got["collnet_direct"] == pytest.approx(61.2 * GB)
    assert got["collnet_chain"] == pytest.approx(180 * GB)


def test_which_collnet_algorithms_exist() -> None:
    """Direct needs an NVSwitch box (NCCL disables it when ``nvsCount == 0``); Chain exists from 2.14,
    Direct from 2.6, NVLS across nodes with NVLS-tree (2.18); one node has no CollNet."""
    pcie = {a for a, *_ in collnet(_machine(transport="pcie", nvls=False), BW, table_for(None))}
    assert pcie == {"collnet_chain"}
    old = collnet(_machine(), replace(BW, version=(2, 13)), table_for("2.13.4"))
    assert {a for a, *_ in old} == {"collnet_direct"}  # 2.13: no chain, no NVLS across nodes
    one_node = NcclMachine(1, 8, "nvswitch", "hopper", True, math.inf, None, None, None, 0)
    assert collnet(one_node, BW, table_for(None)) == []


def _collnet_by_release(version: str) -> dict[str, tuple[float, float]]:
    bw = replace(BW, version=(int(version.split(".")[0]), int(version.split(".")[1])))
    return {a: (lat, rate) for a, _, lat, rate in collnet(_machine(), bw, table_for(version))}


def test_collnet_figures_change_where_nccls_tuning_cc_changed_them() -> None:
    """The 4 x 8 Hopper machine above (bus bandwidth 360 GB/s, route latency 0), release by release.

    2.17 (``tuning.cc`` of the 2.17 line): Chain x 0.75, no network hop on Chain, no Hopper x 0.85 on
    Direct, arity 0.5 us: Direct 360 x 0.5 = 180 GB/s at 31 + 2 x (3.7 + 7 x 0.5) = 45.4 us; Chain
    360 x 0.75 x 0.5 = 135 GB/s at 2 x 7 x 2.8 = 39.2 us. 2.18 (XLA's mock of its ``tuning.cc``):
    Direct x 0.85 = 153 GB/s, still 0.5 us arity (45.4 us); Chain 180 GB/s at 39.2 + 30 = 69.2 us.
    2.19 (NVIDIA/nccl ``b6475625``): arity 0.4 us, Direct at 44 us; the rest as 2.18.
    """
    r217, r218, r219 = (_collnet_by_release(v) for v in ("2.17.1", "2.18.5", "2.19.3"))
    assert r217["collnet_direct"] == pytest.approx((45.4 * US, 180 * GB))
    assert r217["collnet_chain"] == pytest.approx((39.2 * US, 135 * GB))
    assert r218["collnet_direct"] == pytest.approx((45.4 * US, 153 * GB))
    assert r218["collnet_chain"] == pytest.approx((69.2 * US, 180 * GB))
    assert r219["collnet_direct"] == pytest.approx((44 * US, 153 * GB))
    assert r219["collnet_chain"] == pytest.approx((69.2 * US, 180 * GB))


def test_the_model_offers_collnet_only_when_the_run_enables_it() -> None:
    """4 x HGX H100 over NDR: all-reduce's candidates include CollNet only with ``collnet=True``; at
    1 GiB NCCL's choice is then NVLS across nodes (the switch reduces; 256 GB/s against NVLS-tree's
    180), so the call is faster than without CollNet."""
    topology = get_topology("cluster", box="hgx_h100", nodes=4, nic="ib_ndr")
    problem = Problem(topology, tuple(topology.gpus), Collective.ALL_REDUCE, 2.0**30)
    plain = NcclModel(topology, NcclParams()).predict(problem)
    sharp = NcclModel(topology, NcclParams(), collnet=True).predict(problem)
    assert not {c.algorithm for c in plain.candidates} & {"collnet_direct", "collnet_chain"}
    assert {"collnet_direct", "collnet_chain"} <= {c.algorithm for c in sharp.candidates}
    assert sharp.chosen.algorithm == "nvls" and sharp.time_s < plain.time_s
    with pytest.raises(AlgorithmError, match="--collnet"):
        NcclModel(topology, NcclParams()).predict(problem, algorithms=("collnet_chain",))


def test_a_collnet_restriction_the_run_cannot_meet_says_why_not_asks_for_collnet_again() -> None:
    """A run given ``--collnet`` and ``--algo collnet_chain`` on one HGX H100 box has no CollNet
    candidate because CollNet reduces in the network's switches, between nodes; the refusal used to
    end by asking for ``--collnet`` (already given). Across four nodes, all-gather has none either:
    commsim models CollNet for all-reduce only (NCCL 2.20+ also runs all-gather and reduce-scatter
    over it, which the refusal says)."""
    box = get_topology("hgx_h100")
    one_node = Problem(box, tuple(box.gpus), Collective.ALL_REDUCE, 2.0**30)
    with pytest.raises(AlgorithmError, match="only across nodes: this run is on one node") as info:
        NcclModel(box, NcclParams(), collnet=True).predict(one_node, algorithms=("collnet_chain",))
    assert "--collnet" not in str(info.value)
    cluster = get_topology("cluster", box="hgx_h100", nodes=4, nic="ib_ndr")
    gather = Problem(cluster, tuple(cluster.gpus), Collective.ALL_GATHER, 2.0**30)
    with pytest.raises(AlgorithmError, match="commsim models CollNet for all-reduce only, not all_gather"):
        NcclModel(cluster, NcclParams(), collnet=True).predict(gather, algorithms=("collnet_direct",))


def test_the_plan_of_nvls_across_nodes_is_the_hierarchical_one() -> None:
    """NVLS across nodes exists only with CollNet (the IB switch reduces between the nodes' NVSwitch
    reductions), so its replayed plan is CollNet's, the hierarchical one, not one-box NVLS's direct
    exchange between every pair of the 32 ranks."""
    import numpy as np

    from commsim.algorithms.hierarchical import Hierarchical
    from commsim.nccl.algorithm import Nccl

    topology = get_topology("cluster", box="hgx_h100", nodes=4, nic="ib_ndr")
    problem = Problem(topology, tuple(topology.gpus), Collective.ALL_REDUCE, 2.0**30)
    nccl = Nccl({"collnet": True})
    assert nccl.predict(problem).chosen.algorithm == "nvls"
    plan, nearest = nccl.plan(problem), Hierarchical().plan(problem)
    assert np.array_equal(plan.op_src, nearest.op_src) and np.array_equal(plan.op_dst, nearest.op_dst)


SETTINGS_LINES = [
    "gpu1:1:1 [0] NCCL INFO NCCL_COLLNET_ENABLE set by environment to 1.",
    "gpu1:1:1 [0] NCCL INFO rank 0 Connected CollNet",
]


def test_a_log_that_connected_collnet_used_it() -> None:
    """NCCL's ``rank 0 Connected CollNet`` (init.cc) says CollNet ran: known, from that line."""
    fact = infer_collnet(read_settings(SETTINGS_LINES), None)
    assert fact is not None and fact.value is True and not fact.assumed
    assert fact.evidence[0].line == 2


def test_collnet_enabled_without_a_connection_is_assumed_unused() -> None:
    """``NCCL_COLLNET_ENABLE=1`` alone: NCCL falls back without a SHARP plugin, so CollNet is assumed
    off, and the fact names ``--collnet``; the option wins over the log either way."""
    fact = infer_collnet(read_settings(SETTINGS_LINES[:1]), None)
    assert fact is not None and fact.value is False and fact.assumed and fact.option == "--collnet"
    assert infer_collnet(read_settings(SETTINGS_LINES[:1]), True).value is True  # type: ignore[union-attr]
    assert infer_collnet(read_settings(["# nThread 1"]), None) is None


def test_a_loaded_sharp_plugin_alone_is_not_collnet() -> None:
    """NCCL loads HPC-X's SHARP plugin wherever it is installed and prints ``Loaded coll plugin SHARP``
    whether or not the run enables CollNet (nccl-tests #329, NCCL 2.19.3 in an NGC-based container,
    no NCCL_COLLNET_ENABLE): the line does not make the run a CollNet one."""
    lines = [
        "host:454:454 [0] NCCL INFO NET/Plugin: Loaded net plugin NCCL RDMA Plugin v6 (v6)",
        "host:454:454 [0] NCCL INFO NET/Plugin: Failed to find ncclCollNetPlugin_v7 symbol.",
        "host:454:454 [0] NCCL INFO NET/Plugin: Loaded coll plugin SHARP (v6)",
    ]
    fact = infer_collnet(read_settings(lines), None)
    assert fact is None or fact.value is False
    enabled = infer_collnet(read_settings([*lines, SETTINGS_LINES[0]]), None)
    assert enabled is not None and enabled.value is False


def test_only_nccls_last_collnet_line_settles_it() -> None:
    """Before NCCL 2.23 (and with no release known), NCCL prints ``Connected collnet + chain`` and
    ``Connected Collnet Chains ...`` before CollNet Direct's setup, which can still fail and turn CollNet
    off; ``rank N Connected CollNet`` comes once all of it succeeded. A probe for a newer plugin
    symbol (``Failed to find ncclCollNetPlugin_v7``, then an older one loads) is no evidence either
    way: with NCCL_COLLNET_ENABLE=1 and no final line, CollNet is assumed off (not known off)."""
    chain_only = [
        SETTINGS_LINES[0],
        "gpu1:1:1 [0] NCCL INFO Connected collnet + chain",
        "gpu1:1:1 [0] NCCL INFO Connected Collnet Chains  [0] 1->0->-1",
        "gpu1:1:1 [0] NCCL INFO NET/Plugin: Failed to find ncclCollNetPlugin_v7 symbol.",
    ]
    fact = infer_collnet(read_settings(chain_only), None)
    assert fact is not None and fact.value is False and fact.assumed
    done = infer_collnet(read_settings([*chain_only, SETTINGS_LINES[1]]), None)
    assert done is not None and done.value is True and not done.assumed and done.evidence[0].line == 5


def test_from_nccl_2_23_the_chains_line_says_collnet_ran() -> None:
    """NCCL 2.23 sets up the CollNet chain's buffers in ``ncclCollNetChainBufferSetup``, which returns
    at once unless CollNet is enabled, i.e. after CollNet's own setup succeeded; it ends by printing
    ``Connected Collnet Chains``. In a 2.23.4 log that line makes CollNet known (it was assumed unused,
    review of outside 180 with the line added); in a 2.22 log it still does not."""
    lines = [SETTINGS_LINES[0], "gpu34:34088:34142 [0] NCCL INFO Connected Collnet Chains [0] 1->0->-1"]
    settings = read_settings(lines)
    known = infer_collnet(settings, None, version="2.23.4", lines=lines)
    assert known is not None and known.value is True and not known.assumed and known.evidence[0].line == 2
    older = infer_collnet(settings, None, version="2.22.3", lines=lines)
    assert older is not None and older.value is False and older.assumed


def test_nccl_algo_forcing_collnet_in_an_info_line_says_collnet_ran() -> None:
    """``NCCL INFO NCCL_ALGO set by environment to CollNetChain``: with only CollNet allowed, NCCL
    either runs CollNet or (releases that fall back) warns 'CollNet is not supported or fails to
    initialize, ignoring NCCL_ALGO=COLLNET', which NCCL_DEBUG=INFO prints too; a log with rows and no
    such warning ran CollNet. Before, it was assumed unused and refused with 'give --collnet'. A
    setting read from the command line alone (no debug output, so no warning would show) leaves it
    assumed."""
    from commsim.calibrate.evidence import Evidence, Fact

    info = "gpu34:34088:34116 [0] NCCL INFO NCCL_ALGO set by environment to CollNetChain"
    lines = [SETTINGS_LINES[0], info]
    by_info = Fact("algorithms", "CollNetChain", (Evidence.at("CollNetChain", "NCCL INFO line", 2, info),))
    fact = infer_collnet(read_settings(lines), None, forced=(("collnet_chain",), by_info))
    assert fact is not None and fact.value is True and not fact.assumed
    by_command = Fact(
        "algorithms", "CollNetChain", (Evidence("CollNetChain", "command line (mpirun -x)", 1),)
    )
    assumed = infer_collnet(read_settings(lines[:1]), None, forced=(("collnet_chain",), by_command))
    assert assumed is not None and assumed.value is False and assumed.assumed
    warned = [
        *lines,
        "gpu34:1:1 [0] NCCL WARN CollNet is not supported or fails to initialize, ignoring NCCL_ALGO=COLLNET",
    ]
    fell_back = infer_collnet(read_settings(warned), None, forced=(("collnet_chain",), by_info))
    assert fell_back is not None and fell_back.value is False


def test_collnet_evidence_is_the_runs_own_and_a_plugin_probe_does_not_hide_it() -> None:
    """Review of the two new CollNet sources. (1) HPC-X's SHARP plugin logs 'Failed to find
    ncclCollNetPlugin_v9 symbol.' before 'Loaded collnet plugin SHARP (v8)': a probe for a newer
    symbol, no word on CollNet; it hid the chains line and the NCCL_ALGO evidence. (2) The chains
    line of a later run (a SHARP off / on comparison in one file) made the first run CollNet: only
    the run's own lines count. (3) NCCL_COLLNET_ENABLE=0 is not overridden by an NCCL_ALGO."""
    from commsim.calibrate.evidence import Evidence, Fact

    probe = "gpu34:1:1 [0] NCCL INFO NET/Plugin: Failed to find ncclCollNetPlugin_v9 symbol."
    chains = "gpu34:34088:34142 [0] NCCL INFO Connected Collnet Chains [0] 1->0->-1"
    lines = [probe, SETTINGS_LINES[0], chains]
    fact = infer_collnet(read_settings(lines), None, version="2.23.4", lines=lines)
    assert fact is not None and fact.value is True and fact.evidence[0].line == 3
    run1 = lines[:2]  # the run's own lines end before the chains line of the next run
    first = infer_collnet(read_settings(run1), None, version="2.23.4", lines=run1)
    assert first is not None and first.value is False and first.assumed
    later = infer_collnet(read_settings(lines), None, version="2.23.4", lines=[chains], first_line=3)
    assert later is not None and later.evidence[0].line == 3
    info = "gpu34:1:1 [0] NCCL INFO NCCL_ALGO set by environment to CollNetChain"
    off = ["gpu34:1:1 [0] NCCL INFO NCCL_COLLNET_ENABLE set by environment to 0.", info]
    by_info = Fact("algorithms", "CollNetChain", (Evidence.at("CollNetChain", "NCCL INFO line", 2, info),))
    assert infer_collnet(read_settings(off), None, forced=(("collnet_chain",), by_info)) is None


def test_nccl_ignoring_a_collnet_algo_leaves_ring_and_tree() -> None:
    """NCCL 'WARN CollNet is not supported or fails to initialize, ignoring NCCL_ALGO=COLLNET'
    re-enables ring and tree (tuning.cc); the run was refused as needing --collnet. The forced
    algorithms are now ring and tree, and the fact says NCCL ignored the setting."""
    from commsim.calibrate.infer_settings import forced_choices

    lines = [
        SETTINGS_LINES[0],
        "gpu34:1:1 [0] NCCL INFO NCCL_ALGO set by environment to CollNetChain",
        "gpu34:1:1 [0] NCCL WARN CollNet is not supported or fails to initialize, ignoring NCCL_ALGO=COLLNET",
    ]
    facts, algorithms, _, _ = forced_choices(read_settings(lines), None, None, "all_reduce")
    assert algorithms == ("ring", "tree")
    assert facts["algorithms"].note == "NCCL ignored it (line 3): ring and tree"


@pytest.mark.parametrize(
    ("collective", "expected"),
    [("all_reduce", ("tree",)), ("all_gather", ("ring",)), ("broadcast", None)],
)
def test_a_per_collective_nccl_algo_forces_each_collective_its_own(
    collective: str, expected: tuple[str, ...] | None
) -> None:
    """NCCL 2.24+ takes NCCL_ALGO per collective ('allreduce:tree;allgather:ring', as vLLM and
    SGLang set it). The all-reduce part was applied to every collective, so an all_gather log was
    refused as 'no NCCL candidate of algorithm tree applies to all_gather'. Each collective takes
    its own part; one the value does not name is not restricted."""
    from commsim.calibrate.infer_settings import forced_choices

    lines = ["gpu34:1:1 [0] NCCL INFO NCCL_ALGO set by environment to allreduce:tree;allgather:ring"]
    _, algorithms, _, _ = forced_choices(read_settings(lines), None, None, collective)
    assert algorithms == expected


def test_outside_180_fell_back_and_is_priced_without_collnet() -> None:
    """Outside 180 (4 nodes x 2 A100, SHARP plugin, NCCL_COLLNET_ENABLE=1) prints no CollNet connection
    and its channels run over plain IB: validate assumes CollNet unused, and --collnet changes that."""
    from pathlib import Path

    from commsim.calibrate.validate import validate_file

    log = next((Path(__file__).parent / "data" / "outside").glob("180_*.txt"))
    plain = validate_file(log)
    assert plain.inference.facts["collnet"].assumed and plain.inference.collnet is False
    forced = validate_file(log, options=RunOptions(collnet=True))
    assert forced.inference.collnet is True


def test_validate_follows_collnet_chain_only_with_collnet(capsys: pytest.CaptureFixture[str]) -> None:
    """The CoreWeave SHARP log (12 x 8 H100; its README's job sets NCCL_ALGO=COLLNETCHAIN): restricted to
    CollNet Chain it is refused naming --collnet, and priced as collnet_chain/Simple with it, with a
    warning that these figures are NCCL's own, not validated. The run is a median 1.08x faster than
    Chain's figure (the warning, README and docs/architecture.md say so): its 512 MiB-8 GiB rows
    measure 356-387 GB/s busbw against Chain's 348-356 GB/s (algbw: 8 NDR NICs' 360 GB/s x 0.5, no
    x 0.75 from NCCL 2.18; busbw x 2 x 95/96; less the latency at 512 MiB)."""
    log = "tests/data/nccl-tests/H100-SXM-CoreWeave_all_reduce_96gpu_12node-IB-SHARP_1.txt"
    code, _, err = run_cli(["validate", log, "--gpu", "H100 SXM", "--algo", "COLLNETCHAIN"], capsys)
    assert code == 2 and "--collnet" in err
    code, out, _ = run_cli(
        ["validate", log, "--gpu", "H100 SXM", "--algo", "COLLNETCHAIN", "--collnet"], capsys
    )
    assert code == 0 and "collnet_chain/Simple" in out
    assert "CollNet is priced with NCCL's own formulas" in " ".join(out.split())
    assert "median 1.08x faster than Chain's figure" in " ".join(out.split())
    from commsim.calibrate.validate import validate_file

    options = RunOptions(gpu="H100 SXM", algorithms=("collnet_chain",), collnet=True)
    ratios = sorted(1 + row.error for row in validate_file(log, options=options).rows)  # predicted / measured
    assert ratios[len(ratios) // 2] == pytest.approx(1.08, abs=0.005)


def test_validate_warns_when_it_prices_nvls_across_nodes() -> None:
    """Left to choose, the CoreWeave run with --collnet is priced as NVLS across nodes (which only
    CollNet enables, and which no log validates either): the same warning applies."""
    from commsim.calibrate.validate import validate_file

    log = "tests/data/nccl-tests/H100-SXM-CoreWeave_all_reduce_96gpu_12node-IB-SHARP_1.txt"
    validation = validate_file(log, options=RunOptions(gpu="H100 SXM", collnet=True))
    assert {row.algorithm for row in validation.rows} == {"nvls"}
    assert any(note.startswith("CollNet is priced with NCCL's own formulas") for note in validation.notes())
    plain = validate_file(log, options=RunOptions(gpu="H100 SXM"))
    assert not any("CollNet" in note for note in plain.notes())
