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
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from commsim.calibrate.evidence import Evidence, Fact
from commsim.calibrate.infer_devices import (
    DevicePlan,
    one_gpu_per_process,
    plan_devices,
    rack_gpus,
    rank_gpus_on_boards,
)
from commsim.calibrate.infer_domain import check_nvlink_domain, infer_nvlink_domain
from commsim.calibrate.infer_layout import InferenceError, Layout, given, infer_layout, infer_ranks
from commsim.calibrate.infer_machine import (
    HOST_GPUS,
    NVL72_DOMAIN,
    Board,
    board_for,
    board_named,
    build_box,
    host_gpus,
)
from commsim.calibrate.infer_machine import infer_gpu as _infer_gpu
from commsim.calibrate.infer_network import infer_network
from commsim.calibrate.infer_nics import infer_nics
from commsim.calibrate.infer_settings import (
    forced_choices,
    infer_host_transport,
    infer_p2p,
    infer_version,
    p2p_disabled,
)
from commsim.calibrate.parser import NcclTestsLog
from commsim.calibrate.parser_checks import number_spans
from commsim.calibrate.parser_command import ONE_PROCESS
from commsim.calibrate.settings import RunSettings
from commsim.errors import TopologyError
from commsim.hardware import GpuSpec
from commsim.topology.linkkinds import LINK_KINDS
from commsim.topology.model import Topology

__all__ = ["InferenceError", "RunInference", "RunOptions", "infer_run", "replace_p2p"]


@dataclass(frozen=True)
class RunOptions:
    """What the user says about the run (``commsim validate`` options); None: read it from the log.

    Attributes
    ----------
    gpus : int, optional
        Total ranks (``--gpus``).
    nodes, gpus_per_node, nics_per_node : int, optional
        Hosts, ranks per host, NICs per host that join the network.
    nic : str, optional
        Network link kind (``ib_ndr``, ``roce_400g``, ``efa_v2``, ``tcp_100g`` ...).
    p2p : bool, optional
        Whether GPU peer-to-peer works (``--p2p/--no-p2p``).
    gpu : str, optional
        GPU model, as printed or as a catalogue key (``--gpu``).
    algorithms, protocols : tuple of str, optional
        Restrict NCCL's choice (``--algo``, ``--proto``), as NCCL_ALGO / NCCL_PROTO do.
    nccl_version : str, optional
        NCCL version of the run (``--nccl-version``).
    nvlink_domain : str, optional
        ``"shared"`` or ``"separate"`` (``--nvlink-domain``): whether the hosts of a GB200/GB300 run
        share NVLink domains (NVL72 racks) or each is its own, reaching the others over its NICs.
    topology : Topology, optional
        The machine of one host (``--topology``); several hosts make a cluster of it.
    devices : tuple of int, optional
        The board's GPUs (``nvidia-smi`` indices) each host's ranks use, in local rank order
        (``--devices 0,2,4,6``), as ``CUDA_VISIBLE_DEVICES`` in the log would say.
    board : str, optional
        A board class of :data:`~commsim.calibrate.infer_machine.BOARD_CLASSES` (``--topology
        nvlink_mesh4``): the host is that board of the log's GPU.
    topology_option : str
        The option that gave ``topology`` (``--topology``, ``--calibrated`` or ``--nccl-topo``), for
        the messages that name it.
    """

    gpus: int | None = None
    nodes: int | None = None
    gpus_per_node: int | None = None
    nics_per_node: int | None = None
    nic: str | None = None
    p2p: bool | None = None
    gpu: str | None = None
    algorithms: tuple[str, ...] | None = None
    protocols: tuple[str, ...] | None = None
    nccl_version: str | None = None
    topology: Topology | None = None
    nvlink_domain: str | None = None
    devices: tuple[int, ...] | None = None
    board: str | None = None
    topology_option: str = "--topology"


_VERDICT_FACTS = frozenset(
    {"ranks", "gpu", "board", "gpus_per_node", "p2p", "network", "nics_per_node", "nodes", "nvlink_domain"}
    | {"gpus_used"}
)
"""Facts that, when only assumed, make a verdict on the hardware meaningless."""
_HOST_ONLY_FACTS = frozenset({"p2p", "board"})
"""Facts about the GPUs of one host together: with one rank per host no traffic crosses them (the
network part of a one-GPU host, its NIC, is a fact of its own)."""


@dataclass(frozen=True)
class RunInference:
    """The run and the machine a log was measured on, and how each fact is known.

    Attributes
    ----------
    topology : Topology
        The whole machine (a cluster when the run spans several boxes).
    ranks : tuple of str
        The GPU of every rank, in rank order.
    facts : dict of str to Fact
        Every inferred fact by name, in report order.
    gpus_per_thread : int
        GPUs one host thread drives (nccl-tests ``-g``).
    cuda_graph : bool
        Whether nccl-tests replayed its timed calls as CUDA graphs (``-G N``,
        header ``graph: N`` with N > 0): the time then holds no host issue.
    algorithms, protocols : tuple of str, optional
        NCCL's choice as restricted by forced settings or options.
    nccl_version : str or None
        The version the prediction follows (None: the newest modelled).
    warnings : list of str
        Disagreements between the log and the options, and settings the
        model does not follow.
    """

    topology: Topology
    ranks: tuple[str, ...]
    facts: dict[str, Fact]
    gpus_per_thread: int
    algorithms: tuple[str, ...] | None
    protocols: tuple[str, ...] | None
    nccl_version: str | None
    warnings: list[str] = field(default_factory=list)
    cuda_graph: bool = False

    @property
    def reasons(self) -> list[str]:
        """Every fact in one line each (what the report prints before the table)."""
        return [fact.describe() for fact in self.facts.values()]

    @property
    def assumed(self) -> list[Fact]:
        """The facts that matter for a verdict on the hardware and are only assumed.

        Peer-to-peer between a host's GPUs, and the board that joins them, do not matter when each
        host runs one rank (no two ranks share a host), however they are assumed.
        """
        per_node = self.facts.get("gpus_per_node")
        alone = per_node is not None and not per_node.assumed and int(per_node.value) == 1
        return [
            f
            for f in self.facts.values()
            if f.assumed and f.name in _VERDICT_FACTS and not (alone and f.name in _HOST_ONLY_FACTS)
        ]

    def to_json(self) -> dict[str, Any]:
        """The ``run`` object of ``validate --json``: every fact with its evidence."""
        return {name: fact.to_json() for name, fact in self.facts.items()}


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
    spec, box_source = _gpu_or_topology(log, raw, options, facts)
    _mixed_gpus(log, facts, warnings)
    board_gpus = _host_gpus(spec, box_source, options.board)
    layout = infer_layout(log, ranks, options.nodes, options.gpus_per_node, board_gpus, warnings)
    layout, isolated = one_gpu_per_process(log, layout, options.gpus_per_node)
    facts["nodes"], facts["gpus_per_node"] = layout.nodes, layout.per_node
    per_node = int(layout.per_node.value)
    facts["launch"] = _launch(log)
    cuda_graph = _cuda_graph(log, facts, warnings)
    plan = plan_devices(layout, settings, options.devices, warnings)
    board = _board(spec, box_source, layout, facts, plan, options.board)
    if ranks == 1:
        _one_rank_facts(spec, facts)
    p2p = infer_p2p(
        settings,
        options.p2p,
        raw,
        spec,
        _has_fabric(spec, board),
        options.topology.peer_to_peer if options.topology is not None else None,
    )
    if ranks > 1 or not p2p.assumed:  # one rank has no peer: nothing to assume
        facts["p2p"] = p2p
    host_transport = infer_host_transport(settings, p2p, per_node)
    if host_transport is not None:
        facts["host_transport"] = host_transport
    board, boxes = _domains(log, raw, options, board, layout, ranks, facts, warnings)
    nic, nics = None, 0
    if boxes > 1:
        arch = spec.arch if spec is not None else "unknown"
        network, per_host = infer_network(settings, options.nic, arch, _has_fabric(spec, board))
        box_gpus = board.gpus if board is not None else per_node
        host_count = HOST_GPUS["nvl72"] if board is not None and board.cls == "nvl72" else box_gpus
        facts["network"] = network
        nic = str(network.value)
        slots = _board_nic_slots(board)
        facts["nics_per_node"] = infer_nics(settings, options.nics_per_node, per_host, host_count, nic, slots)
        nics = int(facts["nics_per_node"].value)
        if board is not None and board.cls == "nvl72":
            nics *= board.gpus // HOST_GPUS["nvl72"]  # the NICs of every tray of the box
    facts["nccl_version"] = infer_version(settings, options.nccl_version, log.nccl_version)
    choices, algorithms, protocols, unmodelled = forced_choices(
        settings, options.algorithms, options.protocols
    )
    facts.update(choices)
    warnings += unmodelled
    box = _box(spec, board, box_source, bool(p2p.value), nics, nic)
    if _p2p_transport_off(p2p, settings):
        box = _without_fabric(box, warnings)
    topology, gpu_names = _machine(box, boxes, nic, nics)
    if board is not None and board.cls == "nvl72" and board.gpus > HOST_GPUS["nvl72"]:
        rank_gpus = rack_gpus(gpu_names, ranks, per_node, facts)
    else:
        rank_gpus = rank_gpus_on_boards(topology, gpu_names, plan, layout, facts)
        chosen = facts.get("gpus_used")
        if isolated is not None and plan.fact is None and (chosen is None or not chosen.assumed):
            facts["gpus_used"] = isolated  # which GPUs of a part-used board ran, if it matters, first
    _refuse_shared_gpus(log, rank_gpus)
    version = facts["nccl_version"].value
    return RunInference(
        topology,
        rank_gpus,
        facts,
        _gpus_per_thread(log),
        algorithms,
        protocols,
        None if version is None else str(version),
        warnings,
        cuda_graph,
    )


def _gpu_or_topology(
    log: NcclTestsLog, raw: str, options: RunOptions, facts: dict[str, Fact]
) -> tuple[GpuSpec | None, Topology | None]:
    """The GPU's catalogue entry (None when a given topology stands alone) and a given host topology."""
    if options.topology is not None:
        facts["board"] = given("board", options.topology.name, "--topology", options.topology.description)
        spec = _optional_gpu(log, options)
        if spec is not None:
            facts["gpu"] = Fact("gpu", spec.name, (Evidence(spec.name, "device list or --gpu"),))
        return spec, options.topology
    spec, facts["gpu"] = _infer_gpu(log, options.gpu)
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


def _host_gpus(spec: GpuSpec | None, box_source: Topology | None, board: str | None) -> int | None:
    """GPUs per host of the given topology (per box of a cluster) or board class, else of the GPU's
    usual board."""
    if box_source is not None:
        return max(len(gpus) for gpus in box_source.boxes.values())
    if board in HOST_GPUS:
        return HOST_GPUS[board]
    return host_gpus(spec) if spec is not None else None


def _optional_gpu(log: NcclTestsLog, options: RunOptions) -> GpuSpec | None:
    try:
        spec, _ = _infer_gpu(log, options.gpu)
    except InferenceError:
        return None
    return spec


def _gpus_per_thread(log: NcclTestsLog) -> int:
    """nccl-tests' ``-g``: the header's ``nGpus`` (the parser's reading of it otherwise)."""
    value = log.header.get("nGpus")
    return value if isinstance(value, int) and value > 0 else max(1, log.gpus_per_thread)


def _launch(log: NcclTestsLog) -> Fact:
    threads = _gpus_per_thread(log)
    mode = log.launch if log.launch != "unknown" else ("threads" if threads > 1 else "processes")
    header = (Evidence(threads, "'# nThread .. nGpus ..' header"),) if "nGpus" in log.header else ()
    evidence = header or tuple(e for e in log.rank_evidence if e.source == ONE_PROCESS)[:1]
    return Fact(
        "launch",
        f"{mode}, {threads} GPU(s) per thread",
        evidence,
        assumed=not evidence,
        note="" if evidence else "one GPU per process assumed",
    )


def _mixed_gpus(log: NcclTestsLog, facts: dict[str, Fact], warnings: list[str]) -> None:
    """Warn when the device list names more than one GPU model: every rank is priced as one."""
    models: dict[str, list[int]] = {}
    for device in log.devices:
        models.setdefault(device.model, []).append(device.rank)
    if len(models) < 2 or "gpu" not in facts:
        return
    listed = "; ".join(f"{model!r} on rank(s) {number_spans(ranks)}" for model, ranks in models.items())
    warnings.append(
        f"the device list names {len(models)} GPU models ({listed}): the model prices every rank as "
        f"{facts['gpu'].value}, and a mixed machine is only as fast as its slowest GPU and link; "
        "give --gpu for the slowest one to bound it"
    )


def _cuda_graph(log: NcclTestsLog, facts: dict[str, Fact], warnings: list[str]) -> bool:
    """Whether the timed calls ran as CUDA graphs (nccl-tests ``-G N``), with a fact saying so.

    nccl-tests captures its ``iters`` timed calls in one CUDA graph per GPU and
    times N launches of it, so the host's per-call issue (``launch_s``) is
    not in the time; ``agg iters: A`` > 1 groups A calls per
    ``ncclGroupStart/End``, which NCCL issues with fewer launches than the
    model prices: a warning says so (the model keeps one issue per call).
    """
    graph, agg = log.header.get("graph"), log.header.get("agg iters")
    if isinstance(agg, int) and agg > 1:
        warnings.append(
            f"the log's calls were issued {agg} per group (nccl-tests 'agg iters: {agg}'); NCCL issues "
            "a group with fewer launches, which the model does not price: sizes where the host's issue "
            "time sets the call's time are predicted as separate calls ('commsim calibrate' on this "
            "machine's logs fits launch_s)"
        )
    if not isinstance(graph, int) or graph < 1:
        return False
    facts["cuda_graph"] = Fact(
        "cuda_graph",
        f"yes, {graph} launch(es) of each size's calls: the time holds no host issue per call",
        (Evidence(graph, "'graph: N' in the run header (nccl-tests -G)"),),
    )
    return True


def _board(
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


def _one_rank_facts(spec: GpuSpec | None, facts: dict[str, Fact]) -> None:
    """One rank copies locally: the board does not matter, the GPU's memory bandwidth does."""
    if "board" in facts and facts["board"].assumed:
        board = facts["board"]
        facts["board"] = Fact(
            "board",
            board.value,
            board.evidence,
            False,
            board.option,
            "one rank: no GPU-to-GPU or network link is used",
        )
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


def _has_fabric(spec: GpuSpec | None, board: Board | None) -> bool:
    return board is not None and board.cls not in ("pcie",) and spec is not None and spec.fabric is not None


def _box(
    spec: GpuSpec | None,
    board: Board | None,
    given_box: Topology | None,
    p2p: bool,
    nics: int,
    nic: str | None,
) -> Topology:
    if given_box is not None:
        return replace_p2p(given_box, p2p) if given_box.peer_to_peer != p2p else given_box
    assert board is not None and spec is not None, "a board is only chosen for a known GPU"
    return build_box(spec, board, p2p, nics, nic)


def _machine(box: Topology, boxes: int, nic: str | None, nics: int) -> tuple[Topology, list[list[str]]]:
    """The whole machine and, per box, its GPU names in box order."""
    if len(box.boxes) > 1:  # a given topology that is a whole cluster already
        return box, [list(gpus) for gpus in box.boxes.values()]
    if boxes <= 1:
        return box, [list(box.gpus)]
    from commsim.topology.cluster import cluster

    assert nic is not None
    machine = cluster(box, nodes=boxes, nic=nic, nics_per_node=nics)
    per_box = len(box.gpus)
    gpus = list(machine.gpus)
    return machine, [gpus[k * per_box : (k + 1) * per_box] for k in range(boxes)]


def _refuse_shared_gpus(log: NcclTestsLog, rank_gpus: tuple[str, ...]) -> None:
    """Several ranks on one GPU (the device list prints the same host and device for them) are not a
    machine the model describes: refuse, naming them, instead of planning a send from a GPU to itself."""
    owners: dict[str, list[int]] = {}
    for rank, gpu in enumerate(rank_gpus):
        owners.setdefault(gpu, []).append(rank)
    shared = [ranks for ranks in owners.values() if len(ranks) > 1]
    if not shared:
        return
    first = shared[0]
    device = next((d for d in log.devices if d.rank == first[0]), None)
    where = f" (device {device.device} of host {device.host})" if device is not None else ""
    raise InferenceError(
        f"ranks {number_spans(first)} run on one GPU{where}: several ranks sharing a GPU (MPS, "
        "oversubscription) are not modelled; the model needs one GPU per rank (check the device "
        "list, or give --gpus-per-node if it is abridged)",
        log.source,
    )


def _p2p_transport_off(p2p: Fact, settings: RunSettings) -> bool:
    """Whether NCCL's whole P2P transport is off, over NVLink and xGMI too: NCCL_P2P_DISABLE=1, or
    NCCL's own channel lines joining GPUs of a host through host memory (SHM). Peer-to-peer off for
    any other reason (a GeForce card's PCIe, an ``nvidia-smi topo -p2p`` matrix) leaves a GPU fabric
    (NVLink bridges, NVSwitch, xGMI) in use."""
    if p2p.value or p2p.assumed:
        return False
    return p2p_disabled(settings) is not None or any(
        e.source == "NCCL INFO channel line" for e in p2p.evidence
    )


def _without_fabric(box: Topology, warnings: list[str]) -> Topology:
    """``box`` without its GPU-to-GPU fabric (NCCL's P2P transport is off, so NCCL stages every byte
    between its GPUs through host memory), when its GPUs reach host memory; else ``box`` as it is,
    with a warning (an NVL72 rack is modelled without its Grace CPUs)."""
    from commsim.nccl.machine import GPU_FABRICS

    switches = set(box.devices_of_kind("nvswitch"))
    links = [
        p
        for p in box.physical_links
        if LINK_KINDS[p.kind].family not in GPU_FABRICS and not {p.a, p.b} & switches
    ]
    if len(links) == len(box.physical_links):
        return replace_p2p(box, False)  # no fabric: a PCIe box with peer-to-peer off
    note = " NCCL's P2P transport off: its GPUs join through host memory, not their fabric."
    devices = [d for d in box.devices if d.name not in switches]
    try:
        bare = Topology(box.name, devices, links, box.kind_overrides, box.description + note, False, box.nccl)
        cpus = bare.devices_of_kind("cpu")
        if cpus and all(any(bare.route(g, c) for c in cpus) for g in bare.gpus):
            return bare
    except TopologyError:
        pass
    warnings.append(
        "NCCL's P2P transport is off, so NCCL stages data between the GPUs of a host through host "
        f"memory, but the model of this machine ({box.name}) has no path from its GPUs to host memory: "
        "its GPU fabric is kept, so its predictions are faster than the run can be"
    )
    return box


def replace_p2p(topology: Topology, peer_to_peer: bool) -> Topology:
    """The same machine with peer-to-peer on or off."""
    if topology.peer_to_peer == peer_to_peer:
        return topology
    note = "" if peer_to_peer else " GPU peer-to-peer unavailable: NCCL stages data through host memory."
    return Topology(
        topology.name,
        topology.devices,
        topology.physical_links,
        topology.kind_overrides,
        topology.description + note,
        peer_to_peer,
        topology.nccl,
    )
