"""Peer-to-peer as NCCL's channel lines show it: ``via P2P/...`` (on) or ``via SHM/...`` (off).

NCCL's INFO lines name the transport of each channel between two GPUs of a
host: its P2P transport (``P2P/IPC``, ``P2P/CUMEM``, ``P2P/direct pointer``,
NCCL ``src/transport/p2p.cc``) or host shared memory (``SHM/direct/direct``,
``src/transport/shm.cc``). Channel lines over the network (``via NET/...``)
say nothing about it. The SHM lines are from a 2 x RTX 4090 container log
(nccl-tests -g 2, NCCL 2.21.5).
"""

from __future__ import annotations

import pytest

from commsim.calibrate.inference import RunOptions, infer_run
from commsim.calibrate.parser import parse_nccl_tests
from commsim.calibrate.settings import read_settings

_HOST = "0fed198eb8ba:528157:528268 [0] NCCL INFO "


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("Channel 00 : 0[0] -> 1[1] via SHM/direct/direct", False),
        ("Channel 00/0 : 0[0] -> 1[1] via P2P/direct pointer/read", True),
        ("Channel 07 : 7[a01d0] -> 0[101c0] via P2P/IPC/read", True),
        ("Channel 00/1 : 2[1] -> 3[0] via P2P/CUMEM", True),
        ("Channel 00/0 : 1[1] -> 0[0] via P2P/IPC", True),
        ("Channel 00/0 : 1[1] -> 2[0] [send] via NET/IB/0/GDRDMA", None),
        ("Channel 00/02 :    0   1", None),
    ],
)
def test_channel_lines_say_whether_nccl_used_p2p(line: str, expected: bool | None) -> None:
    settings = read_settings(["#", _HOST + line], 30)
    if expected is None:
        assert settings.p2p is None
    else:
        assert settings.p2p is not None
        assert (settings.p2p.value, settings.p2p.line, settings.p2p.source) == (
            expected,
            31,
            "NCCL INFO channel line",
        )


_DEVICES = """\
# nThread 1 nGpus 2 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid 528157 on 0fed198eb8ba device  0 [0000:01:00] NVIDIA GeForce RTX 4090
#  Rank  1 Group  0 Pid 528157 on 0fed198eb8ba device  1 [0000:81:00] NVIDIA GeForce RTX 4090
"""
_TABLE = """\
#                                  out-of-place                 in-place
#  size    count  type redop root   time  algbw  busbw #wrong   time  algbw  busbw #wrong
#   (B) (elements)                  (us) (GB/s) (GB/s)          (us) (GB/s) (GB/s)
 67108864  16777216 float sum -1 45561 1.47 1.47  0  45678 1.47 1.47  0
134217728  33554432 float sum -1 96211 1.40 1.40  0  96040 1.40 1.40  0
"""


def _log(channel: str) -> str:
    return "./build/all_reduce_perf -b 8 -e 128M -f 2 -g 2\n" + _DEVICES + _HOST + channel + "\n" + _TABLE


def test_shm_channels_make_p2p_known_off_citing_the_line() -> None:
    """Line 7: the channel line (command 1, header 2, devices 4-6)."""
    text = _log("Channel 00 : 0[0] -> 1[1] via SHM/direct/direct")
    fact = infer_run(parse_nccl_tests(text, "53.txt"), text).facts["p2p"]
    assert (fact.value, fact.assumed) == (False, False)
    assert (fact.evidence[0].line, fact.evidence[0].source) == (7, "NCCL INFO channel line")


def test_p2p_channels_win_over_the_catalogue_default() -> None:
    """An RTX 4090 with a stock driver has peer-to-peer off; the channel line shows NCCL used P2P."""
    text = _log("Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read")
    fact = infer_run(parse_nccl_tests(text, "x.txt"), text).facts["p2p"]
    assert (fact.value, fact.assumed) == (True, False)


def test_without_channel_lines_the_catalogue_default_stays_assumed() -> None:
    text = _log("Connected all rings")
    fact = infer_run(parse_nccl_tests(text, "x.txt"), text).facts["p2p"]
    assert (fact.value, fact.assumed) == (False, True)


def test_the_option_still_wins_over_the_channel_lines() -> None:
    text = _log("Channel 00 : 0[0] -> 1[1] via SHM/direct/direct")
    fact = infer_run(parse_nccl_tests(text, "x.txt"), text, RunOptions(p2p=True)).facts["p2p"]
    assert (fact.value, fact.evidence[0].source) == (True, "option --p2p/--no-p2p")


def test_p2p_for_some_pairs_and_shm_for_others_is_no_conflict() -> None:
    """On a two-socket PCIe host NCCL joins GPUs of one socket via P2P and across sockets via SHM: the
    log then shows both. Peer-to-peer exists (P2P cited), nothing is called a conflict, and a warning
    says the model prices one transport for the whole host."""
    from commsim.calibrate.settings import read_settings

    lines = [
        "host1:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC",
        "host1:1:1 [0] NCCL INFO Channel 00/0 : 3[3] -> 4[4] via SHM/direct/direct",
    ]
    settings = read_settings(lines)
    assert settings.p2p is not None and settings.p2p.value is True and settings.p2p.line == 1
    assert not any("says" in w for w in settings.warnings)
    (warning,) = settings.warnings
    assert "via P2P (line 1) and others via SHM" in warning and "line 2" in warning
