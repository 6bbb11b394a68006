"""Public nccl-tests logs of out-of-sample probe 13 (notes/outside13) the reader got wrong.

Each test holds a real excerpt inline (the probe's file number and source in the comment above it)
and asserts what nccl-tests' own output says the text means.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from commsim.calibrate.infer_layout import InferenceError
from commsim.calibrate.inference import infer_run
from commsim.calibrate.parser import load_nccl_tests, parse_nccl_tests
from commsim.errors import ParseError

# 230: a Python parser for RCCL test output (code-index file id 2381207305), its sample_output: one
# device line (rank 0 of 'nThread 1 nGpus 1') above one 256 MiB all_reduce row whose busbw/algbw is
# 343.57 / 183.24 = 1.875 = 2 x 15/16.
ONE_DEVICE_LINE_OF_SIXTEEN = """\
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 1 minBytes 268435456 maxBytes 268435456 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
rccl-tests: Version develop:33cc4df
# Using devices
#  Rank  0 Group  0 Pid  78515 on amd-mi355x-ses2-1 device  0 [0000:05:00] AMD Instinct MI355X
RCCL version : 2.26.6-heads/drop/2025-08:c3b8de4
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
   268435456      67108864     float     sum      -1   1464.9  183.24  343.57      0   1442.5  186.10  348.93      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 346.251
#
"""  # noqa: E501


def test_a_one_rank_device_list_under_nonzero_busbw_is_cut() -> None:
    """230: read as 1 rank (its one device line) and priced as a local copy, "18.7x below", though
    a one-rank all_reduce has busbw factor 2 x 0/1 = 0 and prints busbw 0.00: 343.57 GB/s rules one
    rank out in this single row. busbw/algbw = 343.57 / 183.24 = 1.8750 (in-place 348.93 / 186.10 =
    1.8750) is 2 x (n-1)/n only for n = 16, so 16 ranks, and the list is said to look cut."""
    log = parse_nccl_tests(ONE_DEVICE_LINE_OF_SIXTEEN)
    assert log.n_ranks == 16
    assert any("the device list looks cut" in w for w in log.warnings)
    assert not [w for w in log.warnings if "disagrees with size / time" in w]


# 236: SkyPilot's README "Using InfiniBand in Nebius with SkyPilot" (code-index file id 17826518165),
# the VM "Result example": the header and every row lack the in-place #wrong field (the page's copy
# ends each line after the in-place busbw).
NO_IN_PLACE_WRONG = """\
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw 
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
   536870912     134217728     float     sum      -1   2424.4  221.45  415.21      0   2391.0  224.53  421.00      
  1073741824     268435456     float     sum      -1   4528.1  237.13  444.62      0   4533.5  236.85  444.09      
  2147483648     536870912     float     sum      -1   8795.2  244.17  457.81      0   8783.6  244.49  458.42      
  4294967296    1073741824     float     sum      -1    17442  246.25  461.71      0    17386  247.03  463.19      
  8589934592    2147483648     float     sum      -1    34430  249.49  467.79      0    34443  249.39  467.61      
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 450.146
"""  # noqa: E501, W291


def test_a_dropped_in_place_wrong_column_is_not_read_as_na() -> None:
    """236: refused with "in-place #wrong N/A (only send_recv and all_to_all skip the in-place
    check): no collective fits every row" although no row prints N/A: the header has no in-place
    #wrong column at all. busbw/algbw 415.21 / 221.45 = 1.875 and redop sum leave all_reduce of
    16 ranks (2 x 15/16), which must be what is read."""
    log = parse_nccl_tests(NO_IN_PLACE_WRONG)
    assert log.collective == "all_reduce"
    assert log.n_ranks == 16


# 233: "B200 / Vultr POC - cluster test summary" (code-index file id 60744093665), section 10's block
# "sendrecv  ranks=16  (inter-node)": rows only, busbw = algbw, redop sum, in-place #wrong N/A
# (first three and last rows kept here).
SENDRECV_ROWS_ONLY = """\
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)
           8             8     uint8     sum      -1    15.25    0.00    0.00       0    14.88    0.00    0.00    N/A
    67108864      67108864     uint8     sum      -1  3458.73   19.40   19.40       0  3448.15   19.46   19.46    N/A
   134217728     134217728     uint8     sum      -1  6925.35   19.38   19.38       0  6796.51   19.75   19.75    N/A
 17179869184   17179869184     uint8     sum      -1   875218   19.63   19.63       0   874531   19.64   19.64    N/A
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 9.79516
"""  # noqa: E501


def test_rows_only_send_recv_is_refused_without_pointing_at_collective() -> None:
    """233: refused (rightly: send_recv's busbw = algbw for any rank count) but the reason said
    "a ratio of 1 fits all_reduce of 2 ranks and reduce, broadcast or send_recv of any number;
    --collective may settle it", and ``--collective send_recv`` only led to a second refusal.
    In-place #wrong N/A rules out all_reduce, reduce and broadcast (nccl-tests checks them in
    place), so the reason says send_recv fits and names --gpus alone."""
    with pytest.raises(ParseError) as refused:
        parse_nccl_tests(SENDRECV_ROWS_ONLY)
    message = str(refused.value)
    assert "fits send_recv of any number of ranks" in message
    assert "--collective may settle it" not in message
    assert message.endswith("pass --gpus N")


# 242: a Chinese notes page "nccl" (code-index file id 26246150987): one GTX 1660 SUPER under WSL.
ONE_GTX_1660_SUPER = """\
# nThread 1 nGpus 1 minBytes 8 maxBytes 8388608 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  58239 on DESKTOP-P54EAF3 device  0 [0x01] NVIDIA GeForce GTX 1660 SUPER
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     4194304       1048576     float     sum      -1    37.97  110.46    0.00      0     0.15  27962.03    0.00      0
     8388608       2097152     float     sum      -1    66.97  125.27    0.00      0     0.14  59918.63    0.00      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 0
"""  # noqa: E501


def test_an_unknown_gpu_is_refused_in_one_sentence(tmp_path: Path) -> None:
    """242: refused as "GPU 'NVIDIA GeForce GTX 1660 SUPER' is not in the catalogue (name 'NVIDIA
    GeForce GTX 1660 SUPER' is not in the GPU catalogue); give --gpu ...": the parenthesis said the
    sentence again. It is said once, still naming --gpu. (The GTX 1660 SUPER is catalogued now, so the
    log is read here as naming a GTX 1650, which is not.)"""
    text = ONE_GTX_1660_SUPER.replace("GTX 1660 SUPER", "GTX 1650")
    path = tmp_path / "gtx1650.txt"
    path.write_text(text)
    with pytest.raises(InferenceError) as refused:
        infer_run(load_nccl_tests(path), text)
    message = str(refused.value)
    assert "'NVIDIA GeForce GTX 1650'" in message
    assert message.count("not in the") == 1
    assert "give --gpu with a catalogue name" in message
