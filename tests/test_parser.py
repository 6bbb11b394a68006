"""Tests of the nccl-tests output parser (commsim.calibrate.parser).

Expected values are copied by hand from the log files in tests/data/nccl-tests,
not from the parser's output.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import NamedTuple

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from commsim.calibrate import (
    COLLECTIVES,
    NcclTestsLog,
    NcclTestsRow,
    load_nccl_tests,
    normalise_collective,
    parse_nccl_tests,
)
from commsim.calibrate.parser import load_nccl_tests_runs, parse_nccl_tests_runs
from commsim.calibrate.parser_bandwidth import Measured, printed
from commsim.calibrate.parser_table_ranks import ranks_from_bandwidths
from commsim.calibrate.parser_text import looks_like_row
from commsim.errors import ParseError, UnknownNameError

DATA = Path(__file__).parent / "data" / "nccl-tests"
US = 1e-6
GB = 1e9

A100 = "A100-SXM4-80GB-HGX-NVSwitch_all_reduce_8gpu_1.txt"
H100 = "H100-SXM-DellXE9680_all_reduce_16gpu_2node-IB-NDR400x8_1.txt"
RTX_AG = "RTX2080Ti-PCIe-PIX-noP2P_all_gather_2gpu_1.txt"
RTX_AR = "RTX2080Ti-PCIe-PIX-noP2P_all_reduce_2gpu_1.txt"
RTX_BC = "RTX2080Ti-PCIe-PIX-noP2P_broadcast_2gpu_1.txt"
RTX4090 = "RTX4090-PCIe-noP2P-8NUMA_all_reduce_8gpu_1.txt"
V100 = "V100-SXM2-p3dn_all_reduce_16gpu_2node-EFA100_1.txt"
REAL_FILES = [A100, H100, RTX_AG, RTX_AR, RTX_BC, RTX4090, V100]


def text_of(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def without_lines(rows: list[NcclTestsRow]) -> list[NcclTestsRow]:
    return [dataclasses.replace(row, line=0) for row in rows]


class Row(NamedTuple):
    """Size (B), out-of-place time (us) and busbw (GB/s), in-place time and busbw."""

    nbytes: int
    oop_us: float
    oop_busbw: float
    ip_us: float
    ip_busbw: float


class Expected(NamedTuple):
    name: str
    rows: int
    first: Row
    last: Row
    n_ranks: int
    hosts: list[str]
    gpu_model: str
    nccl_version: str | None
    collective: str | None
    avg_busbw: float
    command: str | None
    topo_lines: int | None


EXPECTED = [
    Expected(
        A100,
        30,
        Row(8, 40.12, 0.00, 38.85, 0.00),
        Row(4294967296, 32336, 232.44, 32455, 231.59),
        8,
        ["thanos"],
        "NVIDIA A100-SXM4-80GB",
        None,
        "all_reduce",
        66.2058,
        "./build/all_reduce_perf -b 8 -e 4G -f 2 -g 8",
        None,
    ),
    Expected(
        H100,
        32,
        Row(8, 68.52, 0.00, 24.70, 0.00),
        Row(17179869184, 68652, 469.21, 68668, 469.10),
        16,
        ["bm-h100-01", "bm-h100-02"],
        "NVIDIA H100 80GB HBM3",
        "2.26.2+cuda12.8",
        "all_reduce",
        139.56,
        "/mnt/nfs/openmpi-4.1.8/ompi_install/bin/mpirun --np 16 -H bm-h100-01:8,bm-h100-02:8 -x",
        None,
    ),
    Expected(
        RTX_AG,
        28,
        Row(0, 0.33, 0.00, 0.36, 0.00),
        Row(1073741824, 141614, 3.79, 139719, 3.84),
        2,
        ["autodl-container-xxxxx"],
        "NVIDIA GeForce RTX 2080 Ti",
        None,
        "all_gather",
        1.6651,
        "./build/all_gather_perf -b 8 -e 1024M -f 2 -g2",
        3,
    ),
    Expected(
        RTX_AR,
        28,
        Row(8, 12.25, 0.00, 12.00, 0.00),
        Row(1073741824, 268588, 4.00, 268461, 4.00),
        2,
        ["autodl-container-xxxxx"],
        "NVIDIA GeForce RTX 2080 Ti",
        None,
        "all_reduce",
        2.05774,
        "./build/all_reduce_perf -b 8 -e 1024M -f 2 -g2",
        3,
    ),
    Expected(
        RTX_BC,
        28,
        Row(8, 11.65, 0.00, 11.37, 0.00),
        Row(1073741824, 96800, 11.09, 96803, 11.09),
        2,
        ["autodl-container-xxxxx"],
        "NVIDIA GeForce RTX 2080 Ti",
        None,
        "broadcast",
        5.07658,
        "./build/broadcast_perf -b 8 -e 1024M -f 2 -g2",
        3,
    ),
    Expected(
        RTX4090,
        25,
        Row(8, 38.83, 0.00, 40.43, 0.00),
        Row(134217728, 16253, 14.45, 16227, 14.47),
        8,
        ["<REDACTED>"],
        "NVIDIA GeForce RTX 4090",
        None,
        "all_reduce",
        4.85265,
        "./build/all_reduce_perf -b 8 -e 128M -f 2 -g 8",
        13,
    ),
    Expected(
        V100,
        28,
        Row(8, 145.4, 0.00, 152.8, 0.00),
        Row(1073741824, 228178, 8.82, 224997, 8.95),
        16,
        ["ip-172-31-41-105", "ip-172-31-41-36"],
        "Tesla V100-SXM2-32GB",
        "2.4.8+cuda10.0",
        "all_reduce",  # not from the binary, named only in '## command:' commentary: from the table
        2.80613,
        None,
        None,
    ),
]


def assert_row(row: NcclTestsRow, expected: Row) -> None:
    assert row.nbytes == expected.nbytes
    assert row.oop_time_s == pytest.approx(expected.oop_us * US, rel=1e-12)
    assert row.oop_busbw_Bps == pytest.approx(expected.oop_busbw * GB, rel=1e-12, abs=1e-3)
    assert row.ip_time_s == pytest.approx(expected.ip_us * US, rel=1e-12)
    assert row.ip_busbw_Bps == pytest.approx(expected.ip_busbw * GB, rel=1e-12, abs=1e-3)


@pytest.mark.parametrize(
    "expected", EXPECTED, ids=[e.name.split("_")[0] + "-" + e.name[-12:] for e in EXPECTED]
)
def test_real_log(expected: Expected) -> None:
    log = load_nccl_tests(DATA / expected.name)
    assert log.source == str(DATA / expected.name)
    assert len(log.rows) == expected.rows
    assert_row(log.rows[0], expected.first)
    assert_row(log.rows[-1], expected.last)
    assert log.n_ranks == expected.n_ranks == len(log.devices)
    assert [d.rank for d in log.devices] == list(range(expected.n_ranks))
    assert log.hosts == expected.hosts
    assert log.nodes == len(expected.hosts)
    assert log.gpu_model == expected.gpu_model
    assert log.gpu_models == [expected.gpu_model]
    assert log.gpus_per_node == expected.n_ranks // len(expected.hosts)
    assert log.nccl_version == expected.nccl_version
    assert log.collective == expected.collective
    assert log.avg_busbw_Bps == pytest.approx(expected.avg_busbw * GB, rel=1e-12)
    assert log.out_of_bounds == 0
    if expected.command is None:
        assert log.command is None
    else:
        assert log.command is not None and log.command.startswith(expected.command)
    if expected.topo_lines is None:
        assert log.topo_matrix is None
    else:
        assert log.topo_matrix is not None
        assert len(log.topo_matrix.splitlines()) == expected.topo_lines


@pytest.mark.parametrize("name", REAL_FILES)
def test_real_log_rows_fit_size_and_time(name: str) -> None:
    """Every printed algbw and busbw of the real logs fits its size and time."""
    log = load_nccl_tests(DATA / name, collective="all_reduce" if name == V100 else None)
    assert own_warnings(log) == []


@pytest.mark.parametrize("name", REAL_FILES)
def test_every_table_line_becomes_a_row(name: str) -> None:
    """Count the rows independently: lines of tool output that start with a number."""
    tool_lines = [line for line in text_of(name).splitlines() if not line.startswith("## ")]
    table_lines = [line for line in tool_lines if re.match(r"^\s+\d+\s+\d+\s+\w+\s", line)]
    log = load_nccl_tests(DATA / name)
    assert [row.nbytes for row in log.rows] == [int(line.split()[0]) for line in table_lines]


def test_row_fields_and_line_numbers() -> None:
    log = load_nccl_tests(DATA / A100)
    first, last = log.rows[0], log.rows[-1]
    assert (first.line, last.line) == (23, 52)
    assert (first.count, first.dtype, first.redop, first.root) == (2, "float", "sum", -1)
    assert (first.oop_wrong, first.ip_wrong, first.oop_max_error) == (0, 0, None)
    assert last.oop_algbw_Bps == pytest.approx(132.82 * GB)
    assert last.ip_algbw_Bps == pytest.approx(132.34 * GB)
    broadcast = load_nccl_tests(DATA / RTX_BC)
    assert {row.root for row in broadcast.rows} == {0}
    assert {row.redop for row in broadcast.rows} == {"none"}


def test_run_header() -> None:
    log = load_nccl_tests(DATA / A100)
    assert log.header == {
        "nThread": 1,
        "nGpus": 8,
        "minBytes": 8,
        "maxBytes": 4294967296,
        "step": "2(factor)",
        "warmup iters": 5,
        "iters": 20,
        "agg iters": 1,
        "validation": 1,
        "graph": 0,
    }
    old = load_nccl_tests(DATA / V100)
    assert old.header["iters"] == 100
    assert "agg iters" not in old.header and "graph" not in old.header


def test_devices() -> None:
    h100 = load_nccl_tests(DATA / H100)
    rank9 = h100.devices[9]
    assert (rank9.rank, rank9.host, rank9.device, rank9.pid) == (9, "bm-h100-02", 1, 26634)
    assert rank9.bus_id == "0000:3b:00"
    assert rank9.model == "NVIDIA H100 80GB HBM3"
    a100 = load_nccl_tests(DATA / A100)
    assert [d.bus_id for d in a100.devices[:3]] == ["0x07", "0x0a", "0x45"]
    v100 = load_nccl_tests(DATA / V100)  # old format: no 'Group'
    assert (v100.devices[15].pid, v100.devices[15].host) == (4134, "ip-172-31-41-36")


def test_old_format_error_columns() -> None:
    log = load_nccl_tests(DATA / V100)
    assert {row.root for row in log.rows} == {None}
    assert {row.oop_wrong for row in log.rows} == {None}
    assert (log.rows[0].oop_max_error, log.rows[0].ip_max_error) == (2e-07, 1e-07)
    assert log.rows[-1].oop_max_error == 5e-07


def test_topo_matrix_is_the_topo_m_matrix_only() -> None:
    log = load_nccl_tests(DATA / RTX_AG)
    assert log.topo_matrix is not None
    lines = log.topo_matrix.splitlines()
    assert lines[0].split()[:2] == ["GPU0", "GPU1"] and "CPU Affinity" in lines[0]
    assert lines[1].split()[:3] == ["GPU0", "X", "PIX"]
    assert "NS" not in log.topo_matrix.split()  # the 'topo -p2p p' matrix that follows
    big = load_nccl_tests(DATA / RTX4090).topo_matrix
    assert big is not None
    assert big.splitlines()[0].split()[:9] == [f"GPU{i}" for i in range(8)] + ["NIC0"]
    nic3 = ["NIC3", "SYS", "SYS", "SYS", "SYS", "SYS", "SYS", "PHB", "SYS", "PHB", "PHB", "PIX", "X"]
    assert big.splitlines()[-1].split() == nic3


def test_topo_p2p_matrix_alone_is_not_a_topo_matrix() -> None:
    lines = text_of(RTX_AR).splitlines()
    start = next(i for i, line in enumerate(lines) if line.endswith("nvidia-smi topo -m"))
    del lines[start : start + 4]  # the topo -m command, header and two rows
    text = "\n".join(lines)
    assert " GPU0   X       NS" in text
    assert parse_nccl_tests(text).topo_matrix is None


def test_collective_comes_only_from_tool_output() -> None:
    """V100's binary is named only in '## command:' commentary, which is never read.

    Its collective comes from the result table instead: busbw/algbw 8.95/4.77 = 1.876 is
    2(n-1)/n = 1.875 for its 16 listed ranks, with redop sum: only all_reduce fits.
    """
    assert "all_reduce_perf" in text_of(V100)
    log = load_nccl_tests(DATA / V100)
    assert log.collective == "all_reduce" and log.command is None
    assert [e.source for e in log.collective_evidence] == ["result table"]
    assert not any("collective unknown" in warning for warning in log.warnings)
    given = load_nccl_tests(DATA / V100, collective="all_reduce")
    assert [e.source for e in given.collective_evidence] == [
        "collective given (--collective)",
        "result table",
    ]


def test_explicit_collective_wins_and_is_checked() -> None:
    log = load_nccl_tests(DATA / A100, collective="broadcast")
    assert log.collective == "broadcast"
    assert "the log runs all_reduce_perf" in log.warnings[0]
    # With busbw factor 1 instead of 2 x 7/8, the rows' busbw no longer fit: the first three
    # are named one by one (from line 27), the other 47 -- up to the last row, line 52 -- in one line.
    assert log.warnings[1].startswith("line 27: out-of-place busbw 0.01 GB/s disagrees")
    summary = "... and 47 more printed bandwidths disagree the same way (lines 29 to 52)"
    assert log.warnings[4].startswith(summary)
    assert len(log.warnings) == 5


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("all_reduce", "all_reduce"),
        ("AllReduce", "all_reduce"),
        ("all-gather", "all_gather"),
        ("./build/reduce_scatter_perf", "reduce_scatter"),
        ("all_reduce_perf_mpi", "all_reduce"),
        ("alltoall_perf", "all_to_all"),
        ("all_to_all", "all_to_all"),
        ("sendrecv", "send_recv"),
        ("/opt/nccl-tests/build/hypercube_perf", "hypercube"),
        ("reduce_perf", "reduce"),
    ],
)
def test_normalise_collective(name: str, expected: str) -> None:
    assert normalise_collective(name) == expected


def test_unknown_collective_names_the_valid_ones() -> None:
    valid = "valid: all_gather, all_reduce, all_to_all, broadcast, gather, hypercube, reduce, "
    with pytest.raises(UnknownNameError, match=valid):
        normalise_collective("allreduce_v2")
    with pytest.raises(UnknownNameError):
        parse_nccl_tests(text_of(A100), collective="ring")
    assert set(COLLECTIVES) >= {"all_reduce", "all_to_all", "send_recv"}


# ----------------------------------------------------------------- launcher prefixes

PREFIXES = ["0: ", " 12: ", "[1,0]<stdout>:", "[1,0]<stdout>: ", "rank0: ", "rank 3:"]


ROUTINE = ("not result rows inside the table", "number of ranks")


def own_warnings(log: NcclTestsLog) -> list[str]:
    """Warnings about the results, without those about skipped lines and rank sources."""
    return [w for w in log.warnings if not any(kind in w for kind in ROUTINE)]


def comparable(log: NcclTestsLog) -> tuple[object, ...]:
    return (
        without_lines(log.rows),
        log.devices,
        log.header,
        log.collective,
        log.n_ranks,
        log.nccl_version,
        log.command,
        log.avg_busbw_Bps,
        [line.split() for line in (log.topo_matrix or "").splitlines()],
        own_warnings(log),
    )


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("name", REAL_FILES)
def test_prefixed_lines_parse_like_plain_ones(name: str, prefix: str) -> None:
    lines = text_of(name).splitlines()
    prefixed = "\n".join(line if line.startswith("## ") else prefix + line for line in lines)
    plain = parse_nccl_tests(text_of(name))
    log = parse_nccl_tests(prefixed)
    assert comparable(log) == comparable(plain)
    assert [row.line for row in log.rows] == [row.line for row in plain.rows]


@pytest.mark.parametrize(
    ("synthetic", "real"),
    [
        ("synthetic_slurm-label_A100_all_reduce_8gpu.txt", A100),
        ("synthetic_openmpi-tag-output_H100_all_reduce_16gpu.txt", H100),
        ("synthetic_rank-prefix_RTX2080Ti_broadcast_2gpu.txt", RTX_BC),
    ],
)
def test_prefixed_files_parse_like_their_plain_twins(synthetic: str, real: str) -> None:
    log = load_nccl_tests(DATA / synthetic)
    plain = load_nccl_tests(DATA / real)
    assert comparable(log) == comparable(plain)
    assert len(log.rows) == len(plain.rows) > 0


def test_mixed_prefixes_and_timestamps() -> None:
    lines = [line for line in text_of(RTX_AR).splitlines() if not line.startswith("## ")]
    mixed = "\n".join(
        f"2025-06-05T14:02:{i % 60:02d}.123Z 0: [1,0]<stdout>:{line}" for i, line in enumerate(lines)
    )
    assert without_lines(parse_nccl_tests(mixed).rows) == without_lines(load_nccl_tests(DATA / RTX_AR).rows)


# ----------------------------------------------------------------- JSON


def test_json_parses_like_its_text_twin() -> None:
    log = load_nccl_tests(DATA / "synthetic_json_RTX2080Ti_all_reduce_2gpu.json")
    plain = load_nccl_tests(DATA / RTX_AR)
    assert len(log.rows) == len(plain.rows) == 28
    for row, text_row in zip(log.rows, plain.rows, strict=True):
        same = (
            "nbytes",
            "count",
            "dtype",
            "redop",
            "root",
            "oop_time_s",
            "ip_time_s",
            "oop_wrong",
            "ip_wrong",
        )
        assert [getattr(row, f) for f in same] == [getattr(text_row, f) for f in same]
        for f in ("oop_algbw_Bps", "oop_busbw_Bps", "ip_algbw_Bps", "ip_busbw_Bps"):
            # 2-decimal rounding of the text, plus the rounding of the time both are computed from
            assert getattr(row, f) == pytest.approx(getattr(text_row, f), abs=0.0075 * GB)
    assert log.rows[-1].oop_busbw_Bps == pytest.approx(3.997728 * GB)  # full precision, not 4.00
    assert log.devices == plain.devices
    assert log.header.items() >= plain.header.items()
    assert (log.collective, log.n_ranks, log.nodes, log.hosts) == ("all_reduce", 2, 1, plain.hosts)
    assert log.nccl_version == "2.20.5"
    assert log.command == "./build/all_reduce_perf -b 8 -e 1024M -f 2 -g2 -J all_reduce.json"
    assert log.avg_busbw_Bps == pytest.approx(plain.avg_busbw_Bps, abs=0.001 * GB)
    assert log.out_of_bounds == 0
    assert log.warnings == []


def pretty_json() -> str:
    """The JSON twin re-indented over many lines (commentary kept)."""
    import json

    text = text_of("synthetic_json_RTX2080Ti_all_reduce_2gpu.json")
    comments = [line for line in text.splitlines() if line.startswith("## ")]
    document = json.loads("\n".join(line for line in text.splitlines() if not line.startswith("## ")))
    return "\n".join(comments) + "\n" + json.dumps(document, indent=2)


def test_json_row_lines() -> None:
    one_line = load_nccl_tests(DATA / "synthetic_json_RTX2080Ti_all_reduce_2gpu.json")
    assert {row.line for row in one_line.rows} == {8}  # nccl-tests writes one line
    pretty = parse_nccl_tests(pretty_json())
    lines = [row.line for row in pretty.rows]
    assert lines == sorted(set(lines)) and lines[0] > 8
    assert '"size"' in pretty_json().splitlines()[lines[0] - 1]


@pytest.mark.parametrize(
    ("edit", "message", "line"),
    [
        (lambda t: t.replace('"size":', '"size" ', 1), "invalid JSON", 8),
        (lambda t: t.replace('"results"', '"rows"'), "no 'results' list", None),
        (lambda t: t.replace('"size":64,', '"size":"64",'), "results[3]: 'size' should be an integer", 8),
        (lambda t: t.replace('"alg_bw":0.005512', '"alg_bw":"fast"'), "results[3].out_of_place", 8),
        (lambda t: t.replace('"root":"    -1"', '"root":"top"', 1), "'root' should be an integer", 8),
        (
            lambda t: t.replace('"time":', '"time":-', 1),
            "'time' should be a positive time of at most one day per call",
            8,
        ),
        (lambda t: t.replace('"time":', '"time":Infinity, "was":', 1), "found inf", 8),
        (lambda t: t.replace('"size":64,', f'"size":{2**50 + 1},'), "expected a size of at most 1 PiB", 8),
    ],
)
def test_json_errors(edit: object, message: str, line: int | None) -> None:
    text = text_of("synthetic_json_RTX2080Ti_all_reduce_2gpu.json")
    assert callable(edit)
    with pytest.raises(ParseError, match=re.escape(message)) as info:
        parse_nccl_tests(edit(text))
    assert info.value.line == line


def test_json_device_nccl_tests_could_not_parse_is_skipped_with_a_warning() -> None:
    """nccl-tests fills a device entry by sscanf of the rank line; a failed parse leaves junk."""
    text = text_of("synthetic_json_RTX2080Ti_all_reduce_2gpu.json").replace('"hostname":', '"host":', 1)
    log = parse_nccl_tests(text)
    assert [d.rank for d in log.devices] == [1]
    assert any("device entry skipped: config.devices[0]: 'hostname' should be" in w for w in log.warnings)
    assert log.n_ranks == 2 and log.rank_source == "busbw/algbw ratio"


def test_cpu_time_columns() -> None:
    """nccl-tests -C 1 reports CPU time: 'cputime' columns, 'cpu_time' JSON keys."""
    plain = load_nccl_tests(DATA / RTX_AR)
    text = text_of(RTX_AR).replace("root     time", "root  cputime")
    text = text.replace("#wrong     time", "#wrong  cputime")
    assert text.count("cputime") == 2
    assert without_lines(parse_nccl_tests(text).rows) == without_lines(plain.rows)
    json_text = text_of("synthetic_json_RTX2080Ti_all_reduce_2gpu.json")
    cpu = parse_nccl_tests(json_text.replace('"time":', '"cpu_time":'))
    assert [row.oop_time_s for row in cpu.rows] == [row.oop_time_s for row in plain.rows]


def test_json_nan_and_missing_in_place() -> None:
    text = text_of("synthetic_json_RTX2080Ti_all_reduce_2gpu.json")
    text = text.replace('"nwrong":0.000000}', '"nwrong":null}')
    text = re.sub(r',"in_place":\{[^}]*\}', "", text, count=1)
    text = text.replace('"alg_bw":0.001359', '"alg_bw":"nan"', 1)
    log = parse_nccl_tests(text)
    assert log.rows[0].ip_time_s is None and log.rows[0].ip_busbw_Bps is None
    assert log.rows[1].ip_time_s is not None
    assert log.rows[1].oop_algbw_Bps != log.rows[1].oop_algbw_Bps  # NaN
    assert {row.oop_wrong for row in log.rows} == {None}


# ----------------------------------------------------------------- other formats


def test_old_all_gather_format_without_redop_and_root() -> None:
    log = load_nccl_tests(DATA / "synthetic_old-format_all_gather_8gpu_no-redop-root_error-NA.txt")
    assert (log.collective, log.n_ranks, log.nodes, log.gpu_model) == (
        "all_gather",
        8,
        1,
        "Tesla V100-SXM2-16GB",
    )
    assert len(log.rows) == 17
    first, last = log.rows[0], log.rows[-1]
    assert (first.nbytes, first.count, first.dtype, first.redop, first.root) == (
        1024,
        32,
        "float",
        None,
        None,
    )
    assert first.oop_time_s == pytest.approx(11.74 * US)
    assert (first.oop_algbw_Bps, first.oop_busbw_Bps) == pytest.approx((0.09 * GB, 0.08 * GB))
    assert (first.oop_wrong, first.oop_max_error, first.ip_max_error) == (None, None, None)  # N/A
    assert (last.nbytes, last.ip_time_s, last.ip_busbw_Bps) == pytest.approx(
        (67108864, 500.63 * US, 117.29 * GB)
    )
    assert (log.devices[4].pid, log.devices[4].bus_id) == (23150, "0x85")
    assert log.header["validation"] == 0 and "agg iters" not in log.header
    assert log.avg_busbw_Bps == pytest.approx(41.8085 * GB)
    assert log.warnings == []


def test_legacy_format_with_times_in_milliseconds() -> None:
    log = load_nccl_tests(DATA / "synthetic_legacy-ms-format_all_reduce_2gpu.txt")
    assert len(log.rows) == 12
    assert log.rows[0].oop_time_s == pytest.approx(0.014e-3)
    assert log.rows[-1].oop_time_s == pytest.approx(3.539e-3)
    assert log.rows[-1].oop_busbw_Bps == pytest.approx(9.48 * GB)
    assert (log.rows[0].redop, log.rows[0].root, log.rows[0].oop_max_error) == ("sum", None, 0.0)
    assert [d.pid for d in log.devices] == [None, None]
    assert log.gpu_model == "GeForce GTX 1080 Ti"
    assert log.header["compiled with NCCL"] == "2.2"
    assert log.command == "./build/all_reduce_perf -b 8 -e 32M -f 4 -g 2"
    assert log.avg_busbw_Bps is None
    assert log.warnings == []  # read as microseconds, every algbw would be off 1000x


def test_modern_format_with_timestamps_and_interleaved_info() -> None:
    log = load_nccl_tests(DATA / "synthetic_modern-format_reduce_scatter_4gpu_timestamps.txt")
    assert log.collective == "reduce_scatter"  # from '# Collective test starting'
    assert log.command is None
    assert log.nccl_version == "2.28.3"  # from nccl-library=22803
    assert log.header["nccl-tests version"] == "2.17.6" and log.header["unalign"] == 0
    assert len(log.rows) == 8
    assert log.rows[3].nbytes == 65536 and log.rows[3].oop_busbw_Bps == pytest.approx(2.52 * GB)
    assert log.rows[-1].ip_time_s == pytest.approx(798.81 * US)
    assert {row.oop_wrong for row in log.rows} == {None}  # N/A with -c 0
    assert log.devices[3].bus_id == "0000:bd:00"
    assert log.avg_busbw_Bps == pytest.approx(6.45545 * GB)
    # the NCCL INFO line at line 25 sits inside the table
    assert log.warnings == [
        "line 25: not result rows inside the table (skipped); the first reads "
        "'l40s-box:400123:400141 [1] NCCL INFO NVLS multicast support is not available on '"
    ]


def test_per_iteration_columns_are_read_by_header() -> None:
    log = load_nccl_tests(DATA / "synthetic_per-iteration_alltoall_2gpu.txt")
    assert log.collective == "all_to_all"
    assert [row.oop_time_s for row in log.rows] == pytest.approx([100e-6, 190e-6])
    assert [row.ip_time_s for row in log.rows] == pytest.approx([101e-6, 191e-6])
    assert [row.ip_busbw_Bps for row in log.rows] == pytest.approx([5.19 * GB, 5.49 * GB])
    assert log.warnings == []


# ----------------------------------------------------------------- errors


def test_truncated_last_row_is_dropped_with_a_warning() -> None:
    """The file's last line (22) stops after 7 of the header's 13 fields (line 11)."""
    log = load_nccl_tests(DATA / "synthetic_garbled_truncated-row.txt")
    assert [row.line for row in log.rows] == list(range(13, 22))
    assert log.warnings == [
        "line 22: the last row of the table is truncated (7 of 13 fields) and was dropped"
    ]


def test_truncated_row_in_the_middle_names_its_line() -> None:
    lines = text_of("synthetic_garbled_truncated-row.txt").splitlines()
    lines += [
        "     8388608       2097152     float    none       0    780.0   10.75   10.75      0"
        "    781.9   10.73   10.73      0"
    ]
    with pytest.raises(ParseError, match="truncated or garbled") as info:
        parse_nccl_tests("\n".join(lines), source="cut.txt")
    assert info.value.line == 22
    assert "cut.txt:22:" in str(info.value)
    assert "has 7 fields" in str(info.value) and "announces 13" in str(info.value)


def test_truncated_last_row_before_the_footer_is_dropped() -> None:
    """A100 line 52 is the last row (4294967296 B); cut after its out-of-place algbw."""
    text = a100_with_line(52, "  4294967296    1073741824     float     sum      -1    32336  132.82")
    log = parse_nccl_tests(text)
    assert len(log.rows) == 29 and log.rows[-1].line == 51
    assert "line 52: the last row of the table is truncated (7 of 13 fields) and was dropped" in log.warnings


def test_a_run_stopped_before_its_table_is_skipped() -> None:
    """A second run header replaces A100's footer line 53: that run has no rows (lines 53-55)."""
    log = parse_nccl_tests(a100_with_line(53, "# nThread 1 nGpus 8 minBytes 8 maxBytes 4294967296"))
    assert len(log.rows) == 30
    assert (
        log.warnings[-1] == "lines 53-55: a run without result rows (stopped before its table?) was skipped"
    )


def test_mpi_help_text_inside_a_table_is_skipped() -> None:
    """A100 _2: lines 23 and 53 are Open MPI's aggregated help messages, inside the table."""
    log = load_nccl_tests(DATA / "A100-SXM4-80GB-HGX-NVSwitch_all_reduce_8gpu_2.txt")
    assert len(log.rows) == 30
    assert (log.rows[0].line, log.rows[-1].line) == (24, 54)
    assert log.rows[-1].oop_busbw_Bps == pytest.approx(232.81 * GB)
    assert log.warnings == [
        "lines 23, 53: not result rows inside the table (skipped); the first reads "
        "'8 more processes have sent help message help-mtl-ofi.txt / OFI call fail'"
    ]


@pytest.mark.parametrize(
    ("replacement", "message"),
    [
        (
            "        1024           256     float     sum      -1     0.00    0.02    0.04      0    39.65"
            "    0.03    0.05      0",
            "field 6 (out-of-place time) should be a positive time of at most one day per call "
            "(8.64e+10 us), found '0.00'",
        ),
        (
            "        1024           256     float     sum      -1    42.05    0.02    0.04      0   -39.65"
            "    0.03    0.05      0",
            "field 10 (in-place time) should be a positive time of at most one day per call "
            "(8.64e+10 us), found '-39.65'",
        ),
        (  # 1e300 us: a corrupt figure (one call of nccl-tests' 20 cannot take a day), not a slow run
            "        1024           256     float     sum      -1    1e300    0.02    0.04      0    39.65"
            "    0.03    0.05      0",
            "field 6 (out-of-place time) should be a positive time of at most one day per call "
            "(8.64e+10 us), found '1e300'",
        ),
        (  # 2**50 + 1 bytes: above 1 PiB, the largest size commsim models (commsim.units.MAX_SIZE_BYTES)
            "  1125899906842625           256     float     sum      -1    42.05    0.02    0.04      0"
            "    39.65    0.03    0.05      0",
            "field 1 (size) should be a size of at most 1 PiB (1125899906842624 bytes), the largest "
            "commsim models, found '1125899906842625'",
        ),
    ],
)
def test_impossible_time_or_size_names_its_line(replacement: str, message: str) -> None:
    """A row's time must be positive and at most a day per call, its size at most 1 PiB: a row
    outside those is refused at its line, not priced (a 1e300 us row was kept and judged)."""
    with pytest.raises(ParseError, match=re.escape(message)) as info:
        parse_nccl_tests(a100_with_line(30, replacement), source="a100.txt")
    assert info.value.line == 30


@pytest.mark.parametrize(
    ("line", "is_row"),
    [
        ("8 more processes have sent help message help-mtl-ofi.txt / OFI call fail", False),
        ("1 more process has sent help message help-mtl-ofi.txt / OFI call fail", False),
        ("12 34 hello world again", False),
        ("2 GPUs found", False),
        (
            "     8     2   float     sum    158.9    0.00    0.00  2e-07    158.1    0.00    0.00  1e-07",
            True,
        ),
        ("  1024   256  float  sum  -1  42.05  0.02  0.04  0  N/A  N/A  N/A  N/A", True),
        ("  1024x  256  float  sum  -1  42.05  0.02  0.04  0  39.65  0.03  0.05  0", True),
        ("  8  2  float  sum  -1  1.0  0.01  0.01  0  2025-05-20 12:00:00", True),
    ],
)
def test_rows_are_told_by_shape(line: str, is_row: bool) -> None:
    assert looks_like_row(line.split()) is is_row


def test_non_numeric_field_names_its_line_and_column() -> None:
    with pytest.raises(ParseError) as info:
        load_nccl_tests(DATA / "synthetic_garbled_non-numeric.txt")
    assert info.value.line == 19
    assert "non-numeric.txt:19: field 8 (out-of-place busbw) should be a number, found '1.8?'" in str(
        info.value
    )


def test_log_without_rows_is_an_error() -> None:
    # the fixture's run failed (line 16 'Test NCCL failure ...'): the refusal names the failure
    with pytest.raises(ParseError, match="the run failed before printing a result row: line 16: Test NCCL"):
        load_nccl_tests(DATA / "synthetic_no-rows.txt")
    with pytest.raises(ParseError, match="no result rows"):
        parse_nccl_tests("")


def test_unreadable_file_is_a_parse_error(tmp_path: Path) -> None:
    with pytest.raises(ParseError, match="cannot read"):
        load_nccl_tests(tmp_path / "missing.txt")


def a100_with_line(number: int, replacement: str) -> str:
    lines = text_of(A100).splitlines()
    lines[number - 1] = replacement
    return "\n".join(lines)


def test_a_cut_last_row_with_an_impossible_time_is_refused_not_dropped() -> None:
    """A last row cut short is dropped (a killed run); review 28 found one whose whole out-of-place
    time read 1e300 us dropped as 'truncated' too, though no run prints that (more than a day per
    call): such a row is refused at its line, cut or not."""
    lines = text_of(A100).splitlines()
    last = max(i for i, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("#"))
    fields = lines[last].split()
    lines[last] = "  ".join([*fields[:5], "1e300", *fields[6:9], "13"])
    with pytest.raises(ParseError, match="should be a positive time of at most one day per call") as info:
        parse_nccl_tests("\n".join(lines[: last + 1]), source="a100.txt")
    assert info.value.line == last + 1


@pytest.mark.parametrize(
    ("line", "replacement", "message", "error_line"),
    [
        (30, "        1024           256     float     sum      -1    42.05    0.02", "has 7 fields", 30),
        (
            30,
            "        1024           256     float     sum      -1    42.05    0.02    0.04      0    39.65"
            "    0.03    0.05      0 thanos:54740:54790 [0] NCCL INFO Connected",
            "has 18 fields",
            30,
        ),
        (
            30,
            "        1024x          256     float     sum      -1    42.05    0.02    0.04      0    39.65"
            "    0.03    0.05      0",
            "field 1 (size) should be an integer, found '1024x'",
            30,
        ),
        (
            30,
            "        1024           256     float     sum      -1      N/A    0.02    0.04      0    39.65"
            "    0.03    0.05      0",
            "field 6 (out-of-place time) should be a number, found 'N/A'",
            30,
        ),
        (
            30,
            "        1024           256     float     sum      -1    42.05    0.02    0.04      0    39.65"
            "    0.03    0.05   lots",
            "field 13 (in-place wrong) should be a number or N/A, found 'lots'",
            30,
        ),
        (
            21,
            "#       size         count      type   redop    root     time   algbw  #wrong",
            "no out-of-place busbw",
            21,
        ),
        (54, "# Avg bus bandwidth    : fast", "'Avg bus bandwidth' should be a number", 54),
    ],
)
def test_garbled_lines_name_their_line(line: int, replacement: str, message: str, error_line: int) -> None:
    with pytest.raises(ParseError, match=re.escape(message)) as info:
        parse_nccl_tests(a100_with_line(line, replacement), source="a100.txt")
    assert info.value.line == error_line
    assert f"a100.txt:{error_line}:" in str(info.value)


def test_in_place_na_and_missing_in_place_columns() -> None:
    text = a100_with_line(
        30,
        "        1024           256     float     sum      -1    42.05    0.02    0.04      0"
        + "      N/A" * 4,
    )
    row = parse_nccl_tests(text).rows[7]
    assert (row.ip_time_s, row.ip_algbw_Bps, row.ip_busbw_Bps, row.ip_wrong) == (None, None, None, None)
    assert row.oop_time_s == pytest.approx(42.05 * US)
    lines = [line for line in text_of(RTX_AR).splitlines() if not line.startswith("## ")]
    halved = [
        " ".join(line.split()[: 10 if line.startswith("#") else 9])
        if re.match(r"^\s*(#\s+size|\d)", line)
        else line
        for line in lines
    ]
    log = parse_nccl_tests("\n".join(halved))
    assert len(log.rows) == 28 and {row.ip_time_s for row in log.rows} == {None}
    assert log.rows[-1].oop_busbw_Bps == pytest.approx(4.00 * GB)


# ----------------------------------------------------------------- warnings


def test_inconsistent_rows_are_warned_about_with_their_lines() -> None:
    log = load_nccl_tests(DATA / "synthetic_inconsistent-busbw_broadcast_2gpu.txt")
    assert len(log.rows) == 11  # warned about, not dropped
    assert len(log.warnings) == 3
    assert log.warnings[0].startswith("line 18: out-of-place busbw 0.77 GB/s disagrees")
    assert log.warnings[1].startswith("line 22: out-of-place algbw 10.07 GB/s disagrees")
    assert log.warnings[2].startswith("line 22: out-of-place busbw 10.07 GB/s disagrees")


def format_like_nccl_tests(value: float, width: int) -> str:
    """nccl-tests' getFloatStr (src/util.cu)."""
    power, limit = 0, 1
    while value >= limit:
        power, limit = power + 1, limit * 10
    if power < width - 2:
        return f"{value:{width}.2f}"
    if power < width - 1:
        return f"{value:{width}.1f}"
    if power < width + 1:
        return f"{value:{width}.0f}"
    return f"{value:{width}.1e}"


FACTORS = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
}


def one_row_log(collective: str, ranks: int, nbytes: int, time_us: float, busbw_shift: float = 0.0) -> str:
    algbw = nbytes / time_us / 1e3
    busbw = algbw * FACTORS[collective](ranks) + busbw_shift
    devices = [
        f"#  Rank {r:2d} Group  0 Pid   1000 on  host{r // 8} device {r % 8:2d} [0x0{r % 8}] GPU"
        for r in range(ranks)
    ]
    row = (
        f"{nbytes:12d}  {nbytes // 4:12d}  {'float':>8s}  {'sum':>6s}  {-1:6d}  "
        f"{format_like_nccl_tests(time_us, 7)}  {format_like_nccl_tests(algbw, 6)}  "
        f"{format_like_nccl_tests(busbw, 6)}  {0:6d}"
    )
    return "\n".join(
        [
            f"./build/{collective}_perf",
            *devices,
            "#  size  count  type  redop  root  time  algbw  busbw  #wrong",
            row,
        ]
    )


@settings(max_examples=300, deadline=None)
@given(
    collective=st.sampled_from(sorted(FACTORS)),
    ranks=st.integers(2, 32),
    nbytes=st.integers(0, 2**34),
    time_us=st.floats(0.2, 5e7),
)
def test_rows_printed_like_nccl_tests_are_never_flagged(
    collective: str, ranks: int, nbytes: int, time_us: float
) -> None:
    log = parse_nccl_tests(one_row_log(collective, ranks, nbytes, time_us))
    assert log.warnings == []


@settings(max_examples=200, deadline=None)
@given(
    collective=st.sampled_from(sorted(FACTORS)),
    ranks=st.integers(2, 32),
    nbytes=st.integers(2**10, 2**34),
    time_us=st.floats(1.0, 1e6),
    shift=st.floats(0.02, 0.2),
)
def test_busbw_off_by_more_than_rounding_is_flagged(
    collective: str, ranks: int, nbytes: int, time_us: float, shift: float
) -> None:
    algbw = nbytes / time_us / 1e3
    # above ~1e5 GB/s nccl-tests prints busbw in exponent form with two significant
    # digits, which cannot show a few per cent; real rows never get there
    assume(algbw * FACTORS[collective](ranks) < 1e5)
    busbw_shift = shift * max(1.0, algbw * FACTORS[collective](ranks))  # >= 2% and >= 0.02 GB/s
    log = parse_nccl_tests(one_row_log(collective, ranks, nbytes, time_us, busbw_shift))
    warnings = own_warnings(log)  # the busbw/algbw ratio may also point at another number of ranks
    assert len(warnings) == 1
    assert warnings[0].startswith(f"line {ranks + 3}: out-of-place busbw ")


def test_wrong_elements_and_out_of_bounds_are_warned_about() -> None:
    row = "        1024           256     float     sum      -1    42.05    0.02    0.04     12"
    text = a100_with_line(30, row + "    39.65    0.03    0.05      0")
    text = text.replace("# Out of bounds values : 0 OK", "# Out of bounds values : 1 FAILED")
    log = parse_nccl_tests(text)
    assert log.rows[7].oop_wrong == 12 and log.out_of_bounds == 1
    # one warning for all rows with wrong elements (the fixture has 30 rows; line 30 the only bad one)
    expected = "1 of 30 rows report wrong elements (#wrong > 0, up to 12 in one row; line 30): "
    assert expected in log.warnings[0]
    assert "line 53: nccl-tests reports 1 out-of-bounds values" in log.warnings


def test_missing_rows_show_in_the_average() -> None:
    lines = text_of(A100).splitlines()
    del lines[45:52]  # the seven largest sizes
    log = parse_nccl_tests("\n".join(lines))
    assert len(log.rows) == 23
    assert log.warnings == [
        "Avg bus bandwidth 66.2058 GB/s is not the mean busbw of the 46 results read "
        "(23.4563 GB/s): rows may be missing from the log"
    ]


def test_ranks_without_device_list() -> None:
    """RTX_AR without rank lines: all_reduce busbw = algbw (4.00 and 4.00) means 2(n-1)/n = 1, n = 2."""
    lines = [line for line in text_of(RTX_AR).splitlines() if "#  Rank" not in line]
    log = parse_nccl_tests("\n".join(lines))
    assert (log.n_ranks, log.devices, log.nodes, log.gpu_model) == (2, [], 0, None)
    assert log.rank_source == "busbw/algbw ratio"
    assert parse_nccl_tests("\n".join(lines), n_ranks=4).n_ranks == 4
    no_header = [line for line in lines if "nThread" not in line]
    assert parse_nccl_tests("\n".join(no_header)).n_ranks == 2


def test_broadcast_without_devices_or_header_needs_gpus() -> None:
    """broadcast's busbw = algbw for every n, so a bare table cannot tell the number of ranks.

    The command's ``-g2`` is removed too: a command without a launcher and with ``-g 2`` says 2 ranks.
    """
    lines = [
        line.replace(" -g2", "")
        for line in text_of(RTX_BC).splitlines()
        if "Rank" not in line and "nThread" not in line
    ]
    with pytest.raises(ParseError, match=r"cannot tell the number of ranks: .*; pass --gpus N"):
        parse_nccl_tests("\n".join(lines))
    given = parse_nccl_tests("\n".join(lines), n_ranks=2)
    assert given.rank_source == "n_ranks given (--gpus, or --nodes x --gpus-per-node)"


def test_rows_without_column_header_are_read_as_the_header_would_read_them() -> None:
    """Without its column header line, the table is read in nccl-tests' standard 13-field layout:
    the same rows as with it (the units line above the rows gives microseconds)."""
    text = text_of(RTX_AR)
    lines = ["#" if "#       size" in line else line for line in text.splitlines()]
    without = parse_nccl_tests("\n".join(lines))
    assert without.rows == parse_nccl_tests(text).rows
    assert any("without a column header" in w and "units line" in w for w in without.warnings)


def test_gpu_model_is_the_most_common_one() -> None:
    text = text_of(A100).replace(
        "device  6 [0xc0] NVIDIA A100-SXM4-80GB", "device  6 [0xc0] NVIDIA A100-SXM4-40GB"
    )
    log = parse_nccl_tests(text)
    assert log.gpu_models == ["NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-40GB"]
    assert log.gpu_model == "NVIDIA A100-SXM4-80GB"


def test_duplicate_device_lines_are_warned_about() -> None:
    text = text_of(RTX_AR).replace("#  Rank  1 Group  0 Pid  31706", "#  Rank  0 Group  0 Pid  31999")
    log = parse_nccl_tests(text)
    assert log.n_ranks == 2  # the rows' busbw/algbw (2 ranks) outweigh the one-rank list left
    assert "rank 0 is listed twice with different devices" in log.warnings


# ----------------------------------------------------------------- commentary

TRAPS = [
    "## NCCL version 9.9.9+cuda99.9",
    "## # nccl-tests version 9.9.9 nccl-headers=99999 nccl-library=99999",
    "## #  Rank 16 Group  0 Pid      1 on   fakehost device  0 [0x00] Fake GPU",
    "## # nThread 9 nGpus 9 minBytes 9 maxBytes 9 step: 9(factor) warmup iters: 9 iters: 9",
    "##      size  count  type  time  algbw  busbw",
    "##           8             2     float     sum      -1    99.99   99.99   99.99      9",
    "## ./build/alltoall_perf -b 8 -e 8",
    "## # Avg bus bandwidth    : 999",
    "##        GPU0    GPU1",
    "## GPU0     X      NV4",
    "##",
]


@pytest.mark.parametrize("name", [A100, V100, "synthetic_json_RTX2080Ti_all_reduce_2gpu.json"])
def test_commentary_never_leaks(name: str) -> None:
    lines = text_of(name).splitlines()
    plain = parse_nccl_tests("\n".join(lines))
    trapped: list[str] = []
    for line in lines:  # a trap block before every line of the file
        trapped += [*TRAPS, line]
    log = parse_nccl_tests("\n".join(trapped))
    assert comparable(log) == comparable(plain)
    assert log.rows[0].line == plain.rows[0].line * (len(TRAPS) + 1)
    everything = repr(dataclasses.asdict(log))
    for word in ("9.9.9", "fakehost", "Fake GPU", "alltoall", "NV4"):
        assert word not in everything


def test_commentary_in_real_files_is_not_read() -> None:
    """Each real file's '## ' notes name things the tool output does not."""
    v100 = load_nccl_tests(DATA / V100)
    assert "efa-cuda-10.0" in text_of(V100) and v100.command is None
    rtx = load_nccl_tests(DATA / RTX4090)
    assert "nvidia-smi topo -m (as shown" in text_of(RTX4090)
    assert rtx.topo_matrix is not None and "as shown" not in rtx.topo_matrix


# ----------------------------------------------------------------- the run in every real log


class RealRun(NamedTuple):
    """nGPUs from tests/data/nccl-tests/README.md; hosts read off each file's rank lines."""

    name: str
    ranks: int
    source: str
    hosts: int  # distinct hosts of a complete device list, 0 without one


README_RUNS = [
    RealRun("A100-SXM4-80GB-HGX-NVSwitch_all_reduce_8gpu_1.txt", 8, "device list", 1),
    RealRun("A100-SXM4-80GB-HGX-NVSwitch_all_reduce_8gpu_2.txt", 8, "device list", 1),
    RealRun("A100-SXM4-p4d_all_reduce_16gpu_2node-EFA400_1.txt", 16, "device list", 2),
    RealRun("A10G-AWS-g5.2xlarge_all_reduce_2gpu_2node-TCP-socket_1.txt", 2, "device list", 2),
    RealRun("AMD-MI300X-8GPU_all_reduce_8gpu_1.txt", 8, "device list", 1),
    RealRun("GB200-NVL72-CoreWeave_all_reduce_72gpu_1rack_1.txt", 72, "busbw/algbw ratio", 0),
    RealRun("H100-SXM-CoreWeave_all_reduce_96gpu_12node-IB-SHARP_1.txt", 96, "busbw/algbw ratio", 0),
    RealRun("H100-SXM-DellXE9680_all_reduce_16gpu_2node-IB-NDR400x8_1.txt", 16, "device list", 2),
    RealRun("H100-SXM-GCP-A3Mega_all_reduce_16gpu_2node-TCPXO-8x200G_1.txt", 16, "device list", 2),
    RealRun("H100-SXM-HGX_all_gather_80gpu_10node-NICunstated_1.txt", 80, "device list", 10),
    RealRun("H100-SXM-HGX_all_gather_8gpu_1.txt", 8, "device list", 1),
    RealRun("H100-SXM-HGX_all_reduce_10gpu_10node-NICunstated_1.txt", 10, "device list", 10),
    RealRun("H100-SXM-HGX_all_reduce_64gpu_8node-IB-NDR400x8_1.txt", 64, "device list", 8),
    RealRun("H100-SXM-HGX_all_reduce_80gpu_10node-NICunstated_1.txt", 80, "device list", 10),
    RealRun("H100-SXM-HGX_alltoall_10gpu_10node-NICunstated_1.txt", 10, "device list", 10),
    RealRun("H100-SXM-HGX_alltoall_80gpu_10node-NICunstated_1.txt", 80, "device list", 10),
    RealRun("H100-SXM-HGX_reduce_scatter_80gpu_10node-NICunstated_1.txt", 80, "device list", 10),
    RealRun("H100-SXM-HGX_reduce_scatter_8gpu_1.txt", 8, "device list", 1),
    RealRun("H100-SXM5-4GPU-NVLink_all_gather_4gpu_1.txt", 4, "device list", 1),
    RealRun("H100-SXM5-4GPU-NVLink_all_gather_8gpu_2node-IB-NDR200x4_1.txt", 8, "device list", 2),
    RealRun("H100-SXM5-4GPU-NVLink_all_reduce_4gpu_1.txt", 4, "device list", 1),
    RealRun("H100-SXM5-4GPU-NVLink_all_reduce_8gpu_2node-IB-NDR200x4_1.txt", 8, "device list", 2),
    RealRun("H100-SXM5-4GPU-NVLink_reduce_scatter_4gpu_1.txt", 4, "device list", 1),
    RealRun("H100-SXM5-4GPU-NVLink_reduce_scatter_8gpu_2node-IB-NDR200x4_1.txt", 8, "device list", 2),
    RealRun("RTX2080Ti-PCIe-PIX-noP2P_all_gather_2gpu_1.txt", 2, "device list", 1),
    RealRun("RTX2080Ti-PCIe-PIX-noP2P_all_reduce_2gpu_1.txt", 2, "device list", 1),
    RealRun("RTX2080Ti-PCIe-PIX-noP2P_broadcast_2gpu_1.txt", 2, "device list", 1),
    RealRun("RTX4090-PCIe-P2Punlocked-8NUMA_all_reduce_8gpu_1.txt", 8, "device list", 1),
    RealRun("RTX4090-PCIe-noP2P-8NUMA_all_reduce_8gpu_1.txt", 8, "device list", 1),
    RealRun("V100-PCIe-32GB-noNVLink_all_reduce_4gpu_2.txt", 4, "device list", 1),
    RealRun("V100-SXM2-hybridcubemesh_all_reduce_8gpu_1.txt", 8, "device list", 1),
    RealRun("V100-SXM2-p3dn_all_reduce_16gpu_2node-EFA100_1.txt", 16, "device list", 2),
]


def test_the_table_covers_every_real_log() -> None:
    real = sorted(p.name for p in DATA.glob("*.txt") if not p.name.startswith("synthetic_"))
    assert sorted(run.name for run in README_RUNS) == real and len(real) == 32


@pytest.mark.parametrize("run", README_RUNS, ids=lambda run: run.name)
def test_every_real_log_yields_the_readme_rank_count(run: RealRun) -> None:
    log = load_nccl_tests(DATA / run.name)
    assert (log.n_ranks, log.rank_source, log.nodes) == (run.ranks, run.source, run.hosts)
    assert log.devices_complete is (run.hosts > 0)
    assert log.rank_evidence[0].source == run.source
    if run.hosts:
        assert sum(len(devices) for devices in log.placement.values()) == run.ranks
        assert log.gpus_per_node == run.ranks // run.hosts  # every file spreads ranks evenly


def test_gb200_ranks_come_from_the_ratio_and_the_one_rank_line_bounds_them() -> None:
    """GB200 row 1: busbw 586.06 / algbw 297.16 = 1.97219; 2(n-1)/n = 1.97222 only for n = 72."""
    log = load_nccl_tests(DATA / "GB200-NVL72-CoreWeave_all_reduce_72gpu_1rack_1.txt")
    assert [(e.source, e.value, e.line) for e in log.rank_evidence] == [
        ("busbw/algbw ratio", 72, 13),
        ("highest rank listed", 72, 8),
    ]
    assert (log.hosts, log.placement, log.launch) == (
        ["slurm-gb200-207-171"],
        {"slurm-gb200-207-171": (3,)},
        "unknown",
    )
    assert log.gpus_per_node is None


def test_a3mega_rank_line_without_hash_counts() -> None:
    """Line 15 prints 'Rank  0 ...' without the leading '#'; ranks 8-15 run on ztan-mig-gq73."""
    log = load_nccl_tests(DATA / "H100-SXM-GCP-A3Mega_all_reduce_16gpu_2node-TCPXO-8x200G_1.txt")
    assert (log.devices[0].rank, log.devices[0].line, log.devices[0].host) == (0, 15, "ztan-mig-235z")
    assert log.placement == {"ztan-mig-235z": tuple(range(8)), "ztan-mig-gq73": tuple(range(8))}
    assert (log.launch, log.gpus_per_thread, log.header["nThread"]) == ("processes", 1, 1)


def test_one_process_driving_eight_gpus_is_a_threads_launch() -> None:
    """A100 _1: 'nGpus 8' and every rank line shows Pid 54740."""
    log = load_nccl_tests(DATA / A100)
    assert (log.launch, log.gpus_per_thread) == ("threads", 8)


def test_explicit_ranks_win_and_the_disagreement_is_warned_about() -> None:
    log = load_nccl_tests(DATA / A100, n_ranks=16)
    assert (log.n_ranks, log.rank_source) == (16, "n_ranks given (--gpus, or --nodes x --gpus-per-node)")
    assert [e.source for e in log.rank_evidence] == [
        "n_ranks given (--gpus, or --nodes x --gpus-per-node)",
        "device list",
        "nThread x nGpus",
        "busbw/algbw ratio",
        "nccl-tests command line (one process)",  # line 7: ./build/all_reduce_perf ... -g 8
    ]
    # line 18 is the last rank line ('Rank  7 ... device  7')
    assert (
        "number of ranks: the device list (line 18) says 8 but the n_ranks given (--gpus, or --nodes x "
        "--gpus-per-node) says 16; "
        "using 16 (n_ranks given (--gpus, or --nodes x --gpus-per-node))"
    ) in log.warnings


def test_mpi_prefixes_bound_the_ranks() -> None:
    """synthetic_slurm-label: every line is prefixed '0: ' (one task) and the header says nGpus 8."""
    log = load_nccl_tests(DATA / "synthetic_slurm-label_A100_all_reduce_8gpu.txt")
    prefix = next(e for e in log.rank_evidence if e.source == "MPI/Slurm line prefix")
    assert prefix.value == 1 * 8  # tasks 0..0 x nThread 1 x nGpus 8
    text = "\n".join(f"{i % 16}: {line}" for i, line in enumerate(text_of(RTX_AR).splitlines()))
    log = parse_nccl_tests(text)  # tasks up to 15, each driving nGpus 2: at least 32 ranks
    assert any(e.source == "MPI/Slurm line prefix" and e.value == 32 for e in log.rank_evidence)
    assert log.n_ranks == 2 and any("line prefix" in w and "says at least 32" in w for w in log.warnings)


@pytest.mark.parametrize(
    ("collective", "busbw", "algbw", "expected"),
    [
        ("all_reduce", "586.06", "297.16", [72]),  # GB200 row 1
        ("all_reduce", "356.01", "179.88", [96]),  # CoreWeave row 1
        ("all_gather", "2.89", "5.79", [2]),  # (n-1)/n = 1/2
        ("reduce_scatter", "3.18", "6.36", [2]),
        # 0.965/1.005 .. 0.975/0.995 = 0.96020 .. 0.97990 = (n-1)/n for n = 25.1 .. 49.75
        ("all_to_all", "0.97", "1.00", list(range(26, 50))),
    ],
)
def test_ranks_from_bandwidths(collective: str, busbw: str, algbw: str, expected: list[int]) -> None:
    row = Measured(1, "out-of-place", 1 << 20, printed("100.0").divided(1e6), printed(algbw), printed(busbw))
    assert ranks_from_bandwidths(collective, [row]) == expected


def test_ranks_from_bandwidths_needs_every_row_and_skips_empty_ones() -> None:
    """1.75 = 2(n-1)/n only at n = 8; a 0.00 row or a size-0 row carries nothing."""

    def row(nbytes: int, algbw: str, busbw: str) -> Measured:
        return Measured(
            1, "out-of-place", nbytes, printed("10.0").divided(1e6), printed(algbw), printed(busbw)
        )

    rows = [row(1 << 30, "100.00", "175.00"), row(8, "0.00", "0.00"), row(0, "0.00", "0.00")]
    assert ranks_from_bandwidths("all_reduce", rows) == [8]
    assert (
        ranks_from_bandwidths("all_reduce", [*rows, row(1 << 30, "100.00", "150.00")]) == []
    )  # 150/100 is n = 4
    assert ranks_from_bandwidths("all_reduce", rows[1:], max_ranks=5) == [1, 2, 3, 4, 5]
    with pytest.raises(ValueError, match="does not depend on the number of ranks"):
        ranks_from_bandwidths("broadcast", rows)


# ----------------------------------------------------------------- several runs in one file

MULTI = "synthetic_multi-run_RTX2080Ti_2gpu.txt"


def test_several_runs_in_one_file() -> None:
    """all_reduce: lines 1-21 (rows 15-17); all_gather: lines 22-41 (rows 34-36), as written in the file."""
    runs = load_nccl_tests_runs(DATA / MULTI)
    assert [(r.run_index, r.collective, r.first_line, r.last_line) for r in runs] == [
        (1, "all_reduce", 1, 21),
        (2, "all_gather", 22, 41),
    ]
    assert [[row.line for row in r.rows] for r in runs] == [[15, 16, 17], [34, 35, 36]]
    assert [r.devices[0].pid for r in runs] == [31706, 31745]
    assert [r.avg_busbw_Bps for r in runs] == [pytest.approx(3.89333 * GB), pytest.approx(3.07333 * GB)]
    assert [r.n_ranks for r in runs] == [2, 2] and [own_warnings(r) for r in runs] == [[], []]


def test_several_runs_settings_are_their_own_plus_what_came_before() -> None:
    """'export NCCL_P2P_DISABLE=1' (line 3) precedes both; NCCL_ALGO (line 29) is the second run's."""
    first, second = load_nccl_tests_runs(DATA / MULTI)
    assert {k: (e.value, e.line) for k, e in first.settings.env.items()} == {"NCCL_P2P_DISABLE": ("1", 3)}
    assert {k: (e.value, e.line) for k, e in second.settings.env.items()} == {
        "NCCL_ALGO": ("Ring", 29),
        "NCCL_P2P_DISABLE": ("1", 3),
    }


def test_one_run_must_be_picked_from_several() -> None:
    with pytest.raises(
        ParseError,
        match=r"2 nccl-tests runs \(run 1: lines 1-21 all_reduce; run 2: lines 22-41 "
        r"all_gather\); pick one with --run N",
    ) as info:
        load_nccl_tests(DATA / MULTI)
    assert info.value.line == 22
    assert load_nccl_tests(DATA / MULTI, run=2).collective == "all_gather"
    with pytest.raises(ParseError, match="there is no run 3"):
        load_nccl_tests(DATA / MULTI, run=3)


def test_a_second_column_header_after_rows_starts_a_run() -> None:
    """A100's header lines 20-22 and rows 23-24 appended after its last line (55): run 2 is lines 55-60."""
    lines = text_of(A100).splitlines()
    runs = parse_nccl_tests_runs("\n".join([*lines, *lines[19:24]]))
    assert [(r.first_line, r.last_line, len(r.rows)) for r in runs] == [(1, 54, 30), (55, 60, 2)]
    assert runs[1].devices == runs[0].devices and runs[1].n_ranks == 8
    assert "no header or device list of its own" in runs[1].warnings[0]


# ----------------------------------------------------------------- the one-GPU H100 set

H100_1GPU = Path(__file__).parent / "data" / "h100-1gpu"


@pytest.mark.parametrize(
    ("name", "collective", "rows"),
    [
        ("all_gather_1gpu.json", "all_gather", 28),
        ("all_gather_1gpu.txt", "all_gather", 28),
        ("all_reduce_1gpu.json", "all_reduce", 28),
        ("all_reduce_1gpu.txt", "all_reduce", 28),
        ("all_reduce_1gpu_proto_LL.txt", "all_reduce", 13),
        ("all_reduce_1gpu_proto_LL128.txt", "all_reduce", 13),
        ("all_reduce_1gpu_proto_Simple.txt", "all_reduce", 13),
        ("alltoall_1gpu.txt", "all_to_all", 13),
        ("broadcast_1gpu.json", "broadcast", 28),
        ("broadcast_1gpu.txt", "broadcast", 28),
        ("nccl_info_all_reduce_1gpu.txt", "all_reduce", 13),
        ("reduce_scatter_1gpu.json", "reduce_scatter", 28),
        ("reduce_scatter_1gpu.txt", "reduce_scatter", 28),
        ("sendrecv_1gpu.txt", "send_recv", 13),
    ],
)
def test_every_h100_1gpu_log_parses(name: str, collective: str, rows: int) -> None:
    """One rank on host 'vm' (README: single-GPU machine); NCCL 2.28.9 from nccl-library=22809."""
    log = load_nccl_tests(H100_1GPU / name)
    assert (log.collective, log.n_ranks, log.hosts, len(log.rows)) == (collective, 1, ["vm"], rows)
    assert log.settings.version is not None and log.settings.version.value == "2.28.9"


def test_the_time_limit_is_said_in_the_tables_unit() -> None:
    """The 2017 tables print milliseconds: a 9e7 ms row (25 hours per call) is refused with the
    limit in ms, 8.64e+07 ms (a day), not 8.64e+10 us beside a figure in ms (review 28)."""
    name = "synthetic_legacy-ms-format_all_reduce_2gpu.txt"
    lines = text_of(name).splitlines()
    lines[16] = lines[16].replace("0.014", "9e7", 1)
    with pytest.raises(ParseError, match=re.escape("one day per call (8.64e+07 ms), found '9e7'")) as info:
        parse_nccl_tests("\n".join(lines), source=name)
    assert info.value.line == 17
