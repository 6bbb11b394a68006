"""NVL72 runs spanning racks: hosts spread evenly over the fewest racks, and uneven boxes refused.

A log names hosts, not racks. 32 GB300 hosts of 4 GPUs need two NVL72 racks (18 hosts each); an
operator splits such a job 16 + 16. Filling one rack first (72 + 56 ranks) gave domains of unequal
size, which NCCL's model (and commsim's channels across nodes) does not describe: the replay then
counted NVLink hops as network hops and priced an all-to-all at 1.29 TB/s bus bandwidth, more than a
GB300's own NVLink ports carry.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from commsim.algorithms import Problem
from commsim.calibrate.inference import RunOptions
from commsim.calibrate.validate import validate_file
from commsim.collectives import Collective
from commsim.errors import TopologyError
from commsim.nccl.model import NcclModel
from commsim.nccl.params import NcclParams

LOG = """# Collective test starting: alltoall_perf
# nThread 1 nGpus 1 minBytes 524288 maxBytes 17179869184 step: 2(factor) warmup iters: 1 iters: 50
#
# Using devices
#  Rank  0 Group  0 Pid 588359 on   GPU-5705 device  0 [0008:06:00] NVIDIA GB300
#  Rank 127 Group  0 Pid 565049 on   GPU-1631 device  3 [0019:06:00] NVIDIA GB300
NCCL version 2.28.7+cuda13.0
#  size  count  type  redop  root  time  algbw  busbw  #wrong  time  algbw  busbw  #wrong
  8589934592  16777216  float  none  -1  180191  47.67  47.30  0  179150  47.95  47.57  N/A
"""
OPTIONS = RunOptions(gpus=128, nodes=32, gpus_per_node=4, nic="roce_400g", nics_per_node=8)


def test_32_hosts_are_placed_16_per_rack(tmp_path: Path) -> None:
    """Two racks of 16 hosts (an assumed fact, said so), and the all-to-all priced at its NICs: each
    rack's 16 used hosts x 8 NICs x 50 GB/s x 0.90 = 5,760 GB/s carry the 64 x 64 / 128 = 32 bytes per
    byte of buffer a rack sends out, so the algorithm bandwidth is 180 GB/s and the bus bandwidth
    180 x 127 / 128 = 178.59 GB/s (the box's all-to-all replay, 733 GB/s for half the bytes, is not
    the limit). The call's latency (tens of us against 48 ms) moves it by less than 0.1 %."""
    path = tmp_path / "alltoall_gb300.txt"
    path.write_text(LOG)
    report = validate_file(path, options=OPTIONS)
    racks = report.inference.facts["racks"]
    assert racks.assumed and racks.value == "2 x 16 hosts" and "16 per rack" in racks.note
    (row,) = report.rows
    assert row.predicted_busbw_Bps == pytest.approx(5760e9 / 32 * 127 / 128, rel=1e-3)
    assert row.predicted_busbw_Bps < 5760e9 / 32 * 127 / 128


def test_uneven_boxes_are_refused() -> None:
    """72 ranks in one rack and 56 in the other: a typed error naming both counts and the remedy."""
    from commsim.topology import get_topology

    topo = get_topology("cluster", box="nvl72_rack", nodes=2, nic="roce_400g")
    boxes: dict[int, list[str]] = {}
    for gpu in topo.gpus:
        boxes.setdefault(topo.device(gpu).box, []).append(gpu)
    first, second = sorted(boxes)
    ranks = tuple(boxes[first][:72] + boxes[second][:56])
    with pytest.raises(TopologyError, match=r"unevenly over the boxes \(box \d+: 72, box \d+: 56\)"):
        NcclModel(topo, NcclParams()).predict(Problem(topo, ranks, Collective.ALL_TO_ALL, 2.0**30))
