"""The verdict on split communicators (NCCL_TESTS_SPLIT_MASK) and on a step down at large sizes.

Logs are built by tests/test_verdict.py's ``nccl_log`` (8 x A100 SXM4 on
NVSwitch, busbw chosen far from the ~230 GB/s such a box reaches).
"""

from __future__ import annotations

import pytest

from commsim.calibrate.parser import parse_nccl_tests
from commsim.calibrate.parser_ranks import _choose_ranks
from commsim.errors import ParseError
from tests.test_verdict import SIZES, nccl_log, verdict_of

RUN = "$ mpirun -np 8 ./build/all_reduce_perf -b 1M -e 1G -f 2 -g 1"


def test_a_split_mask_withholds_the_verdict_and_blames_no_channel_cap() -> None:
    """60 GB/s with NCCL_MAX_NCHANNELS=2 is 'below' with the channel cap as cause; with
    NCCL_TESTS_SPLIT_MASK=0x7 (line 1) the 8 ranks run as concurrent communicators: cannot judge,
    and the text names the mask, not the cap."""
    capped = ("export NCCL_MAX_NCHANNELS=2", RUN)
    alone = verdict_of(nccl_log(busbw_GBps=60.0, prelude=capped))
    assert alone.kind == "below" and alone.causes[0].startswith("fewer channels than usual")
    split = nccl_log(busbw_GBps=60.0, prelude=("export NCCL_TESTS_SPLIT_MASK=0x7", *capped))
    verdict = verdict_of(split)
    assert verdict.kind == "cannot_judge" and verdict.causes == ()
    assert verdict.text.startswith(
        "cannot judge: NCCL_TESTS_SPLIT_MASK=0x7 (export (line 1)) splits the ranks into "
        "concurrent communicators (color = rank & 0x7) that share the hosts' NICs and links; the model "
        "prices one communicator of 8 rank(s) alone, and measured busbw at large sizes is "
    )
    assert "NCCL_MAX_NCHANNELS" not in verdict.text
    warning = next(w for w in parse_nccl_tests(split, "t.log").warnings if "SPLIT_MASK" in w)
    assert "color = rank & 0x7 (up to 8 of them) that run the collective at the same time" in warning
    assert "share the hosts' NICs and links" in warning


def test_a_mask_of_zero_splits_nothing() -> None:
    log = nccl_log(busbw_GBps=60.0, prelude=("export NCCL_TESTS_SPLIT_MASK=0x0", RUN))
    assert verdict_of(log).kind == "below"
    assert not any("SPLIT_MASK" in w for w in parse_nccl_tests(log, "t.log").warnings)


def test_a_persistent_step_down_at_large_sizes_is_noted() -> None:
    """From 256 MiB on every row takes 2.2x its time: a note names the sizes, the rows and the ratio.

    time = 20 us + n x 1.75 / 230 GB/s. Before: 64 MiB 530.6 us (221.3 GB/s busbw), 128 MiB
    1041.2 us (225.6), median 223.5. After, the median row 512 MiB: 2.2 x 4104.9 us = 9030.8 us,
    104.0 GB/s; 104.0 / 223.5 = 0.465 -> 0.47x. One slow row alone is not a step.
    """
    slower = {n: 2.2 for n in SIZES if n >= 2**28}
    verdict = verdict_of(nccl_log(busbw_GBps=230.0, slower=slower))
    step = [n for n in verdict.notes if n.startswith("from 256 MiB on (3 rows, lines ")]
    assert len(step) == 1
    assert "busbw drops to 0.47x that of the smaller sizes (104 GB/s against 223 GB/s" in step[0]
    assert "a step between the 128 MiB and 256 MiB rows" in step[0]
    one = verdict_of(nccl_log(busbw_GBps=230.0, slower={2**29: 2.2}))
    assert not any(n.startswith("from ") for n in one.notes)


def test_unknown_ranks_with_a_ratio_of_one_say_what_it_fits() -> None:
    """No device list, no header, collective unknown, busbw = algbw: the ratio does not tell."""
    with pytest.raises(ParseError, match="a ratio of 1 fits all_reduce of 2 ranks and reduce, broadcast"):
        _choose_ranks(None, [], "t.log", None)
    with pytest.raises(ParseError, match="busbw/algbw of broadcast does not depend on the number of ranks"):
        _choose_ranks(None, [], "t.log", "broadcast")
