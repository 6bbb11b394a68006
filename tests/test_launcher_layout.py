"""The hosts and ranks per host a launcher's line states, cited at that line and held against
--nodes/--gpus-per-node.

``mpirun -H a:4,b:4`` starts 4 processes on each of 2 hosts (Open MPI reads ``:N`` as a host's
slots); with ``-g 1`` that is 2 hosts x 4 ranks. The rows below are an 8-rank all-reduce (busbw is
algbw x 2(8-1)/8 = 1.75), so the rank count rests on them and the layout on the launcher's line.
"""

from __future__ import annotations

from commsim.calibrate.infer_layout import LAUNCHER_PER_HOST
from commsim.calibrate.inference import RunOptions, infer_run
from commsim.calibrate.parser import parse_nccl_tests

_TABLE = """\
# nThread 1 nGpus 1 minBytes 268435456 maxBytes 536870912 step: 2(factor) warmup iters: 5
#
#                                  out-of-place                 in-place
#  size    count  type redop root   time  algbw  busbw #wrong   time  algbw  busbw #wrong
#   (B) (elements)                  (us) (GB/s) (GB/s)          (us) (GB/s) (GB/s)
 268435456  67108864 float sum -1 2684.4 100.00 175.00  0  2684.4 100.00 175.00  0
 536870912 134217728 float sum -1 5368.7 100.00 175.00  0  5368.7 100.00 175.00  0
"""
LOG = "$ cd nccl-tests\n$ mpirun -H a:4,b:4 ./build/all_reduce_perf -b 256M -e 512M -g 1\n" + _TABLE
"""Line 2: the command; no process count (-np), so its host list alone states the layout."""


def _facts(options: RunOptions) -> tuple[dict, list[str]]:
    log = parse_nccl_tests(LOG, "x.txt")
    inference = infer_run(log, LOG, options)
    return inference.facts, inference.warnings


def test_a_host_list_alone_cites_the_command_line() -> None:
    """Without -np the launcher gives no rank evidence, whose line the layout's evidence borrowed:
    the ranks per host read from '-H a:4,b:4' cited no line (None)."""
    assert parse_nccl_tests(LOG, "x.txt").command_line == 2
    facts, _ = _facts(RunOptions(gpu="A100 SXM"))
    per_node = facts["gpus_per_node"]
    assert (per_node.value, per_node.assumed, facts["nodes"].value) == (4, False, 2)
    assert (per_node.evidence[0].source, per_node.evidence[0].line) == (LAUNCHER_PER_HOST, 2)
    assert facts["nodes"].evidence[0].line == 2


def test_nodes_against_the_launchers_layout_are_warned_naming_its_line() -> None:
    """The launcher's line says 2 hosts x 4 ranks; --nodes 4 was used without a word (only a device
    list was held against the options). The option still wins, and the warning names the line."""
    facts, warnings = _facts(RunOptions(gpu="A100 SXM", nodes=4))
    assert (facts["nodes"].value, facts["gpus_per_node"].value) == (4, 2)
    said = [w for w in warnings if w.startswith("--nodes 4 disagrees")]
    assert len(said) == 1 and "node count 2" in said[0] and "(line 2)" in said[0], warnings


def test_gpus_per_node_against_the_launchers_layout_are_warned() -> None:
    facts, warnings = _facts(RunOptions(gpu="A100 SXM", gpus_per_node=8))
    assert (facts["nodes"].value, facts["gpus_per_node"].value) == (1, 8)
    assert any(w.startswith("--gpus-per-node 8 disagrees") and "(line 2)" in w for w in warnings), warnings


def test_options_the_launcher_agrees_with_are_not_warned() -> None:
    _, warnings = _facts(RunOptions(gpu="A100 SXM", nodes=2, gpus_per_node=4))
    assert not any("disagrees" in w for w in warnings), warnings


def test_the_launchers_host_count_is_its_own_not_one_from_gpus() -> None:
    """Review 28: with --gpus 16 --nodes 2 the warning said '--nodes 2 disagrees with the log's node
    count 4': 16 (from --gpus) over the list's 4 per host, a count the log never states, while the
    list '-H a:4,b:4' names 2 hosts, which --nodes 2 agrees with. The host count is the list's."""
    _, warnings = _facts(RunOptions(gpu="A100 SXM", gpus=16, nodes=2))
    assert not any(w.startswith("--nodes") for w in warnings), warnings
