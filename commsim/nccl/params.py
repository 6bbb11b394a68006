"""The NCCL model's parameters: few, physical, fitted by calibration.

Defaults and where they come from:

- ``efficiency``: fraction of a link family's (or, where given, a link
  kind's) nominal bandwidth that NCCL's Simple protocol reaches. Per NVLink
  generation, NCCL's own usable bandwidth per link (``src/graph/topo.h``:
  ``SM60_NVLINK_BW`` 18.0, ``SM70`` 20.0, ``SM80`` 20.0, ``SM90`` 20.6 (20.0
  before 2.20), ``SM100`` 40.1 GB/s) over the datasheet's 20 (NVLink 1), 25
  (NVLink 2-4) and 50 GB/s (NVLink 5): 0.90, 0.80, 0.824 and 0.802; NVLink 3
  0.783, because NCCL caps an A100 ring at 235 GB/s of the 300 GB/s ports
  (tuning.cc, ``compCap80``). Other NVLink (bridges) 0.78. PCIe 0.80:
  a PCIe 3.0 x16 slot moves about 12-13 GB/s of its 15.75 GB/s after packet
  overheads. InfiniBand 0.90 and Ethernet 0.70: RDMA reaches ~99 % of line
  rate in ``ib_send_bw`` but NCCL's proxy and chunking lose ~10 %; Ethernet
  transports (TCP sockets, AWS EFA) lose more. Per transport where it
  differs from its family: RoCE 0.90 (the same verbs and NCCL ``NET/IB``
  transport as InfiniBand, so the same losses), HPE Slingshot 0.90 (an
  RDMA NIC, Cassini, driven through libfabric's cxi provider: no kernel
  stack, so the losses are NCCL's proxy and chunking as over InfiniBand; two
  public runs outside the project agree within 20 %: 2 x 4 GH200 at CSCS,
  132 GB/s bus bandwidth at 128 MiB and still rising, against 157 GB/s
  modelled; 4 x 8 MI250X GCDs, about 94 GB/s against 90), GPUDirect-TCPXO 0.90 (fit:
  the one development log over TCPXO, 2 x a3-megagpu-8g, reaches 180 GB/s
  algorithm bandwidth of 8 x 200 Gbit/s = 200 GB/s at 8 GiB with NCCL's
  2-node tree; one log, so about +-0.05). Inter-socket links 0.80. AMD
  xGMI between GPUs 0.75: RCCL's own usable bandwidth per link
  (``src/graph/topo.h``: ``GFX94X_XGMI_WIDTH`` 48.0 GB/s for MI300X-class
  gfx942, ``GFX95X_XGMI_WIDTH`` 48.0 for gfx950) over the 64 GB/s per
  direction of the ``xgmi_gpu`` link those boards have.
- ``shm_efficiency``: without GPU peer-to-peer, NCCL copies through pinned
  host memory: the GPU writes over PCIe into DRAM, the peer reads it back;
  the effective PCIe rate is about half of nominal (the GPU copy engines and
  the root complex handle both the data and the flags).
- ``nvls_efficiency``: NVLink SHARP (in-switch reduction) reaches about
  57 % of an H100's 450 GB/s NVLink ports as algorithm bandwidth
  (~480 GB/s bus bandwidth for 8 GPUs). This is the Hopper figure: other
  generations scale it by NCCL's own ``nvlsEfficiency`` ratio
  (``commsim.nccl.costs.NVLS_GENERATION``; Blackwell 0.74 / 0.85).
- ``ring_channel_net_Bps``: the most one ring channel's network connection
  carries per direction, per NIC kind, where runs measure one below the
  NICs' efficiency (:data:`DEFAULT_RING_CHANNEL_NET_Bps`: 400 Gb/s
  InfiniBand, 19.6 GB/s; :mod:`commsim.nccl.ring_net`).
- ``launch_s``: the host's time to issue one collective on one GPU (NCCL's
  enqueue and the kernel launch). nccl-tests enqueues its timed iterations
  back to back, so a call takes the larger of the host's issue time
  (``launch_s`` x the GPUs one thread drives, nccl-tests ``-g``) and the
  GPUs' time. 4.9 us: fitted on the 13 development logs run with ``-g 2``
  to ``-g 8`` in one process (7 machines: V100 PCIe and SXM2, RTX 2080 Ti,
  RTX 4090, A100 SXM4, two H100 SXM5 boards), whose times up to 1 KiB are
  flat at ``g x launch_s``: per-log values 4.0-6.1 us, per-machine medians
  4.0, 4.2, 4.4, 4.9, 5.2, 5.7 and 6.1 us (median 4.9, standard deviation
  0.7 us; ``commsim.calibrate.defaults.host_issue_per_gpu_s`` derives it).
  A host with a faster CPU or driver issues faster; calibration fits it per
  host.
- ``kernel_s``: the GPU's fixed cost of a one-rank call (starting and
  ending its copy kernel), which NCCL's tables give no latency. 3.6 us: the
  intercept of time against size of the one-GPU copies of 16 MiB to 1 GiB
  on one H100 SXM (NCCL 2.28.9; four logs: 3.51-3.71 us, standard
  deviation 0.1 us). One machine only: assumed to carry over to other
  GPUs. A call of more ranks pays none beyond NCCL's latency: NVIDIA sets
  ``baseLat`` to whole calls' measured times, kernel start and end
  included. Adding it there counted them twice: on the 32 multi-GPU
  development logs the median error below 64 KiB is 10.5 % without it
  and 14.7 % with it (leave-one-machine-out 15.4 % and 16.8 %).
- ``latency_scale``: multiplies NCCL's own per-call and per-step latencies
  (``baseLat``, ``hwLat``); 1.0 by default.
- ``one_rank_s`` and ``local_copy_efficiency``: a one-rank call copies the
  send buffer into the receive buffer on the GPU; its time is the larger of
  the host's cost of the call (``one_rank_s``) and the GPU's (``kernel_s``
  plus the copy). Measured on one H100 SXM (NCCL 2.28.9, nccl-tests 2.19.6,
  tests/data/h100-1gpu): 6.25 us, the median out-of-place time of the 83
  rows of 8 B to 512 KiB in the six one-GPU logs run with default settings
  (range 4.6-11.2 us, standard deviation 1.2 us; per-log medians 5.3-7.7 us,
  so runs differ by about 1 us), and 1505 GB/s at 1 GiB, 0.449 of the H100
  SXM's 3.35 TB/s HBM3 (each byte read once and written once). One machine
  only: the efficiency is assumed to carry over to other GPUs' memory
  bandwidth.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat

__all__ = [
    "DEFAULT_EFFICIENCY",
    "DEFAULT_RING_CHANNEL_NET_Bps",
    "DEFAULT_TRANSPORT_LATENCY_s",
    "NcclParams",
    "transport_key",
]

DEFAULT_EFFICIENCY: dict[str, float] = {
    "nvlink1": 18.0 / 20.0,
    "nvlink2": 20.0 / 25.0,
    "nvlink3": 235.0 / 300.0,
    "nvlink4": 20.6 / 25.0,
    "nvlink5": 40.1 / 50.0,
    "nvlink": 0.78,
    "pcie": 0.80,
    "infiniband": 0.90,
    "roce": 0.90,
    "slingshot": 0.90,
    "tcpxo": 0.90,
    "ethernet": 0.70,
    "inter_socket": 0.80,
    "host_memory": 1.0,
    "xgmi": 48.0 / 64.0,
}
"""Fraction of nominal bandwidth NCCL reaches, per link family."""

DEFAULT_TRANSPORT_LATENCY_s: dict[str, float] = {"efa": 37.8e-6, "efa_rdma": 1.6e-6, "tcpxo": 29.1e-6}
"""Overhead of one network step beyond its links' latency, per NCCL network transport (seconds).

NCCL's ``hwLat`` table has one NET row for every transport; AWS EFA (the
libfabric provider's SRD protocol through aws-ofi-nccl) and GCP's
GPUDirect-TCPXO can cost far more per message than InfiniBand verbs. Each
figure is derived from logs' sizes up to 1 KiB, where the time is all latency
(``commsim.calibrate.defaults.transport_overhead_s``): per size the overhead
per network step that makes the model's time the measured one, per log the
median, per machine the median of its logs, and the median over machines.

EFA's cost depends on aws-ofi-nccl's protocol (``efa`` and ``efa_rdma``;
the run's protocol is a fact of the log, :mod:`commsim.calibrate.infer_ofi`):

- SENDRECV (``efa``; libfabric send/recv, the plugin's only protocol before
  v1.7.0-aws and still its default on p3dn, p4d and p4de), from the
  development logs, two machines: 2 x p3dn (EFA v1, NCCL 2.4.8; ring/LL, 2
  network steps) 32.2 us, 2 x p4d (EFA v2, NCCL 2.7.8, NCCL_ALGO=ring)
  43.3 us: 37.8 us, +-5.5 us between the two. Public p4d/p4de runs of NCCL
  2.8-2.20 measure 46-56 us (tests/data/outside/52, 72, 73, 101), so the
  figure is low for them by 10-20 us per step; they are not used.
- RDMA (``efa_rdma``; RDMA writes, added in v1.7.0-aws "with support for
  AWS's new P5 instance", RELEASENOTES.md, and the default on p5, p5e, p5en
  and p6 in src/platform-aws.cpp), from public logs, no development log
  having run it: four machines, 2 x p5.48xlarge each in
  tests/data/outside/51 (6.1 us), 74 (2.9 us) and 114 (0.2 us; aws-ofi-nccl
  1.9.2, NCCL 2.22.3, ``Using transport protocol RDMA``) and 2 x p6-b200 in
  97 (-5.1 us: NCCL's own table already prices that machine's steps
  higher): 1.6 us, spread -5.1 to +6.1 us; leaving any one out gives 0.2 or
  2.9 us. So with RDMA NCCL's own NET latency nearly suffices; 51, 74 and 97
  print neither protocol nor plugin release and are RDMA by their instance's
  default (assumed, as the report says).

GPUDirect-TCPXO, one machine: 2 x a3-megagpu-8g (NCCL's 2-node tree/LL, 2
network steps) 29.1 us; one log, so of the order of the spread of its small
sizes (+-10 %).

NCCL's TCP socket transport has none: its cost per message is the network's
more than the transport's. Two runs of 2 nodes x 1 GPU over sockets measure
8 B in 12 us (2 OpenShift nodes of a lab, 1 x L40S each, an SR-IOV interface,
NCCL_IB_DISABLE=1: github.com/schmaustech/nvidia-tools-image README at 018e4e1,
"NCCL Test Example") and in 173 us (AWS g5.2xlarge in Docker containers with awsvpc
networking, the development log): NCCL's own table, launch and two physical
hops give about 20 us, so the first needs nothing more and the second 70-80 us
per step of virtualised network. A figure fitted on either would misprice the
other by 5-10x; ``validate`` says so for socket runs. Other transports
(InfiniBand, RoCE, Slingshot, TCPX) have none either: no development log
measures them apart from InfiniBand, where NCCL's own table fits.
"""


DEFAULT_RING_CHANNEL_NET_Bps: dict[str, float] = {"ib_ndr": 19.6e9}
"""The most one NCCL ring channel's network connection carries per direction, per NIC kind (B/s).

Only where runs measure it (:mod:`commsim.nccl.ring_net` says what it is and
where it applies): 400 Gb/s InfiniBand (``ib_ndr``) with NVIDIA GPUs, 19.6
GB/s, derived by
:func:`commsim.calibrate.defaults.ring_channel_rate_Bps` from the public logs
of :data:`commsim.calibrate.defaults.RING_CHANNEL_LOGS` (no development log
states its NICs): per log the median over its sizes from 256 MiB that NCCL
runs as a ring (Simple or LL128) of the measured bus bandwidth over NCCL's
channel count (16 for 8 GPUs and 8 NICs a node); per machine the median;
the median over machines. Two machines: 2 x 8 B200 with 8 NDR NICs each
(tests/data/outside 232, all_gather, 19.1 GB/s) and 4 x 8 H100 with 8 (266,
all_gather, 20.1 GB/s); 2 x 8 H100 (56), whose ring runs at a quarter of
the model's rate, is left out as degraded. Out of sample, the development
set's 10 x 8 H100 runs (NICs unstated, assumed 8 NDR) measure 19.3, 20.0
and 19.6 GB/s per channel (all_gather, all_reduce's ring sizes,
reduce_scatter), and 2 x 8 H200 on GKE (outside 125, 126) 20.2. Other NIC
kinds have no figure: 800 Gb/s XDR (outside 35, 2 x 4 GB300) measures 21.8
per channel, above this one, and no ring run on 400 Gb/s RoCE with two
channels per NIC is in the data.
"""


def transport_key(transport: str, protocol: str | None, given: dict[str, float] | None = None) -> str:
    """The per-step overhead's key of a transport run with ``protocol``: ``"efa_rdma"`` where such a
    figure is given (``given``) or a default, else the transport's own (``"efa"``)."""
    key = f"{transport}_{protocol}" if protocol else transport
    return key if key in (given or {}) or key in DEFAULT_TRANSPORT_LATENCY_s else transport


class NcclParams(BaseModel):
    """Physical parameters of the NCCL model (see the module docstring for sources)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    efficiency: dict[str, float] = Field(default_factory=dict)
    shm_efficiency: float = Field(0.49, gt=0, le=1)
    nvls_efficiency: float = Field(0.57, gt=0, le=1)
    launch_s: float = Field(4.9e-6, ge=0)
    kernel_s: float = Field(3.6e-6, ge=0)
    latency_scale: float = Field(1.0, gt=0)
    one_rank_s: float = Field(6.25e-6, ge=0)
    local_copy_efficiency: float = Field(0.449, gt=0, le=1)
    transport_latency_s: dict[str, float] = Field(default_factory=dict)
    ring_channel_net_Bps: dict[str, PositiveFloat] = Field(default_factory=dict)

    @classmethod
    def of(cls, topology: Any) -> NcclParams:
        """The calibrated parameters a topology carries (its ``nccl:`` mapping), else the defaults."""
        nccl = getattr(topology, "nccl", None)
        return cls.model_validate(dict(nccl)) if nccl else cls()

    def family_efficiency(self, name: str) -> float:
        """Efficiency of one link family or kind: given here, else the default (1.0 without one)."""
        return self.efficiency.get(name, DEFAULT_EFFICIENCY.get(name, 1.0))

    def network_efficiency(self, kind: str | None, transport: str | None, family: str | None) -> float:
        """Efficiency of the used NICs: their kind, else their transport, else their family.

        A given figure wins over a default at every level, the most specific first.
        """
        names = [n for n in (kind, transport, family) if n]
        for table in (self.efficiency, DEFAULT_EFFICIENCY):
            for name in names:
                if name in table:
                    return table[name]
        return 1.0

    def transport_latency(self, transport: str, protocol: str | None = None) -> float:
        """Per-step overhead of a network transport (s): given here, else its default, else 0.

        ``protocol`` (aws-ofi-nccl's ``"rdma"``) picks the transport's figure for that protocol,
        ``"efa_rdma"``, where one is given or a default; else the transport's own figure stands.
        """
        key = transport_key(transport, protocol, self.transport_latency_s)
        return self.transport_latency_s.get(key, DEFAULT_TRANSPORT_LATENCY_s.get(key, 0.0))

    def ring_channel_net(self, kind: str | None) -> float | None:
        """The most one ring channel's network connection carries on NICs of ``kind`` (B/s): given here,
        else its default (:data:`DEFAULT_RING_CHANNEL_NET_Bps`), else None (no limit known)."""
        if kind is None:
            return None
        return self.ring_channel_net_Bps.get(kind, DEFAULT_RING_CHANNEL_NET_Bps.get(kind))

    def kind_efficiency(self, kind: str, family: str) -> float:
        """Efficiency of a link of ``kind`` (in ``family``).

        The most specific figure wins, a given one before a default: the kind
        given here, the family given here, the kind's default, the family's
        default (so a calibrated ``nvlink`` figure applies to every NVLink
        generation the calibration did not fit one by one).
        """
        for table in (self.efficiency, DEFAULT_EFFICIENCY):
            for name in (kind, family):
                if name in table:
                    return table[name]
        return 1.0

    def link_factors(self, kinds: Iterable[tuple[str, str]]) -> dict[str, float]:
        """``{kind: efficiency}`` for (kind, family) pairs, for :meth:`Topology.scaled`."""
        return {kind: self.kind_efficiency(kind, family) for kind, family in kinds}
