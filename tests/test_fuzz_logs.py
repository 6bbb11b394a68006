"""Garbled logs a mutation fuzzer of ``commsim validate`` / ``commsim calibrate`` found mishandled.

Each case edits one real log of ``tests/data`` the way the fuzzer did (a number
replaced, a line added) and checks the answer: exit code 2 with a message
saying what and where, never a traceback, never minutes of work. Before its
fix each raised a Python exception or ran for minutes.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest

from tests.test_bad_inputs import run_cli

DATA = Path(__file__).resolve().parent / "data"
DGX2_BROADCAST = DATA / "outside" / "61_V100SXM3-DGX2-12gpu-g12-broadcast-oldformat.txt"
RTX_ALL_REDUCE = DATA / "nccl-tests" / "RTX2080Ti-PCIe-PIX-noP2P_all_reduce_2gpu_1.txt"
ROWS_ONLY_REDUCE = DATA / "outside" / "168_RTX2080Ti-2gpu-NVLinkbridge-reduce-oldformat-rowsonly.txt"
RTX4090_PAIR = DATA / "outside" / "91_RTX4090-2gpu-docker-g2-2GBps-kalavai.txt"
JSON_LOG = DATA / "nccl-tests" / "synthetic_json_RTX2080Ti_all_reduce_2gpu.json"
EFA = DATA / "outside" / "70_T4-EKS-2node-1gpu-EFA-NCCL2127-tagoutput.txt"
ONE_RANK = DATA / "outside" / "115_A10G-AWS-g5.12xlarge-EKS-1rank-allreduce-tagoutput-INFO-nofooter.txt"
SECONDS = 20.0
"""Time a refusal may take on a loaded 2-core machine (a second unloaded); the hangs took minutes."""


def edited(tmp_path: Path, log: Path, old: str, new: str, count: int = 1) -> Path:
    """A copy of ``log`` with ``old`` replaced by ``new`` (``count`` times, -1 for all)."""
    text = log.read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / log.name
    path.write_text(text.replace(old, new, count), encoding="utf-8")
    return path


def refused(args: list[str], capsys: pytest.CaptureFixture[str], *messages: str) -> str:
    """Run ``commsim ARGS``: exit 2, nothing on stdout, each message on stderr, quickly."""
    start = time.perf_counter()
    code, out, err = run_cli(args, capsys)
    assert code == 2, err
    assert out == ""
    assert "Traceback" not in err
    for message in messages:
        assert message in err
    assert time.perf_counter() - start < SECONDS
    return err


ROWS_ONLY = "  131072  32768  float  sum  0  23.17  5.66  5.66  0e+00  23.27  5.63  5.63  0e+00\n"
INFO_NRANKS = "host:1:1 [0] NCCL INFO comm 0x0 rank 0 nRanks {} nNodes 0 localRanks 0 localRank 0 MNNVL 0\n"


def test_nranks_zero_is_no_rank_count(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``nRanks 0`` in an NCCL INFO line divided by zero in the busbw factor."""
    path = tmp_path / "log.txt"
    path.write_text(ROWS_ONLY + INFO_NRANKS.format(0), encoding="utf-8")
    refused(["validate", str(path)], capsys, f"{path}: cannot tell the number of ranks")


def test_nranks_zero_leaves_the_other_sources(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = edited(tmp_path, ONE_RANK, "rank 0 nRanks 1 ", "rank 0 nRanks 0 ")
    code, out, err = run_cli(["validate", str(path), "--json"], capsys)
    assert code == 0, err
    assert '"ranks": 1' in out


def test_highest_rank_listed_above_the_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A garbled rank number made a list of 10^8 ranks, then a cluster of them, for minutes."""
    path = edited(tmp_path, DGX2_BROADCAST, "Rank 11 Pid", "Rank 99999999 Pid")
    message = f"{path}:19: the highest rank listed says 100000000 ranks, above the limit of 65,536"
    refused(["validate", str(path)], capsys, message, "pass --gpus N")


def test_nranks_above_the_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "log.txt"
    path.write_text(ROWS_ONLY + INFO_NRANKS.format(99999999), encoding="utf-8")
    refused(["validate", str(path)], capsys, f"{path}:2: the NCCL INFO nranks says 99999999 ranks")


def test_nic_count_above_the_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``(found 99999 nics)`` built a network of 10^5 NICs per host, for minutes."""
    path = edited(tmp_path, EFA, "(found 1 nics)", "(found 99999 nics)", -1)
    message = "line 18: the NET/OFI device count gives 99999 NICs per host, above the 256 commsim models"
    refused(["validate", str(path)], capsys, message, "pass --nics-per-node N")


def test_nics_per_node_option_above_the_limit(capsys: pytest.CaptureFixture[str]) -> None:
    """``--nics-per-node 4096`` (the CLI allowed up to 65,536) also ran for minutes."""
    refused(["validate", str(EFA), "--nics-per-node", "4096"], capsys, "--nics-per-node must be 1 to 256")


def field_edited(tmp_path: Path, log: Path, line: int, field: int, new: str) -> Path:
    """A copy of ``log`` with field ``field`` (1-based) of line ``line`` replaced by ``new``."""
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    fields = lines[line - 1].split()
    fields[field - 1] = new
    lines[line - 1] = "  " + "  ".join(fields) + "\n"
    path = tmp_path / log.name
    path.write_text("".join(lines), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        (8, "1e999", "field 8 (out-of-place busbw) should be a bandwidth of 0 to 1e+299 GB/s, found '1e999'"),
        (8, "-inf", "field 8 (out-of-place busbw) should be a bandwidth of 0 to 1e+299 GB/s, found '-inf'"),
        (12, "1e308", "field 12 (in-place busbw) should be a bandwidth of 0 to 1e+299 GB/s, found '1e308'"),
        (11, "-1", "field 11 (in-place algbw) should be a bandwidth of 0 to 1e+299 GB/s, found '-1'"),
        (10, "1e-300", "field 10 (in-place time) should be a time of at least one nanosecond per call"),
        (9, "NaN", "field 9 (out-of-place wrong) should be a count of wrong elements or N/A, found 'NaN'"),
        (13, "inf", "field 13 (in-place wrong) should be a count of wrong elements or N/A, found 'inf'"),
    ],
)
def test_non_finite_measures_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: int, value: str, message: str
) -> None:
    """1e999 overflowed the printed number's rounding, nan/inf #wrong overflowed int(), and an
    inf next to a -inf busbw made the footer's average check raise (OverflowError, ValueError)."""
    path = field_edited(tmp_path, RTX_ALL_REDUCE, 55, field, value)
    refused(["validate", str(path)], capsys, f"{path}:55: {message}")


def test_inf_and_minus_inf_busbw_in_one_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = field_edited(tmp_path, RTX_ALL_REDUCE, 55, 8, "-inf")
    path = field_edited(tmp_path, path, 56, 8, "1e999")
    refused(["validate", str(path)], capsys, f"{path}:55: field 8 (out-of-place busbw)")


def test_printed_overflow() -> None:
    from commsim.calibrate.parser_bandwidth import Printed, printed

    assert printed("1e999") == Printed(math.inf, math.inf)
    assert printed("1e-0000000000000000000000002") == printed("1e-2")
    assert printed("40.12") == Printed(40.12, 0.5 * 10.0**-2)


@pytest.mark.parametrize("log", [RTX_ALL_REDUCE, ROWS_ONLY_REDUCE], ids=["table", "header-less"])
def test_size_of_a_million_digits(tmp_path: Path, capsys: pytest.CaptureFixture[str], log: Path) -> None:
    """``int()`` refuses more than 4,300 digits (ValueError); the message showed all 10^6 of them."""
    lines = log.read_text(encoding="utf-8").splitlines()
    row = next(i for i, text in enumerate(lines) if text.split()[:1] == ["512"]) + 1
    path = field_edited(tmp_path, log, row, 1, "9" * 1_000_000)
    message = (
        "should be an integer of at most 640 digits, found '99999999999999999999'... (1,000,000 characters)"
    )
    err = refused(["validate", str(path)], capsys, f"{path}:{row}: field 1 (size) {message}")
    assert len(err) < 500


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def test_json_of_a_nan_busbw_is_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A busbw printed as nan (accepted: nccl-tests prints it) made ``--json`` print NaN, not JSON."""
    path = field_edited(tmp_path, RTX_ALL_REDUCE, 55, 8, "nan")
    code, out, err = run_cli(["validate", str(path), "--json"], capsys)
    assert code == 0, err
    rows = json.loads(out, parse_constant=_no_constant)["rows"]
    assert [r["measured_busbw_Bps"] for r in rows if r["nbytes"] == 512] == [None]


def test_device_index_above_the_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``device 4294967296`` in a device line built a PCIe server of 2^32 GPUs, for minutes."""
    path = edited(tmp_path, RTX4090_PAIR, "device  0 [0x1a]", "device 4294967296 [0x1a]")
    message = "a host's ranks use its GPU 4294967296 (device list, CUDA_VISIBLE_DEVICES or --devices), above"
    refused(["validate", str(path)], capsys, message, "give --devices")
    code, _, err = run_cli(["validate", str(path), "--devices", "0,1"], capsys)
    assert code == 0, err


def json_edited(tmp_path: Path, result: int, half: str, key: str, value: object) -> Path:
    """A copy of the -J JSON log with ``results[result][half][key]`` set to ``value`` (NaN, Infinity
    written bare, as Python's json module reads them)."""
    lines = JSON_LOG.read_text(encoding="utf-8").splitlines(keepends=True)
    comments = "".join(line for line in lines if line.startswith("##"))
    document = json.loads("".join(line for line in lines if not line.startswith("##")))
    document["results"][result][half][key] = value
    path = tmp_path / JSON_LOG.name
    path.write_text(comments + json.dumps(document) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("half", "key", "value", "message"),
    [
        ("in_place", "nwrong", math.inf, "results[3].in_place: 'nwrong' should be a count of wrong elements"),
        (
            "out_of_place",
            "bus_bw",
            -1e308,
            "'bus_bw' should be a bandwidth of 0 to 1e+299 GB/s, found -1e+",
        ),
        ("in_place", "alg_bw", math.inf, "'alg_bw' should be a bandwidth of 0 to 1e+299 GB/s, found inf"),
    ],
)
def test_json_log_non_finite_measures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], half: str, key: str, value: float, message: str
) -> None:
    """An nwrong of Infinity raised OverflowError in int(); an infinite or negative bandwidth was read."""
    path = json_edited(tmp_path, 3, half, key, value)
    refused(["validate", str(path)], capsys, message)


def test_json_log_nan_nwrong_is_unchecked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A bare NaN nwrong (ValueError in int() before) means what nccl-tests' "nan" does: no check."""
    path = json_edited(tmp_path, 3, "out_of_place", "nwrong", math.nan)
    code, _, err = run_cli(["validate", str(path)], capsys)
    assert code == 0, err


def test_ranks_per_host_above_the_limit(capsys: pytest.CaptureFixture[str]) -> None:
    """``--gpus 65536 --nodes 1`` (each within the options' bound) routed a 65,536-GPU host for minutes."""
    args = ["validate", str(RTX4090_PAIR), "--gpus", "65536", "--nodes", "1", "--collective", "all_reduce"]
    refused(args, capsys, "65536 ranks per host is above the 1024 GPUs a host may have", "give --nodes")
