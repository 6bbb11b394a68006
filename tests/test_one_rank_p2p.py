# ruff: noqa: E501  (the log is quoted as nccl-tests prints it)
"""A one-rank run has no peer-to-peer fact to assume (probe 7, log 115, bug 6 minor).

ONE_RANK is the AWS-Tip post's g5.12xlarge pod run (probe 7's 115: ``-np 1`` on one A10G, OpenMPI
``--tag-output``), its header, device list and three rows.
"""

from __future__ import annotations

from commsim.calibrate.inference import RunOptions, infer_run
from commsim.calibrate.parser import parse_nccl_tests

ONE_RANK = """[1,0]<stdout>:# nThread 1 nGpus 1 minBytes 1 maxBytes 2147483648 step: 2(factor) warmup iters: 5 iters: 100 agg iters: 1 validation: 1 graph: 0
[1,0]<stdout>:#
[1,0]<stdout>:# Using devices
[1,0]<stdout>:#  Rank  0 Group  0 Pid     21 on test-nccl-worker-0 device  0 [0x00] NVIDIA A10G
[1,0]<stdout>:test-nccl-worker-0:21:21 [0] NCCL INFO Bootstrap : Using eth0:192.168.148.137<0>
[1,0]<stdout>:#                                                              out-of-place                       in-place
[1,0]<stdout>:#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
[1,0]<stdout>:#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
[1,0]<stdout>:           4             1     float     sum      -1     3.54    0.00    0.00      0     0.11    0.03    0.00      0
[1,0]<stdout>:           8             2     float     sum      -1     3.51    0.00    0.00      0     0.11    0.07    0.00      0
[1,0]<stdout>:          16             4     float     sum      -1     3.53    0.00    0.00      0     0.11    0.14    0.00      0
"""


def test_one_rank_lists_no_assumed_p2p() -> None:
    """Rank 0 alone copies within its GPU: no 'assumed p2p = True' (it used to be listed, from the
    A10G's stock-driver default), and nothing assumed about peers withholds the verdict."""
    inference = infer_run(parse_nccl_tests(ONE_RANK, "all_reduce_115.txt"), ONE_RANK)
    assert "p2p" not in inference.facts
    assert not [f.name for f in inference.assumed]


def test_one_rank_keeps_a_p2p_the_user_gave() -> None:
    """--no-p2p on a one-rank run is the user's word: it stays listed, as given."""
    inference = infer_run(parse_nccl_tests(ONE_RANK, "all_reduce_115.txt"), ONE_RANK, RunOptions(p2p=False))
    assert inference.facts["p2p"].value is False and not inference.facts["p2p"].assumed
