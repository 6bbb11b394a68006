"""Working out the run and the machine behind an nccl-tests log, each fact with its evidence.

``commsim validate`` first answers, from the log and the user's options, what
ran where: how many ranks, on how many hosts, which GPUs of each host, what
GPU (from the catalogue, :mod:`commsim.hardware`), on what board (a machine
class of :mod:`commsim.topology.machines`), over what network, with what
NCCL version and forced settings. Every answer is a
:class:`~commsim.calibrate.evidence.Fact` that names its evidence (a log
line, an option) or says it is assumed and which option gives the real
value. Options always win over the log; where they disagree, a warning says
so. Only then is the topology built and the model asked.

Order of evidence for the machine of one host: ``--topology``; an
``nvidia-smi topo -m`` matrix inside the log; else the GPU's catalogue entry
and the number of GPUs per host choose the board
(:mod:`~commsim.calibrate.infer_machine`). Several hosts make a cluster of
such boards joined by the network the log names
(:mod:`~commsim.calibrate.infer_network`); GB200/GB300 hosts make a cluster
of NVL72 racks when they share NVLink domains, of one-tray boxes when they do
not (:mod:`~commsim.calibrate.infer_domain`).

The options and the result, :class:`RunOptions` and :class:`RunInference`, are
:mod:`~commsim.calibrate.inference_records`' (re-exported here).
"""

from __future__ import annotations

from dataclasses import replace

from commsim.calibrate.evidence import Fact
from commsim.calibrate.infer_devices import DevicePlan, one_gpu_per_process, plan_devices
from commsim.calibrate.infer_domain import check_nvlink_domain, infer_nvlink_domain
from commsim.calibrate.infer_host import (
    board_gpus,
    board_unused,
    gpu_and_topology,
    infer_board,
    one_rank_facts,
)
from commsim.calibrate.infer_launch import (
    gpus_per_thread,
    infer_cuda_graph,
    infer_launch,
    refuse_shared_gpus,
    warn_mixed_gpus,
)
from commsim.calibrate.infer_layout import InferenceError, Layout, infer_layout, infer_ranks
from commsim.calibrate.infer_machine import HOST_GPUS, NVL72_DOMAIN, Board
from commsim.calibrate.infer_network import infer_network
from commsim.calibrate.infer_nics import infer_nics
from commsim.calibrate.infer_ofi import efa_protocol
from commsim.calibrate.infer_rank_gpus import rack_gpus, rank_gpus_on_boards
from commsim.calibrate.infer_settings import (
    channel_limit_facts,
    forced_choices,
    infer_collnet,
    infer_host_transport,
    infer_p2p,
    infer_version,
)
from commsim.calibrate.infer_topology import (
    has_fabric,
    host_box,
    p2p_transport_off,
    whole_machine,
    without_fabric,
)
from commsim.calibrate.inference_records import RunInference, RunOptions
from commsim.calibrate.parser import NcclTestsLog
from commsim.calibrate.settings import RunSettings
from commsim.calibrate.verdict_evidence import coll_channels
from commsim.hardware import GpuSpec
from commsim.topology.model import Topology

__all__ = ["InferenceError", "RunInference", "RunOptions", "infer_run"]


def infer_run(log: NcclTestsLog, raw: str, options: RunOptions | None = None) -> RunInference:
    """The run and the machine behind ``log``.

    Parameters
    ----------
    log : NcclTestsLog
        The parsed run.
    raw : str
        The log's text (for the ``nvidia-smi`` matrices it may hold).
    options : RunOptions, optional
        What the user said; wins over the log.

    Raises
    ------
    InferenceError
        When a fact the prediction needs is missing; the message names the option that gives it.
    """
    options = options or RunOptions()
    warnings: list[str] = []
    settings = log.settings
    facts: dict[str, Fact] = {"ranks": infer_ranks(log, options.gpus, warnings)}
    ranks = int(facts["ranks"].value)
    spec, box_source = gpu_and_topology(log, options.topology, options.gpu, facts, options.topology_option)
    warn_mixed_gpus(log, facts, warnings)
    host_gpus = board_gpus(spec, box_source, options.board)
    layout = infer_layout(log, ranks, options.nodes, options.gpus_per_node, host_gpus, warnings)
    layout, isolated = one_gpu_per_process(log, layout, options.gpus_per_node)
    facts["nodes"], facts["gpus_per_node"] = layout.nodes, layout.per_node
    per_node = int(layout.per_node.value)
    facts["launch"] = infer_launch(log)
    cuda_graph = infer_cuda_graph(log, facts, warnings)
    plan = plan_devices(layout, settings, options.devices, warnings, per_process=isolated is not None)
    board = infer_board(spec, box_source, layout, facts, plan, options.board)
    peers = _host_peers(spec, ranks, layout, facts)
    p2p = _p2p(settings, raw, options, spec, board, peers, per_node, facts)
    board, boxes = _domains(log, raw, options, board, layout, ranks, facts, warnings)
    nic, nics = _network(settings, options, spec, board, per_node, facts) if boxes > 1 else (None, 0)
    algorithms, protocols = _nccl_facts(log, raw, options, nic, spec, facts, warnings)
    box = host_box(spec, board, box_source, bool(p2p.value), nics, nic)
    if p2p_transport_off(p2p, settings):
        box = without_fabric(box, warnings)
    topology, gpu_names = whole_machine(box, boxes, nic, nics)
    rank_gpus = _rank_gpus(log, (topology, gpu_names), board, plan, layout, isolated, facts)
    version = facts["nccl_version"].value
    return RunInference(
        topology,
        rank_gpus,
        facts,
        gpus_per_thread(log),
        algorithms,
        protocols,
        None if version is None else str(version),
        warnings,
        cuda_graph,
    )


def _host_peers(spec: GpuSpec | None, ranks: int, layout: Layout, facts: dict[str, Fact]) -> bool:
    """Whether GPUs of one host talk to each other (several ranks, not one per host); when they do
    not, the facts of a one-rank run, or a board whose links no rank uses, go into ``facts``."""
    alone = int(layout.per_node.value) == 1 and not layout.per_node.assumed  # one GPU per host
    if ranks == 1:
        one_rank_facts(spec, facts)
    elif alone:
        board_unused(facts, "one GPU per host: no GPU-to-GPU link of a host is used")
    return ranks > 1 and not alone


def _nccl_facts(
    log: NcclTestsLog,
    raw: str,
    options: RunOptions,
    nic: str | None,
    spec: GpuSpec | None,
    facts: dict[str, Fact],
    warnings: list[str],
) -> tuple[tuple[str, ...] | None, tuple[str, ...] | None]:
    """NCCL's version, aws-ofi-nccl's protocol over EFA and the forced choices, put in ``facts``;
    returns the algorithms and protocols NCCL may choose from (None: any)."""
    settings = log.settings
    facts["nccl_version"] = infer_version(settings, options.nccl_version, log.nccl_version, log.source)
    protocol = efa_protocol(nic, settings, raw, facts["nccl_version"], spec, options.net_protocol, warnings)
    if protocol is not None:
        facts["net_protocol"] = protocol
    choices, algorithms, protocols, unmodelled = forced_choices(
        settings, options.algorithms, options.protocols, log.collective
    )
    facts.update(choices)
    by_log = choices.get("algorithms") if options.algorithms is None else None
    forced = (algorithms, by_log) if algorithms and by_log is not None else None
    version = facts["nccl_version"].value
    first = log.first_line or 1
    run_lines = raw.splitlines()[first - 1 : log.last_line]  # the run's own lines, not the file's
    collnet = infer_collnet(
        settings, options.collnet, version=version, lines=run_lines, first_line=first, forced=forced
    )
    if collnet is not None:
        facts["collnet"] = collnet
    facts.update(channel_limit_facts(settings))
    printed = coll_channels([(first + i, text) for i, text in enumerate(run_lines)])
    if printed is not None:
        facts["channels"] = Fact(
            "channels",
            int(printed.value),
            (printed,),
            note="NCCL's channel count as the log prints it: a small ring LL call runs a share of them",
        )
    warnings += unmodelled
    return algorithms, protocols


def _rank_gpus(
    log: NcclTestsLog,
    machine: tuple[Topology, list[list[str]]],
    board: Board | None,
    plan: DevicePlan,
    layout: Layout,
    isolated: Fact | None,
    facts: dict[str, Fact],
) -> tuple[str, ...]:
    """The GPU of every rank on ``machine`` (the whole machine and the GPU names of each box): spread
    over NVL72 racks, else the GPUs of each board the device plan names (with ``isolated``, the
    fact of one GPU per process, when nothing says more); refused when ranks share a GPU."""
    topology, gpu_names = machine
    if board is not None and board.cls == "nvl72" and board.gpus > HOST_GPUS["nvl72"]:
        ranks, per_node = int(facts["ranks"].value), int(layout.per_node.value)
        rank_gpus = rack_gpus(gpu_names, ranks, per_node, facts)
    else:
        rank_gpus = rank_gpus_on_boards(topology, gpu_names, plan, layout, facts)
        chosen = facts.get("gpus_used")
        if isolated is not None and plan.fact is None and (chosen is None or not chosen.assumed):
            facts["gpus_used"] = isolated  # which GPUs of a part-used board ran, if it matters, first
    refuse_shared_gpus(log, rank_gpus)
    return rank_gpus


def _p2p(
    settings: RunSettings,
    raw: str,
    options: RunOptions,
    spec: GpuSpec | None,
    board: Board | None,
    peers: bool,
    per_node: int,
    facts: dict[str, Fact],
) -> Fact:
    """Whether the GPUs of a host reach each other peer-to-peer, and the transport NCCL joins them
    with when it is one the model does not price; both go into ``facts``."""
    p2p = infer_p2p(
        settings,
        options.p2p,
        raw,
        spec,
        has_fabric(spec, board) or _one_bridged_pair(spec, board, per_node),
        options.topology.peer_to_peer if options.topology is not None else None,
        options.topology_option,
    )
    if peers or not p2p.assumed:  # one rank (per host) has no peer: nothing to assume
        facts["p2p"] = p2p
    host_transport = infer_host_transport(settings, p2p, per_node)
    if host_transport is not None:
        facts["host_transport"] = host_transport
    return p2p


def _one_bridged_pair(spec: GpuSpec | None, board: Board | None, per_node: int) -> bool:
    """Whether a host's ranks are one NVLink-bridged pair: NCCL joins them peer-to-peer over the
    bridge whatever the driver allows over PCIe (which only hops between pairs would take)."""
    bridged = board is not None and board.cls == "bridged_pairs"
    return bridged and spec is not None and spec.bridge is not None and per_node <= 2


def _network(
    settings: RunSettings,
    options: RunOptions,
    spec: GpuSpec | None,
    board: Board | None,
    per_node: int,
    facts: dict[str, Fact],
) -> tuple[str, int]:
    """The network link kind between boxes and the NICs of a box, with their facts put in ``facts``."""
    arch = spec.arch if spec is not None else "unknown"
    network, per_host = infer_network(settings, options.nic, arch, has_fabric(spec, board))
    box_gpus = board.gpus if board is not None else per_node
    host_count = HOST_GPUS["nvl72"] if board is not None and board.cls == "nvl72" else box_gpus
    facts["network"] = network
    nic = str(network.value)
    slots = _board_nic_slots(board)
    facts["nics_per_node"] = infer_nics(settings, options.nics_per_node, per_host, host_count, nic, slots)
    nics = int(facts["nics_per_node"].value)
    if board is not None and board.cls == "nvl72":
        nics *= board.gpus // HOST_GPUS["nvl72"]  # the NICs of every tray of the box
    return nic, nics


def _domains(
    log: NcclTestsLog,
    raw: str,
    options: RunOptions,
    board: Board | None,
    layout: Layout,
    ranks: int,
    facts: dict[str, Fact],
    warnings: list[str],
) -> tuple[Board | None, int]:
    """The board as modelled and the boxes of the machine: one per host, or, on NVL72-class GPUs, one
    per NVLink domain the hosts fill (:mod:`~commsim.calibrate.infer_domain`).

    Hosts that share domains fill the fewest 72-GPU racks (or as many as NCCL's lines count); a host
    that is a domain of its own is a box of one compute tray, its 4 GPUs on NVLink and its own NICs.
    """
    hosts, per_node = int(layout.nodes.value), int(layout.per_node.value)
    check_nvlink_domain(options.nvlink_domain)
    if options.nvlink_domain is not None and (board is None or board.cls != "nvl72" or hosts < 2):
        if board is not None:
            why = "it applies to runs of several hosts on GB200/GB300-class GPUs (NVL72 compute trays)"
        elif options.topology is not None:
            why = f"the machine given with {options.topology_option} says how its hosts are joined"
        else:
            why = "the log's nvidia-smi topo -m matrix gives the machine of a host"
        warnings.append(f"--nvlink-domain {options.nvlink_domain} is not used: {why}")
    if board is None or board.cls != "nvl72":
        return board, hosts
    if hosts < 2:
        return board, -(-ranks // NVL72_DOMAIN)
    domain = infer_nvlink_domain(log, raw, options.nvlink_domain, hosts, per_node, warnings)
    facts["nvlink_domain"] = domain.fact
    if domain.separate:
        return replace(board, gpus=HOST_GPUS["nvl72"]), hosts
    fewest = -(-ranks // NVL72_DOMAIN)
    counted = domain.domains
    if counted is not None and fewest <= counted <= hosts:
        facts["racks"] = Fact("racks", counted, domain.fact.evidence, note=domain.fact.note)  # the count
        return board, counted
    return board, fewest


def _board_nic_slots(board: Board | None) -> int | None:
    """NICs a board class has a fixed number of (the DGX-1 cube mesh: 4), None when any count fits."""
    if board is None or board.cls != "dgx1_cube":
        return None
    from commsim.topology.resolve import get_topology

    return len(get_topology("dgx1_v100").devices_of_kind("nic"))
