"""Scatter: gather reversed, from the direct plan through NCCL's model to ``commsim validate``.

nccl-tests' scatter_perf prints the whole buffer of ``size`` bytes; the
root sends ``size / n`` to each of the other ``n - 1`` ranks (gather's
traffic with every send reversed).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from typer.testing import CliRunner

from commsim.algorithms import Problem
from commsim.algorithms.direct import Direct
from commsim.calibrate.parser import parse_nccl_tests
from commsim.calibrate.validate import validate_log
from commsim.cli import app
from commsim.collectives import Collective
from commsim.engine import replay
from commsim.errors import ScheduleError
from commsim.nccl.model import NcclModel
from commsim.topology import get_topology
from commsim.verify import verify_schedule

REL = 1e-12


def test_direct_scatter_on_the_pcie_box_takes_three_ms_like_gather() -> None:
    """64 MB from gpu0 to the three other GPUs of ``pcie_4gpu_switch``.

    Each of the three receivers gets 64 MB / 4 = 16 MB, all leaving through
    gpu0's one PCIe 3.0 x16 port (16 GB/s per direction, no latency):
    3 x 16 MB / 16 GB/s = 3 ms. Gather moves the same bytes into gpu0 over
    the other direction of the same port: also 3 ms.
    """
    topology = get_topology("pcie_4gpu_switch")
    ranks = tuple(topology.gpus)
    times = {}
    for collective in (Collective.SCATTER, Collective.GATHER):
        problem = Problem(topology, ranks, collective, 64e6)
        schedule = Direct().plan(problem)
        verify_schedule(schedule)
        times[collective] = replay(schedule, topology).makespan_s
        assert Direct().analytic_time(problem) == pytest.approx(3e-3, rel=REL)
    assert times[Collective.SCATTER] == pytest.approx(3e-3, rel=REL)
    assert times[Collective.GATHER] == pytest.approx(3e-3, rel=REL)


def test_direct_scatter_sends_slice_r_from_the_root_to_rank_r() -> None:
    """Root 2 of four ranks: three sends, all from gpu2, chunk r to rank r, each 1/4 of the buffer."""
    topology = get_topology("pcie_4gpu_switch")
    schedule = Direct().plan(Problem(topology, tuple(topology.gpus), Collective.SCATTER, 4e6, root=2))
    sends = sorted(
        (schedule.devices[s], schedule.devices[d], int(c))
        for s, d, c in zip(schedule.op_src, schedule.op_dst, schedule.op_chunk, strict=True)
    )
    assert sends == [("gpu2", "gpu0", 0), ("gpu2", "gpu1", 1), ("gpu2", "gpu3", 3)]
    assert schedule.chunk_nbytes.tolist() == [1e6] * 4
    assert schedule.offsets.tolist() == [0.0, 1e6, 2e6, 3e6]


def test_the_verifier_refuses_a_scatter_that_delivers_a_slice_to_the_wrong_rank() -> None:
    """Swapping two sends' destinations leaves gpu1 and gpu3 with the wrong slice."""
    topology = get_topology("pcie_4gpu_switch")
    schedule = Direct().plan(Problem(topology, tuple(topology.gpus), Collective.SCATTER, 4e6))
    dst = schedule.op_dst.copy()
    dst[[0, 2]] = dst[[2, 0]]
    wrong = dataclasses.replace(schedule, op_dst=dst)
    with pytest.raises(ScheduleError, match="scatter not achieved"):
        verify_schedule(wrong)


@pytest.mark.parametrize("machine", ["dgx_a100", "pcie_4gpu_switch", "dgx1_v100"])
@pytest.mark.parametrize("nbytes", [1e3, 64e6])
def test_nccl_model_prices_scatter_as_gather(machine: str, nbytes: float) -> None:
    """NCCL runs both as grouped sends between the root and each rank; the bytes on the root's
    links are the same, in the other direction, and every shipped box is symmetric in direction."""
    topology = get_topology(machine)
    model = NcclModel.of(topology)
    ranks = tuple(topology.gpus)
    scatter = model.predict(Problem(topology, ranks, Collective.SCATTER, nbytes))
    gather = model.predict(Problem(topology, ranks, Collective.GATHER, nbytes))
    assert scatter.chosen.algorithm == "p2p"
    assert scatter.time_s == pytest.approx(gather.time_s, rel=REL)


def _scatter_log(binary: str = "scatter_perf", hosts: int = 1, per_host: int = 8) -> str:
    """A scatter_perf log (nccl-tests 2.13 format) of A100-SXM4-40GB ranks; time 20 us + 2 us/MB."""
    ranks = hosts * per_host
    lines = [
        f"$ mpirun -np {ranks} ./build/{binary} -b 1M -e 256M -f 2 -g 1",
        "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 268435456 step: 2(factor) warmup iters: 5 "
        "iters: 20 agg iters: 1 validation: 1 graph: 0",
        "#",
        "# Using devices",
    ]
    for rank in range(ranks):
        host, device = divmod(rank, per_host)
        lines.append(
            f"#  Rank {rank:2d} Group  0 Pid {1000 + rank:5d} on node{host + 1} "
            f"device {device:2d} [0x{device:02x}] NVIDIA A100-SXM4-40GB"
        )
    lines += [
        "#",
        "#                                  out-of-place                   in-place",
        "#   size   count  type  redop  root  time  algbw  busbw #wrong  time  algbw  busbw #wrong",
        "#    (B) (elements)                  (us)  (GB/s) (GB/s)        (us)  (GB/s) (GB/s)",
    ]
    for k in range(20, 29):
        nbytes = 2**k
        us = 20 + 2 * nbytes / 1e6
        algbw = nbytes / us / 1e3
        cell = f"{us:8.1f} {algbw:7.2f} {algbw * (ranks - 1) / ranks:7.2f}      0"
        lines.append(f"{nbytes:>14} {nbytes // 4 // ranks:>13}     float    none       0 {cell} {cell}")
    lines += ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 50.0", "#"]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("hosts", [1, 2])
def test_validate_predicts_a_scatter_log_as_its_gather_mirror(hosts: int) -> None:
    """The same table named scatter_perf and gather_perf: scatter is read as scatter, NCCL's
    grouped sends are chosen at every size, and every predicted time is gather's."""
    text = _scatter_log(hosts=hosts)
    scatter = validate_log(parse_nccl_tests(text, "scatter.log"), text)
    mirror = _scatter_log("gather_perf", hosts=hosts)
    gather = validate_log(parse_nccl_tests(mirror, "gather.log"), mirror)
    assert scatter.collective == "scatter" and gather.collective == "gather"
    assert {row.algorithm for row in scatter.rows} == {"p2p"}
    assert [row.nbytes for row in scatter.rows] == [2**k for k in range(20, 29)]
    assert [row.predicted_time_s for row in scatter.rows] == pytest.approx(
        [row.predicted_time_s for row in gather.rows], rel=REL
    )


def test_validate_command_on_a_scatter_log(tmp_path: Path) -> None:
    """The command that failed with "algorithm 'direct' does not implement scatter" now predicts."""
    path = tmp_path / "scatter.log"
    path.write_text(_scatter_log(hosts=2))
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code == 0, result.output
    assert "does not implement" not in result.output
    assert "p2p/Simple" in result.output
    assert "collective = scatter" in result.output
