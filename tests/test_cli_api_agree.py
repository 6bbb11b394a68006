"""The command line and the Python API give the same result for the same case.

Property over random cases (machine, collective, algorithm, size, ranks):
``commsim run --format json`` and :func:`commsim.simulate` agree on every
field of the record, a scenario file run by :func:`commsim.run_file`
agrees with both, and so does a one-point sweep's row.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import commsim
from commsim.algorithms import algorithm_names, get_algorithm
from commsim.cli import main
from commsim.collectives import Collective

MACHINES = {"pcie_4gpu_switch": 4, "fully_connected_4": 4, "dgx1_v100": 8}
CHEAP = [n for n in algorithm_names() if n not in ("nccl", "tree_packing", "seven_step_ps")]


@st.composite
def cases(draw: st.DrawFn) -> dict[str, object]:
    machine = draw(st.sampled_from(sorted(MACHINES)))
    collective = draw(
        st.sampled_from([Collective.ALL_REDUCE, Collective.ALL_GATHER, Collective.REDUCE_SCATTER])
    )
    names = [n for n in CHEAP if collective in get_algorithm(n).collectives]
    return {
        "topology": machine,
        "collective": collective.value,
        "algorithm": draw(st.sampled_from(names)),
        "size": draw(st.integers(min_value=1, max_value=2**22)),
        "ranks": draw(st.integers(min_value=2, max_value=MACHINES[machine])),
    }


def cli_record(case: dict[str, object], capsys: pytest.CaptureFixture[str]) -> dict[str, object] | None:
    """The CLI's JSON record of ``case``, or None if it refused it (exit 2)."""
    args = ["commsim", "run", "--topology", str(case["topology"]), "--algorithm", str(case["algorithm"])]
    args += ["--collective", str(case["collective"]), "--size", str(case["size"]), "--format", "json"]
    old, sys.argv = sys.argv, args
    try:
        main()
    except SystemExit as exc:
        assert exc.code == 2, capsys.readouterr().err
        capsys.readouterr()
        return None
    finally:
        sys.argv = old
    records = json.loads(capsys.readouterr().out)
    assert len(records) == 1
    return dict(records[0])


def api_result(case: dict[str, object], *, ranks: bool = True) -> commsim.Result:
    """``commsim.simulate`` of ``case`` (with its rank count, or the machine's every GPU as the CLI's
    flags here give)."""
    return commsim.simulate(
        str(case["topology"]),
        str(case["algorithm"]),
        str(case["collective"]),
        int(str(case["size"])),
        **({"ranks": int(str(case["ranks"]))} if ranks else {}),
    )


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=cases())
def test_cli_and_api_agree(case: dict[str, object], capsys: pytest.CaptureFixture[str]) -> None:
    record = cli_record(case, capsys)
    try:
        result = api_result(case, ranks=False)
    except commsim.CommsimError:
        assert record is None  # refused by both
        return
    assert record == json.loads(json.dumps(result.to_record()))


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=cases())
def test_a_scenario_file_runs_the_same_case(
    case: dict[str, object], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """``run_file`` on a one-case scenario gives the record ``simulate`` gives, ranks included."""
    path = Path(tmp_path_factory.mktemp("case")) / "case.yaml"
    path.write_text(
        f"name: case\ntopology: {case['topology']}\ncollective: {case['collective']}\n"
        f"sizes: [{case['size']}]\nranks: {case['ranks']}\n"
        f"algorithms: [{{algorithm: {case['algorithm']}}}]\n",
        encoding="utf-8",
    )
    try:
        expected = api_result(case)
    except commsim.CommsimError:
        with pytest.raises(commsim.CommsimError):
            commsim.run_file(path)
        return
    (result,) = commsim.run_file(path).results
    assert result.to_record() == expected.to_record()


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=cases())
def test_a_sweep_point_runs_the_same_case(
    case: dict[str, object], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A one-point sweep's row holds what ``simulate`` gives: bytes, ranks, time, bandwidths.

    A case either refuses (the row's error is the API's message) or agrees
    to the bit: rows are JSON Lines, which keep every float exactly.
    """
    from commsim.sweep import SerialRunner, parse_sweep, read_rows, run_sweep

    sweep = parse_sweep(
        f"topology: {case['topology']}\nalgorithm: {case['algorithm']}\ncollective: {case['collective']}\n"
        f"size: {case['size']}\nranks: {case['ranks']}\n",
        "case.yaml",
    )
    output = Path(tmp_path_factory.mktemp("sweep")) / "rows.jsonl"
    run_sweep(sweep, output, runner=SerialRunner())
    (row,) = read_rows(output)
    try:
        expected = api_result(case)
    except commsim.CommsimError as exc:
        assert row["error"] == " ".join(str(exc).split())
        return
    assert row["error"] is None
    got = (row["nbytes"], row["n_ranks"], row["time_s"], row["algbw_Bps"], row["busbw_Bps"])
    assert got == (expected.nbytes, expected.ranks, expected.time_s, expected.algbw_Bps, expected.busbw_Bps)
