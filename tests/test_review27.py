"""Findings of review 27 (bad and unusual inputs; /work/notes/review27/REPORT.md).

Each test states the rule it holds: bad input is refused with exit 2 and a
message that says what was wrong, where, and what would be valid; nothing
is silently ignored or silently misread.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_bad_inputs import run_cli
from tests.test_bad_inputs_more import refused

SWEEP = (
    "name: small\ncollective: all_reduce\ngrid:\n  - product:\n"
    "      topology: [pcie_4gpu_switch]\n      algorithm: [ring]\n      size: [1 MB]\n"
)


# -- T1: a malformed Dask scheduler address --------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("notaurl", "missing port number"),
        ("tcp://[::1", "invalid address"),
        ("foo://x:1", "unknown address scheme"),
    ],
)
def test_malformed_scheduler_address_is_refused(
    address: str, why: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A --scheduler that is not a Dask address is refused (exit 2) with the valid form, not a ValueError."""
    pytest.importorskip("distributed")
    (tmp_path / "s.yaml").write_text(SWEEP)
    args = ["sweep", str(tmp_path / "s.yaml"), "-o", str(tmp_path / "o.csv"), "--scheduler", address]
    refused(args, capsys, f"--scheduler {address!r} is not a Dask scheduler address", why, "tcp://HOST:PORT")
    assert not (tmp_path / "o.csv").exists()


def test_malformed_scheduler_variable_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stale $DASK_SCHEDULER_ADDRESS is named as the culprit: the user gave no --scheduler."""
    pytest.importorskip("distributed")
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", "garbage")
    (tmp_path / "s.yaml").write_text(SWEEP)
    args = ["sweep", str(tmp_path / "s.yaml"), "-o", str(tmp_path / "o.csv")]
    refused(
        args, capsys, "$DASK_SCHEDULER_ADDRESS 'garbage' is not a Dask scheduler address", "tcp://HOST:PORT"
    )


# -- S1: an implausible COLUMNS ---------------------------------------------------------------------


@pytest.mark.parametrize("columns", ["0", "1", "10"])
def test_implausible_columns_still_prints(columns: str) -> None:
    """COLUMNS below 40 is ignored: COLUMNS=0 printed nothing (results nor errors) and exited 0."""
    env = {**os.environ, "COLUMNS": columns}
    run = [sys.executable, "-m", "commsim", "run", "--topology", "pcie_4gpu_switch", "--algorithm"]
    done = subprocess.run([*run, "ring", "--size", "1M"], env=env, capture_output=True, text=True)
    assert done.returncode == 0
    assert "all_reduce on pcie_4gpu_switch" in done.stdout
    assert "algorithm" in done.stdout.split("\n")[2]  # a table header, not one character per line
    bad = subprocess.run([*run, "rin"], env=env, capture_output=True, text=True)
    assert bad.returncode == 2
    assert "unknown algorithm 'rin'" in bad.stderr


# -- S2: API overrides need units, as a scenario file's do ------------------------------------------


@pytest.mark.parametrize(
    ("figures", "message"),
    [
        ({"bandwidth": 16}, "overrides['pcie']['bandwidth']: 16 has no unit"),
        ({"latency": 5}, "overrides['pcie']['latency']: 5 has no unit"),
        ({"bandwidth": 16.0, "latency": "1 us"}, "expected a rate with a unit per second, e.g. '16 GB/s'"),
    ],
)
def test_api_override_without_unit_is_refused(figures: dict[str, object], message: str) -> None:
    """simulate(overrides={'pcie': {'bandwidth': 16}}) is refused, not read as 16 B/s."""
    import commsim
    from commsim.errors import UnitError

    with pytest.raises(UnitError) as info:
        commsim.simulate("pcie_4gpu_switch", "ring", overrides={"pcie": figures})
    assert message in str(info.value)
    ok = commsim.simulate("pcie_4gpu_switch", "ring", overrides={"pcie": {"bandwidth": "16 GB/s"}})
    assert ok.time_s < 1


# -- S5: limits that are refused at once, and runs under them that finish -----------------------------


def test_fully_connected_has_its_own_gpu_limit(capsys: pytest.CaptureFixture[str]) -> None:
    """fully_connected links every pair: above 256 GPUs it is refused at once."""
    args = ["run", "--topology", "fully_connected", "--gpus", "1024", "--algorithm", "direct", "--size", "1G"]
    refused(args, capsys, "builder 'fully_connected': gpus 1024 is above its limit of 256", "523,776 links")


def test_direct_refuses_every_pair_collectives_on_many_ranks(capsys: pytest.CaptureFixture[str]) -> None:
    """direct's all-reduce sends n(n-1) pieces a step: above 256 ranks it is refused before planning."""
    args = ["run", "--topology", "nvswitch_box", "--gpus", "300", "--algorithm", "direct", "--size", "1G"]
    refused(args, capsys, "all_reduce on 300 ranks (89,700 sends a step) is above its limit of 256 ranks")


# -- S8: output suffixes are checked, as the README says ---------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["export", "msccl", "--topology", "pcie_4gpu_switch", "--algorithm", "ring", "-o", "{tmp}/x.png"],
            "--output {tmp}/x.png: unknown format '.png'; use a file ending .xml",
        ),
        (
            ["export", "nccl-tuner", "--topology", "pcie_4gpu_switch", "-o", "{tmp}/x.xml"],
            "use a file ending .conf, .csv",
        ),
        (
            ["export", "astra", "--topology", "ring", "--gpus", "4", "-o", "{tmp}/x.json"],
            "use a file ending .yml, .yaml",
        ),
        (
            ["sweep", "{tmp}/s.yaml", "-o", "{tmp}/x.csv", "--format", "jsonl"],
            "--format jsonl does not match {tmp}/x.csv, whose suffix .csv means csv",
        ),
    ],
)
def test_output_suffix_must_fit_the_content(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An output whose suffix contradicts what is written (MSCCL XML in x.png, JSONL in x.csv) is refused."""
    (tmp_path / "s.yaml").write_text(SWEEP)
    refused([a.format(tmp=tmp_path) for a in args], capsys, message.format(tmp=tmp_path))
    assert [p.name for p in tmp_path.iterdir()] == ["s.yaml"]


# -- S9: sizes too small for bandwidth to matter -------------------------------------------------------


def test_recommend_on_a_latency_bound_size_does_not_count_zero_links() -> None:
    """When no link is busy in winner or runner-up, the reason is latency, not '0 links busy against 0'."""
    import commsim
    from commsim.recommend import recommend

    text = recommend(commsim.get_topology("dgx1_v100"), "all_reduce", 1).explanation()
    assert "busy against" not in text
    assert "no link is busy more than 1% of the time in either" in text
    assert "the difference is in steps and latency" in text


# -- D1, D2, D3: help and README say what the code does ---------------------------------------------


def test_run_help_states_size_default_and_gpus_for_every_builder(capsys: pytest.CaptureFixture[str]) -> None:
    """run --help shows --size's default (160 MB was used unseen) and --gpus for every builder, not two."""
    from tests.test_bad_inputs import run_cli

    code, out, _ = run_cli(["run", "--help"], capsys)
    text = " ".join(out.replace("│", " ").split())
    assert code == 0
    assert "(repeatable; default 160 MB;" in text
    assert "GPU count for a builder (ring, fully_connected, nvswitch_box, pcie_box" in text


def test_readme_msccl_round_trip_is_true() -> None:
    """The README's MSCCL example: verify() returns None; a replay of it gives the same time."""
    from commsim.api import simulate
    from commsim.engine import replay
    from commsim.interop import msccl_to_schedule, parse_msccl, schedule_to_msccl

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    assert "replay(back, r.topology_obj).makespan_s   # the same replay time as r.replay_time_s" in readme
    r = simulate("dgx1_v100", "tree_packing", "all_reduce", "1 MB")
    back = msccl_to_schedule(
        parse_msccl(schedule_to_msccl(r.schedule, proto="Simple").xml), r.topology_obj, r.schedule.nbytes
    )
    assert back.verify() is None
    assert replay(back, r.topology_obj).makespan_s == pytest.approx(r.replay_time_s)


# -- H1: an interrupted sweep says where its rows are only when there are some ---------------------------


def test_sweep_interrupted_before_any_row_says_nothing_was_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Interrupted before its first row, a sweep does not point to an output file that does not exist."""
    import commsim.sweep
    from tests.test_bad_inputs import run_cli

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(commsim.sweep, "run_sweep", interrupted)
    (tmp_path / "s.yaml").write_text(SWEEP)
    code, _, err = run_cli(
        ["sweep", str(tmp_path / "s.yaml"), "-o", str(tmp_path / "o.csv"), "--serial"], capsys
    )
    assert code == 130
    assert "interrupted before any row was finished" in err
    assert "the rows finished so far are in" not in err


def test_nccl_refusal_through_direct_says_the_nccl_algorithm_asked(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The nccl algorithm replays NVLS in one NVSwitch box as direct's two-shot all-reduce; on 512
    ranks direct refuses (its limit is 256), and the refusal named only 'direct', which the user never
    asked for. It now says the nccl algorithm replays NVLS so, and how to restrict its choice."""
    code, _, err = run_cli(
        ["run", "--topology", "nvswitch_box", "--gpus", "512", "--algorithm", "nccl"], capsys
    )
    assert code == 2
    assert err.startswith("error: the nccl algorithm replays NVLS in one NVSwitch box as direct's two-shot")
    assert "above its limit of 256 ranks" in err and "'algorithms' parameter set to ring or tree" in err
