"""Wording of two inference messages (review 2, item 9).

- ``--nvlink-domain`` unused: the warning named ``--topology`` even when ``--calibrated`` (or
  ``--nccl-topo``) gave the machine.
- The racks of an NVL72 run: "assumed: the log names hosts, not racks" even when NCCL's ``nNodes``
  counted the racks; the count is then cited.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_bad_inputs import run_cli
from tests.test_nvl72_racks import LOG, OPTIONS

DATA = Path(__file__).parent / "data" / "nccl-tests"
TOPOLOGIES = Path(__file__).parent.parent / "topologies"


@pytest.mark.parametrize(
    ("option", "value"),
    [("--calibrated", TOPOLOGIES / "hgx_h100.yaml"), ("--topology", TOPOLOGIES / "hgx_h100.yaml")],
)
def test_unused_nvlink_domain_names_the_option_that_gave_the_machine(
    option: str, value: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The 8 x H100 HGX development log with a machine file and --nvlink-domain separate: the
    warning names the option that gave the machine (it said --topology for --calibrated). A
    calibrated file carries nccl: parameters (review27 S7), so that case gets one."""
    if option == "--calibrated":
        (tmp_path / "c.yaml").write_text(value.read_text() + "nccl:\n  launch_s: 5.0e-06\n")
        value = tmp_path / "c.yaml"
    log = DATA / "H100-SXM-HGX_all_gather_8gpu_1.txt"
    code, out, _ = run_cli(["validate", str(log), option, str(value), "--nvlink-domain", "separate"], capsys)
    assert code == 0
    assert (
        f"warning: --nvlink-domain separate is not used: the machine given with {option} says how its "
        "hosts are joined"
    ) in " ".join(out.split())


# NCCL's communicator line (the form of src/init.cc, as in tests/data/outside/22's
# "comm 0xb94bf80 rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 MNNVL 0") for 128 ranks on 2 NVL72
# domains: NCCL counts the hosts of one NVLink domain as one node.
COMM = (
    "GPU-5705:588359:588359 [0] NCCL INFO comm 0x55d0c0a0 rank 0 nRanks 128 nNodes 2 localRanks 64 "
    "localRank 0 MNNVL 1\n"
)


def test_racks_counted_by_nccl_are_cited(tmp_path: Path) -> None:
    """32 GB300 hosts, NCCL counting 2 nodes: the racks fact (2 x 16 hosts) cites that line and is not
    assumed; without the line it stays assumed (tests/test_nvl72_racks.py)."""
    from commsim.calibrate.validate import validate_file

    path = tmp_path / "alltoall_gb300.txt"
    path.write_text(LOG.replace("NCCL version 2.28.7+cuda13.0\n", "NCCL version 2.28.7+cuda13.0\n" + COMM))
    racks = validate_file(path, options=OPTIONS).inference.facts["racks"]
    assert racks.value == "2 x 16 hosts" and not racks.assumed
    assert racks.evidence[0].line == 8 and racks.evidence[0].value == 2
    assert "16 per rack" in racks.note and "NCCL counts 2 node(s) for 32 hosts" in racks.note
