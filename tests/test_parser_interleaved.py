# ruff: noqa: E501  (the logs are quoted as nccl-tests prints them)
"""Two non-MPI nccl-tests runs (one per host) whose output is interleaved in one file.

Excerpt of NVIDIA/nccl-tests issue #306 (2 hosts x 8 H20, nccl-tests built
without MPI and started once per host), cut to 2 GPUs and 2 sizes per host:
both run headers come first, then node3's and node2's device lists (ranks 0
and 1 each, same devices and bus ids), one table, and node2's rows after the
first table's footer with no column header of their own (lines 18-19).
"""

from __future__ import annotations

from commsim.calibrate.parser import parse_nccl_tests

LOG = """\
# nThread 1 nGpus 2 minBytes 1048576 maxBytes 2097152 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid 1530412 on      node3 device  0 [0000:0f:00] NVIDIA H20
#  Rank  1 Group  0 Pid 1530412 on      node3 device  1 [0000:10:00] NVIDIA H20
#  Rank  0 Group  0 Pid 2236260 on      node2 device  0 [0000:0f:00] NVIDIA H20
#  Rank  1 Group  0 Pid 2236260 on      node2 device  1 [0000:10:00] NVIDIA H20
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144     float     sum      -1    34.65   30.26   30.26      0    34.35   30.53   30.53      0
     2097152        524288     float     sum      -1    37.96   55.25   55.25      0    38.07   55.09   55.09      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 42.78
#

     1048576        262144     float     sum      -1    34.29   30.58   30.58      0    34.41   30.47   30.47      0
     2097152        524288     float     sum      -1    38.12   55.01   55.01      0    38.04   55.13   55.13      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 42.80
#
"""


def test_the_same_ranks_on_two_hosts_are_one_warning_naming_the_hosts() -> None:
    """Ranks 0 and 1 are listed on node3 (lines 4-5) and node2 (lines 6-7) with the same devices:
    one warning that says so, none that calls them different devices."""
    log = parse_nccl_tests(LOG, "issue306.log")
    hosts = [w for w in log.warnings if "appear on" in w]
    assert hosts == [
        "ranks 0-1 appear on 2 hosts (node3, node2) with the same devices: independent runs "
        "(nccl-tests without MPI, started once per host) whose output is interleaved in this log; "
        "the ranks of node3 are modelled"
    ]
    assert not any("different devices" in w for w in log.warnings)


def test_rows_after_a_footer_without_a_header_are_named_not_dropped_silently() -> None:
    """The first table (lines 12-13) is read; node2's rows (lines 18-19) are named as skipped."""
    log = parse_nccl_tests(LOG, "issue306.log")
    assert [r.line for r in log.rows] == [12, 13]
    assert (
        "lines 18-19: 2 result rows after the end of a table (its footer) and before any column "
        "header were skipped; the output of several runs may be interleaved in this log"
    ) in log.warnings


def test_a_rank_on_another_gpu_is_still_called_a_different_device() -> None:
    """Rank 1 listed again on the same host with another bus id (line 6) is a contradiction."""
    text = LOG.replace(
        "#  Rank  0 Group  0 Pid 2236260 on      node2 device  0 [0000:0f:00] NVIDIA H20\n"
        "#  Rank  1 Group  0 Pid 2236260 on      node2 device  1 [0000:10:00] NVIDIA H20\n",
        "#  Rank  1 Group  0 Pid 1530412 on      node3 device  2 [0000:41:00] NVIDIA H20\n",
    )
    log = parse_nccl_tests(text, "issue306.log")
    assert "rank 1 is listed twice with different devices" in log.warnings
    assert not any("appear on" in w for w in log.warnings)
