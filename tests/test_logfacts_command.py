"""The nccl-tests command line a log shows: -g/-t of a bare command, and -G against the header.

nccl-tests (and rccl-tests) read ``-t`` threads per process, ``-g`` GPUs per
thread and ``-G`` graph launches with getopt (``src/common.cu``); a command
with no launcher is one process, so ``t x g`` ranks on one host. The excerpts
are real: a sendrecv run on 8 A100s printed without device list or header
(li-plus/playground, cuda/nccl.md), and an AMD ROCm blog run with ``-G 1``
whose rccl-tests header still says ``graph: 0``.
"""

from __future__ import annotations

import pytest

from commsim.calibrate.inference import RunOptions, infer_run
from commsim.calibrate.parser import parse_nccl_tests
from commsim.calibrate.parser_command import LAUNCHED, ONE_PROCESS, read_command
from commsim.errors import ParseError

_TABLE = """\
#                                  out-of-place                 in-place
#  size    count  type redop root   time  algbw  busbw #wrong   time  algbw  busbw #wrong
#   (B) (elements)                  (us) (GB/s) (GB/s)          (us) (GB/s) (GB/s)
 268435456  67108864 float sum -1 1423.3 188.60 188.60  0  1420.2 189.01 189.01  N/A
 536870912 134217728 float sum -1 2785.4 192.75 192.75  0  2772.2 193.66 193.66  N/A
"""
BARE = "./build/sendrecv_perf -b 128M -e 1G -f 2 -g 8\n#\n" + _TABLE
"""Line 1: the command; no device list, no run header, no NCCL INFO line."""


@pytest.mark.parametrize(
    ("command", "launcher", "threads", "gpus", "graph", "ranks"),
    [
        ("./build/sendrecv_perf -b 128M -e 1G -f 2 -g 8", None, None, 8, None, 8),
        ("./build/all_reduce_perf -t 2 -g 4 -b 8 -e 128M", None, 2, 4, None, 8),
        ("./build/all_reduce_perf -g8 -b 8", None, None, 8, None, 8),
        ("./build/all_reduce_perf --ngpus=4 --nthreads 2", None, 2, 4, None, 8),
        ("NCCL_DEBUG=INFO numactl --interleave=all ./all_reduce_perf -g 2", None, None, 2, None, 2),
        ("timeout 600 ./all_reduce_perf -g 2 2>&1 | tee out.log", None, None, 2, None, 2),
        ("./build/all_reduce_perf -b 8 -e 128M", None, None, None, None, None),
        ("./build/all_reduce_perf -g $NGPUS", None, None, None, None, None),
        (
            "mpirun -np 8 --bind-to numa rccl-tests/build/all_reduce_perf -g 1 -G 1",
            "mpirun",
            None,
            1,
            1,
            None,
        ),
        ("srun -n 16 ./all_reduce_perf -g 1", "srun", None, 1, None, None),
        ("torchrun --nproc_per_node 8 ./all_reduce_perf -g 8", "torchrun", None, 8, None, None),
        ("docker exec box ./all_reduce_perf -g 8", "docker", None, 8, None, None),
        # an unreadable -G says nothing about the ranks; 'timeout 10s' is one process
        ("timeout 10s ./all_reduce_perf -g 4 -G abc", None, None, 4, None, 4),
        # ssh (a word of letters only) is a launcher, not an argument of a wrapper
        ("timeout 10s ssh node2 ./all_reduce_perf -g 4", "ssh", None, 4, None, None),
    ],
)
def test_command_options_and_launcher(
    command: str,
    launcher: str | None,
    threads: int | None,
    gpus: int | None,
    graph: int | None,
    ranks: int | None,
) -> None:
    read = read_command(command, 3)
    assert read is not None
    assert (read.launcher, read.threads, read.gpus, read.graph) == (launcher, threads, gpus, graph)
    assert read.one_process_ranks == ranks


def test_bare_command_gives_ranks_one_host_and_thread_launch_citing_its_line() -> None:
    log = parse_nccl_tests(BARE, "46.txt")
    assert log.n_ranks == 8
    assert (log.rank_evidence[0].source, log.rank_evidence[0].line) == (ONE_PROCESS, 1)
    inference = infer_run(log, BARE, RunOptions(gpu="A100 SXM"))
    facts = inference.facts
    assert (facts["nodes"].value, facts["nodes"].assumed) == (1, False)
    assert (facts["gpus_per_node"].value, facts["gpus_per_node"].assumed) == (8, False)
    assert facts["nodes"].evidence[0].line == 1
    assert (facts["launch"].value, facts["launch"].assumed) == ("threads, 8 GPU(s) per thread", False)


def test_without_the_command_the_ranks_stay_unknown() -> None:
    with pytest.raises(ParseError, match="cannot tell the number of ranks"):
        parse_nccl_tests(_TABLE, "46.txt")


def test_a_launcher_on_the_line_means_no_one_process_inference() -> None:
    """mpirun -np 2 with -g 8: two processes of 8 GPUs each, 16 ranks (the launcher's count, not one
    process's); a launcher that states no count (-n $GPUS) leaves the ranks unknown."""
    text = "mpirun -np 2 ./build/sendrecv_perf -b 128M -e 1G -f 2 -g 8\n#\n" + _TABLE
    log = parse_nccl_tests(text, "x.txt")
    assert (log.n_ranks, log.rank_source) == (16, LAUNCHED)
    assert all(e.source != ONE_PROCESS for e in log.rank_evidence)
    with pytest.raises(ParseError, match="cannot tell the number of ranks"):
        parse_nccl_tests(text.replace("-np 2", "-n $GPUS"), "x.txt")


def test_a_launcher_rank_prefix_means_no_one_process_inference() -> None:
    """srun --label prefixes (`` 1: ``) show a launcher even when the command shown is bare.

    The prefix of rank 1 bounds the ranks from below (2), the command gives nothing.
    """
    lines = ["./build/sendrecv_perf -b 128M -e 1G -f 2 -g 8", *_TABLE.splitlines(), " 1: #"]
    log = parse_nccl_tests("\n".join(lines) + "\n", "x.txt")
    assert all(e.source != ONE_PROCESS for e in log.rank_evidence)
    assert (log.n_ranks, log.rank_evidence[0].source) == (2, "MPI/Slurm line prefix")


def test_the_header_wins_over_a_command_it_contradicts() -> None:
    """-g 8 on the command, nGpus 2 in the header: the header is what nccl-tests parsed."""
    header = (
        "# nThread 1 nGpus 2 minBytes 134217728 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20"
    )
    text = f"./build/sendrecv_perf -b 128M -e 1G -f 2 -g 8\n{header}\n#\n" + _TABLE
    log = parse_nccl_tests(text, "x.txt")
    assert all(e.source != ONE_PROCESS for e in log.rank_evidence)
    assert log.gpus_per_thread == 2
    assert any("gives -g 8 but the run header (line 2) says nGpus 2" in w for w in log.warnings)


def test_a_device_list_wins_over_the_command_and_the_difference_is_warned() -> None:
    devices = "\n".join(
        f"#  Rank  {r} Pid 7 on h{r // 2} device {r % 2} [0x0{r}] NVIDIA A100-SXM4-80GB" for r in range(4)
    )
    text = f"./build/sendrecv_perf -b 128M -e 1G -f 2 -g 8\n# Using devices\n{devices}\n#\n" + _TABLE
    log = parse_nccl_tests(text, "x.txt")
    assert log.n_ranks == 4 and log.rank_evidence[0].source == "device list"
    assert any("nccl-tests command line (one process) (line 1) says 8" in w for w in log.warnings)


_RCCL_G1 = """\
mpirun -np 8 --bind-to numa rccl-tests/build/all_reduce_perf -b 8 -e 16G -f 2 -g 1 -G 1
# nThread 1 nGpus 1 minBytes 8 maxBytes 17179869184 step: 2(factor) warmup iters: 5 iters: 20 graph: {graph}
#
#                                  out-of-place                 in-place
#  size    count  type redop root   time  algbw  busbw #wrong   time  algbw  busbw #wrong
#   (B) (elements)                  (us) (GB/s) (GB/s)          (us) (GB/s) (GB/s)
        32         8 float sum -1   6.32   0.01   0.01  0    6.20   0.01   0.01  0
 268435456  67108864 float sum -1 1534.0 174.99 306.24  0  1533.1 175.10 306.42  0
"""


def test_graph_option_against_a_header_saying_no_graph_is_warned_naming_both_lines() -> None:
    text = _RCCL_G1.format(graph=0)
    log = parse_nccl_tests(text, "50.txt", n_ranks=8)
    conflicts = [w for w in log.warnings if "-G 1" in w]
    assert len(conflicts) == 1
    assert conflicts[0].startswith(
        "the command line (line 1) passes -G 1 (CUDA/HIP graph launches) but the run header (line 2) "
        "says graph: 0; using the header"
    )


def test_graph_option_that_the_header_confirms_is_no_conflict() -> None:
    log = parse_nccl_tests(_RCCL_G1.format(graph=1), "50.txt", n_ranks=8)
    assert not [w for w in log.warnings if "-G 1" in w]
