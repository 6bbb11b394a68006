"""Wrong answers and misleading messages a fresh-eyes review of the stop's diff found.

Each test builds the input the review used (from a development log or a few lines) and asserts
what the tool should say; the docstring says what it said before.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from commsim.calibrate.infer_layout import InferenceError
from commsim.calibrate.inference import infer_run
from commsim.calibrate.parser import load_nccl_tests, parse_nccl_tests
from commsim.errors import ParseError

DATA = Path(__file__).parent / "data" / "nccl-tests"
A100 = DATA / "A100-SXM4-80GB-HGX-NVSwitch_all_reduce_8gpu_1.txt"


def _a100_text() -> str:
    """The 8 x A100 development log without its provenance lines (30 rows, 8 B to 4 GiB)."""
    lines = A100.read_text(encoding="utf-8").splitlines(keepends=True)
    return "".join(line for line in lines if not line.startswith("##"))


def test_a_gpu_name_several_entries_print_is_refused_as_ambiguous_naming_each(tmp_path: Path) -> None:
    """'AMD Instinct MI250X/MI250' is what rocm-smi prints for both the MI250X and the MI250 (the
    catalogue lists it under both). It was refused as "GPU ... is not in the catalogue (name ... is
    printed by several GPUs (mi250x, mi250))"; it is in the catalogue, twice, so the refusal says the
    name cannot be told apart and offers --gpu mi250x or --gpu mi250."""
    text = _a100_text().replace("NVIDIA A100-SXM4-80GB", "AMD Instinct MI250X/MI250")
    path = tmp_path / "mi250.txt"
    path.write_text(text)
    with pytest.raises(InferenceError) as refused:
        infer_run(load_nccl_tests(path), text)
    message = str(refused.value)
    assert "not in the catalogue" not in message
    assert "cannot be told apart" in message
    assert "--gpu mi250x or --gpu mi250" in message


def _row_indices(lines: list[str]) -> list[int]:
    """Indices of the result rows (lines that start with a size and a count)."""
    return [i for i, line in enumerate(lines) if re.match(r"\s*\d+\s+\d+\s+[a-z]", line)]


def _last_row_edited(edit: object) -> str:
    """The A100 log with its last row (4 GiB) replaced by ``edit(fields)``, footer dropped."""
    lines = _a100_text().splitlines()
    last = _row_indices(lines)[-1]
    lines[last] = "  ".join(edit(lines[last].split()))  # type: ignore[operator]
    return "\n".join(lines[: last + 1]) + "\n"


def test_a_bad_field_in_the_last_row_is_refused_as_it_is_mid_table() -> None:
    """The last row's out-of-place time set to -3.0 (all 13 fields present) was read as "truncated
    (cut inside its last field '0')" and dropped, though the same row mid-table is refused: only an
    error in the last field can be a cut; a wrong field before it is the row's error."""

    def negative(fields: list[str]) -> list[str]:
        return [*fields[:5], "-3.0", *fields[6:]]

    with pytest.raises(
        ParseError,
        match=r"field 6 \(out-of-place time\) should be a positive time of at most one day per call "
        r"\(8.64e\+10 us\), found '-3.0'",
    ):
        parse_nccl_tests(_last_row_edited(negative), "x.txt")


def test_a_row_cut_inside_its_in_place_busbw_does_not_read_the_fragment() -> None:
    """The last row ends '... 32455  132.34  231', cut inside the in-place busbw 231.59 (nccl-tests
    prints bandwidths with two decimals): '231' was read as 231 GB/s and flagged as disagreeing with
    size / time. The fragment is left out; the out-of-place half is read whole."""

    def cut(fields: list[str]) -> list[str]:
        return [*fields[:11], fields[11].split(".")[0]]

    log = parse_nccl_tests(_last_row_edited(cut), "x.txt")
    row = log.rows[-1]
    assert row.nbytes == 4 * 2**30 and row.ip_busbw_Bps is None
    assert row.oop_busbw_Bps == pytest.approx(232.44e9)
    assert not any("disagrees" in w for w in log.warnings)


def test_an_out_of_place_only_table_names_its_last_row_among_the_others() -> None:
    """Every row cut to its 9 out-of-place fields: the warning said 'lines 17-45: result rows print
    only the out-of-place half' and then 'line 46: the last row of the table is truncated', though
    row 46 is one of them. One warning covers every row."""
    lines = _a100_text().splitlines()
    rows = _row_indices(lines)
    for i in rows:
        lines[i] = "  ".join(lines[i].split()[:9])
    log = parse_nccl_tests("\n".join(lines[: rows[-1] + 1]) + "\n", "x.txt")
    assert len(log.rows) == 30
    half = [w for w in log.warnings if "only the out-of-place half" in w]
    assert len(half) == 1 and half[0].startswith(f"lines {rows[0] + 1}-{rows[-1] + 1}:")
    assert not any("truncated" in w for w in log.warnings)


def test_a_table_header_followed_by_a_crash_quotes_what_follows() -> None:
    """The column header, then 'Segmentation fault (core dumped)': refused as "no result row (a line
    not starting with '#') follows it", though a line does follow it. The refusal quotes the run's
    last line; a header followed only by its own '#' lines quotes nothing."""
    lines = _a100_text().splitlines()
    first_row = _row_indices(lines)[0]
    crashed = "\n".join([*lines[:first_row], "Segmentation fault (core dumped)"]) + "\n"
    with pytest.raises(ParseError) as refused:
        parse_nccl_tests(crashed, "x.txt")
    message = str(refused.value)
    assert "follows it: its output ends at line" in message
    assert "('Segmentation fault (core dumped)')" in message
    with pytest.raises(ParseError) as bare:
        parse_nccl_tests("\n".join(lines[:first_row]) + "\n", "x.txt")
    assert "follows it; no result to validate" in str(bare.value)


@pytest.mark.parametrize("quote", [">", ">> ", "> > ", "> > > > > "])
def test_markdown_quotes_without_a_space_or_nested_read_as_the_plain_log(quote: str) -> None:
    """Every line quoted '>' with no space (valid Markdown) was half read: the rows starting '>   '
    were, the '>#  Rank ...' device list and '>#  size ...' header were not, and the log was refused
    as naming no GPU; '>> ' (a quote inside a quote) was refused as an unknown prefix. Both read as
    the plain log: the same 30 rows and 8 ranks."""
    text = _a100_text()
    quoted = "".join(quote + line for line in text.splitlines(keepends=True))
    plain, read = parse_nccl_tests(text, "x.txt"), parse_nccl_tests(quoted, "x.txt")
    assert read.rows == plain.rows and len(read.devices) == len(plain.devices) == 8


def test_a_bandwidth_of_1000_gb_s_or_more_at_a_rows_end_is_whole() -> None:
    """nccl-tests prints bandwidths with ``%6.2f``: below 1000 GB/s always two decimals, from 1000 on
    fewer (the one-GPU H100 logs print ``1120.3``, ``19517``, ``1e+06``). A last row ending in its
    in-place busbw ``531082`` (no #wrong) was taken as cut inside it and its in-place half dropped;
    only a value below 1000 without two decimals is a cut."""
    log_path = Path(__file__).parent / "data" / "h100-1gpu" / "all_reduce_1gpu.txt"
    lines = log_path.read_text(encoding="utf-8").splitlines()
    last = _row_indices(lines)[-1]
    fields = lines[last].split()
    lines[last] = "  ".join([*fields[:11], "531082"])  # in-place busbw printed whole, #wrong cut off
    log = parse_nccl_tests("\n".join(lines[: last + 1]) + "\n", "x.txt")
    row = log.rows[-1]
    assert row.nbytes == int(fields[0]) and row.ip_busbw_Bps == pytest.approx(531082e9)


def test_a_table_header_followed_by_an_nccl_warning_names_it() -> None:
    """The column header, then NCCL's 'WARN Cuda failure 'out of memory'', then nccl-tests' '# Out
    of bounds' footer: the refusal said only that no result row follows; it now names NCCL's
    warning and its line (the refusal of a run that stops before its table does so too)."""
    lines = _a100_text().splitlines()
    first_row = _row_indices(lines)[0]
    warned = [
        *lines[:first_row],
        "thanos:1:1 [0] NCCL WARN Cuda failure 'out of memory'",
        "# Out of bounds values : 0 OK",
    ]
    with pytest.raises(ParseError) as refused:
        parse_nccl_tests("\n".join(warned) + "\n", "x.txt")
    assert f"follows it: NCCL warns at line {first_row + 1}: Cuda failure 'out of memory';" in str(
        refused.value
    )
