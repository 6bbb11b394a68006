# ruff: noqa: E501  (the logs are quoted as nccl-tests prints them)
"""Which GPUs of a host ran: CUDA_VISIBLE_DEVICES and --devices, and whether an assumed choice matters.

The log is outside probe 6's log 92 (NVIDIA/nccl issue #1411, ProHuper): two H800 nodes of 8 GPUs
with 4 CX7 NICs each (one per GPU pair), the run on 4 GPUs per node chosen with
``CUDA_VISIBLE_DEVICES=0,2,4,6``, ring all_reduce with NCCL_CROSS_NIC=0; no device list. GPUs
0,2,4,6 reach all 4 NICs; the first 4 GPUs reach only 2 (the machine the model used to assume).
"""

from __future__ import annotations

import pytest

from commsim.calibrate.infer_devices import visible_devices
from commsim.calibrate.infer_rank_gpus import choice_matters
from commsim.calibrate.inference import RunOptions
from commsim.calibrate.parser import parse_nccl_tests
from commsim.calibrate.settings import read_json_settings, read_settings
from commsim.calibrate.validate import validate_log
from commsim.topology.cluster import nics_reaching
from commsim.topology.machines import nvswitch_box

H800_ROWS = """NCCL_CROSS_NIC=0
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
    67108864      16777216     float     sum      -1    825.4   81.31  142.28      0    824.7   81.38  142.41      0
   134217728      33554432     float     sum      -1   1493.1   89.89  157.31      0   1490.6   90.04  157.57      0
"""
H800_92 = "CUDA_VISIBLE_DEVICES=0,2,4,6\n" + H800_ROWS

H800_OPTIONS = RunOptions(
    gpu="H800 SXM", nodes=2, gpus_per_node=4, nic="ib_ndr", nics_per_node=4, algorithms=("ring",)
)


def _validate(text: str, options: RunOptions = H800_OPTIONS):  # type: ignore[no-untyped-def]
    return validate_log(parse_nccl_tests(text), text, options=options)


@pytest.mark.parametrize(
    ("line", "source"),
    [
        ("CUDA_VISIBLE_DEVICES=0,2,4,6", "command line"),
        ("export CUDA_VISIBLE_DEVICES=0,2,4,6", "export"),
        ("export NCCL_DEBUG=INFO CUDA_VISIBLE_DEVICES=0,2,4,6", "export"),
        ("mpirun -np 8 -x CUDA_VISIBLE_DEVICES=0,2,4,6 ./build/all_reduce_perf -g 1", "mpirun -x"),
        ("mpiexec -genv CUDA_VISIBLE_DEVICES 0,2,4,6 ./build/all_reduce_perf", "mpiexec -genv"),
        ("CUDA_VISIBLE_DEVICES=0,2,4,6 ./build/all_reduce_perf -g 4", "command line"),
    ],
)
def test_cuda_visible_devices_is_read_from_every_command_form(line: str, source: str) -> None:
    """Each form a log shows the variable in gives it as a setting, cited at its line (line 3 here)."""
    settings = read_settings(["# a comment", "", line])
    seen = settings.env["CUDA_VISIBLE_DEVICES"]
    assert (seen.value, seen.source, seen.line) == ("0,2,4,6", source, 3)


def test_visible_devices_from_json_env_and_rocm_layers() -> None:
    """-J JSON's env list gives it too; HIP_VISIBLE_DEVICES indexes the GPUs ROCR_VISIBLE_DEVICES
    leaves: ROCR 4,5,6,7 then HIP 1,3 is the board's GPUs 5 and 7."""
    json_settings = read_json_settings({"env": ["CUDA_VISIBLE_DEVICES=1,3"]}, line=1)
    assert visible_devices(json_settings).gpus == (1, 3)  # type: ignore[union-attr]
    amd = read_settings(["export ROCR_VISIBLE_DEVICES=4,5,6,7", "export HIP_VISIBLE_DEVICES=1,3"])
    seen = visible_devices(amd)
    assert seen is not None and seen.gpus == (5, 7) and seen.problem == ""
    uuid = visible_devices(read_settings(["export CUDA_VISIBLE_DEVICES=GPU-8a1b2c3d"]))
    assert uuid is not None and uuid.gpus == () and "does not list GPU indices" in uuid.problem


def test_log_92_runs_on_gpus_0_2_4_6_and_reaches_all_four_nics() -> None:
    """The ranks sit on GPUs 0,2,4,6 of each host (8-15 numbering the second host's), every NIC of
    a host is reached, the fact cites the log's line 1, and the verdict no longer blames the model
    (157.3 GB/s measured against a machine of 4 NDR NICs: 4 x 50 GB/s line rate)."""
    validation = _validate(H800_92)
    inference = validation.inference
    assert inference.ranks == ("gpu0", "gpu2", "gpu4", "gpu6", "gpu8", "gpu10", "gpu12", "gpu14")
    assert len(nics_reaching(inference.topology, inference.ranks)) == 8
    fact = inference.facts["gpus_used"]
    assert (fact.value, fact.assumed, fact.evidence[0].line) == ([0, 2, 4, 6], False, 1)
    assert validation.verdict() == "as expected for this machine"


def test_without_the_line_the_choice_is_assumed_and_withholds_the_verdict() -> None:
    """Without CUDA_VISIBLE_DEVICES the first 4 GPUs are assumed; they reach 2 NICs where GPUs 0,2,4,6
    reach 4, so the verdict is withheld and names --devices instead of calling the model too low."""
    validation = _validate(H800_ROWS)
    inference = validation.inference
    assert inference.ranks[:4] == ("gpu0", "gpu1", "gpu2", "gpu3")
    fact = inference.facts["gpus_used"]
    assert (fact.value, fact.assumed, fact.option) == ("the first 4 of 8", True, "--devices")
    assert fact.note.endswith("GPUs 0-3 reach 2 NIC(s), GPUs 0,2,4,6 reach 4")
    assert validation.verdict().startswith(
        "cannot judge: the machine is partly assumed (gpus_used (--devices))"
    )


def test_devices_option_gives_the_same_machine_as_the_log_line() -> None:
    """--devices 0,2,4,6 on the log without its line places the ranks as CUDA_VISIBLE_DEVICES does."""
    from dataclasses import replace

    given = _validate(H800_ROWS, replace(H800_OPTIONS, devices=(0, 2, 4, 6)))
    read = _validate(H800_92)
    assert given.inference.ranks == read.inference.ranks
    assert [r.predicted_time_s for r in given.rows] == [r.predicted_time_s for r in read.rows]
    assert given.inference.facts["gpus_used"].evidence[0].source == "option --devices"


def test_device_list_ordinals_are_mapped_through_the_visible_gpus() -> None:
    """nccl-tests prints CUDA's ordinal (0, 1 ...) of each rank's GPU; with CUDA_VISIBLE_DEVICES=4,5
    they are the board's GPUs 4 and 5 (one H100 SXM host: an NVSwitch board)."""
    text = """export CUDA_VISIBLE_DEVICES=4,5
# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  11111 on      node1 device  0 [0x18] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  11112 on      node1 device  1 [0x2a] NVIDIA H100 80GB HBM3
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
   134217728      33554432     float     sum      -1   1000.0  134.22  134.22      0   1000.0  134.22  134.22      0
"""
    inference = _validate(text, RunOptions()).inference
    assert inference.ranks == ("gpu4", "gpu5")
    fact = inference.facts["gpus_used"]
    assert (fact.value, fact.assumed) == ([4, 5], False)


def test_an_assumed_choice_that_does_not_change_the_machine_is_no_assumption() -> None:
    """On one host every GPU of an NVSwitch board is a port of the same switch, and with one NIC per
    GPU any 4 GPUs reach 4 NICs: no choice changes the machine. Only 4 NICs on 8 GPUs (one per pair)
    make the first 4 GPUs reach 2 and GPUs 0,2,4,6 reach 4."""
    one_host = nvswitch_box(gpus=8)
    assert choice_matters(one_host, one_host.gpus, 4, networked=False) is None
    nic_per_gpu = nvswitch_box(gpus=8, nics=8)
    assert choice_matters(nic_per_gpu, nic_per_gpu.gpus, 4, networked=True) is None
    nic_per_pair = nvswitch_box(gpus=8, nics=4)
    assert choice_matters(nic_per_pair, nic_per_pair.gpus, 4, networked=True) == (
        "GPUs 0-3 reach 2 NIC(s), GPUs 0,2,4,6 reach 4"
    )
    options = RunOptions(gpu="H800 SXM", gpus=4, nodes=1, gpus_per_node=4)
    fact = _validate(H800_ROWS, options).inference.facts["gpus_used"]
    assert (fact.value, fact.assumed) == ("the first 4 of 8", False)
    assert fact.note.endswith("any 4 of its GPUs would be joined by the same links")


def test_a_visible_list_shorter_than_the_ranks_is_not_read() -> None:
    """CUDA_VISIBLE_DEVICES=0,2 cannot hold 4 ranks per host: a warning says it was not read, and the
    choice stays assumed."""
    validation = _validate("CUDA_VISIBLE_DEVICES=0,2\n" + H800_ROWS)
    assert validation.inference.facts["gpus_used"].assumed
    assert any(
        "makes 2 GPU(s) of a host visible (0,2) but its ranks use CUDA device 3" in w
        for w in validation.inference.warnings
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0,2,x", "--devices '0,2,x': give distinct GPU indices of a host, comma-separated (e.g. 0,2,4,6)"),
        (
            "²,1,2,3",
            "--devices '²,1,2,3': give distinct GPU indices of a host, comma-separated (e.g. 0,2,4,6)",
        ),
        ("0,2", "--devices 0,2 lists 2 distinct GPU(s) but each host runs 4 rank(s)"),
        (
            "0,2,4,9",
            "a host's ranks use its GPU 9 (device list, CUDA_VISIBLE_DEVICES or --devices), but H800 SXM5 ships on boards of at most 8 GPUs",
        ),
    ],
)
def test_bad_devices_option_is_refused_with_exit_2(
    tmp_path, monkeypatch, capsys, value: str, message: str
) -> None:  # type: ignore[no-untyped-def]
    from commsim.cli import main

    log = tmp_path / "92.txt"
    log.write_text(H800_ROWS)
    args = ["validate", str(log), "--gpu", "H800 SXM", "--nodes", "2", "--gpus-per-node", "4"]
    monkeypatch.setattr("sys.argv", ["commsim", *args, "--nic", "ib_ndr", "--devices", value])
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 2
    assert message in " ".join(capsys.readouterr().err.split())


def test_a_bare_h100_on_an_8_gpu_host_names_the_part_whose_board_holds_8() -> None:
    """'H100' is what nvidia-smi prints for the 94 GB part of the 4-GPU board, so `--gpu H100` with 8 GPUs
    per host is refused; the refusal names the catalogue's other H100 SXM part whose board holds 8 (the
    80 GB HGX), not other Hopper GPUs (H200, H800, H20) nor the PCIe H100."""
    from commsim.errors import CommsimError

    with pytest.raises(CommsimError) as caught:
        _validate(H800_ROWS, RunOptions(gpu="H100", gpus=8, nodes=1, gpus_per_node=8))
    message = str(caught.value)
    assert "8 GPUs per host, but H100 SXM5 94GB / 64GB ships on boards of at most 4 GPUs" in message
    assert message.endswith("or name the part whose boards hold 8: --gpu h100_sxm (H100 SXM5 80GB)")
