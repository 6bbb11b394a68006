"""NCCL path-level settings: numbers and names that mean the same level, and a variable set twice.

NCCL reads ``NCCL_NET_GDR_LEVEL`` (and ``NCCL_P2P_LEVEL``) as a name (``LOC``,
``PIX``, ``PXB``, ``PHB``, ``SYS`` ...) or as an old-style number mapped by
``levelsOldToNew = {LOC, PIX, PXB, PHB, SYS, SYS}`` in NCCL
``src/graph/paths.cc`` (``ncclGetLevel``); a number above 5 is SYS. Its INFO
line prints the name. mpirun applies ``-x`` options in order, so of two
``-x NCCL_NET_GDR_LEVEL=...`` on one command the last one is what NCCL gets.
The command is abridged from an nccl-tests issue (#321, H20 VMs over RoCE).
"""

from __future__ import annotations

import pytest

from commsim.calibrate.settings import read_settings

COMMAND = (
    "mpirun -np 4 -H 30.159.184.2:2,30.159.184.22:2 -x NCCL_IB_GID_INDEX=3 -x NCCL_NET_GDR_LEVEL=2 "
    "-x NCCL_IB_TC=160 -x NCCL_NET_GDR_LEVEL=1 ./build/alltoall_perf -b 1M -e 16G -f 2 -g 1"
)
INFO = "vm-host38:33958:33999 [1] NCCL INFO NCCL_NET_GDR_LEVEL set by environment to {}"


def test_last_of_two_settings_on_one_command_wins_without_a_conflict() -> None:
    settings = read_settings([COMMAND, "# nThread 1 nGpus 1"], 4)
    seen = settings.env["NCCL_NET_GDR_LEVEL"]
    assert (seen.value, seen.source, seen.line) == ("1", "mpirun -x", 4)
    assert [e.value for e in settings.evidence["NCCL_NET_GDR_LEVEL"]] == ["1"]
    assert settings.warnings == ()


@pytest.mark.parametrize(
    ("number", "name"),
    [("0", "LOC"), ("1", "PIX"), ("2", "PXB"), ("3", "PHB"), ("4", "SYS"), ("5", "SYS"), ("7", "SYS")],
)
def test_a_numeric_level_agrees_with_its_name(number: str, name: str) -> None:
    settings = read_settings(
        [f"mpirun -np 2 -x NCCL_NET_GDR_LEVEL={number} ./all_reduce_perf", INFO.format(name)]
    )
    assert settings.env["NCCL_NET_GDR_LEVEL"].value == name  # the INFO line is the more trusted
    assert settings.warnings == ()


def test_a_level_that_differs_is_still_a_conflict_naming_both_lines() -> None:
    """Last -x is 1 (PIX); the INFO line says PXB (2): they differ, and the INFO line is used."""
    settings = read_settings([COMMAND, INFO.format("PXB")], 4)
    assert settings.env["NCCL_NET_GDR_LEVEL"].value == "PXB"
    assert settings.warnings == (
        "NCCL_NET_GDR_LEVEL: mpirun -x (line 4) says '1' but NCCL INFO line (line 5) says 'PXB'; using 'PXB'",
    )


def test_p2p_level_numbers_are_levels_too() -> None:
    settings = read_settings(
        ["export NCCL_P2P_LEVEL=4", "h:1:1 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to SYS"]
    )
    assert settings.warnings == ()


def test_other_settings_still_compare_as_text() -> None:
    """NCCL_ALGO is no level: '1' and 'PIX' rules do not apply, Ring vs Tree is a conflict."""
    settings = read_settings(
        ["export NCCL_ALGO=Tree", "h:1:1 [0] NCCL INFO NCCL_ALGO set by environment to Ring"]
    )
    assert len(settings.warnings) == 1 and settings.env["NCCL_ALGO"].value == "Ring"


@pytest.mark.parametrize(
    ("value", "level"),
    [
        ("0x2", "PXB"),
        ("2abc", "PXB"),
        ("010", "SYS"),
        ("08", "LOC"),
        ("9" * 5000, "SYS"),
        ("²", "²"),
        ("pix", "PIX"),
    ],
)
def test_path_levels_are_read_as_nccl_reads_them_and_never_crash(value: str, level: str) -> None:
    """NCCL reads a value starting with an ASCII digit with ``strtol(value, NULL, 0)``: ``0x2`` is 2
    (PXB), ``2abc`` is 2, ``010`` is octal 8 (capped to SYS), ``08`` stops at the 8 (0, LOC), a 5000-digit
    number is capped (SYS); anything else is a name, compared in upper case (``²`` is no digit to C)."""
    from commsim.calibrate.settings_choice import _path_level

    assert _path_level(value) == level
