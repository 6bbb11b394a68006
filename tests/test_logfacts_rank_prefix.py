"""A launcher prefix that only shows rank 0 is no evidence of the number of ranks.

``srun --label`` prefixes each line with the rank that printed it (`` 0: ``);
nccl-tests prints its table from rank 0 only, so a log whose every line is
rank 0's says 'at least 1 rank', nothing more (outside log 73, 16 ranks).
"""

from __future__ import annotations

from commsim.calibrate.parser import parse_nccl_tests

# all_reduce of 16 ranks: busbw = algbw x 2 x 15/16 = algbw x 1.875
ROWS = [
    " 0: #       size         count      type   redop    root     time   algbw   busbw #wrong"
    "     time   algbw   busbw #wrong",
    " 0:    67108864      16777216     float     sum      -1   1342.2   50.00   93.75      0"
    "   1342.2   50.00   93.75      0",
    " 0:   134217728      33554432     float     sum      -1   2684.4   50.00   93.75      0"
    "   2684.4   50.00   93.75      0",
]


def test_a_rank_0_prefix_alone_is_not_listed_as_rank_evidence() -> None:
    log = parse_nccl_tests("\n".join(ROWS) + "\n", "73.txt")
    assert log.n_ranks == 16
    assert [e.source for e in log.rank_evidence] == ["busbw/algbw ratio"]


def test_a_rank_15_prefix_is_evidence_of_at_least_16() -> None:
    lines = [*ROWS, "15: host:1:1 [7] NCCL INFO comm 0x1 done"]
    log = parse_nccl_tests("\n".join(lines) + "\n", "73.txt")
    prefix = next(e for e in log.rank_evidence if e.source == "MPI/Slurm line prefix")
    assert (prefix.value, prefix.line) == (16, 4)
