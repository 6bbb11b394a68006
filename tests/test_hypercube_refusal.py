"""A log of nccl-tests' hypercube test is refused saying so, with the file and the evidence.

The hypercube test (exchanges along a hypercube's dimensions) is no NCCL collective, so commsim
does not model it. A log naming ``hypercube_perf``, or a table only hypercube fits (busbw = algbw,
algbw = size / time x (n-1)/n, redop none, root -1, and the ``#wrong`` column of a table newer than
all_gather's pre-2020 definition), ended in "unknown collective 'hypercube'; valid: ..." without
the file or the reason (review of this session).
"""

from __future__ import annotations

import pytest

from commsim.calibrate.parser import parse_nccl_tests
from commsim.calibrate.validate import validate_log
from commsim.errors import ParseError
from tests.test_collective_inference import _log


def test_a_table_only_hypercube_fits_is_refused_naming_the_table() -> None:
    text = _log(1.0, "none", -1, algbw_factor=7 / 8)
    log = parse_nccl_tests(text, "run.txt")
    with pytest.raises(
        ParseError, match=r"run.txt: the log measured nccl-tests' hypercube test \(result table"
    ) as info:
        validate_log(log, text)
    assert str(info.value).endswith("if the table is another collective's, give --collective NAME")


def test_a_named_hypercube_binary_is_refused_without_offering_collective() -> None:
    text = "./build/hypercube_perf -b 1M -e 64M -f 4 -g 8\n" + _log(1.0, "none", -1, algbw_factor=7 / 8)
    log = parse_nccl_tests(text, "run.txt")
    with pytest.raises(ParseError, match="nccl-tests binary named in the log: hypercube_perf") as info:
        validate_log(log, text)
    assert "--collective" not in str(info.value)
