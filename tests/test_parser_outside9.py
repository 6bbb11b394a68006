"""Public nccl-tests logs of out-of-sample probe 9 (notes/outside9) the reader got wrong.

Each test holds a real excerpt inline (the probe's file number in the docstring)
and asserts what nccl-tests' own source says the text means.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from commsim.calibrate.inference import RunOptions
from commsim.calibrate.parser import parse_nccl_tests
from commsim.calibrate.parser_command import ONE_PROCESS
from commsim.calibrate.parser_lines import clean_text
from commsim.calibrate.validate import validate_file
from commsim.errors import ParseError

US = 1e-6

# 152: GoogleCloudPlatform/cluster-toolkit PR #3644, a comment by annuay-google (GKE A3, 16 ranks,
# all_gather_perf): the excerpt starts inside the code block, below the column header.
A3_ROWS = """\
```
     2097152         32768     float    none      -1    308.9    6.79    6.36      0    316.7    6.62    6.21      0
     4194304         65536     float    none      -1    330.9   12.68   11.88      0    325.5   12.89   12.08      0
     8388608        131072     float    none      -1    356.3   23.55   22.07      0    353.1   23.76   22.27      0
  1073741824      16777216     float    none      -1   5552.6  193.38  181.29      0   5532.8  194.07  181.94      0
  2147483648      33554432     float    none      -1    10854  197.85  185.48      0    10835  198.19  185.80      0
"""  # noqa: E501

# 167: NVIDIA/nccl issue #644 (JF-D): an alltoall table of 2021 without redop and root columns
# (nccl-tests printed them as blanks), quoted from its 512 KiB row on, with its footer.
OLD_ALLTOALL_ROWS = """\
      524288         16384     float    109.3    4.80    4.20  0e+00    110.1    4.76    4.17  0e+00
     1048576         32768     float    162.6    6.45    5.64  0e+00    165.3    6.34    5.55  0e+00
  1073741824      33554432     float   172290    6.23    5.45  0e+00   177817    6.04    5.28  0e+00
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 2.34598
#
"""

# outside/124 (probe 7): a 2019 gist, NCCL 2.4.7, whose nccl-tests printed times in milliseconds;
# its rows without the 'bytes N type op ...' header above them.
MS_ROWS = """\
1048576 262144 float sum 2.059 0.51 0.51 N/A 3.314 0.32 0.32 N/A
2097152 524288 float sum 3.047 0.69 0.69 N/A 6.873 0.31 0.31 N/A
"""

# 150: NVIDIA/nccl issue #527 (taruntandon88): one 1 GiB row of four runs, each prefixed by the
# user with the number of p4dn instances, under a header 'p4dn size count ...' without '#'.
PREFIXED_ROWS = """\
 p4dn        size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error
              (B)    (elements)                       (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)

   1   1073741824     268435456     float     sum   8142.6  131.87  230.77  2e-07   8141.2  131.89  230.81  2e-07
   2   1073741824     268435456     float     sum    35215   30.49   57.17  4e-07    35198   30.51   57.20  4e-07
"""  # noqa: E501


def test_rows_without_a_column_header_are_read_in_the_standard_layout() -> None:
    """152: 13 fields (size count type redop root, two halves of time algbw busbw #wrong) are read.

    Before, the log was refused ("this looks like a result row but no column header precedes it").
    The values are the printed ones: 308.9 us at 2 MiB, count 32768, redop none, root -1; the
    time unit is the one 2097152 B / 308.9 us = 6.79 GB/s (the printed algbw) fits.
    """
    log = parse_nccl_tests(A3_ROWS, n_ranks=16)
    assert [row.nbytes for row in log.rows] == [2097152, 4194304, 8388608, 1073741824, 2147483648]
    first = log.rows[0]
    assert (first.count, first.dtype, first.redop, first.root) == (32768, "float", "none", -1)
    assert first.oop_time_s == pytest.approx(308.9 * US)
    assert first.ip_time_s == pytest.approx(316.7 * US)
    assert (first.oop_wrong, first.ip_wrong) == (0, 0)
    assert log.rows[-1].oop_time_s == pytest.approx(10854 * US)
    assert any("without a column header" in w and "13-field" in w for w in log.warnings)
    assert log.collective == "all_gather"  # busbw/algbw = 15/16 and redop none; count = size/4/16


def test_old_rows_without_redop_or_root_read_their_error_column() -> None:
    """167: 11 fields (size count type, then time algbw busbw error twice) are read, error 0e+00."""
    log = parse_nccl_tests(OLD_ALLTOALL_ROWS, n_ranks=8)
    assert len(log.rows) == 3
    first = log.rows[0]
    assert (first.redop, first.root, first.oop_wrong) == (None, None, None)
    assert first.oop_max_error == 0.0
    assert first.oop_time_s == pytest.approx(109.3 * US)
    assert log.rows[-1].ip_time_s == pytest.approx(177817 * US)


def test_rows_without_a_header_take_their_time_unit_from_their_algbw() -> None:
    """124's rows: 1048576 B / 2.059 ms = 0.509 GB/s is the printed 0.51; in us it would be 509."""
    log = parse_nccl_tests(MS_ROWS, n_ranks=2, collective="all_reduce")
    assert log.rows[0].oop_time_s == pytest.approx(2.059e-3)
    assert log.rows[1].ip_time_s == pytest.approx(6.873e-3)
    assert any("in milliseconds, as their algbw" in w for w in log.warnings)


# 163: NVIDIA/nccl-tests issue #294 (Rgee92, 2 x 8 H100, NCCL_ALGO=NVLSTree): rows only, the excerpt
# ending inside the sixth row.
CUT_ROWS = """\
   134217728      33554432     float     sum      -1    631.9  212.41    0.00      0     0.51  263017.30    0.00      0
   134217728      33554432     float     sum      -1    419.3  320.07    0.00      0     0.31  428400.03    0.00      0
   268435456      67108864     float     sum      -1    822.4  326.41    0.00      0     0.
"""  # noqa: E501


def test_a_cut_last_row_without_a_header_keeps_its_out_of_place_half() -> None:
    """163: the last row stops inside its in-place time ('0.'), after its whole out-of-place half:
    that half is read (822.4 us), the in-place one is unknown, as under a header (b4936a7)."""
    log = parse_nccl_tests(CUT_ROWS, n_ranks=16, collective="all_reduce")
    assert [row.oop_time_s for row in log.rows] == pytest.approx([631.9 * US, 419.3 * US, 822.4 * US])
    assert log.rows[2].ip_time_s is None
    assert any("line 3: the last row of the table is truncated (10 of 13 fields)" in w for w in log.warnings)


def test_rows_of_no_standard_layout_without_a_header_stay_an_error() -> None:
    """150: a leading instance-count column makes the third field a number, not a type: refused."""
    with pytest.raises(ParseError, match="not one of nccl-tests' standard rows") as info:
        parse_nccl_tests(PREFIXED_ROWS)
    assert info.value.line == 4


# 171: NVIDIA/nccl issue #340 (AlexWang1900, 2 RTX 2080 Ti, NCCL 2.6.4): rows of one test, its
# footer, then the command of the next test (broadcast_perf), as the excerpt shows them.
NEXT_COMMAND = """\
       65536          8192   float    16.57    1.98    1.98  0e+00    13.83    2.37    2.37  0e+00
      131072         16384   float    23.07    2.84    2.84  0e+00    18.39    3.56    3.56  0e+00
   134217728      16777216   float   3298.6   20.34   20.34  0e+00   3070.3   21.86   21.86  0e+00
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 6.6972

./broadcast_perf -b 8 -e 128M -f 2 -g 2
"""

# 162: ROCm/rccl pull request #2078 (karthikarum): rows of a 16-rank all_reduce without a header,
# then rccl-tests' footer naming the test.
FOOTER_NAMES_TEST = """\
  8589934592    2147483648     float     sum      -1    44734  192.02  360.04      0    44670  192.30  360.56      0
 17179869184    4294967296     float     sum      -1    89235  192.52  360.98      0    89189  192.62  361.17      0
# Errors with asterisks indicate errors that have exceeded the maximum threshold.
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 142.652
#
# Collective test concluded: all_reduce_perf
"""  # noqa: E501


def test_a_command_after_a_headerless_table_is_not_its_binary() -> None:
    """171: './broadcast_perf' after the footer starts the next test; before, these rows were
    called broadcast ('nccl-tests binary named in the log'). Their count column (size / 8) and
    busbw = algbw leave several collectives, so without a binary the collective stays open."""
    log = parse_nccl_tests(NEXT_COMMAND)
    assert log.collective is None
    assert [e.source for e in log.collective_evidence] == ["result table (ambiguous)"]


def test_a_command_after_the_table_gives_no_launch_facts() -> None:
    """171: the next test's './broadcast_perf ... -g 2' after the footer is not this run's command
    (it gave 'one thread drives 2 GPUs (-g 2)'); this run printed none."""
    assert parse_nccl_tests(NEXT_COMMAND, n_ranks=2, collective="all_gather").command is None


def test_the_footer_after_a_headerless_table_names_its_binary() -> None:
    """162: '# Collective test concluded: all_reduce_perf' after the rows is this test's name."""
    log = parse_nccl_tests(FOOTER_NAMES_TEST, n_ranks=16)
    assert log.collective == "all_reduce"
    assert "nccl-tests binary named in the log" in [e.source for e in log.collective_evidence]


# 170: NVIDIA/nccl-tests issue #194 (chinthysl, 2 H100 PCIe joined by NVLink): the command as the
# issue shows it (Markdown inline code), the INFO lines the page abridged to '[1] NCCL INFO ...'
# (NCCL's 'host:pid:tid [dev]' without its host:pid:tid), the header and two rows.
BRIDGED_H100 = """\
`./nccl-tests/build/all_reduce_perf -b 1G -e 8G -f 2 -g 2`

H100 PCIe

```
...
[1] NCCL INFO Channel 00/0 : 1[21000] -> 0[1000] via P2P/direct pointer
...
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
  1073741824     268435456     float     sum      -1   9306.7  115.37  115.37      0   9291.5  115.56  115.56      0
  2147483648     536870912     float     sum      -1    18535  115.86  115.86      0    18524  115.93  115.93      0
"""  # noqa: E501


def _one_process(text: str) -> list[int]:
    return [e.value for e in parse_nccl_tests(text).rank_evidence if e.source == ONE_PROCESS]


def test_a_command_in_markdown_backticks_is_read() -> None:
    """170: '`... -g 2`': the closing backtick is the page's; -g 2 of a bare command is 2 ranks on
    one host. Before, '-g' read '2`' (not a number), so the hosts stayed unknown and the log was
    refused ("cannot tell how many GPUs each host runs")."""
    without_info = BRIDGED_H100.replace("[1] NCCL INFO", "host:123:456 [1] NCCL INFO")
    assert _one_process(without_info) == [2]
    assert (
        parse_nccl_tests(without_info).command == "./nccl-tests/build/all_reduce_perf -b 1G -e 8G -f 2 -g 2"
    )


def test_nccl_device_tag_without_its_host_is_no_launcher_prefix() -> None:
    """170: '[1] NCCL INFO Channel ...' is NCCL's device tag (its 'host:pid:tid' cut by the page),
    not mpiexec -prepend-rank's '[1] '; taken for a launcher, it hid the bare command's 2 ranks."""
    assert clean_text(BRIDGED_H100).prefix_ranks == {}
    assert _one_process(BRIDGED_H100) == [2]
    assert clean_text("[3] #  Rank  0 Group  0 Pid 1 on h device  0 [0x1b] NVIDIA H100").prefix_ranks == {
        1: 3
    }


# 168: NVIDIA/nccl-tests issue #44 (AlexWang1900): "2 2080ti and NVlink bridge", reduce_perf rows quoted
# from the 128 B row on (no header, no device list).
BRIDGED_2080TI = """\
         128            32   float     sum       0     7.15    0.02    0.02  0e+00     7.06    0.02    0.02  0e+00
        1024           256   float     sum       0     7.09    0.14    0.14  0e+00     7.09    0.14    0.14  0e+00
      131072         32768   float     sum       0    23.17    5.66    5.66  0e+00    23.27    5.63    5.63  0e+00
"""  # noqa: E501


def test_one_nvlink_bridged_pair_is_peer_to_peer(tmp_path: Path) -> None:
    """168: two RTX 2080 Ti on their NVLink bridge (--topology bridged_pairs) talk over the bridge;
    before, p2p was 'assumed False (stock driver)', PCIe's default, as if the bridge were absent."""
    path = tmp_path / "bridged.txt"
    path.write_text(BRIDGED_2080TI)
    options = RunOptions(gpu="RTX 2080 Ti", nodes=1, board="bridged_pairs")
    p2p = validate_file(path, options=options, n_ranks=2).inference.facts["p2p"]
    assert (p2p.value, p2p.assumed) == (True, False)


def test_pre_2020_all_gather_bandwidths_are_named_once_not_flagged_per_row() -> None:
    """171 (NCCL 2.6.4, early 2020): algbw = size / time x (n-1)/n and busbw = algbw, as nccl-tests'
    all_gather printed them until NVIDIA/nccl-tests issue #45 (June 2020): 65536 B / 16.57 us / 2 =
    1.98 GB/s. Before, every row 'disagreed' (23 warnings); now one warning names the old definition."""
    log = parse_nccl_tests(NEXT_COMMAND, n_ranks=2, collective="all_gather")
    assert not [w for w in log.warnings if "disagrees with size / time" in w]
    assert [w for w in log.warnings if "before June 2020" in w] == [
        "the printed algbw is size / time x 0.5 and busbw = algbw, as nccl-tests' all_gather printed them "
        "before June 2020 (NVIDIA/nccl-tests issue #45); the times are the same"
    ]


def test_todays_all_gather_bandwidths_raise_no_pre_2020_note() -> None:
    """152's rows (algbw = size / time, busbw = algbw x 15/16): no note of the old definition."""
    log = parse_nccl_tests(A3_ROWS, n_ranks=16)
    assert not [w for w in log.warnings if "before June 2020" in w or "disagrees" in w]


def test_old_rows_without_redop_or_root_fields_rule_out_reducing_and_rooted_collectives() -> None:
    """167 and 171: an old row without redop and root (nccl-tests printed them blank for collectives
    without a reduction or a root) rules out all_reduce, reduce_scatter, reduce and broadcast, as an
    old header without those columns does. 171's rows (busbw = algbw = size / time x 1/2, 2 ranks by
    the count column) leave all_gather as printed before June 2020, send_recv and hypercube; before,
    'all_reduce, broadcast, reduce, send_recv and hypercube fit'. 167's (busbw/algbw 7/8, 8 ranks)
    leave the four collectives that divide their buffer."""
    old_gather = parse_nccl_tests(NEXT_COMMAND).collective_evidence[0]
    assert old_gather.value == ("all_gather", "send_recv", "hypercube")
    assert "no redop or root field in the old-format rows from line 1" in old_gather.text
    assert "all_gather as nccl-tests printed it before June 2020" in old_gather.text
    old_alltoall = parse_nccl_tests(OLD_ALLTOALL_ROWS).collective_evidence[0]
    assert old_alltoall.value == ("all_gather", "all_to_all", "gather", "scatter")
