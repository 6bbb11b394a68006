"""The GPU and the machine of one host, as facts: a given topology, the log's ``nvidia-smi topo -m``
matrix, or the board a board class names or the GPU usually ships on.
"""

from __future__ import annotations

from commsim.calibrate.evidence import Evidence, Fact
from commsim.calibrate.infer_devices import DevicePlan
from commsim.calibrate.infer_layout import InferenceError, Layout, given
from commsim.calibrate.infer_machine import HOST_GPUS, Board, board_for, board_named, host_gpus, infer_gpu
from commsim.calibrate.parser import NcclTestsLog
from commsim.hardware import GpuSpec
from commsim.topology.model import Topology

__all__ = ["board_gpus", "gpu_and_topology", "infer_board", "one_rank_facts"]


def gpu_and_topology(
    log: NcclTestsLog,
    topology: Topology | None,
    gpu: str | None,
    facts: dict[str, Fact],
    option: str = "--topology",
) -> tuple[GpuSpec | None, Topology | None]:
    """The GPU's catalogue entry (None when a given topology stands alone) and a given host topology.

    ``topology`` and ``gpu`` are the ``--topology`` (or ``option``: ``--calibrated``, ``--nccl-topo``) and
    ``--gpu`` options; the facts go into ``facts``.
    """
    if topology is not None:
        facts["board"] = given("board", topology.name, option, topology.description)
        spec = _optional_gpu(log, gpu)
        if spec is not None:
            facts["gpu"] = Fact("gpu", spec.name, (Evidence(spec.name, "device list or --gpu"),))
        return spec, topology
    spec, facts["gpu"] = infer_gpu(log, gpu)
    if log.topo_matrix:
        from commsim.topology.nvsmi import topo_matrix_from_log

        box = topo_matrix_from_log(log, gpu_model=spec.name)
        facts["board"] = Fact(
            "board",
            "nvidia-smi topo -m matrix",
            (Evidence("matrix", "nvidia-smi topo -m matrix in the log"),),
        )
        return spec, box
    return spec, None


def board_gpus(spec: GpuSpec | None, box_source: Topology | None, board: str | None) -> int | None:
    """GPUs per host of the given topology (per box of a cluster) or board class, else of the GPU's
    usual board."""
    if box_source is not None:
        return max(len(gpus) for gpus in box_source.boxes.values())
    if board in HOST_GPUS:
        return HOST_GPUS[board]
    return host_gpus(spec) if spec is not None else None


def _optional_gpu(log: NcclTestsLog, gpu: str | None) -> GpuSpec | None:
    try:
        spec, _ = infer_gpu(log, gpu)
    except InferenceError:
        return None
    return spec


def infer_board(
    spec: GpuSpec | None,
    box_source: Topology | None,
    layout: Layout,
    facts: dict[str, Fact],
    plan: DevicePlan,
    named: str | None,
) -> Board | None:
    """The board of one host: the class ``--topology`` named, else the one the GPU usually ships on."""
    if box_source is not None:
        return None
    assert spec is not None, "without a given topology the GPU is known (infer_gpu raises otherwise)"
    per_node = int(layout.per_node.value)
    if named is not None:
        board = board_named(spec, named, per_node, plan.devices)
    else:
        board = board_for(spec, per_node, plan.devices)
    facts["board"] = board.fact
    return board


def board_unused(facts: dict[str, Fact], why: str) -> None:
    """An assumed board that no traffic crosses is no assumption that matters: said so, with ``why``."""
    _unassume(facts, "board", why)


def _unassume(facts: dict[str, Fact], name: str, why: str, value: object = None) -> None:
    """An assumed fact that does not change the run's time is no assumption: kept known, with ``why``
    (and ``value`` when given)."""
    fact = facts.get(name)
    if fact is not None and fact.assumed:
        kept = fact.value if value is None else value
        facts[name] = Fact(name, kept, fact.evidence, False, fact.option, why)


def one_rank_facts(spec: GpuSpec | None, facts: dict[str, Fact]) -> None:
    """One rank copies locally: the board and the host count do not matter, the GPU's memory
    bandwidth does."""
    board_unused(facts, "one rank: no GPU-to-GPU or network link is used")
    for name in ("nodes", "gpus_per_node"):
        _unassume(facts, name, "one rank runs on one GPU of one host whatever the hosts: no link is used", 1)
    memory = spec.memory_Bps if spec is not None else None
    if memory:
        facts["memory_bandwidth"] = Fact(
            "memory_bandwidth", f"{memory / 1e12:.4g} TB/s", (Evidence(memory, "GPU catalogue (datasheet)"),)
        )
    else:
        facts["memory_bandwidth"] = Fact(
            "memory_bandwidth",
            "3.35 TB/s",
            (),
            assumed=True,
            option="--gpu",
            note="the catalogue has no memory bandwidth for this GPU; the H100 SXM's is used",
        )
