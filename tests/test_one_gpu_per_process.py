# ruff: noqa: E501  (the log is quoted as nccl-tests prints it)
"""Ranks that each run in their own process pinned to their own GPU all print ``device 0``; with the
short bus id of old nccl-tests (``[0x01]``, the PCI bus number only) that is not one shared GPU.

The excerpt is CSCS Alps (probe 7, log 118: boeschf/nccl-benchmark-on-alps-2025,
job-n-00016-N-0004-152286.out), reduced to its device list and 3 of its 30 rows; each
GH200 of a node sits in its own PCI domain (0009:01:00, 0019:01:00, ...), all on bus 0x01.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from commsim.calibrate.inference import RunOptions
from commsim.calibrate.validate import validate_file

ALPS = """ 0: # nThread 1 nGpus 1 minBytes 8 maxBytes 4294967296 step: 2(factor) warmup iters: 8 iters: 24 agg iters: 1 validation: 1 graph: 0
 0: #
 0: # Using devices
 0: #  Rank  0 Group  0 Pid 202960 on  nid006676 device  0 [0x01] NVIDIA GH200 120GB
 0: #  Rank  1 Group  0 Pid 202961 on  nid006676 device  0 [0x01] NVIDIA GH200 120GB
 0: #  Rank  2 Group  0 Pid 202962 on  nid006676 device  0 [0x01] NVIDIA GH200 120GB
 0: #  Rank  3 Group  0 Pid 202963 on  nid006676 device  0 [0x01] NVIDIA GH200 120GB
 0: #  Rank  4 Group  0 Pid 212597 on  nid006679 device  0 [0x01] NVIDIA GH200 120GB
 0: #  Rank  5 Group  0 Pid 212598 on  nid006679 device  0 [0x01] NVIDIA GH200 120GB
 0: #  Rank  6 Group  0 Pid 212599 on  nid006679 device  0 [0x01] NVIDIA GH200 120GB
 0: #  Rank  7 Group  0 Pid 212600 on  nid006679 device  0 [0x01] NVIDIA GH200 120GB
 0: #  Rank  8 Group  0 Pid  68858 on  nid007124 device  0 [0x01] NVIDIA GH200 120GB
 0: #  Rank  9 Group  0 Pid  68859 on  nid007124 device  0 [0x01] NVIDIA GH200 120GB
 0: #  Rank 10 Group  0 Pid  68860 on  nid007124 device  0 [0x01] NVIDIA GH200 120GB
 0: #  Rank 11 Group  0 Pid  68861 on  nid007124 device  0 [0x01] NVIDIA GH200 120GB
 0: #  Rank 12 Group  0 Pid 199824 on  nid007126 device  0 [0x01] NVIDIA GH200 120GB
 0: #  Rank 13 Group  0 Pid 199825 on  nid007126 device  0 [0x01] NVIDIA GH200 120GB
 0: #  Rank 14 Group  0 Pid 199826 on  nid007126 device  0 [0x01] NVIDIA GH200 120GB
 0: #  Rank 15 Group  0 Pid 199827 on  nid007126 device  0 [0x01] NVIDIA GH200 120GB
 0: #
 0: #                                                              out-of-place                       in-place
 0: #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
 0: #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
 0:            8             2     float     sum      -1    34.31    0.00    0.00      0    34.29    0.00    0.00      0
 0:         8192          2048     float     sum      -1    70.15    0.12    0.22      0    63.22    0.13    0.24      0
 0:       262144         65536     float     sum      -1    128.8    2.04    3.82      0    129.4    2.03    3.80      0
"""


@pytest.fixture
def alps(tmp_path: Path) -> Path:
    path = tmp_path / "all_reduce_alps.txt"
    path.write_text(ALPS)
    return path


def test_short_bus_ids_of_distinct_processes_are_one_gpu_each(alps: Path) -> None:
    """Ranks 0-3 of nid006676 print device 0 [0x01] from pids 202960-202963: they used to be refused
    as "ranks 0-3 run on one GPU"; now every rank has a GPU of its own (16 distinct GPUs), and the
    fact that says so is assumed and names the options that confirm it."""
    report = validate_file(alps, options=RunOptions(nic="slingshot_200g"))
    inference = report.inference
    assert len(set(inference.ranks)) == 16
    fact = inference.facts["gpus_used"]
    assert fact.assumed and fact.value == "one GPU per process"
    assert fact.option == "--gpus-per-node or --devices"
    assert fact in inference.assumed


@pytest.mark.parametrize(
    ("options", "source"),
    [
        (RunOptions(nic="slingshot_200g", gpus_per_node=4), "option --gpus-per-node"),
        (RunOptions(nic="slingshot_200g", devices=(0, 1, 2, 3)), "option --devices"),
    ],
)
def test_gpus_per_node_or_devices_confirm_one_gpu_per_rank(
    alps: Path, options: RunOptions, source: str
) -> None:
    """--gpus-per-node 4 (4 GPUs of each host ran, one per rank) or --devices 0,1,2,3 (the whole
    4-GPU board) settle it: no assumed fact about the GPUs used withholds the verdict."""
    inference = validate_file(alps, options=options).inference
    assert len(set(inference.ranks)) == 16
    assert not any(f.name == "gpus_used" for f in inference.assumed)
    fact = inference.facts.get("gpus_used")  # --devices naming all 4 GPUs of the board needs no fact
    assert fact is None or fact.evidence[0].source == source


def test_a_full_bus_id_repeated_is_still_one_shared_gpu(alps: Path) -> None:
    """The same lines with a full bus id ([0009:01:00] for every rank of a host) name one GPU: still
    refused, with or without --gpus-per-node."""
    from commsim.calibrate.infer_layout import InferenceError

    alps.write_text(ALPS.replace("[0x01]", "[0009:01:00]"))
    for options in (RunOptions(), RunOptions(gpus_per_node=4)):
        with pytest.raises(InferenceError, match="ranks 0-3 run on one GPU"):
            validate_file(alps, options=options)


def test_one_process_repeating_a_short_id_is_shared(alps: Path) -> None:
    """Two ranks of one pid on device 0 (nccl-tests -t 2 on one GPU) are one GPU: refused."""
    from commsim.calibrate.infer_layout import InferenceError

    alps.write_text(ALPS.replace("Pid 202961", "Pid 202960"))
    with pytest.raises(InferenceError, match="run on one GPU"):
        validate_file(alps, options=RunOptions(nic="slingshot_200g"))


def test_a_host_wide_visible_list_does_not_settle_one_gpu_per_process(tmp_path: Path) -> None:
    """'export CUDA_VISIBLE_DEVICES=0,1,2,3' above a log whose processes all print device 0: under that
    list device 0 of every process would be one GPU, so the list is not the processes' own (each sees
    only its GPU); it is not read (a warning says so) and the assumed fact keeps withholding the verdict."""
    path = tmp_path / "alps_visible.txt"
    path.write_text("export CUDA_VISIBLE_DEVICES=0,1,2,3\n" + ALPS)
    report = validate_file(path, options=RunOptions(nic="slingshot_200g"))
    fact = report.inference.facts["gpus_used"]
    assert fact.assumed and fact.value == "one GPU per process"
    assert any("each of its processes prints device 0" in w for w in report.inference.warnings)
    assert fact in report.inference.assumed
