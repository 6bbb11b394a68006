"""Public nccl-tests / rccl-tests logs of out-of-sample probe 19 that were read wrong.

Each test holds a real excerpt inline (the probe's file number and source in the comment above it)
and asserts what the log, read as rccl-tests prints it, says about the run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from commsim.calibrate.infer_layout import InferenceError
from commsim.calibrate.inference_records import RunOptions
from commsim.calibrate.parser import load_nccl_tests
from commsim.calibrate.validate import validate_file

# 310: github.com/hisohara/ai-scripts training/01_rccl-smoketest/README.md @0780bb3, "Result on AAC14
# with 2-node": rccl-tests develop:5272cd1 with RCCL 2.26.6 on two MI355X hosts prints no GPU name
# after the bus id. (Device lines kept: 4 of 16; rows kept: 2 of 31.)
NAMELESS_DEVICES = """\
rccl-tests: Version develop:5272cd1
# Using devices
#  Rank  0 Group  0 Pid 2908511 on mi355-gpu-23 device  0 [0000:75:00]
#  Rank  1 Group  0 Pid 2908512 on mi355-gpu-23 device  1 [0000:05:00]
#  Rank  8 Group  0 Pid 1167745 on mi355-gpu-24 device  0 [0000:75:00]
#  Rank  9 Group  0 Pid 1167740 on mi355-gpu-24 device  1 [0000:05:00]
RCCL version : 2.26.6-HEAD:6ade506
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
  4294967296    1073741824     float     sum      -1    21870  196.38  368.22      0    21868  196.41  368.26      0
  8589934592    2147483648     float     sum      -1    43643  196.82  369.04      0    43639  196.84  369.08      0
"""  # noqa: E501


def test_a_device_line_ending_at_the_bus_id_names_no_gpu(tmp_path: Path) -> None:
    """310: the bus id was read as the GPU's name, so the log was refused as "GPU '[0000:75:00]' is
    not in the catalogue"; the line names no GPU, and its bus id is the bus id."""
    path = tmp_path / "mi355x.txt"
    path.write_text(NAMELESS_DEVICES)
    log = load_nccl_tests(path)
    assert [d.bus_id for d in log.devices] == ["0000:75:00", "0000:05:00", "0000:75:00", "0000:05:00"]
    assert {d.model for d in log.devices} == {""}
    assert log.gpu_model is None
    with pytest.raises(InferenceError, match=r"end at the bus id, naming none\); give --gpu MODEL"):
        validate_file(path)
    facts = validate_file(path, options=RunOptions(gpu="MI355X")).inference.facts
    assert facts["ranks"].value == 16
    assert facts["nodes"].value == 2


def test_a_named_device_line_still_reads_its_name() -> None:
    """The name after the bus id is still the model; a bare 'device N' line is still no device line."""
    from commsim.calibrate.parser_run_lines import DEVICE

    named = DEVICE.match("#  Rank  0 Group  0 Pid 1 on h device  0 [0000:05:00] AMD Instinct MI300X")
    assert named is not None and named["model"] == "AMD Instinct MI300X" and named["bus"] == "0000:05:00"
    assert DEVICE.match("#  Rank  0 Group  0 Pid 1 on h device  0") is None
