"""Whether the hosts of a GB200/GB300 run share an NVLink domain: read from NCCL's lines, given, or assumed.

Log 35 (two GKE A4X Max nodes of 4 GB300) is the case that made it a fact of its own: its page says the
nodes sat in distinct NVLink domains, so the hosts talked over their NICs, and a model of one NVL72
domain was 2x too fast while the verdict blamed the run. Without evidence the hosts are assumed to
share a domain (a rack is the usual case) and the verdict is withheld, naming ``--nvlink-domain``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from commsim.calibrate.inference import InferenceError, RunOptions, infer_run
from commsim.calibrate.parser import load_nccl_tests
from commsim.calibrate.validate import Validation, validate_file
from tests.test_bad_inputs import run_cli

ROOT = Path(__file__).resolve().parent.parent
OUTSIDE = ROOT / "tests" / "data" / "outside"
A4X_MAX = OUTSIDE / "35_GB300-GKE-A4XMax-2node-8gpu-allgather-collapsed-ws.txt"
DEVICE_LIST_END = 16
"""Line of log 35 after its device list (ranks 0-3 on host ...-m9bm, 4-7 on host ...-d3lp)."""
A4X_NICS = RunOptions(nic="roce_800g", nics_per_node=4)
"""A4X Max networking: ConnectX-8 SuperNICs over RoCE, "up to 3,200 Gbps" per 4-GPU machine (Google,
"Accelerator-optimized machine family", A4X Max vs A4X), i.e. 800 Gb/s per GPU; the GB300 compute tray
has 4 ConnectX-8 (NVIDIA GB300 NVL72 enterprise reference architecture, components)."""


def _log_with(tmp_path: Path, *info: str) -> Path:
    """Log 35 with NCCL INFO lines after its device list (the first at line 17)."""
    lines = A4X_MAX.read_text().splitlines()
    path = tmp_path / "a4x_max_info.txt"
    path.write_text("\n".join([*lines[:DEVICE_LIST_END], *info, *lines[DEVICE_LIST_END:]]) + "\n")
    return path


def _infer(path: Path, options: RunOptions | None = None):  # type: ignore[no-untyped-def]
    return infer_run(load_nccl_tests(path), path.read_text(), options)


def _boxes(validation: Validation) -> list[int]:
    return sorted(len(gpus) for gpus in validation.inference.topology.boxes.values())


# -- known from NCCL's own lines, both ways ------------------------------------------------------

SHARED_LINES = [
    # src/init.cc: with MNNVL, the hosts of one NVLink domain are one NCCL node
    "gke-a:299:299 [0] NCCL INFO comm 0x55d4c8a0 rank 0 nRanks 8 nNodes 1 localRanks 8 localRank 0 MNNVL 1",
    # src/mnnvl.cc (2.23+): all 8 ranks in rank 0's clique
    "gke-a:299:299 [0] NCCL INFO MNNVL 1 cliqueId 7ffe cliqueSize 8 cliqueRank 0 nvlDomainSize 72",
    # a ring channel from host ...-m9bm (rank 3) to host ...-d3lp (rank 4) over NVLink
    "gke-a:302:302 [3] NCCL INFO Channel 00/0 : 3[3] -> 4[0] via P2P/MNNVL",
]
SEPARATE_LINES = [
    "gke-a:299:299 [0] NCCL INFO comm 0x55d4c8a0 rank 0 nRanks 8 nNodes 2 localRanks 4 localRank 0 MNNVL 0",
    # before 2.23 (src/init.cc checkMNNVL) the line is printed with MNNVL 0 too
    "gke-a:299:299 [0] NCCL INFO MNNVL 0 cliqueId 0 cliqueSize 4 cliqueRank 0",
    # ring channels between the hosts over the network, in both directions (every host in one)
    "gke-a:302:302 [3] NCCL INFO Channel 00/0 : 3[3] -> 4[0] [send] via NET/IB/0/GDRDMA\n"
    "gke-b:240:240 [3] NCCL INFO Channel 00/0 : 7[3] -> 0[0] [send] via NET/IB/3/GDRDMA",
    "gke-a:299:299 [0] NCCL INFO NCCL_MNNVL_ENABLE set by environment to 0.",
]


ODD_LINES = [
    # nNodes below 1 or above the 2 hosts: no placement prints it
    (
        "gke-a:299:299 [0] NCCL INFO comm 0x55d4c8a0 rank 0 nRanks 8 nNodes 0 localRanks 8 localRank 0",
        "0 node(s)",
    ),
    (
        "gke-a:299:299 [0] NCCL INFO comm 0x55d4c8a0 rank 0 nRanks 8 nNodes 5 localRanks 4 localRank 0",
        "5 node(s)",
    ),
    # a clique of 6 splits a host of 4; a clique of 99 is more than the 8 ranks
    ("gke-a:299:299 [0] NCCL INFO MNNVL 1 cliqueId 7f cliqueSize 6 cliqueRank 0", "clique of 6 ranks"),
    ("gke-a:299:299 [0] NCCL INFO MNNVL 1 cliqueId 7f cliqueSize 99 cliqueRank 0", "clique of 99 ranks"),
]


@pytest.mark.parametrize(("line", "said"), ODD_LINES)
def test_numbers_no_placement_gives_are_warned_about_not_believed(
    tmp_path: Path, line: str, said: str
) -> None:
    """A node count outside 1..hosts, or a clique that is not whole hosts within the run, is no
    evidence: the fact stays assumed (one domain, as without the line) and a warning names line 17."""
    inference = _infer(_log_with(tmp_path, line))
    fact = inference.facts["nvlink_domain"]
    assert (fact.value, fact.assumed) == ("shared", True)
    assert any(w.startswith(f"line {DEVICE_LIST_END + 1}: ") and said in w for w in inference.warnings)


def test_mnnvl_0_on_the_communicator_line_means_separate(tmp_path: Path) -> None:
    """'MNNVL 0' on NCCL's comm line: NCCL does not use NVLink between hosts, whatever its node count."""
    line = "gke-a:299:299 [0] NCCL INFO comm 0x55d4 rank 0 nRanks 8 nNodes 1 localRanks 8 localRank 0 MNNVL 0"
    fact = _infer(_log_with(tmp_path, line)).facts["nvlink_domain"]
    assert (fact.value, fact.assumed) == ("separate", False)


@pytest.mark.parametrize("line", SHARED_LINES)
def test_lines_that_show_nvlink_between_hosts_make_it_known_shared(tmp_path: Path, line: str) -> None:
    """Each kind of line alone: the fact is known, its evidence is line 17, and the machine is one
    NVLink domain (one box, the 72-GPU rack, as before)."""
    report = validate_file(_log_with(tmp_path, line))
    fact = report.inference.facts["nvlink_domain"]
    assert (fact.value, fact.assumed) == ("shared", False)
    assert fact.evidence[0].line == DEVICE_LIST_END + 1
    assert _boxes(report) == [72]
    assert "nvlink_domain" not in report.verdict()


@pytest.mark.parametrize("line", SEPARATE_LINES)
def test_lines_that_show_the_network_between_hosts_make_it_known_separate(tmp_path: Path, line: str) -> None:
    """Each kind of line alone: known separate, so each host is a box of one tray (4 GPUs) with its
    own NICs, and the verdict now waits only for the network facts the log does not print."""
    report = validate_file(_log_with(tmp_path, *line.split("\n")))
    fact = report.inference.facts["nvlink_domain"]
    assert (fact.value, fact.assumed) == ("separate", False)
    assert fact.evidence[0].line == DEVICE_LIST_END + 1
    assert _boxes(report) == [4, 4]
    assert report.inference.facts["nics_per_node"].value == 4  # one per GPU, as the tray has
    verdict = report.verdict()
    assert verdict.startswith("cannot judge") and "--nic" in verdict and "--nvlink-domain" not in verdict


def test_a_channel_between_ranks_of_one_host_says_nothing(tmp_path: Path) -> None:
    """NET between ranks 0 and 1 (both on host ...-m9bm) is no word on the hosts' domains."""
    report = validate_file(
        _log_with(tmp_path, "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via NET/IB/0")
    )
    assert report.inference.facts["nvlink_domain"].assumed


# -- assumed otherwise: the verdict is withheld ---------------------------------------------------


def test_log_35_alone_assumes_a_shared_domain_and_withholds_the_verdict() -> None:
    """The table-only log: one NVL72 domain assumed (as before), said so, and no verdict on the run:
    the model of that machine is 2x the measured busbw, which was the model's miss, not the run's."""
    report = validate_file(A4X_MAX)
    fact = report.inference.facts["nvlink_domain"]
    assert (fact.value, fact.assumed, fact.option) == ("shared", True, "--nvlink-domain")
    verdict = report.verdict()
    assert verdict.startswith("cannot judge") and "nvlink_domain (--nvlink-domain)" in verdict
    assert "below" not in verdict


# -- the option, both ways ------------------------------------------------------------------------


def test_separate_prices_the_hosts_nics_and_meets_the_measured_busbw() -> None:
    """Separate domains, A4X Max's NICs: each host 4 GPUs on NVLink and 4 x 800 Gb/s RoCE NICs.

    Ring all-gather over 8 ranks on 2 hosts: all rings together carry (n-1)/n of the output across the
    hosts in each direction, over the 4 NICs at 100 GB/s x 0.90 (RoCE efficiency) = 360 GB/s, so the
    bus bandwidth tends to 360 GB/s; at 16 GiB (a 47 ms call) the per-call latency takes < 0.3 %. The
    run measures 357.13 GB/s there: within 1 %, and the verdict is "as expected" (it was "2.0x below").
    """
    report = validate_file(A4X_MAX, options=replace(A4X_NICS, nvlink_domain="separate"))
    assert _boxes(report) == [4, 4]
    last = report.rows[-1]
    assert last.nbytes == 16 * 2**30 and last.measured_busbw_Bps == pytest.approx(357.13e9)
    assert 360e9 * 0.997 < last.predicted_busbw_Bps < 360e9
    assert abs(last.error) < 0.01
    assert report.verdict().startswith("as expected")


def test_shared_option_is_the_machine_assumed_before_and_judges(tmp_path: Path) -> None:
    """--nvlink-domain shared: the same one-rack machine and figures as the assumption, now known, so the
    verdict is given (the run is half the one-domain figure: below). The option wins over a log line
    that says otherwise, and a warning names both."""
    assumed = validate_file(A4X_MAX)
    given = validate_file(A4X_MAX, options=RunOptions(nvlink_domain="shared"))
    assert [r.predicted_time_s for r in given.rows] == [r.predicted_time_s for r in assumed.rows]
    assert not given.inference.facts["nvlink_domain"].assumed
    assert given.verdict().startswith("2.0x below")
    contradicted = _infer(_log_with(tmp_path, SEPARATE_LINES[0]), RunOptions(nvlink_domain="shared"))
    assert contradicted.facts["nvlink_domain"].value == "shared"
    assert any(
        "--nvlink-domain shared disagrees with the log's NVLink domain separate" in w
        for w in contradicted.warnings
    )


def test_the_command_line_gives_it_and_refuses_other_values(capsys: pytest.CaptureFixture[str]) -> None:
    """``--nvlink-domain separate`` reaches the report; any other word exits 2 naming the valid ones."""
    code, out, _ = run_cli(["validate", str(A4X_MAX), "--nvlink-domain", "separate"], capsys)
    assert code == 0 and "nvlink_domain = separate (option --nvlink-domain" in out
    code, out, err = run_cli(["validate", str(A4X_MAX), "--nvlink-domain", "rack"], capsys)
    assert code == 2 and out == "" and "--nvlink-domain 'rack': valid: shared, separate" in err
    with pytest.raises(InferenceError, match="give one of shared, separate"):
        validate_file(A4X_MAX, options=RunOptions(nvlink_domain="apart"))


# -- runs it does not concern ---------------------------------------------------------------------

ONE_HOST = """# nThread 1 nGpus 1 minBytes 1073741824 maxBytes 1073741824 step: 2(factor) warmup iters: 1
# Using devices
#  Rank  0 Group  0 Pid 101 on tray-a device  0 [0008:06:00] NVIDIA GB200
#  Rank  1 Group  0 Pid 102 on tray-a device  1 [0009:06:00] NVIDIA GB200
#  Rank  2 Group  0 Pid 103 on tray-a device  2 [0018:06:00] NVIDIA GB200
#  Rank  3 Group  0 Pid 104 on tray-a device  3 [0019:06:00] NVIDIA GB200
#  size  count  type  redop  root  time  algbw  busbw  #wrong  time  algbw  busbw  #wrong
  1073741824  268435456  float  sum  -1  2950.0  363.98  545.97  0  2950.0  363.98  545.97  0
"""


def test_one_gb200_host_has_no_such_fact_and_the_option_is_said_unused(tmp_path: Path) -> None:
    """4 GB200 of one tray: nothing crosses hosts, so no fact, the box is the NVL72 rack as before, and
    --nvlink-domain is not silently taken: a warning says it does not apply."""
    path = tmp_path / "gb200_one_tray.txt"
    path.write_text(ONE_HOST)
    plain = validate_file(path)
    assert "nvlink_domain" not in plain.inference.facts and _boxes(plain) == [72]
    given = validate_file(path, options=RunOptions(nvlink_domain="separate"))
    assert [r.predicted_time_s for r in given.rows] == [r.predicted_time_s for r in plain.rows]
    assert any("--nvlink-domain separate is not used" in w for w in given.inference.warnings)


NVL72_PAGES = {
    # the pages name one rack (27), two racks of 16 hosts (28, 29) and CoreWeave's GB200 rack
    OUTSIDE / "27_GB300-OCI-NVL72-16node-1rack-allreduce.txt": (RunOptions(), [72]),
    OUTSIDE / "28_GB300-OCI-NVL72-32node-2rack-allreduce.txt": (
        RunOptions(nic="roce_400g", nics_per_node=8),
        [72, 72],
    ),
    OUTSIDE / "29_GB300-OCI-32host-2rack-alltoall.txt": (
        RunOptions(nic="roce_400g", nics_per_node=8),
        [72, 72],
    ),
    ROOT / "tests/data/nccl-tests/GB200-NVL72-CoreWeave_all_reduce_72gpu_1rack_1.txt": (RunOptions(), [72]),
}


@pytest.mark.parametrize("path", list(NVL72_PAGES), ids=lambda p: p.name[:28])
def test_rack_logs_keep_their_racks_and_figures_and_wait_for_the_option(path: Path) -> None:
    """Multi-host NVL72 runs without NCCL's lines: the same racks and predicted times with the domain
    assumed or given as shared (their pages say racks); assumed, the verdict is withheld, given, it is
    judged."""
    options, racks = NVL72_PAGES[path]
    assumed = validate_file(path, options=options)
    given = validate_file(path, options=replace(options, nvlink_domain="shared"))
    assert _boxes(assumed) == _boxes(given) == racks
    assert [r.predicted_time_s for r in given.rows] == [r.predicted_time_s for r in assumed.rows]
    assert assumed.inference.facts["nvlink_domain"].assumed
    assert assumed.verdict().startswith("cannot judge") and "--nvlink-domain" in assumed.verdict()
    assert not given.verdict().startswith("cannot judge")


def test_nccls_node_count_sets_the_racks_of_a_larger_run(tmp_path: Path) -> None:
    """128 GB300 ranks on 32 hosts (the two-rack all-to-all of test_nvl72_racks): NCCL's 'nNodes 4' says
    the hosts fill 4 NVLink domains (NVL72 partitions of 8 hosts), so the machine is 4 racks, not the
    fewest 2; a clique of 64 of the 128 ranks says 2 domains."""
    from tests.test_nvl72_racks import LOG, OPTIONS

    for line, racks in (
        ("h:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 128 nNodes 4 localRanks 32 localRank 0 MNNVL 1", 4),
        ("h:1:1 [0] NCCL INFO MNNVL 1 cliqueId 5e2 cliqueSize 64 cliqueRank 0", 2),
    ):
        path = tmp_path / f"gb300_{racks}.txt"
        path.write_text(LOG.replace("NCCL version", f"{line}\nNCCL version"))
        report = validate_file(path, options=OPTIONS)
        fact = report.inference.facts["nvlink_domain"]
        assert (fact.value, fact.assumed) == ("shared", False)
        assert _boxes(report) == [72] * racks


def test_calibrate_takes_the_option_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``commsim calibrate`` reads logs as ``validate`` does: with ``--nvlink-domain separate`` the machine
    it calibrates and writes is two hosts of one 4-GPU tray each, joined by their NICs."""
    from commsim.topology import load_topology_file

    output = tmp_path / "a4x_max.yaml"
    args = ["calibrate", str(A4X_MAX), "-o", str(output), "--nvlink-domain", "separate"]
    code, _, _ = run_cli([*args, "--nic", "roce_800g", "--nics-per-node", "4"], capsys)
    assert code == 0
    machine = load_topology_file(output)
    assert sorted(len(gpus) for gpus in machine.boxes.values()) == [4, 4]
    assert len(machine.devices_of_kind("nic")) == 8
