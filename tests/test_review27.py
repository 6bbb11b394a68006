"""Findings of review 27 (bad and unusual inputs; /work/notes/review27/REPORT.md).

Each test states the rule it holds: bad input is refused with exit 2 and a
message that says what was wrong, where, and what would be valid; nothing
is silently ignored or silently misread.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_bad_inputs_more import refused

SWEEP = (
    "name: small\ncollective: all_reduce\ngrid:\n  - product:\n"
    "      topology: [pcie_4gpu_switch]\n      algorithm: [ring]\n      size: [1 MB]\n"
)


# -- T1: a malformed Dask scheduler address --------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("notaurl", "missing port number"),
        ("tcp://[::1", "invalid address"),
        ("foo://x:1", "unknown address scheme"),
    ],
)
def test_malformed_scheduler_address_is_refused(
    address: str, why: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A --scheduler that is not a Dask address is refused (exit 2) with the valid form, not a ValueError."""
    pytest.importorskip("distributed")
    (tmp_path / "s.yaml").write_text(SWEEP)
    args = ["sweep", str(tmp_path / "s.yaml"), "-o", str(tmp_path / "o.csv"), "--scheduler", address]
    refused(args, capsys, f"--scheduler {address!r} is not a Dask scheduler address", why, "tcp://HOST:PORT")
    assert not (tmp_path / "o.csv").exists()


def test_malformed_scheduler_variable_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stale $DASK_SCHEDULER_ADDRESS is named as the culprit: the user gave no --scheduler."""
    pytest.importorskip("distributed")
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", "garbage")
    (tmp_path / "s.yaml").write_text(SWEEP)
    args = ["sweep", str(tmp_path / "s.yaml"), "-o", str(tmp_path / "o.csv")]
    refused(
        args, capsys, "$DASK_SCHEDULER_ADDRESS 'garbage' is not a Dask scheduler address", "tcp://HOST:PORT"
    )
