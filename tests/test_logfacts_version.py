"""The library version as rccl-tests prints it: ``RCCL version : 2.22.3-develop:f5b15f2``.

rccl-tests prints its version block with the labels padded to one width, so
a space comes before the colon (``RCCL version : ...``, ``HIP version  : ...``);
nccl-tests and NCCL print ``NCCL version 2.26.2`` or ``NCCL version: 22602``.
The excerpt is from an AMD ROCm blog log (8 x MI300X, RCCL 2.22.3-develop).
"""

from __future__ import annotations

import pytest

from commsim.calibrate.inference import infer_run
from commsim.calibrate.parser import parse_nccl_tests
from commsim.calibrate.settings import read_settings

_DEVICES = "\n".join(
    f"#   Rank  {r} Pid {2509534 + r} on host device  {r} [0000:{bus}:00.0] AMD Instinct MI300X"
    for r, bus in enumerate(("0c", "22", "38", "5c", "9f", "af", "bf", "df"))
)
RCCL_LOG = f"""\
mpirun -np 8 --bind-to numa -env NCCL_DEBUG=VERSION rccl-tests/build/all_reduce_perf -b 8 -e 16G -f 2 -g 1
# nThread 1 nGpus 1 minBytes 8 maxBytes 17179869184 step: 2(factor) warmup iters: 5 iters: 20 graph: 0
#
rccl-tests: Version develop:448c4c7
# Using devices
{_DEVICES}
RCCL version : 2.22.3-develop:f5b15f2
HIP version  : 6.3.42131-fa1d09cbd
ROCm version : 6.3.0.0-39-ce2be3b
#
#                                        out-of-place                  in-place
#  size      count   type redop root   time  algbw  busbw #wrong   time  algbw  busbw #wrong
#   (B) (elements)                     (us) (GB/s) (GB/s)          (us) (GB/s) (GB/s)
268435456  67108864 float  sum  -1   1537.0 174.65 305.63  0     1536.1 174.75 305.82  0
536870912 134217728 float  sum  -1   3026.0 177.42 310.49  0     3025.1 177.47 310.58  0
# Avg bus bandwidth    : 308.1
"""
"""The version line is line 14 (command 1, header 2, devices 6-13)."""


@pytest.mark.parametrize(
    ("line", "library", "version"),
    [
        ("RCCL version : 2.22.3-develop:f5b15f2", "RCCL", "2.22.3"),
        ("RCCL version : 2.27.7-HEAD:96a25b5", "RCCL", "2.27.7"),
        ("RCCL version: 2.20.5", "RCCL", "2.20.5"),
        ("host:1:1 [0] NCCL INFO RCCL version 2.18.3+hip6.1 HEAD:abc", "RCCL", "2.18.3"),
        ("host:1:1 [0] NCCL INFO NCCL version 2.26.2+cuda12.8", "NCCL", "2.26.2"),
        ("RCCL version : 22203", "RCCL", "2.22.3"),
    ],
)
def test_version_lines_with_or_without_a_space_before_the_colon(
    line: str, library: str, version: str
) -> None:
    settings = read_settings(["# Using devices", line], 10)
    assert settings.library is not None and settings.version is not None
    assert (settings.library.value, settings.version.value) == (library, version)
    assert (settings.version.line, settings.version.text) == (11, line)


def test_other_version_lines_of_rccl_tests_are_not_the_librarys() -> None:
    """``HIP version  : 6.3.42131`` and ``ROCm version : 6.3.0.0`` name no NCCL/RCCL version."""
    settings = read_settings(["HIP version  : 6.3.42131-fa1d09cbd", "ROCm version : 6.3.0.0-39-ce2be3b"])
    assert settings.version is None and settings.library is None


def test_rccl_tests_version_is_known_and_cites_its_line() -> None:
    log = parse_nccl_tests(RCCL_LOG, "rccl.txt")
    assert log.nccl_version == "2.22.3-develop:f5b15f2"
    inference = infer_run(log, RCCL_LOG)
    fact = inference.facts["nccl_version"]
    assert (fact.value, fact.assumed) == ("2.22.3", False)
    assert fact.evidence[0].line == 14
    assert fact.evidence[0].text == "RCCL version : 2.22.3-develop:f5b15f2"
    assert inference.nccl_version == "2.22.3"
