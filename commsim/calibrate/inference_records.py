"""The records of inferring a log's run: what the user says about it, and what was inferred.

:class:`RunOptions` holds the ``commsim validate`` options on the run and the machine;
:class:`RunInference` the run and the machine
:func:`~commsim.calibrate.inference.infer_run` works out, each fact with its evidence, and
which of them, when only assumed, make a verdict on the hardware meaningless.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from commsim.calibrate.evidence import Fact
from commsim.topology.model import Topology

if TYPE_CHECKING:
    from commsim.nccl.model import NcclModel
    from commsim.nccl.params import NcclParams

__all__ = ["RunInference", "RunOptions"]


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
    net_protocol : str, optional
        ``"sendrecv"`` or ``"rdma"`` (``--net-protocol``): the protocol aws-ofi-nccl ran AWS EFA with
        (:mod:`~commsim.calibrate.infer_ofi`).
    collnet : bool, optional
        Whether the run used CollNet, the network switch's reduction (InfiniBand SHARP: ``--collnet``).
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
    net_protocol: str | None = None
    collnet: bool | None = None
    devices: tuple[int, ...] | None = None
    board: str | None = None
    topology_option: str = "--topology"


_VERDICT_FACTS = frozenset(
    {"ranks", "gpu", "board", "gpus_per_node", "p2p", "network", "nics_per_node", "nodes", "nvlink_domain"}
    | {"gpus_used"}
)
"""Facts that, when only assumed, make a verdict on the hardware meaningless."""
_LATENCY_FACTS = frozenset({"net_protocol"})
"""Facts that set the model's latency only (aws-ofi-nccl's protocol: EFA's overhead per network step):
when only assumed, they make a verdict drawn from latency-bound sizes alone meaningless, not one drawn
from bandwidth-bound sizes."""
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
    def net_protocol(self) -> str | None:
        """aws-ofi-nccl's protocol over EFA (``"sendrecv"`` or ``"rdma"``), None for other networks."""
        fact = self.facts.get("net_protocol")
        return None if fact is None else str(fact.value)

    @property
    def collnet(self) -> bool:
        """Whether the run used CollNet (SHARP), as its log or ``--collnet`` says (NCCL's default: no)."""
        fact = self.facts.get("collnet")
        return fact is not None and bool(fact.value)

    @property
    def channels(self) -> int | None:
        """NCCL's channel count as the log prints it (``N coll channels``); None when it does not."""
        fact = self.facts.get("channels")
        return None if fact is None else int(fact.value)

    @property
    def channel_limits(self) -> tuple[int | None, int | None]:
        """``NCCL_MIN_NCHANNELS`` and ``NCCL_MAX_NCHANNELS`` as the log sets them (None: unset)."""
        low, high = self.facts.get("min_channels"), self.facts.get("max_channels")
        return (None if low is None else int(low.value), None if high is None else int(high.value))

    def nccl_model(self, params: NcclParams) -> NcclModel:
        """The NCCL model of this run's machine with ``params``: its release, EFA protocol, CollNet and
        channels as inferred (what validate and calibrate predict with)."""
        from commsim.nccl.model import NcclModel

        return NcclModel(
            self.topology,
            params,
            self.nccl_version,
            net_protocol=self.net_protocol,
            collnet=self.collnet,
            channels=self.channels,
            channel_limits=self.channel_limits,
        )

    @property
    def per_node(self) -> int | None:
        """GPUs per node, when known or assumed (its fact); None without one."""
        fact = self.facts.get("gpus_per_node")
        return None if fact is None else int(fact.value)

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

    @property
    def assumed_in_latency(self) -> list[Fact]:
        """The facts that matter besides :attr:`assumed` for a verdict drawn from latency-bound sizes
        alone, and are only assumed."""
        return [f for f in self.facts.values() if f.assumed and f.name in _LATENCY_FACTS]

    def to_json(self) -> dict[str, Any]:
        """The ``run`` object of ``validate --json``: every fact with its evidence."""
        return {name: fact.to_json() for name, fact in self.facts.items()}
