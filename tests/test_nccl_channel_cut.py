"""NCCL's channels for a small ring LL call (commsim.nccl.channel_cut).

NCCL (enqueue.cc topoGetAlgoInfo, 2.4-2.28) launches one channel fewer while the buffer is under
channels x threads x threadThreshold; for ring LL the threshold is 8 bytes per thread times the rank
count (tuning.cc) and an LL channel runs 512 threads, so a call keeps one channel per 4 KiB x ranks of
buffer. NCCL's channel count is twice what its ring search finds: across nodes one per NIC serving the
node's ranks, split in two at 25 GB/s or more (search.cc ncclTopoDupChannels, with its guard for GPUs
newer than compute capability 8.0), doubled again on Hopper for fast channels; in one box one per
NVLink to the other ranks and the NVSwitches, at most 16 found (32 channels).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from commsim.algorithms.base import Problem
from commsim.calibrate.inference import RunOptions
from commsim.calibrate.validate import validate_file
from commsim.collectives import Collective
from commsim.nccl.channel_cut import cut_s, nccl_channels, ring_ll_channels
from commsim.nccl.machine import NcclMachine
from commsim.nccl.model import NcclModel
from commsim.nccl.params import NcclParams
from commsim.topology import get_topology

KiB, MiB = 2**10, 2**20
DATA = Path(__file__).parent / "data"


def _nccl_loop(nbytes: float, ranks: int, channels: int) -> int:
    """NCCL's own loop, written as NCCL writes it: ``while (nBytes < nc*nt*threadThreshold) nc--``
    down to one channel, with nt = 512 and threadThreshold = 8 x nRanks."""
    nc = channels
    while nbytes < nc * 512 * 8 * ranks:
        if nc >= 2:
            nc -= 1
        else:
            break
    return nc


def test_ring_ll_keeps_one_channel_per_4_kib_per_rank() -> None:
    """64 ranks: 8 B x 512 threads x 64 = 256 KiB per channel, so 1 MiB runs 4 of 32 channels and
    8 MiB all 32; 16 ranks (64 KiB per channel) run 16 at 1 MiB; 8 bytes run one channel."""
    assert ring_ll_channels(1 * MiB, 64, 32) == 4
    assert ring_ll_channels(8 * MiB, 64, 32) == 32
    assert ring_ll_channels(1 * MiB, 16, 32) == 16
    assert ring_ll_channels(8, 8, 24) == 1
    assert ring_ll_channels(1 * MiB - 1, 64, 32) == 3


@pytest.mark.parametrize("ranks", [2, 3, 8, 16, 64, 1000])
@pytest.mark.parametrize("channels", [1, 2, 8, 24, 32])
def test_the_closed_form_is_nccls_loop(ranks: int, channels: int) -> None:
    """The closed form min(channels, max(1, floor(nBytes / (4 KiB x ranks)))) gives NCCL's loop's
    count at every size around each step (one byte below, at, above) and at powers of two."""
    sizes = {2**k for k in range(0, 34)}
    for step in range(1, channels + 2):
        edge = step * 512 * 8 * ranks
        sizes |= {edge - 1, edge, edge + 1}
    for nbytes in sorted(sizes):
        assert ring_ll_channels(nbytes, ranks, channels) == _nccl_loop(nbytes, ranks, channels), nbytes


def _machine(
    nodes: int, per_node: int, transport: str, nic_Bps: float, nics: int, fabric_Bps: float = 0.0
) -> NcclMachine:
    family = "infiniband" if nodes > 1 else None
    return NcclMachine(
        nodes, per_node, transport, "hopper", False, nic_Bps, family, nics=nics, fabric_Bps=fabric_Bps
    )


def test_channels_across_nodes_follow_nccls_split_rules() -> None:
    """NCCL's search finds one channel per NIC at the fastest of its speeds the NIC carries, splits
    those of 25 GB/s or more in two (not on Hopper under 50 GB/s with more than 4 found) and doubles
    what it found; on Hopper it doubles again channels above 45 GB/s fewer than 16:
    4 NDR200 NICs (25 GB/s: speed 24) give 8 channels; 8 NDR400 NICs (speed 48, 8 found, not split)
    16; one 400 Gb/s NIC (split: 2 found) 4; 4 of them (split: 8 found at 24 GB/s) 16; on Ampere
    8 NICs of 400 Gb/s are split (no Hopper guard): 32; 4 EFA NICs of 100 Gb/s (speed 12) 8."""
    assert nccl_channels(_machine(2, 4, "nvlink", 4 * 25e9, 4)) == 8
    assert nccl_channels(_machine(2, 8, "nvswitch", 8 * 50e9, 8, 450e9)) == 16
    assert nccl_channels(_machine(4, 1, "none", 50e9, 1)) == 4
    assert nccl_channels(_machine(2, 8, "nvswitch", 4 * 50e9, 4, 450e9)) == 16
    ampere = NcclMachine(2, 8, "nvswitch", "ampere", False, 8 * 50e9, "infiniband", nics=8)
    assert nccl_channels(ampere) == 32
    p4d = NcclMachine(2, 8, "nvswitch", "ampere", False, 4 * 12.5e9, "ethernet", nics=4)
    assert nccl_channels(p4d) == 8


def test_channels_in_one_box_follow_its_nvlinks() -> None:
    """One found channel per NVLink (25 GB/s as rated) a GPU has to the other ranks and its NVSwitches,
    at least 1, at most 16, doubled: 12 links (A100) 24 channels; 18 (H100) 32, 16 found at most; 4
    links (an NV4 pair) 8; no NVLink (PCIe) 2; 11.9 links' worth 22 (whole links only)."""
    assert nccl_channels(_machine(1, 8, "nvswitch", 0.0, 1, 12 * 25e9)) == 24
    assert nccl_channels(_machine(1, 8, "nvswitch", 0.0, 1, 18 * 25e9)) == 32
    assert nccl_channels(_machine(1, 2, "nvlink", 0.0, 1, 4 * 25e9)) == 8
    assert nccl_channels(_machine(1, 2, "pcie", 0.0, 1)) == 2
    assert nccl_channels(_machine(1, 8, "nvswitch", 0.0, 1, 11.9 * 25e9)) == 22


def test_the_fabric_is_the_links_to_the_used_ranks_and_switches() -> None:
    """On a DGX-1 (hybrid cube mesh, 6 NVLinks per V100 to 4 peers) all 8 ranks see 6 x 25 GB/s; 2 ranks
    that share one link's pair see only the links between them; a DGX A100's GPU has 12 links to its
    NVSwitches whatever ranks run; a PCIe box none."""
    from commsim.nccl.machine import analyse

    def fabric(name: str, count: int | None = None) -> float:
        topo = get_topology(name)
        gpus = tuple(topo.devices_of_kind("gpu"))
        return analyse(topo, gpus[:count] if count else gpus).fabric_Bps

    dgx1 = get_topology("dgx1_v100")
    links = [link for link in dgx1.links if link.src == "gpu0" and link.family == "nvlink"]
    assert fabric("dgx1_v100") == pytest.approx(sum(link.bandwidth_Bps for link in links))
    assert fabric("dgx1_v100") == pytest.approx(6 * 25e9)
    pair = [link for link in links if link.dst == "gpu1"]
    assert fabric("dgx1_v100", 2) == pytest.approx(sum(link.bandwidth_Bps for link in pair))
    assert fabric("dgx_a100") == pytest.approx(12 * 25e9)
    assert fabric("dgx_a100", 2) == pytest.approx(12 * 25e9)
    assert fabric("pcie_4gpu_switch") == 0.0


NDR200_X4 = RunOptions(nic="ib_ndr200", nics_per_node=4)
"""The data README's NICs of the 4 x H100 hosts (the log names no NIC speed)."""
LOGS_PRINTING_CHANNELS = [
    "nccl-tests/H100-SXM5-4GPU-NVLink_all_reduce_8gpu_2node-IB-NDR200x4_1.txt",
    "outside/22_A100PCIe-2node-1gpu-HDR-GDR-SYS.txt",
    "outside/39_A100PCIe-2node-1gpu-HDR-NPS4-hoststaged.txt",
    "outside/42_A100SXM80-2gpu-docker-g2-socketnet-INFO-indented.txt",
    "outside/52_A100-40GB-p4d-EKS-2node-16gpu-EFA-NCCL283-tagoutput.txt",
    "outside/53_RTX4090-2gpu-container-g2-SHM-busyGPUs.txt",
    "outside/70_T4-EKS-2node-1gpu-EFA-NCCL2127-tagoutput.txt",
    "outside/78_A100PCIe-2node-1gpu-CX5-gather-stepbytes-NCCL2165-issue350.txt",
    "outside/203_RTXPRO6000-AWS-g7e-2node-1gpu-EFA100G-ofi1180-NCCL2292-allreduce-INFO.txt",
]


@pytest.mark.parametrize("name", LOGS_PRINTING_CHANNELS)
def test_the_channel_count_is_what_real_logs_print(name: str) -> None:
    """Real logs print NCCL's count ("N coll channels"): 8 for two hosts of four H100 with four NDR200
    NICs and for AWS p4d (4 NICs of 100 Gb/s for 8 A100), 24 for two A100 SXM on NVSwitch, 2 for two
    RTX 4090 through host memory and for two hosts of one GPU and one NIC of 100-200 Gb/s. The machine
    is the one validate infers from the log alone (the H100 hosts' NDR200 NICs given as the data
    README states them). (Two logs of one H100 and one RoCE NIC per host
    print 2 where these rules give 4: NCCL's search rated that NIC's path below 25 GB/s, as the GPU
    reaches it through host memory there; four more multi-GPU logs that print a count agree once
    their pages' facts are given; one-rank runs print 32-64 and are never cut.)"""
    path = DATA / name
    printed = int(re.search(r"(\d+) coll channels", path.read_text()).group(1))  # type: ignore[union-attr]
    validation = validate_file(path, options=NDR200_X4 if "NDR200x4" in name else RunOptions())
    inference = validation.inference
    model = NcclModel.of(inference.topology, NcclParams())
    machine, _ = model.bandwidths(tuple(inference.ranks), Collective.ALL_REDUCE)
    assert nccl_channels(machine) == printed


def test_cut_prices_the_used_channels_under_nccls_ceiling() -> None:
    """NCCL's ring LL bandwidth is min(llMaxBw, channels x per-channel); on `used` channels the call
    runs at min(priced, spread x used / channels), where `spread` is what all channels carry before
    the ceiling. Two hosts of two GPUs with one 400 Gb/s NIC each: one NIC above 25 GB/s is two found
    channels, doubled: 4; at 32 KiB 4 ranks keep 32 KiB / 16 KiB = 2. Priced at 10 GB/s with 12 GB/s
    spread, 2 channels carry 6 GB/s: 32 KiB x (1 / 6 GB/s - 1 / 10 GB/s) = 2.1845 us lost. With
    40 GB/s spread, 2 channels still carry 20 GB/s, above the 10 GB/s priced: nothing lost. AMD GPUs,
    whose RCCL sets its own channel counts, are not cut."""
    m = NcclMachine(2, 2, "nvlink", "hopper", False, 50e9, "infiniband", nics=1)
    assert nccl_channels(m) == 4
    lost = cut_s(32 * KiB, 10e9, 12e9, 4, m)
    assert lost == pytest.approx(32 * KiB * (1 / 6e9 - 1 / 10e9), rel=1e-12)
    assert lost == pytest.approx(2.18453e-6, rel=1e-5)
    assert cut_s(32 * KiB, 10e9, 40e9, 4, m) == 0.0
    amd = NcclMachine(2, 2, "nvlink", "cdna3", False, 50e9, "infiniband", nics=1)
    assert cut_s(32 * KiB, 10e9, 12e9, 4, amd) == 0.0


def test_the_model_adds_the_cut_to_the_chosen_ring_ll_call_only() -> None:
    """8 hosts of 8 H100 with 8 NDR400 NICs each (16 channels), 64 ranks, all-reduce forced to ring
    LL at 256 KiB: the call runs 1 channel (256 KiB / (4 KiB x 64)). All 16 carry the ring's bus
    bandwidth times the newest tables' ring LL factor 1/2, as algorithm bandwidth x 64 / 126 steps;
    1 carries a sixteenth of it, below the llMaxBw-capped rate the candidate is priced at, so the call
    takes latency + 256 KiB / (busbw / 2 x 64 / 126 / 16) and reports the difference as its cut (at
    512 KiB 2 channels carry an eighth, 11.4 GB/s, above the 10.4 GB/s priced: no cut);
    ``times`` gives the same; at 8 MiB all 16 channels run and nothing is added; ring LL128 is never
    cut."""
    topo = get_topology("cluster", box="hgx_h100", nodes=8, nic="ib_ndr")
    gpus = tuple(topo.devices_of_kind("gpu"))
    model = NcclModel.of(topo, NcclParams())
    assert model.table.ring_ll(True, True) == 0.5
    problem = Problem(topo, gpus, Collective.ALL_REDUCE, 256.0 * KiB)
    busbw = model.bandwidths(gpus, Collective.ALL_REDUCE)[1].busbw_Bps
    chosen = model.predict(problem, algorithms=("ring",), protocols=("LL",)).chosen
    one_channel = busbw / 2 * 64 / 126 / 16
    assert one_channel < chosen.algbw_Bps
    half = Problem(topo, gpus, Collective.ALL_REDUCE, 512.0 * KiB)
    assert model.predict(half, algorithms=("ring",), protocols=("LL",)).chosen.cut_s == 0.0
    assert chosen.time_s == pytest.approx(chosen.latency_s + problem.nbytes / one_channel, rel=1e-12)
    assert chosen.cut_s == pytest.approx(
        problem.nbytes / one_channel - problem.nbytes / chosen.algbw_Bps, rel=1e-12
    )
    assert model.times(problem, [problem.nbytes], algorithms=("ring",), protocols=("LL",)) == [
        pytest.approx(chosen.time_s, rel=1e-12)
    ]
    big = Problem(topo, gpus, Collective.ALL_REDUCE, 8.0 * MiB)
    assert model.predict(big, algorithms=("ring",), protocols=("LL",)).chosen.cut_s == 0.0
    ll128 = model.predict(problem, algorithms=("ring",), protocols=("LL128",)).chosen
    assert ll128.cut_s == 0.0


def test_explain_names_the_idle_channels() -> None:
    """The nccl algorithm's explanation of a cut call says how many of NCCL's channels run, why, and
    what it costs: 64 ranks' all-gather of 256 KiB on 8 HGX H100 hosts (ring LL is its choice) runs
    1 of 16 channels, one per 256 KiB of buffer."""
    from commsim.algorithms import make_algorithm
    from commsim.units import format_time

    topo = get_topology("cluster", box="hgx_h100", nodes=8, nic="ib_ndr")
    problem = Problem(topo, tuple(topo.devices_of_kind("gpu")), Collective.ALL_GATHER, 256.0 * KiB)
    chosen = NcclModel.of(topo, NcclParams()).predict(problem).chosen
    assert (chosen.algorithm, chosen.protocol) == ("ring", "LL") and chosen.cut_s > 0
    text = make_algorithm("nccl").explain(problem)  # type: ignore[attr-defined]
    assert (
        "idle channels: NCCL runs this ring LL call on 1 of its 16 channels (one per 256 KiB of buffer: "
        f"512 threads x 8 B x 64 ranks), {format_time(chosen.cut_s)} more than on all of them" in text
    )


def test_the_channel_count_a_log_prints_is_the_one_cut_from(tmp_path: Path) -> None:
    """A log whose NCCL INFO lines print the count ("2 coll channels": two hosts of one A100 PCIe on
    HDR) gives it as the run's fact, with its line, and the model cuts from it. The same log printing
    "8 coll channels" runs a 2-rank ring LL call of 16 KiB on 2 of 8 channels (8 KiB each), not 2 of 2:
    slower. Every size priced on ring LL is predicted no faster, sizes on other candidates the same."""
    path = DATA / "outside" / "22_A100PCIe-2node-1gpu-HDR-GDR-SYS.txt"
    text = path.read_text()
    more = tmp_path / "more.txt"
    more.write_text(text.replace("NCCL INFO 2 coll channels", "NCCL INFO 8 coll channels"))
    printed, edited = validate_file(path), validate_file(more)
    fact = printed.inference.facts["channels"]
    assert fact.value == 2 and fact.evidence[0].line is not None
    assert "NCCL INFO 2 coll channels" in text.splitlines()[fact.evidence[0].line - 1]
    assert edited.inference.facts["channels"].value == 8
    pairs = list(zip(printed.rows, edited.rows))
    ring_ll = [(a, b) for a, b in pairs if (a.algorithm, a.protocol) == ("ring", "LL")]
    assert ring_ll and all(b.predicted_time_s >= a.predicted_time_s for a, b in ring_ll)
    row, other = next((a, b) for a, b in ring_ll if a.nbytes == 16 * KiB)
    assert other.predicted_time_s > row.predicted_time_s
    assert all(a.predicted_time_s == b.predicted_time_s for a, b in pairs if (a, b) not in ring_ll)


def test_nccl_min_and_max_nchannels_bound_the_derived_count() -> None:
    """NCCL's ncclTopoPostset keeps at most NCCL_MAX_NCHANNELS channels, then copies them up to
    NCCL_MIN_NCHANNELS, never past MAXCHANNELS: 8 H100 with 8 NDR400 NICs derive 16; MIN=32 makes 32,
    MIN=64 still 32, MAX=4 makes 4, neither 16."""
    from commsim.nccl.channel_cut import bounded_channels

    h100 = _machine(2, 8, "nvswitch", 8 * 50e9, 8, 450e9)
    assert bounded_channels(h100, (None, None)) == 16
    assert bounded_channels(h100, (32, None)) == 32
    assert bounded_channels(h100, (64, None)) == 32
    assert bounded_channels(h100, (None, 4)) == 4


def test_a_logs_nccl_min_nchannels_is_a_fact_the_model_cuts_from() -> None:
    """Outside 04 (2 x 8 H200, 8 NICs of 400 Gb/s per node) runs with 'mpirun -x NCCL_MIN_NCHANNELS=32':
    the run's min_channels fact is 32 with the command's line, and the warning says the model follows
    it for the channels a small ring LL call runs (32, where NCCL's rules alone give 16), not for the
    bandwidth."""
    path = DATA / "outside" / "04_H200-Dell-2node-16gpu-RoCE-BF3.txt"
    validation = validate_file(path, options=RunOptions(nic="roce_400g", nics_per_node=8))
    inference = validation.inference
    assert inference.channel_limits == (32, None)
    fact = inference.facts["min_channels"]
    assert fact.evidence[0].line is not None
    assert "NCCL_MIN_NCHANNELS=32" in path.read_text().splitlines()[fact.evidence[0].line - 1]
    assert any(
        "NCCL_MIN_NCHANNELS=32" in w and "follows it for the channels" in w for w in inference.warnings
    )
