"""MSCCL XML: export, the format checker, import, and the round trip through both."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from commsim.algorithms import Problem, make_algorithm
from commsim.api import simulate
from commsim.collectives import Collective
from commsim.engine import replay
from commsim.interop import (
    ExportError,
    FormatError,
    check_msccl,
    msccl_problems,
    msccl_to_schedule,
    parse_msccl,
    read_msccl,
    schedule_to_msccl,
    write_msccl,
)
from commsim.topology import get_topology
from commsim.topology.builders import fully_connected, ring

DATA = Path(__file__).parent / "data" / "msccl"

ROUND_TRIPS = [
    ("hgx_h100", "ring", "all_reduce"),
    ("dgx1_v100", "multi_ring", "all_reduce"),
    ("dgx1_v100", "tree_packing", "all_reduce"),
    ("dgx1_v100", "hierarchical", "all_reduce"),
    ("dgx1_v100", "direct", "all_reduce"),
    ("dgx1_v100", "halving_doubling", "all_reduce"),
    ("dgx1_v100", "naive_ring", "all_reduce"),
    ("dgx1_v100", "tree", "all_reduce"),
    ("dgx1_v100", "ring", "all_gather"),
    ("dgx1_v100", "ring", "reduce_scatter"),
    ("dgx1_v100", "tree", "broadcast"),
    ("dgx1_v100", "tree", "reduce"),
]


@pytest.mark.parametrize(("topology", "algorithm", "collective"), ROUND_TRIPS)
def test_round_trip_verifies_and_replays_in_the_same_time(
    topology: str, algorithm: str, collective: str
) -> None:
    """Export, check, re-read and re-import: the imported schedule is correct and takes the same time.

    Chunks of these schedules sit on a common grid, so the export is exact and
    the imported schedule moves the same bytes on the same routes and
    connections in the same order: the replay time must be identical.
    """
    result = simulate(topology, algorithm, collective, "1 MB")
    export = schedule_to_msccl(result.schedule)
    assert export.exact
    assert msccl_problems(parse_msccl(export.xml)) == []
    back = msccl_to_schedule(parse_msccl(export.xml), result.topology_obj, result.schedule.nbytes)
    back.verify(check_races=True)
    assert back.n_ops == result.schedule.n_ops
    assert replay(back, result.topology_obj).makespan_s == result.replay_time_s


def test_ring_all_reduce_layout() -> None:
    """A 4-GPU ring all-reduce: what the format needs, derived from the ring itself.

    The ring cuts the buffer in 4 chunks (nchunksperloop 4, in-place on the
    input buffer); each GPU sends to its successor and receives from its
    predecessor, so it has two thread blocks, each with 2(n-1) = 6 steps: 3
    reduce-scatter receives that reduce (``rrc``) then 3 all-gather copies (``r``).
    """
    topo = ring(4, bandwidth="10 GB/s", latency=0)
    algo = schedule_to_msccl(simulate(topo, "ring", "all_reduce", "4 MB").schedule).algo
    assert (algo.coll, algo.ngpus, algo.nchunksperloop, algo.nchannels, algo.inplace) == (
        "allreduce",
        4,
        4,
        1,
        1,
    )
    for gpu in algo.gpus:
        assert (gpu.i_chunks, gpu.o_chunks, gpu.s_chunks) == (4, 4, 0)
        blocks = {(tb.send, tb.recv): tb for tb in gpu.tbs}
        nxt, prv = (gpu.id + 1) % 4, (gpu.id - 1) % 4
        assert set(blocks) == {(nxt, -1), (-1, prv)}
        assert [s.type for s in blocks[(nxt, -1)].steps] == ["s"] * 6
        assert [s.type for s in blocks[(-1, prv)].steps] == ["rrc"] * 3 + ["r"] * 3


def test_hybrid_rounds_its_bandwidth_split_to_a_grid() -> None:
    """``hybrid`` splits data by link bandwidth, on no common grid: the export rounds it.

    The rounded schedule is still correct; its time moves by the rounding only
    (well under 0.1 %), and exporting the imported schedule again is exact and
    replays the same time (the rounding is done once).
    """
    result = simulate("dgx1_v100", "hybrid", "all_reduce", "1 MB")
    export = schedule_to_msccl(result.schedule)
    assert not export.exact
    topo = result.topology_obj
    back = msccl_to_schedule(parse_msccl(export.xml), topo, result.schedule.nbytes)
    back.verify()
    rounded = replay(back, topo).makespan_s
    assert rounded == pytest.approx(result.replay_time_s, rel=1e-3)
    again = schedule_to_msccl(back)
    assert again.exact
    assert again.algo.nchunksperloop == export.algo.nchunksperloop
    assert replay(msccl_to_schedule(parse_msccl(again.xml), topo, back.nbytes), topo).makespan_s == rounded


def test_third_party_ring_all_gather_with_fused_steps() -> None:
    """A hand-written MSCCL ring all-gather (send, two receive-copy-sends, receive per GPU).

    On 4 GPUs in a ring of 10 GB/s links with no latency, each of the 3 steps
    moves a quarter of the 4 MB buffer over every link at once:
    3 x 1 MB / 10 GB/s = 300 us.
    """
    algo = read_msccl(DATA / "allgather_ring_rcs_4gpu.xml")
    topo = ring(4, bandwidth="10 GB/s", latency=0)
    schedule = msccl_to_schedule(algo, topo, 4e6)
    schedule.verify(check_races=True)
    assert schedule.n_ops == 12
    assert replay(schedule, topo).makespan_s == pytest.approx(300e-6, rel=1e-12)


def _msccl_tools_ring(n: int) -> str:
    """An in-place ring all-reduce with one channel per chunk, laid out as msccl-tools writes it.

    The layout (``o_chunks="0"``, no size range, ``s``/``rrs``/``rrcs``/``rcs``/``r`` chains, one
    channel per chunk) follows microsoft/msccl-tools ``experiments_ar/ring_8_1.xml``: chunk ``c``
    starts at GPU ``c``, is reduced along the ring (``rrs``), completed at GPU ``c-1`` (``rrcs``)
    and copied back around (``rcs``) until GPU ``c-2`` (``r``).
    """
    chains = {0: ["s", "rcs"], n - 2: ["rrs", "r"], n - 1: ["rrcs"]}
    lines = [
        f'<algo name="allreduce_ring" proto="LL128" nchannels="{n}" nchunksperloop="{n}" ngpus="{n}" '
        'coll="allreduce" inplace="1">'
    ]
    for g in range(n):
        lines.append(f'  <gpu id="{g}" i_chunks="{n}" o_chunks="0" s_chunks="0">')
        for c in range(n):
            lines.append(f'    <tb id="{c}" send="{(g + 1) % n}" recv="{(g - 1) % n}" chan="{c}">')
            for s, kind in enumerate(chains.get((g - c) % n, ["rrs", "rcs"])):
                lines.append(
                    f'      <step s="{s}" type="{kind}" srcbuf="i" srcoff="{c}" dstbuf="i" dstoff="{c}" '
                    'cnt="1" depid="-1" deps="-1" hasdep="0"/>'
                )
            lines.append("    </tb>")
        lines.append("  </gpu>")
    return "\n".join([*lines, "</algo>"])


def test_msccl_tools_ring_all_reduce_imports_and_replays_as_a_ring() -> None:
    """8 chains of 2(n-1) = 14 hops, one per chunk, each hop on a different link at any moment.

    On a ring of 8 GPUs with 10 GB/s links and no latency no two chains share a link, so
    the time is 14 hops of S/8: 14 x 1 MB / 10 GB/s = 1.4 ms for S = 8 MB, the ring's own time.
    """
    algo = parse_msccl(_msccl_tools_ring(8))
    assert msccl_problems(algo) == []
    topo = ring(8, bandwidth="10 GB/s", latency=0)
    schedule = msccl_to_schedule(algo, topo, 8e6)
    schedule.verify(check_races=True)
    assert schedule.n_ops == 8 * 14
    assert replay(schedule, topo).makespan_s == pytest.approx(1.4e-3, rel=1e-12)


def test_write_msccl_writes_the_checked_xml(tmp_path: Path) -> None:
    """The file holds exactly the export's text; reading it back gives the same algorithm."""
    schedule = simulate(ring(4, bandwidth="10 GB/s"), "ring", "all_gather", "4 MB").schedule
    path = tmp_path / "ag.xml"
    export = write_msccl(schedule, str(path), name="ag", proto="LL128", min_bytes=1024, max_bytes=1 << 20)
    assert path.read_text() == export.xml
    algo = read_msccl(path)
    assert (algo.name, algo.proto, algo.min_bytes, algo.max_bytes) == ("ag", "LL128", 1024, 1 << 20)
    assert (algo.gpus[0].i_chunks, algo.gpus[0].o_chunks) == (1, 4)


# -- what cannot be exported ------------------------------------------------------------------


def test_export_refuses_sends_through_a_cpu() -> None:
    schedule = simulate("pcie_4gpu_switch", "parameter_server", "all_reduce", "1 MB").schedule
    with pytest.raises(ExportError, match="between GPUs"):
        schedule_to_msccl(schedule)


def test_export_refuses_more_steps_than_a_thread_block_holds() -> None:
    """A double binary tree cut into 200 pipelined pieces: 400 steps on a connection, MSCCL allows 256."""
    topo = get_topology("dgx1_v100")
    problem = Problem(topo, tuple(topo.gpus), Collective.ALL_REDUCE, 1e9)
    schedule = make_algorithm("tree", {"chunks": 200}).plan(problem)
    with pytest.raises(
        ExportError, match=r"breaks the format's limits: gpu \d tb \d: 400 steps, at most 256"
    ):
        schedule_to_msccl(schedule)


def test_export_refuses_all_to_all_and_unknown_protocols() -> None:
    topo = ring(4, bandwidth="10 GB/s")
    with pytest.raises(ExportError, match="exportable collectives: all_reduce"):
        schedule_to_msccl(simulate(fully_connected(4), "direct", "all_to_all", "4 MB").schedule)
    with pytest.raises(ExportError, match="valid: Simple, LL128, LL"):
        schedule_to_msccl(simulate(topo, "ring", "all_reduce", "4 MB").schedule, proto="simplex")


# -- the checker ---------------------------------------------------------------------------------

GOOD = (DATA / "allgather_ring_rcs_4gpu.xml").read_text()


def _mutated(old: str, new: str, count: int = 1) -> str:
    assert old in GOOD
    return GOOD.replace(old, new, count)


def test_the_sample_passes_the_checker() -> None:
    assert msccl_problems(parse_msccl(GOOD)) == []


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('nchunksperloop="4"', 'nchunksperloop="8"', "nchunksperloop=8 is not max"),
        ('o_chunks="4"', 'o_chunks="5"', "allgather needs o_chunks = ngpus x i_chunks"),
        (
            'srcoff="0" dstbuf="o" dstoff="0" cnt="1"',
            'srcoff="3" dstbuf="o" dstoff="0" cnt="2"',
            "src chunks 3..4 outside buffer o",
        ),
        ('cnt="1" depid="-1"', 'cnt="72" depid="-1"', "cnt=72 outside 1..71"),
        ('<tb id="0" send="1"', '<tb id="1" send="1"', "thread block ids are [1], expected 0..0"),
        (
            '<tb id="0" send="1" recv="3" chan="0">',
            '<tb id="0" send="1" recv="3" chan="1">',
            "chan=1 outside 0..0",
        ),
        ('<tb id="0" send="1" recv="3"', '<tb id="0" send="0" recv="3"', "send=0 must be -1 or another GPU"),
        ('<step s="1" type="rcs"', '<step s="5" type="rcs"', "s=5 but it is step 1"),
        (
            'deps="-1" hasdep="0"/>\n      <step s="1"',
            'deps="-1" hasdep="2"/>\n      <step s="1"',
            "hasdep=2 must be 0 or 1",
        ),
    ],
)
def test_checker_names_each_broken_rule(old: str, new: str, message: str) -> None:
    problems = msccl_problems(parse_msccl(_mutated(old, new)))
    assert any(message in p for p in problems), problems


def test_checker_limits_attribute_length() -> None:
    """The runtime keeps 255 characters of an attribute: a longer route hint would be cut."""
    long_route = ",".join(f"switch{i}" for i in range(40))
    algo = parse_msccl(
        _mutated(
            '<tb id="0" send="1" recv="3" chan="0">',
            f'<tb id="0" send="1" recv="3" chan="0" commsim_via="{long_route}">',
        )
    )
    assert any(
        f"attribute commsim_via has {len(long_route)} characters, at most 255" in p
        for p in msccl_problems(algo)
    )


def test_checker_finds_unpaired_sends_and_bad_dependencies() -> None:
    """gpu 0 sends 4 times to gpu 1 (one receive step turned into a send is not receivable), and deps."""
    unpaired = _mutated('<step s="3" type="r"', '<step s="3" type="rcs"')
    assert any("4 sends but 3 receives" in p for p in msccl_problems(parse_msccl(unpaired)))
    bad_dep = _mutated('cnt="1" depid="-1" deps="-1"', 'cnt="1" depid="0" deps="9"')
    assert any("depid=0 is not another thread block" in p for p in msccl_problems(parse_msccl(bad_dep)))


def test_checker_finds_a_deadlock_and_a_missing_hasdep() -> None:
    """Two thread blocks of one GPU that each wait for the other's later step never start."""
    text = (DATA / "deadlock_2gpu.xml").read_text()
    problems = msccl_problems(parse_msccl(text))
    assert any("deadlock" in p for p in problems), problems
    missing = text.replace('depid="1" deps="0" hasdep="1"', 'depid="1" deps="0" hasdep="0"', 1)
    missing = missing.replace('depid="0" deps="0" hasdep="1"', 'depid="-1" deps="-1" hasdep="0"')
    problems = msccl_problems(parse_msccl(missing))
    assert any('waits for tb 1 step 0, which does not set hasdep="1"' in p for p in problems), problems
    with pytest.raises(FormatError, match="invalid MSCCL algorithm"):
        check_msccl(parse_msccl(missing))


# -- reading errors ----------------------------------------------------------------------------


def test_malformed_xml_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.xml"
    path.write_text(GOOD.replace("</tb>", "</tbx>", 1))
    with pytest.raises(FormatError, match=re.escape(f"{path}:8: not well-formed XML: mismatched tag")):
        read_msccl(path)


def test_missing_attribute_and_unknown_values_name_the_line_and_what_is_valid() -> None:
    with pytest.raises(FormatError, match=r"line 4: <step>: missing attribute 'cnt'"):
        parse_msccl(
            _mutated(' cnt="1" depid="-1" deps="-1" hasdep="0"/>', ' depid="-1" deps="-1" hasdep="0"/>')
        )
    with pytest.raises(FormatError, match=r"line 4: <step>: unknown step type 'send'; valid: s, r, rcs"):
        parse_msccl(_mutated('type="s"', 'type="send"'))
    with pytest.raises(FormatError, match=r"unknown buffer srcbuf='x'; valid: i \(input\)"):
        parse_msccl(_mutated('srcbuf="o"', 'srcbuf="x"'))
    with pytest.raises(FormatError, match=r"line 1: <algo>: unknown protocol 'll'; valid: Simple, LL128, LL"):
        parse_msccl(_mutated('proto="Simple"', 'proto="ll"'))
    with pytest.raises(FormatError, match=r"attribute ngpus='four' is not an integer"):
        parse_msccl(_mutated('ngpus="4"', 'ngpus="four"'))


def test_import_refuses_what_commsim_cannot_model() -> None:
    topo = ring(4, bandwidth="10 GB/s")
    with pytest.raises(FormatError, match="collective 'alltoall' cannot be imported"):
        msccl_to_schedule(parse_msccl(_mutated('coll="allgather"', 'coll="alltoall"')), topo, 4e6)
    with pytest.raises(FormatError, match="has 4 GPUs but topology 'ring_3' gives 3"):
        msccl_to_schedule(parse_msccl(GOOD), ring(3, bandwidth="10 GB/s"), 4e6)
