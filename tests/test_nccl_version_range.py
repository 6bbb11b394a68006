"""NCCL releases outside those the model restates (2.4 to 2.28) are said, not silently clamped.

The model's tables are NCCL's of 2.4 to 2.28 (``commsim.nccl.tuning``): a release before 2.4 (no
tree) is priced with 2.4's table, a later one than 2.28 with 2.28's tables and algorithms. Both
used to be reported as plain "known" versions (review 27: ``--nccl-version 2.99`` and ``1.0``
were accepted as they were); nccl-tests runs on NCCL 2 only, so an NCCL 1 release is refused, given
with --nccl-version or printed in the log.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from commsim.nccl.tuning_table import NEWEST_MODELLED, version_note
from tests.test_bad_inputs import run_cli

LOG = str(Path(__file__).parent / "data" / "nccl-tests" / "A100-SXM4-80GB-HGX-NVSwitch_all_reduce_8gpu_1.txt")


@pytest.mark.parametrize("version", ["2.4", "2.12.12", "2.21.5", "2.28.9", None, "not a version"])
def test_modelled_releases_need_no_note(version: str | None) -> None:
    assert version_note(version) is None


def test_no_rule_of_the_tables_is_newer_than_the_newest_release_modelled() -> None:
    """Every algorithm's first release in the eras' tables is within the modelled range, so a rule
    added for a newer NCCL (say PAT's 2.23, NVLS's 2.17) without raising NEWEST_MODELLED fails here:
    the notes would call that release newer than the model while its rules are applied."""
    from commsim.nccl.tuning import ERAS

    firsts = [first for era in ERAS for first in era.algorithms.values()] + [era.first for era in ERAS]
    assert max(firsts) <= NEWEST_MODELLED
    assert ERAS[0].first == (2, 4)  # NCCL 2.4 brought the tree: the oldest release restated


def test_older_and_newer_releases_are_said() -> None:
    older = version_note("2.3.7")
    assert older is not None and older.startswith("older than the first release modelled (2.4")
    newer = version_note("2.29.1")
    assert newer is not None and newer.startswith("newer than the newest release modelled (2.28)")


def test_validate_refuses_an_nccl_1_release(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["validate", LOG, "--nccl-version", "1.0"], capsys)
    assert code == 2
    assert "--nccl-version '1.0' should be an NCCL 2 release like 2.21 or 2.26.2" in err


def test_validate_says_a_release_newer_than_the_model(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["validate", LOG, "--nccl-version", "2.99"], capsys)
    assert code == 0
    text = " ".join(out.split())
    assert (
        "known nccl_version = 2.99 (option --nccl-version; newer than the newest release modelled "
        "(2.28): priced with 2.28's tables and algorithms" in text
    )


def test_one_rule_for_a_release_in_validate_and_in_the_nccl_algorithm(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Review 29: validate took '3.0' and the nccl algorithm refused it, and the algorithm refused
    '2.21.5+cuda12.4', the form NCCL prints, which validate took. Both now follow one rule: an NCCL 2
    release, MAJOR.MINOR[.PATCH], maybe with its build after a '+'."""
    code, _, err = run_cli(["validate", LOG, "--nccl-version", "3.0"], capsys)
    assert code == 2 and "--nccl-version '3.0' should be an NCCL 2 release" in err
    code, out, _ = run_cli(["validate", LOG, "--nccl-version", "2.21.5+cuda12.4"], capsys)
    assert code == 0 and "known   nccl_version = 2.21.5+cuda12.4 (option --nccl-version)" in out
    base = ["run", "--topology", "dgx_a100", "--algorithm", "nccl", "--size", "1 MB", "-q"]
    code, _, err = run_cli([*base, "--param", "nccl_version='2.21.5+cuda12.4'"], capsys)
    assert code == 0, err
    code, _, err = run_cli([*base, "--param", "nccl_version='3.0'"], capsys)
    assert code == 2 and "'3.0' should be an NCCL 2 release" in err


# -- an NCCL 1 release printed in the log is refused as --nccl-version 1.x is ---------------------------

DATA = Path(__file__).parent / "data" / "nccl-tests"
LEGACY = DATA / "synthetic_legacy-ms-format_all_reduce_2gpu.txt"  # '# NCCL Tests compiled with NCCL 2.2'


def _with_line(tmp_path: Path, after: str, line: str, source: Path = Path(LOG)) -> tuple[Path, int]:
    """The log with ``line`` put after its first line starting with ``after``; its line number."""
    lines = source.read_text().splitlines(True)
    at = next(i for i, text in enumerate(lines) if text.startswith(after)) + 1
    lines.insert(at, line + "\n")
    path = tmp_path / "all_reduce.txt"
    path.write_text("".join(lines))
    return path, at + 1


@pytest.mark.parametrize(
    ("after", "line", "says"),
    [
        ("#  Rank  7", "NCCL version 1.3.5", "NCCL version line '1.3.5'"),
        (
            "#  Rank  7",
            "thanos:54740:54740 [0] NCCL INFO NCCL version 1.3.5+cuda9.0",
            "NCCL version line '1.3.5'",
        ),
        (
            "./build/all_reduce_perf",
            "# nccl-tests version 2.13.8 nccl-headers=1305 nccl-library=1305",
            "nccl-tests header nccl-library '1.3.5'",
        ),
        (
            "./build/all_reduce_perf",
            "# NCCL Tests compiled with NCCL 1.0",
            "nccl-tests header 'compiled with NCCL' '1.0'",
        ),
    ],
)
def test_validate_refuses_an_nccl_1_release_printed_in_the_log(
    after: str, line: str, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An NCCL 1.x version in the log (NCCL's version line, nccl-tests' header of its library or of
    the NCCL it was compiled with) is refused as --nccl-version 1.x is, at the file and line that
    print it, saying what would be valid; it was priced with 2.4's table under a note."""
    path, number = _with_line(tmp_path, after, line)
    code, out, err = run_cli(["validate", str(path)], capsys)
    assert code == 2 and out == ""
    assert f"{path}:{number}: {says} should be an NCCL 2 release like 2.21 or 2.26.2" in err
    assert "commsim models 2.4 to 2.28" in err
    assert "validate a run of NCCL 2, or, if the run used NCCL 2, give its release with --nccl-version" in err
    code, out, err = run_cli(["validate", str(path), "--nccl-version", "2.4"], capsys)
    assert code == 0, err
    assert "known   nccl_version = 2.4 (option --nccl-version)" in out


def test_a_version_code_of_nccl_1_in_a_json_log_is_refused(tmp_path: Path) -> None:
    """A -J JSON log's nccl_version code 1305 (NCCL 1.3.5) is refused too, at its file and line."""
    from commsim.calibrate.validate import validate_runs
    from commsim.errors import ParseError

    text = (DATA / "synthetic_json_RTX2080Ti_all_reduce_2gpu.json").read_text()
    assert '"nccl_version":22005' in text
    path = tmp_path / "r.json"
    path.write_text(text.replace('"nccl_version":22005', '"nccl_version":1305'))
    with pytest.raises(ParseError) as caught:
        validate_runs(path)
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if '"nccl_version"' in text)
    assert str(caught.value).startswith(
        f"{path}:{line}: JSON nccl_version '1.3.5' should be an NCCL 2 release"
    )


def test_nccl_tests_compiled_with_nccl_2_still_says_nothing_of_the_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """'# NCCL Tests compiled with NCCL 2.2' names the headers, not the NCCL 2 library that ran (any later
    2.x loads): the version stays assumed, as before; only NCCL 1 (a library of its own) is read there."""
    code, out, err = run_cli(["validate", str(LEGACY)], capsys)
    assert code == 0, err
    assert "assumed nccl_version = None" in out
