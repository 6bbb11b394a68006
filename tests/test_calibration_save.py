"""Calibration.save writes a calibrated topology whole or not at all (noticed by the log-fuzzing helper)."""

from __future__ import annotations

from pathlib import Path

import pytest

from commsim.calibrate.fit import fit
from commsim.calibrate.validate import validate_log
from commsim.nccl.params import NcclParams
from commsim.topology import get_topology
from tests.test_calibrate import synthetic_log


def test_a_calibration_that_cannot_be_written_leaves_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Calibration.save writes whole or not at all: text that cannot be encoded (a lone surrogate) fails
    before the file is touched, so the calibrated topology already there stays as it was (Path.write_text
    truncated it first and left it empty)."""
    topo = get_topology("cluster", box="hgx_h100", nodes=2, nic="ib_ndr")
    log = synthetic_log(topo, NcclParams(), collective="all_gather", sizes=[2**26, 2**30], seed=1)
    calibration = fit([validate_log(log, "", topology=topo)], fit=["ring_channel_net.ib_ndr"])
    target = tmp_path / "cal.yaml"
    target.write_text("old calibration\n")
    monkeypatch.setattr(type(calibration), "to_topology_yaml", lambda self, topology: "nccl: \ud800\n")
    with pytest.raises(UnicodeEncodeError):
        calibration.save(target, topo)
    assert target.read_text() == "old calibration\n"
    assert [p.name for p in tmp_path.iterdir()] == ["cal.yaml"]
