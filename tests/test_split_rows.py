"""A result row split by interleaved lines is rejoined; pieces that do not fit stay an error.

The table is three rows of RTX2080Ti-PCIe-PIX-noP2P_broadcast_2gpu_1.txt under
its 13-column header (size count type redop root, then time algbw busbw #wrong
out-of-place and in-place). Line numbers below count from the first line of
``HEAD`` (the command is line 1, the column header line 4).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from commsim.calibrate.parser import parse_nccl_tests
from commsim.errors import ParseError

ROOT = Path(__file__).resolve().parent.parent
GB = 1e9

HEAD = """./build/broadcast_perf -b 8 -e 128 -f 4 -g 2
# nThread 1 nGpus 2 minBytes 8 maxBytes 128 step: 4(factor) warmup iters: 5 iters: 20 agg iters: 1
#  Rank  0 Group  0 Pid  31771 on box device  0 [0000:b4:00] NVIDIA GeForce RTX 2080 Ti
#  size  count  type  redop  root  time  algbw  busbw #wrong  time  algbw  busbw #wrong
#   (B) (elements)                 (us) (GB/s) (GB/s)         (us) (GB/s) (GB/s)
"""
ROW_8 = "     8      2  float  none  0  11.65  0.00  0.00  0  11.37  0.00  0.00  0"
ROW_32 = "    32      8  float  none  0  11.43  0.00  0.00  0  11.34  0.00  0.00  0"
ROW_128 = "   128     32  float  none  0  11.66  0.01  0.01  0  11.32  0.01  0.01  0"
INFO = "box:31771:31790 [0] NCCL INFO Connected all trees"
FOOT = "# Avg bus bandwidth    : 0.00333\n"


def log_of(*lines: str) -> str:
    return HEAD + "\n".join(lines) + "\n" + FOOT


def test_a_row_split_by_info_lines_is_rejoined() -> None:
    """Row 32 B cut after its root field (5 of 13 fields, line 7); two INFO lines (8, 9); its 8 timing
    fields on line 10. The joined row reads as the intact one: 11.43 us out of place, 11.34 us in place."""
    cut = ROW_32.index("11.43")
    head, tail = ROW_32[:cut], ROW_32[cut:]
    assert len(head.split()) == 5 and len(tail.split()) == 8
    log = parse_nccl_tests(log_of(ROW_8, head, INFO, INFO, tail, ROW_128))
    assert [row.nbytes for row in log.rows] == [8, 32, 128]
    assert [row.line for row in log.rows] == [6, 7, 11]
    joined = log.rows[1]
    assert joined.count == 8 and joined.dtype == "float" and joined.root == 0
    assert joined.oop_time_s == pytest.approx(11.43e-6) and joined.ip_time_s == pytest.approx(11.34e-6)
    assert joined.ip_algbw_Bps == pytest.approx(0.0)
    assert "lines 7, 10: one result row split by other lines was rejoined" in " ".join(log.warnings)
    assert not any("truncated" in warning for warning in log.warnings)


def test_a_row_in_three_pieces_with_other_text_between() -> None:
    """Row 128 B in pieces of 6, 4 and 3 fields (lines 8, 10, 12) with an MPI help line and an INFO line
    between them: one row of 13 fields, in-place busbw 0.01 GB/s."""
    fields = ROW_128.split()
    pieces = [" ".join(fields[:6]), " ".join(fields[6:10]), " ".join(fields[10:])]
    help_line = "[host:01234] 1 more process has sent help message help-mpi-btl-openib.txt"
    log = parse_nccl_tests(log_of(ROW_8, ROW_32, pieces[0], help_line, pieces[1], INFO, pieces[2]))
    assert [row.nbytes for row in log.rows] == [8, 32, 128]
    assert log.rows[2].line == 8
    assert log.rows[2].oop_time_s == pytest.approx(11.66e-6)
    assert log.rows[2].ip_busbw_Bps == pytest.approx(0.01 * GB)
    assert "lines 8, 10, 12: one result row split" in " ".join(log.warnings)


def test_a_two_field_start_is_rejoined() -> None:
    """'32 8' (2 fields, line 7) is too short to look like a row alone; its 11 fields follow on line 9."""
    fields = ROW_32.split()
    log = parse_nccl_tests(log_of(ROW_8, " ".join(fields[:2]), INFO, " ".join(fields[2:]), ROW_128))
    assert [row.nbytes for row in log.rows] == [8, 32, 128]
    assert log.rows[1].dtype == "float" and log.rows[1].ip_time_s == pytest.approx(11.34e-6)


def test_a_short_line_that_nothing_completes_is_still_other_text() -> None:
    """'8 processes' fits no column after its first; '42 7' (line 7) fits size and count, but a whole row
    follows it: both are skipped as other text, as before rows were rejoined."""
    log = parse_nccl_tests(log_of(ROW_8, "42 7", ROW_32, "8 processes", ROW_128))
    assert [row.nbytes for row in log.rows] == [8, 32, 128]
    assert any(w.startswith("lines 7, 9: not result rows inside the table") for w in log.warnings)


def test_pieces_that_do_not_fit_stay_an_error() -> None:
    """Row 32 B cut after 5 fields (line 7), then 7 timing fields (line 8): 12 of 13, then a whole row:
    the typed error names line 7 and the 13 fields the header at line 4 announces."""
    fields = ROW_32.split()
    text = log_of(ROW_8, " ".join(fields[:5]), " ".join(fields[5:12]), ROW_128)
    with pytest.raises(ParseError, match="announces 13") as info:
        parse_nccl_tests(text, source="cut.txt")
    assert info.value.line == 7 and "cut.txt:7:" in str(info.value)


def test_a_tail_of_the_wrong_kind_is_not_joined() -> None:
    """After the 5-field start of row 32 B (line 7) comes an 8-field line whose third field is 'float':
    not timing fields, so nothing is joined and the start is reported."""
    fields = ROW_32.split()
    wrong = "4194304 1048576 float 11.0 0.0 0.0 0 1.0"
    with pytest.raises(ParseError, match="has 5 fields") as info:
        parse_nccl_tests(log_of(ROW_8, " ".join(fields[:5]), wrong, ROW_128), source="w.txt")
    assert info.value.line == 7


def test_a_split_inside_a_number_is_not_rejoined() -> None:
    """'11.4' | '3 0.00 ...': only whole fields are joined; the 6-field start (line 7) stays an error."""
    cut = ROW_32.index("11.43") + 4
    head, tail = ROW_32[:cut], ROW_32[cut:]
    assert head.split()[-1] == "11.4" and tail.split()[0] == "3"
    with pytest.raises(ParseError, match="has 6 fields"):
        parse_nccl_tests(log_of(ROW_8, head, INFO, tail, ROW_128))


def test_a_tail_without_its_start_is_skipped() -> None:
    """Line 6 is the 8 timing fields of a row whose start is missing (its first field 579.3 is no size,
    as in a public H200 log); it is skipped with a warning and the 3 whole rows are read."""
    tail = "    579.3    0.00    0.00      0    137.0    0.00    0.00      0"
    log = parse_nccl_tests(log_of(tail, ROW_8, ROW_32, ROW_128))
    assert [row.nbytes for row in log.rows] == [8, 32, 128]
    assert any(w.startswith("line 6: a fragment of a result row (8 fields") for w in log.warnings)


def test_the_truncated_last_row_is_still_dropped() -> None:
    """Row 128 B cut after 7 fields is the table's last (line 8): dropped with the old warning."""
    log = parse_nccl_tests(log_of(ROW_8, ROW_32, " ".join(ROW_128.split()[:7])))
    assert [row.nbytes for row in log.rows] == [8, 32]
    assert "line 8: the last row of the table is truncated (7 of 13 fields) and was dropped" in log.warnings


def test_validate_refuses_unfitting_pieces_with_exit_2(tmp_path: Path) -> None:
    """The CLI turns the ParseError into exit 2 with file:line, no traceback."""
    fields = ROW_32.split()
    path = tmp_path / "cut.txt"
    path.write_text(log_of(ROW_8, " ".join(fields[:5]), " ".join(fields[5:12]), ROW_128), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "commsim.cli", "validate", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 2
    assert "cut.txt:7:" in proc.stderr and "Traceback" not in proc.stderr
