"""Public nccl-tests logs of out-of-sample probe 7 (notes/outside7) the reader got wrong.

Each test holds a real excerpt inline (the probe's file number in the docstring)
and asserts what nccl-tests' own source says the text means.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from commsim.calibrate.parser import parse_nccl_tests
from commsim.calibrate.validate import validate_file
from commsim.errors import ParseError

# 112: aistabci/abci2.0benchmark bcast/inter_anode/job04 (NCCL 2.8.4, nccl-tests 0b30de5), 4 ABCI A-nodes
# x 8 A100: the run header, the whole device list and 7 of its 24 rows as printed (trailing blanks cut).
# Its broadcast.cu prints its own header, 'size count type root' without a redop column.
OLD_BROADCAST = """\
# nThread 1 nGpus 1 minBytes 4 maxBytes 33554432 step: 2(factor) warmup iters: 5 iters: 100 validation: 1
#
# Using devices
#   Rank  0 Pid 1762917 on      a0015 device  0 [0x27] A100-SXM4-40GB
#   Rank  1 Pid 1762918 on      a0015 device  1 [0x2a] A100-SXM4-40GB
#   Rank  2 Pid 1762919 on      a0015 device  2 [0x51] A100-SXM4-40GB
#   Rank  3 Pid 1762920 on      a0015 device  3 [0x57] A100-SXM4-40GB
#   Rank  4 Pid 1762921 on      a0015 device  4 [0x9e] A100-SXM4-40GB
#   Rank  5 Pid 1762922 on      a0015 device  5 [0xa4] A100-SXM4-40GB
#   Rank  6 Pid 1762923 on      a0015 device  6 [0xc7] A100-SXM4-40GB
#   Rank  7 Pid 1762924 on      a0015 device  7 [0xca] A100-SXM4-40GB
#   Rank  8 Pid 3174648 on      a0016 device  0 [0x27] A100-SXM4-40GB
#   Rank  9 Pid 3174649 on      a0016 device  1 [0x2a] A100-SXM4-40GB
#   Rank 10 Pid 3174650 on      a0016 device  2 [0x51] A100-SXM4-40GB
#   Rank 11 Pid 3174651 on      a0016 device  3 [0x57] A100-SXM4-40GB
#   Rank 12 Pid 3174652 on      a0016 device  4 [0x9e] A100-SXM4-40GB
#   Rank 13 Pid 3174653 on      a0016 device  5 [0xa4] A100-SXM4-40GB
#   Rank 14 Pid 3174654 on      a0016 device  6 [0xc7] A100-SXM4-40GB
#   Rank 15 Pid 3174655 on      a0016 device  7 [0xca] A100-SXM4-40GB
#   Rank 16 Pid 1872205 on      a0017 device  0 [0x27] A100-SXM4-40GB
#   Rank 17 Pid 1872206 on      a0017 device  1 [0x2a] A100-SXM4-40GB
#   Rank 18 Pid 1872207 on      a0017 device  2 [0x51] A100-SXM4-40GB
#   Rank 19 Pid 1872208 on      a0017 device  3 [0x57] A100-SXM4-40GB
#   Rank 20 Pid 1872209 on      a0017 device  4 [0x9e] A100-SXM4-40GB
#   Rank 21 Pid 1872210 on      a0017 device  5 [0xa4] A100-SXM4-40GB
#   Rank 22 Pid 1872211 on      a0017 device  6 [0xc7] A100-SXM4-40GB
#   Rank 23 Pid 1872212 on      a0017 device  7 [0xca] A100-SXM4-40GB
#   Rank 24 Pid 1664487 on      a0018 device  0 [0x27] A100-SXM4-40GB
#   Rank 25 Pid 1664488 on      a0018 device  1 [0x2a] A100-SXM4-40GB
#   Rank 26 Pid 1664489 on      a0018 device  2 [0x51] A100-SXM4-40GB
#   Rank 27 Pid 1664490 on      a0018 device  3 [0x57] A100-SXM4-40GB
#   Rank 28 Pid 1664491 on      a0018 device  4 [0x9e] A100-SXM4-40GB
#   Rank 29 Pid 1664492 on      a0018 device  5 [0xa4] A100-SXM4-40GB
#   Rank 30 Pid 1664493 on      a0018 device  6 [0xc7] A100-SXM4-40GB
#   Rank 31 Pid 1664494 on      a0018 device  7 [0xca] A100-SXM4-40GB
#
#                                                     out-of-place                       in-place
#       size         count    type    root     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           4             1   float       0    12.07    0.00    0.00  0e+00     7.40    0.00    0.00  0e+00
        2048           512   float       0     9.14    0.22    0.22  0e+00     8.30    0.25    0.25  0e+00
     2097152        524288   float       0    278.5    7.53    7.53  0e+00    272.5    7.70    7.70  0e+00
     4194304       1048576   float       0    474.2    8.85    8.85  0e+00    469.4    8.94    8.94  0e+00
     8388608       2097152   float       0    673.7   12.45   12.45  0e+00    701.5   11.96   11.96  0e+00
    16777216       4194304   float       0    961.2   17.45   17.45  0e+00    962.0   17.44   17.44  0e+00
    33554432       8388608   float       0   1520.6   22.07   22.07  0e+00   1522.2   22.04   22.04  0e+00
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 3.652
#
"""


def test_an_old_header_without_a_redop_column_is_broadcast_not_reduce() -> None:
    """112: busbw = algbw on every row (22.07 = 22.07 at 32 MiB) and root 0 fit broadcast and reduce
    (factor 1, rooted); reduce_perf prints a redop column in every nccl-tests format, so the header of
    line 38 without one leaves broadcast. The evidence is the table, its first row line 40."""
    log = parse_nccl_tests(OLD_BROADCAST, "job04.sh.7194647.nccl")
    assert (log.collective, log.n_ranks) == ("broadcast", 32)
    (evidence,) = log.collective_evidence
    assert (evidence.source, evidence.value, evidence.line, evidence.text) == (
        "result table",
        "broadcast",
        40,
        "busbw/algbw 1 with 32 ranks (device list), root 0, no redop column in the old-format column "
        "header (line 38): only broadcast fits",
    )
    assert not any("collective unknown" in w for w in log.warnings)


def test_the_same_rows_under_a_reduce_header_are_reduce() -> None:
    """112's rows under old reduce.cu's header 'size count type redop root' (each row with 'sum'):
    factor 1 and root 0 with a reduction leave reduce alone; the header rules nothing out."""
    text = OLD_BROADCAST.replace("type    root", "type   redop    root").replace(
        "float       0", "float  sum  0"
    )
    log = parse_nccl_tests(text, "job04.sh.7194647.nccl")
    assert log.collective == "reduce"
    assert log.collective_evidence[0].text == (
        "busbw/algbw 1 with 32 ranks (device list), redop sum, root 0: only reduce fits"
    )


def test_a_wrong_count_header_without_a_redop_column_still_leaves_both(tmp_path: Path) -> None:
    """The same table with '#wrong' columns (the common.cu header, which prints redop and root for every
    test): a missing redop column there is an edit, not evidence, so broadcast and reduce both fit and
    validate refuses naming both."""
    text = OLD_BROADCAST.replace("busbw  error", "busbw #wrong").replace("0e+00", "    0")
    path = tmp_path / "job04.txt"
    path.write_text(text)
    with pytest.raises(
        ParseError,
        match=r"its result table \(line 40\): busbw/algbw 1 with 32 ranks \(device list\), root 0: "
        r"broadcast and reduce fit; give --collective broadcast or --collective reduce$",
    ):
        validate_file(path)


# 122: boeschf/nccl-benchmark-on-alps-2025 job-n-00256-N-0064.txt, the repository's extract of a 64-node
# GH200 table: its header and units line lost their '#'. The header and units line and the first 2 rows.
NO_HASH = """\
        size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
         (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2     float     sum      -1    78.22    0.00    0.00      0    79.05    0.00    0.00      0
          16             4     float     sum      -1    118.9    0.00    0.00      0    85.48    0.00    0.00      0
"""  # noqa: E501


def test_a_units_line_without_its_hash_is_the_headers_not_a_warning() -> None:
    """122: '(B) (elements) ... (us) (GB/s)' on line 2 is nccl-tests' units line (no '#' in the extract):
    no warning; both rows read (lines 3, 4), 78.22 and 118.9 us out of place."""
    log = parse_nccl_tests(NO_HASH, collective="all_reduce", n_ranks=256)
    assert [(row.line, row.nbytes) for row in log.rows] == [(3, 8), (4, 16)]
    assert [row.oop_time_s for row in log.rows] == pytest.approx([78.22e-6, 118.9e-6])
    assert not any("not result rows" in w for w in log.warnings)


# 115: an AWS-Tip post, all_reduce_perf -np 1 on one A10G with Open MPI --tag-output, the page's excerpt
# without a footer: its header, 2 first and 2 last rows, and NCCL's teardown line after the last row.
ONE_RANK = """\
[1,0]<stdout>:#                                                              out-of-place                       in-place
[1,0]<stdout>:#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
[1,0]<stdout>:#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
[1,0]<stdout>:           4             1     float     sum      -1     3.54    0.00    0.00      0     0.11    0.03    0.00      0
[1,0]<stdout>:           8             2     float     sum      -1     3.51    0.00    0.00      0     0.11    0.07    0.00      0
[1,0]<stdout>:  1073741824     268435456     float     sum      -1   4376.7  245.33    0.00      0     0.12  9240463.20    0.00      0
[1,0]<stdout>:  2147483648     536870912     float     sum      -1   8741.9  245.65    0.00      0     0.12  18401745.06    0.00      0
[1,0]<stdout>:test-nccl-worker-0:21:21 [0] NCCL INFO comm 0x55c4c398fed0 rank 0 nranks 1 cudaDev 0 busId 1e0 - Destroy COMPLETE
"""  # noqa: E501


def test_nccl_destroy_line_after_the_last_row_is_no_warning() -> None:
    """115: line 8 is NCCL's 'comm 0x... - Destroy COMPLETE' (ncclCommDestroy, which nccl-tests calls
    after the last size and before its footer): the end of the run, not text inside the table. 4 rows
    (lines 4-7), the last 2 GiB in 8741.9 us, and no warning about skipped lines."""
    log = parse_nccl_tests(ONE_RANK, collective="all_reduce", n_ranks=1)
    assert [(row.line, row.nbytes) for row in log.rows] == [(4, 4), (5, 8), (6, 1073741824), (7, 2147483648)]
    assert log.rows[-1].oop_time_s == pytest.approx(8741.9e-6)
    assert not any("not result rows" in w for w in log.warnings)


def test_the_same_line_between_rows_is_still_warned_about() -> None:
    """115's Destroy line moved between its rows 2 and 3 (line 6): inside the table, so it is skipped
    with the warning naming line 6 and quoting it."""
    lines = ONE_RANK.splitlines()
    text = "\n".join([*lines[:5], lines[7], *lines[5:7]]) + "\n"
    log = parse_nccl_tests(text, collective="all_reduce", n_ranks=1)
    assert len(log.rows) == 4
    assert [w for w in log.warnings if "not result rows" in w] == [
        "line 6: not result rows inside the table (skipped); the first reads "
        "'test-nccl-worker-0:21:21 [0] NCCL INFO comm 0x55c4c398fed0 rank 0 nranks 1 cudaD'"
    ]


# 60 (tests/data/outside): Open MPI's help-aggregation notes, as R6KD's log prints them.
HELP = (
    "[R6KD-CX8aaS-GPU-11:03421] 15 more processes have sent help message help-mca-var.txt / "
    "mutually-exclusive-vars\n"
    '[R6KD-CX8aaS-GPU-11:03421] Set MCA parameter "orte_base_help_aggregate" to 0 to see all help / '
    "error messages\n"
)
# 119: the end of a failed CSCS Alps run, srun's report that every task exited with code 1.
SRUN_FAILED = """\
srun: error: nid005409: tasks 4-7: Exited with exit code 1
srun: Terminating StepId=153503.0
"""


def test_open_mpi_help_notes_after_the_last_row_are_no_warning() -> None:
    """60's two help-aggregation lines placed after 115's last row (a footer-less excerpt): the
    launcher's routine end-of-run text, no warning."""
    log = parse_nccl_tests(ONE_RANK + HELP, collective="all_reduce", n_ranks=1)
    assert not any("not result rows" in w for w in log.warnings)


def test_a_launcher_failure_after_the_last_row_stays_a_warning() -> None:
    """119's srun lines after 115's last row and Destroy line (lines 9, 10): a failure report, not
    routine teardown, so the warning names both lines and quotes the first."""
    log = parse_nccl_tests(ONE_RANK + SRUN_FAILED, collective="all_reduce", n_ranks=1)
    assert [w for w in log.warnings if "not result rows" in w] == [
        "lines 9, 10: not result rows inside the table (skipped); the first reads "
        "'srun: error: nid005409: tasks 4-7: Exited with exit code 1'"
    ]
