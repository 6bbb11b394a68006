"""One nccl-tests table holding several series (``-d``/``-o``/``-r -1``) is one run per series.

The logs are built here the way nccl-tests prints them (``src/util.cu``
``writeBenchmarkLinePreamble``/``writeBenchmarkLineBody``; every
``TimeTest`` call of ``src/common.cu`` sweeps all sizes of one type,
operation and root), with times chosen so that each series' rows can be
told apart: series ``s`` (1-based, in print order) at size index ``i`` took
``100 x 2**i + 10 x s`` us out of place and 1 us more in place. The line of
every row is recorded as the log is written, so expected lines come from
the construction, not from the parser.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from commsim.calibrate.parser import load_nccl_tests, parse_nccl_tests, parse_nccl_tests_runs
from commsim.errors import ParseError
from tests.test_bad_inputs import run_cli

DATA = Path(__file__).parent / "data" / "nccl-tests"
WORD_BYTES = {"float": 4, "half": 2, "double": 8}
SIZES = (1048576, 2097152, 4194304)  # 1, 2 and 4 MiB
SERIES_3x2 = [(dtype, op) for dtype in ("float", "half", "double") for op in ("sum", "max")]


def oop_time_us(series: int, size_index: int) -> float:
    """The out-of-place time of series ``series`` (1-based) at ``SIZES[size_index]``."""
    return 100.0 * 2**size_index + 10.0 * series


@dataclass
class Table:
    """A text log as lines, and the line (1-based) of each series' rows."""

    lines: list[str] = field(default_factory=list)
    row_lines: list[list[int]] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def _row(size: int, dtype: str, op: str, root: int, oop_us: float) -> str:
    """One row as nccl-tests prints it for 2 ranks of all_reduce (busbw = algbw x 2(n-1)/n = algbw)."""
    halves = ""
    for time_us in (oop_us, oop_us + 1.0):
        algbw = size / (time_us * 1e-6) / 1e9
        halves += f"  {time_us:7.2f}  {algbw:6.2f}  {algbw:6.2f}  {0:6g}"
    return f"{size:12d}  {size // WORD_BYTES[dtype]:12d}  {dtype:>8}  {op:>6}  {root:6d}" + halves


def text_log(
    series: list[tuple[str, str, int]],
    *,
    program: str = "all_reduce_perf",
    sweeps: int = 1,
    average: str = "",
) -> Table:
    """A 2-GPU log of ``program`` whose one table holds ``series`` (type, op, root) in order.

    ``sweeps`` repeats each series' sizes (nccl-tests ``-N``); ``average`` replaces the
    ``# Avg bus bandwidth`` value (by default the mean of every printed busbw, as nccl-tests
    computes it over all series).
    """
    table = Table()
    table.lines += [
        f"$ ./build/{program} -b 1M -e 4M -f 2 -g 2 -d float,half,double -o sum,max",
        "# nccl-tests version 2.17.9 nccl-headers=22602 nccl-library=22602",
        f"# Collective test starting: {program}",
        "# nThread 1 nGpus 2 minBytes 1048576 maxBytes 4194304 step: 2(factor) warmup iters: 5 iters: 20 "
        "agg iters: 1 validation: 1 graph: 0",
        "#",
        "# Using devices",
        "#  Rank  0 Group  0 Pid   4242 on       box device  0 [0000:19:00] NVIDIA H100 80GB HBM3",
        "#  Rank  1 Group  0 Pid   4242 on       box device  1 [0000:3b:00] NVIDIA H100 80GB HBM3",
        "#",
        "#" + " " * 62 + "out-of-place                       in-place",
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong"
        "     time   algbw   busbw  #wrong",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
        "             (us)  (GB/s)  (GB/s)",
    ]
    busbw: list[float] = []
    for number, (dtype, op, root) in enumerate(series, start=1):
        table.row_lines.append([])
        for _ in range(sweeps):
            for index, size in enumerate(SIZES):
                row = _row(size, dtype, op, root, oop_time_us(number, index))
                table.lines.append(row)
                table.row_lines[-1].append(len(table.lines))
                busbw += [float(row.split()[7]), float(row.split()[11])]
    mean = f"{sum(busbw) / len(busbw):g}"
    table.lines += [
        "# Out of bounds values : 0 OK",
        f"# Avg bus bandwidth    : {average or mean} ",
        "#",
        f"# Collective test concluded: {program}",
    ]
    return table


def log_3x2() -> Table:
    return text_log([(dtype, op, -1) for dtype, op in SERIES_3x2])


# -- the text reader --------------------------------------------------------------------------------


def test_three_types_by_two_ops_are_six_runs_with_their_own_rows() -> None:
    """float, half, double x sum, max: 6 series of 3 sizes, in print order, each with its times."""
    table = log_3x2()
    runs = parse_nccl_tests_runs(table.text, "x.txt")
    assert [(r.rows[0].dtype, r.rows[0].redop) for r in runs] == SERIES_3x2
    assert [r.run_index for r in runs] == [1, 2, 3, 4, 5, 6]
    for number, (run, (dtype, op)) in enumerate(zip(runs, SERIES_3x2, strict=True), start=1):
        assert [(row.dtype, row.redop, row.root) for row in run.rows] == [(dtype, op, -1)] * 3
        assert [row.nbytes for row in run.rows] == list(SIZES)
        assert [row.count for row in run.rows] == [size // WORD_BYTES[dtype] for size in SIZES]
        expected_us = [oop_time_us(number, i) for i in range(3)]
        assert [row.oop_time_s for row in run.rows] == pytest.approx([t * 1e-6 for t in expected_us])
        assert [row.ip_time_s for row in run.rows] == pytest.approx([(t + 1) * 1e-6 for t in expected_us])
        assert [row.line for row in run.rows] == table.row_lines[number - 1]
        assert (run.first_line, run.last_line) == (
            table.row_lines[number - 1][0],
            table.row_lines[number - 1][-1],
        )


def test_each_series_keeps_the_tables_header_devices_and_command() -> None:
    """The header, the 2 devices, the command and the collective are the table's, in every run."""
    runs = parse_nccl_tests_runs(log_3x2().text)
    for run in runs:
        assert run.collective == "all_reduce"
        assert run.n_ranks == 2
        assert run.rank_source == "device list"
        assert [(d.rank, d.host, d.device) for d in run.devices] == [(0, "box", 0), (1, "box", 1)]
        assert run.header["nGpus"] == 2 and run.header["maxBytes"] == 4194304
        assert run.command is not None and run.command.startswith("./build/all_reduce_perf -b 1M")
        assert run.nccl_version == "2.26.2"
    assert runs[0].header is not runs[1].header  # a copy each: changing one run's leaves the others'


def test_the_avg_bus_bandwidth_of_the_table_belongs_to_no_series() -> None:
    """The footer averages all 6 series: no run carries it, each says why, and it fits the whole table."""
    runs = parse_nccl_tests_runs(log_3x2().text)
    assert [r.avg_busbw_Bps for r in runs] == [None] * 6
    for run, (dtype, op) in zip(runs, SERIES_3x2, strict=True):
        notes = [w for w in run.warnings if "series, one of 6 in the table" in w]
        assert len(notes) == 1, run.warnings
        assert f"the {dtype} {op} series" in notes[0]
        assert "'Avg bus bandwidth' averages every series and is not used" in notes[0]
        assert not [w for w in run.warnings if "Avg bus bandwidth" in w and w not in notes]


def test_a_footer_that_is_not_the_tables_mean_is_still_warned_about() -> None:
    """An average of 999 GB/s is no mean of the table's busbw (all below 43 GB/s): each series says so."""
    runs = parse_nccl_tests_runs(text_log([(t, o, -1) for t, o in SERIES_3x2], average="999").text)
    for run in runs:
        assert [
            w
            for w in run.warnings
            if w.startswith("Avg bus bandwidth 999 GB/s is not the mean busbw of the 36")
        ]


def test_several_series_must_be_picked_and_the_message_names_type_and_op() -> None:
    """Without run=, the error lists each series by lines, collective, type and op; at series 2's row."""
    table = log_3x2()
    spans = [f"lines {rows[0]}-{rows[-1]} all_reduce" for rows in table.row_lines]
    listed = "; ".join(
        f"run {n}: {span} {dtype} {op}"
        for n, (span, (dtype, op)) in enumerate(zip(spans, SERIES_3x2), start=1)
    )
    with pytest.raises(ParseError) as caught:
        parse_nccl_tests(table.text, "x.txt")
    assert str(caught.value) == (
        f"x.txt:{table.row_lines[1][0]}: the log holds 6 nccl-tests runs ({listed}); pick one with --run N"
    )
    assert caught.value.line == table.row_lines[1][0]


def test_run_4_is_the_half_max_series() -> None:
    table = log_3x2()
    log = parse_nccl_tests(table.text, run=4)
    assert {(row.dtype, row.redop) for row in log.rows} == {("half", "max")}
    assert [row.oop_time_s for row in log.rows] == pytest.approx([140e-6, 240e-6, 440e-6])
    with pytest.raises(
        ParseError, match=r"there is no run 7: the log holds 6 run\(s\) \(run 1: lines 13-15 "
    ):
        parse_nccl_tests(table.text, run=7)


def test_one_series_is_one_run_as_before() -> None:
    """One type and one op: one run from the top of the file, with its footer; no note, no split."""
    table = text_log([("float", "sum", -1)])
    (run,) = parse_nccl_tests_runs(table.text)
    assert (run.first_line, run.last_line) == (1, len(table.lines))
    assert run.avg_busbw_Bps == pytest.approx(float(table.lines[-3].split(":")[1]) * 1e9)
    assert len(run.rows) == 3
    assert run.warnings == []


def test_a_real_one_series_log_with_repeated_zero_sizes_is_one_run() -> None:
    """H100 reduce_scatter: sizes 8..64 B all print as 0 B (4 rows) of one float sum series; no warning."""
    (run,) = parse_nccl_tests_runs((DATA / "H100-SXM-HGX_reduce_scatter_8gpu_1.txt").read_text())
    assert [row.nbytes for row in run.rows[:5]] == [0, 0, 0, 0, 128]
    assert len(run.rows) == 31 and run.avg_busbw_Bps == pytest.approx(111.432e9)
    assert not [w for w in run.warnings if "swept" in w or "series" in w]


def test_every_root_of_broadcast_is_a_series_named_by_its_root() -> None:
    """``broadcast_perf -r -1`` on 2 ranks: roots 0 and 1 of float, told apart by root alone."""
    table = text_log([("float", "none", 0), ("float", "none", 1)], program="broadcast_perf")
    runs = parse_nccl_tests_runs(table.text)
    assert [{row.root for row in run.rows} for run in runs] == [{0}, {1}]
    with pytest.raises(
        ParseError, match=r"lines 13-15 broadcast root 0; run 2: lines 16-18 broadcast root 1\)"
    ):
        parse_nccl_tests(table.text)


def test_a_series_swept_twice_keeps_every_row_and_says_so() -> None:
    """``-N 2``: float sum sizes 1, 2, 4, 1, 2, 4 MiB stay one run of 6 rows; line 16 starts sweep 2."""
    table = text_log([("float", "sum", -1)], sweeps=2)
    (run,) = parse_nccl_tests_runs(table.text)
    assert [row.nbytes for row in run.rows] == [*SIZES, *SIZES]
    assert table.row_lines[0][3] == 16
    assert [w for w in run.warnings if "swept" in w] == [
        "line 16: the sizes start again from a smaller one, so they are swept 2 times (nccl-tests "
        "-N/--run_cycles, or rows of several runs in one table); every row is kept and compared on its own, "
        "none merged"
    ]


def test_a_series_that_comes_back_later_in_the_table_is_one_run_that_says_so() -> None:
    """float sum, half sum, float sum again: 2 runs; float sum holds both sweeps, warned at line 19."""
    table = text_log([("float", "sum", -1), ("half", "sum", -1), ("float", "sum", -1)])
    runs = parse_nccl_tests_runs(table.text)
    assert [len(run.rows) for run in runs] == [6, 3]
    assert (runs[0].first_line, runs[0].last_line) == (13, 21)
    assert [w[:8] for w in runs[0].warnings if "sizes of the float sum series start again" in w] == [
        "line 19:"
    ]


# -- the -J JSON reader -----------------------------------------------------------------------------


def json_log(series: list[tuple[str, str]]) -> str:
    """A ``-J`` file as nccl-tests writes it (one line), with ``series`` one after the other."""
    results = []
    for number, (dtype, op) in enumerate(series, start=1):
        for index, size in enumerate(SIZES):
            halves = {}
            for key, time_us in (
                ("out_of_place", oop_time_us(number, index)),
                ("in_place", oop_time_us(number, index) + 1),
            ):
                bw = size / (time_us * 1e-6) / 1e9
                halves[key] = {"time": time_us, "alg_bw": bw, "bus_bw": bw, "nwrong": 0.0}
            results.append(
                {
                    "size": size,
                    "count": size // WORD_BYTES[dtype],
                    "type": dtype,
                    "redop": op,
                    "root": "    -1",
                }
                | halves
                | {"actual_iterations": 20, "experiment_name": ""}
            )
    document = {
        "version": 2,
        "args": ["./build/all_reduce_perf", "-g", "2", "-d", "all", "-o", "all", "-J", "out.json"],
        "nccl_version": 22602,
        "config": {
            "nthreads": 1,
            "ngpus": 2,
            "devices": [
                {
                    "rank": r,
                    "group": 0,
                    "pid": 4242,
                    "hostname": "box",
                    "device": r,
                    "device_hex": "0000:19:00",
                    "device_info": "NVIDIA H100 80GB HBM3",
                }
                for r in (0, 1)
            ],
        },
        "results": results,
        "out_of_bounds": {"count": 0},
        "average_bus_bandwidth": {"bandwidth": 20.0},
    }
    return json.dumps(document)


def test_json_results_of_six_series_are_six_runs() -> None:
    """The same 6 series in a -J file: one run each, with their sizes and times, no footer."""
    runs = parse_nccl_tests_runs(json_log(SERIES_3x2), "x.json")
    assert [(r.rows[0].dtype, r.rows[0].redop) for r in runs] == SERIES_3x2
    for number, run in enumerate(runs, start=1):
        assert [row.nbytes for row in run.rows] == list(SIZES)
        expected = [oop_time_us(number, i) * 1e-6 for i in range(3)]
        assert [row.oop_time_s for row in run.rows] == pytest.approx(expected)
        assert run.avg_busbw_Bps is None and run.n_ranks == 2 and run.collective == "all_reduce"
    with pytest.raises(
        ParseError,
        match=r"^x\.json:1: the log holds 6 nccl-tests runs \(run 1: lines 1-1 all_reduce float sum; run 2",
    ):
        parse_nccl_tests(json_log(SERIES_3x2), "x.json")


def test_json_of_one_series_keeps_its_footer() -> None:
    log = parse_nccl_tests(json_log([("float", "sum")]))
    assert len(log.rows) == 3 and log.avg_busbw_Bps == pytest.approx(20e9)


# -- end to end through the command line -----------------------------------------------------------


def test_validate_run_4_compares_only_the_half_max_series(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "all_dtypes.txt"
    path.write_text(log_3x2().text)
    code, out, err = run_cli(["validate", str(path), "--run", "4", "--json"], capsys)
    assert code == 0, err
    report = json.loads(out)
    assert [r["nbytes"] for r in report["rows"]] == list(SIZES)
    assert [r["measured_time_s"] for r in report["rows"]] == pytest.approx([140e-6, 240e-6, 440e-6])
    assert any("the half max series, one of 6" in w for w in report["warnings"])


def test_validate_without_run_reports_each_series(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "all_dtypes.txt"
    path.write_text(log_3x2().text)
    code, out, err = run_cli(["validate", str(path), "--json"], capsys)
    assert code == 0, err
    runs = json.loads(out)["runs"]
    assert [run["rows"][0]["measured_time_s"] for run in runs] == pytest.approx(
        [oop_time_us(s, 0) * 1e-6 for s in range(1, 7)]
    )


def test_validate_run_out_of_range_names_the_file_and_the_series(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "all_dtypes.txt"
    path.write_text(log_3x2().text)
    code, out, err = run_cli(["validate", str(path), "--run", "9"], capsys)
    assert code == 2 and out == ""
    assert f"{path}: --run 9: the log holds 6 run(s) (run 1: lines 13-15 all_reduce float sum;" in err
    assert "run 6: lines 28-30 all_reduce double max); give 1 to 6" in err


def test_a_one_run_reader_refuses_several_series_at_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "all_dtypes.txt"
    path.write_text(log_3x2().text)
    with pytest.raises(ParseError, match=rf"^{path}:16: the log holds 6 nccl-tests runs"):
        load_nccl_tests(path)


def test_the_series_note_names_the_tables_row_lines() -> None:
    """The note cites the table as its first and last row (lines 13 and 30), not the whole file."""
    table = log_3x2()
    runs = parse_nccl_tests_runs(table.text, "x.txt")
    first, last = table.row_lines[0][0], table.row_lines[-1][-1]
    assert (first, last) == (13, 30)
    note = next(w for w in runs[1].warnings if "series, one of 6" in w)
    assert note.startswith("lines 16-18: the float max series, one of 6 in the table of lines 13-30 ")


def test_json_runs_of_a_several_series_table_carry_their_series(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--json of the 6 series: each run says its data type, reduction and root."""
    path = tmp_path / "dall.txt"
    path.write_text(log_3x2().text)
    code, out, err = run_cli(["validate", str(path), "--json"], capsys)
    assert code == 0, err
    runs = json.loads(out)["runs"]
    assert [(r["data_type"], r["redop"], r["root"]) for r in runs] == [(d, o, -1) for d, o in SERIES_3x2]
