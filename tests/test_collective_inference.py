"""Which collective a log measured, and how it is known (commsim.calibrate.parser_collective).

The logs are written here as nccl-tests prints them (modern format, one rank
per GPU, no binary named). Each row's algbw is its size over its printed
time, and busbw is algbw times the factor of the collective's ``GetBw`` in
nccl-tests ``src/*.cu`` (``doc/PERFORMANCE.md``): 2(n-1)/n for all_reduce,
(n-1)/n for reduce_scatter, all_gather, all_to_all, gather and scatter, 1 for
broadcast, reduce, send_recv and hypercube (whose algbw is size/time x (n-1)/n).
Reducing tests print the operation (``sum``), the others ``none``; rooted
ones print the root, the others -1. send_recv's ``RunTest`` loops over the
operations as all_reduce's does, so it prints ``sum`` too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from commsim.calibrate.inference import RunOptions
from commsim.calibrate.parser import Device, load_nccl_tests, parse_nccl_tests
from commsim.calibrate.parser_common import _launch
from commsim.calibrate.parser_names import collectives_in_name
from commsim.calibrate.validate import validate_file, validate_log, validate_runs
from commsim.errors import ParseError

SIZES = [2**20, 2**22, 2**24, 2**26]
TIMES_US = [50.0, 120.0, 400.0, 1500.0]
A100 = "NVIDIA A100-SXM4-80GB"
BUSBW = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "gather": lambda n: (n - 1) / n,
    "scatter": lambda n: (n - 1) / n,
}


def _devices(ranks: int, hosts: int = 1) -> list[str]:
    per_host = ranks // hosts
    return [
        f"#  Rank {r:2d} Group  0 Pid {1000 + r:5d} on host{r // per_host} device {r % per_host:2d} "
        f"[0x{r + 7:02x}] {A100}"
        for r in range(ranks)
    ]


def _log(
    factor: float,
    redop: str | None,
    root: int | None,
    ranks: int | None = 8,
    algbw_factor: float = 1.0,
    busbw_off: dict[int, float] | None = None,
    wrong: tuple[str, str] = ("0", "0"),
) -> str:
    """A table with busbw = algbw x ``factor``; ``busbw_off`` adds GB/s to a row's printed busbw.

    ``wrong`` is what the out-of-place and in-place ``#wrong`` columns print: ``0`` when checked,
    ``N/A`` in place for send_recv and all_to_all, ``N/A`` in both with ``-c 0``. The count is
    per rank (size / 4 / ranks) for a factor below 1, as nccl-tests prints it for all_gather,
    reduce_scatter and the other (n-1)/n tests, else size / 4.
    """
    per_rank = ranks if ranks and factor < 1 else 1
    columns = (
        "size count type" + (" redop" if redop is not None else "") + (" root" if root is not None else "")
    )
    lines = []
    if ranks is not None:
        lines += ["# nThread 1 nGpus 1 minBytes 1048576 maxBytes 67108864 step: 4(factor)", "#"]
        lines += ["# Using devices", *_devices(ranks), "#"]
    lines.append(f"# {columns} time algbw busbw #wrong time algbw busbw #wrong")
    for index, (nbytes, us) in enumerate(zip(SIZES, TIMES_US, strict=True)):
        algbw = nbytes / us / 1e3 * algbw_factor
        busbw = algbw * factor + (busbw_off or {}).get(index, 0.0)
        cells = [f"{us:.2f} {algbw:.2f} {busbw:.2f} {w}" for w in wrong]
        head = (
            f"{nbytes} {nbytes // 4 // per_rank} float"
            + (f" {redop}" if redop else "")
            + (f" {root}" if root is not None else "")
        )
        lines.append(f"{head} {cells[0]} {cells[1]}")
    return "\n".join(lines) + "\n"


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# ---------------------------------------------------------------- file names


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("12_MI250X-SS11-4node-32rank-allreduce.txt", ["all_reduce"]),
        ("run_all_reduce_8gpu.txt", ["all_reduce"]),
        ("run-all-reduce.log", ["all_reduce"]),
        ("AllReduce.txt", ["all_reduce"]),
        ("all_reduce_perf.out", ["all_reduce"]),
        ("reduce_scatter_8gpu.txt", ["reduce_scatter"]),
        ("reducescatter.txt", ["reduce_scatter"]),
        ("reduce-scatter.txt", ["reduce_scatter"]),
        ("ReduceScatter.txt", ["reduce_scatter"]),
        ("h100_all_gather.txt", ["all_gather"]),
        ("h100_allgather.txt", ["all_gather"]),
        ("h100-all-gather.txt", ["all_gather"]),
        ("AllGather.json", ["all_gather"]),
        ("alltoall_perf_mpi.txt", ["all_to_all"]),
        ("all_to_all.txt", ["all_to_all"]),
        ("all-to-all.txt", ["all_to_all"]),
        ("AllToAll.txt", ["all_to_all"]),
        ("sendrecv.txt", ["send_recv"]),
        ("send_recv.txt", ["send_recv"]),
        ("broadcast_2gpu.txt", ["broadcast"]),
        ("bcast_2gpu.txt", ["broadcast"]),
        ("reduce_2gpu.txt", ["reduce"]),
        ("gather.txt", ["gather"]),
        ("scatter.txt", ["scatter"]),
        ("hypercube_perf.txt", ["hypercube"]),
        ("/logs/reduce/run_allgather.txt", ["all_gather"]),  # only the last component counts
        ("allreduce_vs_allgather.txt", ["all_reduce", "all_gather"]),
        ("RTX2080Ti-PCIe-PIX-noP2P_all_gather_2gpu_1.txt", ["all_gather"]),
        ("reducer_gathering_scattered.txt", []),  # not whole words
        ("V100-SXM2-p3dn_16gpu.txt", []),
    ],
)
def test_collectives_in_file_names(name: str, expected: list[str]) -> None:
    assert collectives_in_name(name) == expected


# ---------------------------------------------------------------- the table


@pytest.mark.parametrize(
    ("factor", "redop", "root", "expected", "sentence"),
    [
        (
            1.75,
            "sum",
            -1,
            "all_reduce",
            "busbw/algbw 1.75 with 8 ranks (device list), redop sum, root -1: only all_reduce fits "
            "(busbw = 2(n-1)/n x algbw)",
        ),
        (
            0.875,
            "sum",
            -1,
            "reduce_scatter",
            "busbw/algbw 0.875 with 8 ranks (device list), redop sum, root -1: only reduce_scatter fits "
            "(busbw = (n-1)/n x algbw)",
        ),
        (
            1.0,
            "none",
            0,
            "broadcast",
            "busbw/algbw 1 with 8 ranks (device list), redop none, root 0: only broadcast fits",
        ),
        (
            1.0,
            "sum",
            3,
            "reduce",
            "busbw/algbw 1 with 8 ranks (device list), redop sum, root 3: only reduce fits",
        ),
        (
            1.0,
            "max",
            -1,
            "send_recv",
            "busbw/algbw 1 with 8 ranks (device list), redop max, root -1: only send_recv fits",
        ),
    ],
)
def test_an_unambiguous_table_names_the_collective(
    factor: float, redop: str, root: int, expected: str, sentence: str
) -> None:
    """8 ranks: 2(n-1)/n = 1.75 and (n-1)/n = 0.875 are told apart from 1 and from each other.

    send_recv prints N/A in place (its in-place result is not checked); the others a count.
    """
    wrong = ("0", "N/A") if expected == "send_recv" else ("0", "0")
    log = parse_nccl_tests(_log(factor, redop, root, wrong=wrong), "run.txt")
    assert log.collective == expected
    (evidence,) = log.collective_evidence
    assert (evidence.source, evidence.value, evidence.line, evidence.text) == (
        "result table",
        expected,
        14,
        sentence,
    )
    assert not any("collective unknown" in w or "disagrees" in w for w in log.warnings)


def test_hypercube_is_told_by_its_factor_of_one_without_a_reduction() -> None:
    """hypercube: busbw = algbw (factor 1), redop none, root -1; at 8 ranks no other collective fits."""
    log = parse_nccl_tests(_log(1.0, "none", -1, algbw_factor=7 / 8), "run.txt")
    assert log.collective == "hypercube"
    assert not any("disagrees" in w for w in log.warnings)  # its algbw is size/time x 7/8


@pytest.mark.parametrize(
    ("factor", "redop", "root", "ranks", "candidates"),
    [
        (0.875, "none", -1, 8, ("all_gather", "all_to_all")),
        (0.875, "none", 2, 8, ("gather", "scatter")),
        (1.0, "sum", -1, 2, ("all_reduce", "send_recv")),  # 2(n-1)/n = 1 at n = 2
    ],
)
def test_an_ambiguous_table_is_refused_naming_the_candidates(
    tmp_path: Path, factor: float, redop: str, root: int, ranks: int, candidates: tuple[str, str]
) -> None:
    """Run with ``-c 0`` (N/A in both #wrong columns): the in-place column says nothing."""
    path = _write(tmp_path, "run.txt", _log(factor, redop, root, ranks, wrong=("N/A", "N/A")))
    log = load_nccl_tests(path)
    assert log.collective is None
    assert [(e.source, e.value) for e in log.collective_evidence] == [
        ("result table (ambiguous)", candidates)
    ]
    first, second = candidates
    assert any(
        f"its result table fits {first} and {second}): busbw was not checked" in w for w in log.warnings
    )
    assert not any("collective=" in w for w in log.warnings)
    with pytest.raises(ParseError, match=f"give --collective {first} or --collective {second}$"):
        validate_file(path)


@pytest.mark.parametrize(
    ("factor", "redop", "ranks", "wrong", "expected"),
    [
        (1.0, "sum", 2, ("0", "0"), "all_reduce"),  # 2(n-1)/n = 1 at n = 2, and its in-place is checked
        (1.0, "sum", 2, ("0", "N/A"), "send_recv"),
        (0.875, "none", 8, ("0", "0"), "all_gather"),
        (0.875, "none", 8, ("0", "N/A"), "all_to_all"),
    ],
)
def test_the_in_place_wrong_column_tells_send_recv_and_all_to_all_apart(
    factor: float, redop: str, ranks: int, wrong: tuple[str, str], expected: str
) -> None:
    """nccl-tests' sendrecv.cu and alltoall.cu set ``reportErrors = in_place ? 0 : 1``: common.cu then
    prints N/A in place; every other test prints the count. The evidence text says so."""
    log = parse_nccl_tests(_log(factor, redop, -1, ranks, wrong=wrong), "run.txt")
    assert log.collective == expected
    text = str(log.collective_evidence[0].text)
    said = "in-place #wrong N/A" if wrong[1] == "N/A" else "in-place #wrong counted"
    assert said in text and f": only {expected} fits" in text


def test_without_a_device_list_only_what_no_rank_count_explains_is_ruled_out() -> None:
    """No device list: ranks come from the ratio, so the ratio may not also pick the collective by n.

    1.75 > 1: only all_reduce's factor exceeds 1, whatever n (and 1.75 = 2 x 7/8 gives n = 8).
    0.875 with a reduction: reduce_scatter at n = 8; all_reduce would need 2(n-1)/n = 0.875,
    n = 16/9, not a whole number.
    """
    log = parse_nccl_tests(_log(1.75, "sum", -1, ranks=None), "run.txt")
    assert (log.collective, log.n_ranks, log.rank_source) == ("all_reduce", 8, "busbw/algbw ratio")
    text = "busbw/algbw 1.75 (no rank count but from this ratio: any n >= 1 allowed), redop sum, root -1"
    assert str(log.collective_evidence[0].text).startswith(text + ": only all_reduce fits")
    log = parse_nccl_tests(_log(0.875, "sum", -1, ranks=None), "run.txt")
    assert (log.collective, log.n_ranks) == ("reduce_scatter", 8)


# ---------------------------------------------------------------- the file name


def test_p1_allreduce_in_the_file_name_is_all_reduce_not_reduce(tmp_path: Path) -> None:
    """The probe's log 12: 32 ranks, no device list, busbw/algbw 193.75/100 = 1.9375 = 2 x 31/32."""
    rows = ["#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong"]
    for nbytes in (2**26, 2**27):
        us = nbytes / 100e3  # algbw 100 GB/s exactly
        rows.append(f"{nbytes} {nbytes // 4} float sum -1 {us:.2f} 100.00 193.75 0 {us:.2f} 100.00 193.75 0")
    path = _write(tmp_path, "12_MI250X-SS11-4node-32rank-allreduce.txt", "\n".join(rows) + "\n")
    report = validate_file(path, options=RunOptions(gpu="MI250X"))
    assert (report.collective, len(report.inference.ranks)) == ("all_reduce", 32)
    fact = report.inference.facts["collective"]
    assert [e.source for e in fact.evidence] == ["result table", "file name"]
    assert "only all_reduce fits" in fact.note and not fact.assumed


def test_the_file_name_picks_among_what_the_table_allows(tmp_path: Path) -> None:
    path = _write(tmp_path, "b200_alltoall_16gpu.txt", _log(0.875, "none", -1, wrong=("N/A", "N/A")))
    report = validate_file(path)
    assert report.collective == "all_to_all"
    fact = report.inference.facts["collective"]
    assert [e.source for e in fact.evidence] == ["file name", "result table (ambiguous)"]
    assert fact.note.startswith("the file name 'b200_alltoall_16gpu.txt' picks it from what the table allows")


def test_a_file_name_the_table_rules_out_is_not_used(tmp_path: Path) -> None:
    """'reduce' (factor 1) in the name, busbw/algbw 1.75 in the table: all_reduce, with a warning."""
    path = _write(tmp_path, "old_reduce_run.txt", _log(1.75, "sum", -1))
    report = validate_file(path)
    assert report.collective == "all_reduce"
    assert any(w.startswith("the file name names reduce but busbw/algbw 1.75") for w in report.log.warnings)
    ambiguous = _write(  # all_gather or all_to_all (-c 0: no #wrong counts)
        tmp_path, "gather_run.txt", _log(0.875, "none", -1, wrong=("N/A", "N/A"))
    )
    with pytest.raises(
        ParseError, match="names gather, which the table rules out; give --collective all_gather or"
    ):
        validate_file(ambiguous)


def test_a_file_name_alone_is_an_assumption(tmp_path: Path) -> None:
    """Rows of 0.00 GB/s, no redop/root columns, ``-c 0``: the table rules nothing out; the name decides.

    (The rows print a count of size / 8 = size / (4 B x 2 ranks): a full count, size / 4, would rule
    out the tests that print a per-rank count.)
    """
    rows = [
        "# Using devices",
        *_devices(2),
        "#  size count type time algbw busbw #wrong time algbw busbw #wrong",
    ]
    rows += [f"{n} {n // 8} float 20.00 0.00 0.00 N/A 20.00 0.00 0.00 N/A" for n in (8, 16, 32)]
    path = _write(tmp_path, "a10_allreduce.txt", "\n".join(rows) + "\n")
    report = validate_file(path)
    fact = report.inference.facts["collective"]
    assert (report.collective, fact.assumed, fact.option) == ("all_reduce", True, "--collective")
    assert [e.source for e in fact.evidence] == ["file name"]


# ---------------------------------------------------------------- --collective (P2)


def test_collective_given_checks_busbw_and_drops_the_unknown_warning(tmp_path: Path) -> None:
    """all_gather at 8 ranks: busbw = algbw x 7/8; row 3 prints busbw 1.00 GB/s too high.

    Row 3 is line 16 (13 lines of run header, devices and column header come first):
    16 MiB in 400 us -> algbw 41.94 GB/s, busbw 36.70 (+1.00 -> 37.70).
    """
    path = _write(tmp_path, "run.txt", _log(0.875, "none", -1, busbw_off={2: 1.0}))
    (report,) = validate_runs(path, collective="all_gather")
    warnings = report.to_json()["warnings"]
    assert not any("collective unknown" in w or "collective=" in w for w in warnings)
    assert any(
        w.startswith("line 16: out-of-place busbw 37.7 GB/s disagrees with size / time x 0.875")
        for w in warnings
    )
    fact = report.inference.facts["collective"]
    assert fact.evidence[0].source == "collective given (--collective)"
    assert validate_file(path, collective="all_gather").log.warnings == report.log.warnings


def test_validate_log_given_a_collective_reads_the_log_again_with_it(tmp_path: Path) -> None:
    """The Python path: a log parsed without the collective, then validate_log(collective=...)."""
    text = _log(0.875, "none", -1, busbw_off={2: 1.0})
    log = parse_nccl_tests(text, "run.txt")
    assert any("collective unknown" in w for w in log.warnings)
    report = validate_log(log, text, collective="all_gather")
    assert not any("collective unknown" in w for w in report.log.warnings)
    assert any(w.startswith("line 16: out-of-place busbw 37.7 GB/s disagrees") for w in report.log.warnings)


def test_collective_given_against_the_table_is_warned_about(tmp_path: Path) -> None:
    path = _write(tmp_path, "run.txt", _log(1.75, "sum", -1))
    report = validate_file(path, collective="reduce")
    assert report.collective == "reduce"
    assert any(
        w.startswith("collective given as 'reduce', but busbw/algbw 1.75") for w in report.log.warnings
    )
    assert any(
        "disagrees with size / time x 1" in w for w in report.log.warnings
    )  # busbw checked with reduce's 1


def test_collective_given_against_the_binary_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, "run.txt", "./build/all_reduce_perf -g 8\n" + _log(1.75, "sum", -1))
    with pytest.raises(
        ParseError, match=r"the log measured all_reduce, not broadcast \(it runs all_reduce_perf\)"
    ):
        validate_file(path, collective="broadcast")


# ---------------------------------------------------------------- launch (P8)


def test_a_pid_repeated_on_another_host_is_another_process() -> None:
    """Pods on different hosts reuse Pid numbers: a repeat counts only on the same host."""
    two_hosts = [Device(0, "pod-a", 0, A100, pid=71), Device(1, "pod-b", 0, A100, pid=71)]
    assert _launch(two_hosts, {"nThread": 1, "nGpus": 1}) == ("processes", 1)
    one_host = [Device(0, "pod-a", 0, A100, pid=71), Device(1, "pod-a", 1, A100, pid=71)]
    assert _launch(one_host, {}) == ("threads", 1)


def test_which_tables_may_print_all_gathers_pre_2020_bandwidth() -> None:
    """busbw = algbw for all_gather and reduce_scatter (nccl-tests before June 2020) fits only a table
    that may be that old: a header printing 'error' may; '#wrong' (the later exact check) may not;
    nor may -J JSON output (no column header), which nccl-tests writes since 2024."""
    from commsim.calibrate.parser_common import ColumnHeader
    from commsim.calibrate.parser_table_columns import old_format as _old_format

    assert _old_format(ColumnHeader(1, frozenset({"size", "time", "algbw", "busbw", "error"})))
    assert not _old_format(ColumnHeader(1, frozenset({"size", "time", "algbw", "busbw", "wrong"})))
    assert not _old_format(None)


def test_all_gathers_pre_2020_bandwidth_tells_no_rank_count() -> None:
    """An old all_gather table prints busbw = algbw (before June 2020), a ratio of 1 for any number
    of ranks; read with today's factor (n-1)/n it said 'at least 8751 to 65536' against the device
    list's 8 (review). The ratio is no rank evidence then: no such warning."""
    text = _log(1.0, "none", None, algbw_factor=7 / 8).replace("#wrong", "error")
    log = parse_nccl_tests(text, "old_all_gather.txt", collective="all_gather")
    assert log.n_ranks == 8
    assert not [w for w in log.warnings if "number of ranks" in w]
