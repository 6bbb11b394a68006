"""``validate --nccl-topo``: the machine NCCL itself detected, read from its topology dump."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "h100-1gpu"


def _validate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "commsim.cli", "validate", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )


def test_validate_uses_nccls_topology_dump() -> None:
    """The shared H100 machine's dump (one GPU on PCIe Gen5, no NIC) becomes the modelled machine; the
    one-rank all-reduce is then priced as a local copy, as without the dump."""
    proc = _validate(str(DATA / "all_reduce_1gpu.txt"), "--nccl-topo", str(DATA / "nccl_topo.xml"), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["topology"]["description"].startswith("imported from an NCCL topology dump")
    assert data["ranks"] == 1
    assert {row["algorithm"] for row in data["rows"]} == {"local_copy"}


def test_nccl_topo_and_topology_together_are_refused() -> None:
    """Two descriptions of one machine: exit 2 naming both options, nothing printed to stdout."""
    proc = _validate(
        str(DATA / "all_reduce_1gpu.txt"),
        "--nccl-topo",
        str(DATA / "nccl_topo.xml"),
        "--topology",
        "hgx_h100",
    )
    assert proc.returncode == 2
    assert "--topology and --nccl-topo" in proc.stderr and proc.stdout == ""


def test_a_broken_dump_is_refused_at_its_line(tmp_path: Path) -> None:
    """An XML file that is no NCCL dump: exit 2 with the file and line, no traceback."""
    bad = tmp_path / "system.xml"
    bad.write_text('<?xml version="1.0"?>\n<machine>\n</machine>\n', encoding="utf-8")
    proc = _validate(str(DATA / "all_reduce_1gpu.txt"), "--nccl-topo", str(bad))
    assert proc.returncode == 2
    assert "system.xml" in proc.stderr and "Traceback" not in proc.stderr
