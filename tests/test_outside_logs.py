"""Public nccl-tests logs from outside the development set (``tests/data/outside``) through ``validate``.

Each log runs through the command line in process, as a user first would (no options) and with the
facts its own page states (``OUTSIDE_OPTIONS`` in ``tools/validation_table.py``, the table the
validation page is built from). Either it validates (exit 0), or it is refused with exit 2 and one
``error:`` line that names the option giving the missing fact: never a traceback, never anything else.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.test_bad_inputs import run_cli

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "outside"
LOGS = sorted(DATA.glob("*.txt"))

REFUSED_PLAIN = {
    "11_MI250X-SS11-4node-32rank-allgather.txt": "--gpu",
    "12_MI250X-SS11-4node-32rank-allreduce.txt": "--gpu",
    "17_H100PCIe+A100PCIe-2node-RoCE-hoststaged.txt": "--collective",
    "20_UnknownGPU-5KPro-2node-16gpu-alltoall-SpectrumX.txt": "--gpu",
}
"""Logs that cannot be validated alone, and the option that would settle them: 11 and 12 are rccl-tests
tables pasted without their ``# Rank .. device`` lines (no GPU named); 17 names no binary and its two
ranks' busbw/algbw of 1 fit both all_reduce and send_recv; 20 names its GPUs only as 'NVIDIA Graphics
Device'."""
UNSETTLED = {"20_UnknownGPU-5KPro-2node-16gpu-alltoall-SpectrumX.txt": "--gpu"}
"""Logs whose page does not state the missing fact either (20's page never names the GPU model)."""


def _tool() -> ModuleType:
    """``tools/validation_table.py`` (not a package), for its table of page facts."""
    spec = importlib.util.spec_from_file_location("validation_table", ROOT / "tools" / "validation_table.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


TOOL = _tool()


def _check(args: list[str], refused_by: str | None, capsys: pytest.CaptureFixture[str]) -> None:
    """Run ``validate ARGS``: exit 0 with a report, or exit 2 with one error naming ``refused_by``."""
    code, out, err = run_cli(["validate", *args], capsys)
    assert "Traceback" not in out + err
    if refused_by is None:
        assert code == 0, err
        assert out.strip() and "error:" not in err
    else:
        assert (code, out) == (2, ""), out
        assert err.startswith("error: ") and err.count("error:") == 1, err
        assert f"give {refused_by} " in err + " ", err


def test_the_data_is_the_twenty_logs_and_the_readme_names_each() -> None:
    """20 logs, each with its provenance lines first and one README row; every page fact is for a log."""
    assert len(LOGS) == 20
    readme = (DATA / "README.md").read_text(encoding="utf-8")
    for path in LOGS:
        lines = path.read_text(encoding="utf-8").splitlines()
        assert lines[0].startswith("## source: ") and lines[1].startswith("## hardware: "), path.name
        assert f"| {path.name} |" in readme, path.name
    assert set(TOOL.OUTSIDE_OPTIONS) <= {p.name for p in LOGS}


@pytest.mark.parametrize("path", LOGS, ids=[p.name[:2] for p in LOGS])
def test_validates_or_names_the_missing_fact(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Without options: validated, or refused naming the option (see :data:`REFUSED_PLAIN`). With the
    page's facts: validated, unless the page does not state the fact either (:data:`UNSETTLED`)."""
    _check([str(path)], REFUSED_PLAIN.get(path.name), capsys)
    if path.name in TOOL.OUTSIDE_OPTIONS:
        options, collective = TOOL.OUTSIDE_OPTIONS[path.name]
        _check([str(path), *TOOL.flags(options, collective)], UNSETTLED.get(path.name), capsys)


def test_page_facts_are_given_as_the_options_a_user_types() -> None:
    """The tool's table becomes the command-line options its page column shows: 12's page gives the GPU,
    the hosts, the ranks per host, the network and (by its binary) the collective."""
    options, collective = TOOL.OUTSIDE_OPTIONS["12_MI250X-SS11-4node-32rank-allreduce.txt"]
    assert TOOL.flags(options, collective) == [
        *["--collective", "all_reduce", "--gpu", "MI250X", "--nodes", "4"],
        *["--gpus-per-node", "8", "--nic", "slingshot_200g"],
    ]


def test_shipped_outside_figures_are_the_pages() -> None:
    """accuracy.json's ``outside`` figures are the page's summary row with the page's facts, to its printed
    precision (0.1 %), with the same count of validated logs (one command writes both)."""
    from commsim.calibrate.accuracy import expected_error
    from tests.test_accuracy import _summary_row

    files, page = _summary_row("outside logs, with the page's facts")
    outside = expected_error()["outside"]
    assert (outside["logs"], outside["validated"]) == (len(LOGS), files)
    shipped = [outside["as_shipped"][k] for k in ("all", "bandwidth_bound", "latency_bound")]
    assert shipped == pytest.approx(page, abs=0.0005)
