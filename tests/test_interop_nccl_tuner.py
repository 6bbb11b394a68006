"""The NCCL example tuner plugin's CSV: written from the NCCL model, read by the plugin's rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from commsim.collectives import Collective
from commsim.interop import FormatError
from commsim.interop.nccl_tuner import (
    SIZE_MAX,
    TUNER_COLLECTIVES,
    model_choices,
    parse_tuner_csv,
    read_tuner_csv,
    size_grid,
    tuner_csv,
    tuner_rows,
)
from commsim.topology import get_topology

DATA = Path(__file__).parent / "data" / "nccl_tuner"


def test_written_rules_give_the_model_choice_at_every_size() -> None:
    """Read back by the plugin's rules, every size of the grid gets the model's own choice.

    Ranges are (s_(k-1), s_k]: a size just above a grid point takes the next point's choice.
    """
    topo = get_topology("dgx_a100")
    sizes = size_grid(1024, 2**30)
    config = parse_tuner_csv(tuner_csv(tuner_rows(topo, sizes=sizes), "dgx_a100"))
    for collective, name in TUNER_COLLECTIVES.items():
        choices = model_choices(topo, collective, sizes)
        for k, (size, choice) in enumerate(zip(sizes, choices)):
            rule = config.lookup(name, size, n_nodes=1, n_ranks=8)
            assert rule is not None and (rule.algorithm, rule.protocol) == choice
            if k + 1 < len(sizes):
                above = config.lookup(name, size + 1, n_nodes=1, n_ranks=8)
                assert above is not None and (above.algorithm, above.protocol) == choices[k + 1]
        assert config.lookup(name, 0, 1, 8) is not None and config.lookup(name, SIZE_MAX, 1, 8) is not None


def test_rules_apply_to_this_machine_only() -> None:
    config = parse_tuner_csv(tuner_csv(tuner_rows(get_topology("dgx_a100"), [Collective.ALL_REDUCE])))
    assert {(r.n_nodes, r.n_ranks, r.channels, r.num_pipe_ops, r.reg_buff) for r in config.rules} == {
        (1, 8, -1, -1, -1)
    }
    assert config.lookup("allreduce", 4096, n_nodes=1, n_ranks=4) is None
    assert config.lookup("allgather", 4096, n_nodes=1, n_ranks=8) is None


def test_ranges_tile_every_size_without_overlap() -> None:
    rules = tuner_rows(get_topology("hgx_h100"), [Collective.ALL_REDUCE])
    assert rules[0].min_bytes == 0 and rules[-1].max_bytes == SIZE_MAX
    assert all(b.min_bytes == a.max_bytes + 1 for a, b in zip(rules, rules[1:]))
    assert all((a.algorithm, a.protocol) != (b.algorithm, b.protocol) for a, b in zip(rules, rules[1:]))


def test_reader_follows_the_plugin_rules_loosely() -> None:
    """What the plugin makes of a file with its quirks (strict=False mirrors it exactly).

    Line 4: full 10 fields. Line 5: 8 fields, so numPipeOps and regBuff match anything.
    Line 6: spaces trimmed and the empty field dropped by strtok (so 10 fields remain). Line 7: 12 fields, the
    first 10 kept; a trailing CR stays in the ignored 11th. Line 8: unknown names do not occur.
    """
    config = read_tuner_csv(DATA / "rules.conf", strict=False)
    assert [r.line for r in config.rules] == [4, 5, 6, 7, 8]
    first, second, third, fourth, _ = config.rules
    assert (first.channels, first.n_nodes, first.n_ranks, first.reg_buff) == (2, 1, -1, 1)
    assert (second.num_pipe_ops, second.reg_buff) == (-1, -1)
    assert (third.min_bytes, third.max_bytes, third.protocol, third.n_ranks, third.num_pipe_ops) == (
        65537,
        1048576,
        "ll128",
        8,
        1,
    )
    assert (fourth.collective, fourth.max_bytes, fourth.reg_buff) == ("broadcast", 4294967295, -1)
    # the first matching rule wins: a registered buffer on one node takes the tree rule
    assert config.lookup("allreduce", 65536, 1, 8, reg_buff=1) is first
    assert config.lookup("allreduce", 65536, 2, 8, reg_buff=1) is second
    assert config.lookup("allreduce", 65537, 2, 8, pipe_ops=1) is third
    assert config.lookup("allreduce", 65537, 2, 4, pipe_ops=1) is None


def test_plugin_defaults_for_unknown_names_and_strict_refusal(tmp_path: Path) -> None:
    path = tmp_path / "bad.conf"
    path.write_text("# header\nallreduce,0,100,ring,LL,-1,-1,-1\nall_reduce,0,100,ring,ll,-1,-1,-1\n")
    loose = read_tuner_csv(path, strict=False)
    assert [(r.collective, r.protocol) for r in loose.rules] == [("allreduce", "simple"), ("allreduce", "ll")]
    with pytest.raises(
        FormatError,
        match=rf"{path}:2: unknown protocol 'LL' \(the plugin would use simple\); valid: ll, ll128, simple",
    ):
        read_tuner_csv(path)
    path.write_text("allreduce,0,100,ring,ll,-1,-1\n")
    assert read_tuner_csv(path, strict=False).rules == []
    with pytest.raises(FormatError, match=rf"{path}:1: 7 fields, the plugin needs 8 to 10"):
        read_tuner_csv(path)
    path.write_text("allreduce,0,100,ring,ll,-1,-1,-1" + " " * 300 + "\n")
    with pytest.raises(FormatError, match=rf"{path}:1: line of 332 bytes; the plugin reads at most 255"):
        read_tuner_csv(path)


def test_collectives_the_plugin_cannot_tune_are_refused() -> None:
    from commsim.interop import ExportError

    with pytest.raises(ExportError, match="does not tune all_to_all; it tunes broadcast, reduce"):
        tuner_rows(get_topology("dgx_a100"), [Collective.ALL_TO_ALL])
