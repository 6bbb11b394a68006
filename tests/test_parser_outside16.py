"""Public nccl-tests logs of out-of-sample probe 16 (notes/outside16) the reader got wrong.

Each test holds a real excerpt inline (its source in the comment above it) and asserts what
nccl-tests' own output says the text means.
"""

from __future__ import annotations

from pathlib import Path

from commsim.calibrate.parser import load_nccl_tests

# 286: aws-samples EKS + Karpenter + EFA guide (README, section "7.4.2. Execute test with EFA
# enabled", sample output; code index id 24193303715): a Kubeflow MPIJob of two one-GPU worker pods,
# Open MPI's '--tag-output' prefixes, the log cut with '...' before the table, no device list and no
# binary named. (Rows kept: the first four and the last three of 31.)
EFA_TAGGED_NO_DEVICES = """\
```log
...
[1,1]<stdout>:test-nccl-efa-worker-1:22:22 [0] NCCL INFO NET/OFI Selected Provider is efa
[1,1]<stdout>:test-nccl-efa-worker-1:22:22 [0] NCCL INFO Using network AWS Libfabric
...
[1,0]<stdout>:#                                                              out-of-place                       in-place
[1,0]<stdout>:#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
[1,0]<stdout>:#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
[1,0]<stdout>:           0             0     float     sum      -1     6.28    0.00    0.00      0     6.35    0.00    0.00      0
[1,0]<stdout>:           0             0     float     sum      -1     6.28    0.00    0.00      0     6.28    0.00    0.00      0
[1,0]<stdout>:           4             1     float     sum      -1    70.19    0.00    0.00      0    69.70    0.00    0.00      0
[1,0]<stdout>:           8             2     float     sum      -1    70.54    0.00    0.00      0    70.23    0.00    0.00      0
[1,0]<stdout>:   268435456      67108864     float     sum      -1    94498    2.84    2.84      0    94708    2.83    2.83      0
[1,0]<stdout>:   536870912     134217728     float     sum      -1   189806    2.83    2.83      0   189397    2.83    2.83      0
[1,0]<stdout>:  1073741824     268435456     float     sum      -1   378919    2.83    2.83      0   381119    2.82    2.82      0
[1,0]<stdout>:# Out of bounds values : 0 OK
[1,0]<stdout>:# Avg bus bandwidth    : 0.960456
```
"""  # noqa: E501


def test_an_all_reduce_the_rows_decide_counts_its_ranks_from_its_busbw(tmp_path: Path) -> None:
    """286 names no binary, so the ranks were counted before the rows had decided the collective:
    busbw = algbw says no count without one (broadcast, reduce and send_recv print it for any n), and
    the count rested on the '[1,1]' prefix ('ranks 2 is only a lower bound ... pass --gpus N'). The
    rows then decide all_reduce (redop sum, root -1, size = count x 4 B, in-place #wrong counted),
    whose busbw is 2(n-1)/n x algbw: busbw = algbw is n = 2, and the count is known."""
    path = tmp_path / "efa.txt"
    path.write_text(EFA_TAGGED_NO_DEVICES)
    log = load_nccl_tests(path)
    assert (log.collective, log.n_ranks) == ("all_reduce", 2)
    assert log.rank_evidence[0].source == "busbw/algbw ratio"
    assert not any("lower bound" in w for w in log.warnings)


def test_rows_that_fit_several_counts_keep_the_bound(tmp_path: Path) -> None:
    """Rows too small to print a busbw (0.00 everywhere) state no count: the prefix's bound stays,
    with its warning."""
    rows = [line for line in EFA_TAGGED_NO_DEVICES.splitlines() if "2.8" not in line]
    path = tmp_path / "efa.txt"
    path.write_text("\n".join(rows) + "\n")
    log = load_nccl_tests(path)
    assert (log.collective, log.n_ranks) == ("all_reduce", 2)
    assert log.rank_evidence[0].source == "MPI/Slurm line prefix"
    assert any("lower bound" in w for w in log.warnings)
