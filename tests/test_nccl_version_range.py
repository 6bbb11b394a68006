"""NCCL releases outside those the model restates (2.4 to 2.28) are said, not silently clamped.

The model's tables are NCCL's of 2.4 to 2.28 (``commsim.nccl.tuning``): a release before 2.4 (no
tree) is priced with 2.4's table, a later one than 2.28 with 2.28's tables and algorithms. Both
used to be reported as plain "known" versions (review 27: ``--nccl-version 2.99`` and ``1.0``
were accepted as they were); nccl-tests runs on NCCL 2 only, so an NCCL 1 release is refused.
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
