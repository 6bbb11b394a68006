"""Forcing a protocol RCCL disables says so, not only the generic "no NCCL algorithm" (review 2, item 9).

``--proto LL`` on the Radeon AI PRO R9700 (gfx12, ``rdna4``) of outside log 45 used to end in
"no NCCL algorithm among [] ... NVLS needs an NVSwitch box ..." without the reason: RCCL's
``tuning.cc`` disables LL on gfx12 ("Disable LL protocol on gfx12xx").
"""

from __future__ import annotations

import pytest

from commsim.algorithms import Problem
from commsim.collectives import Collective
from commsim.errors import AlgorithmError
from commsim.nccl.model import NcclModel
from commsim.topology import get_topology
from commsim.topology.machines.pcie import pcie_box


def _one_gpu_per_node(gpu_model: str, nodes: int) -> Problem:
    """A 1 MiB all_reduce over the first GPU of each of ``nodes`` two-GPU PCIe boxes (log 45's shape)."""
    topology = get_topology("cluster", box=pcie_box(gpus=2, gpu_model=gpu_model), nodes=nodes)
    firsts: dict[int, str] = {}
    for gpu in topology.gpus:
        firsts.setdefault(topology.device(gpu).box, gpu)
    return Problem(topology, tuple(firsts.values()), Collective.ALL_REDUCE, 2.0**20)


def test_forced_ll_on_gfx12_names_rccls_rule() -> None:
    problem = _one_gpu_per_node("AMD Radeon AI PRO R9700", nodes=2)
    with pytest.raises(AlgorithmError) as info:
        NcclModel.of(problem.topology).predict(problem, protocols=("LL",))
    message = str(info.value)
    assert message.startswith("no NCCL candidate of protocol LL applies to all_reduce")
    assert "available here: ring/Simple, tree/Simple (" in message
    assert message.endswith(
        "; RCCL disables LL on gfx12 GPUs ('Disable LL protocol on gfx12xx') and PAT (NCCL_PAT_ENABLE "
        "defaults to 0) whatever the figures"
    )


def test_forced_tree_simple_on_one_mi300x_node_names_rccls_rule() -> None:
    """RCCL leaves out tree/Simple on a single gfx942 node (its tuning.cc), whatever the tables."""
    topology = get_topology("xgmi_box")
    problem = Problem(topology, tuple(topology.gpus), Collective.ALL_REDUCE, 2.0**20)
    with pytest.raises(AlgorithmError) as info:
        NcclModel.of(topology).predict(problem, algorithms=("tree",), protocols=("Simple",))
    assert str(info.value).endswith(
        "; RCCL disables tree/Simple on a single gfx942 node and PAT (NCCL_PAT_ENABLE defaults to 0) "
        "whatever the figures"
    )


def test_an_nvidia_machine_gets_no_rccl_reason() -> None:
    problem = _one_gpu_per_node("NVIDIA H100 PCIe", nodes=2)
    with pytest.raises(AlgorithmError) as info:
        NcclModel.of(problem.topology).predict(problem, algorithms=("nvls",))
    assert "RCCL" not in str(info.value)


def test_an_algorithm_forced_on_all_to_all_says_nccl_runs_it_point_to_point() -> None:
    """NCCL runs all_to_all as grouped sends (p2p/Simple), whatever NCCL_ALGO says: --algo ring on it
    is refused naming that, not with the NVLS/LL128/PAT conditions of the collective algorithms
    (outside probe 10's log 190, 4 H100, alltoall_perf with --algo ring)."""
    topology = get_topology("xgmi_box")
    problem = Problem(topology, tuple(topology.gpus), Collective.ALL_TO_ALL, 2.0**20)
    with pytest.raises(AlgorithmError) as info:
        NcclModel.of(topology).predict(problem, algorithms=("ring",))
    message = str(info.value)
    assert message.startswith("no NCCL candidate of algorithm ring applies to all_to_all")
    assert message.endswith(
        "available here: p2p/Simple: NCCL runs all_to_all as grouped point-to-point sends "
        "(p2p/Simple), which NCCL_ALGO and NCCL_PROTO do not choose; drop --algo for it"
    )
    assert "NVLS needs" not in message
    with pytest.raises(AlgorithmError) as info:
        NcclModel.of(topology).predict(problem, protocols=("LL",))
    assert str(info.value).endswith("do not choose; drop --proto for it")
