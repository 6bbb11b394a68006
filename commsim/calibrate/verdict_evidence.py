"""Signs in an nccl-tests log that explain a slow run: NIC speeds, channels, transports, NIC distance.

The verdict (:mod:`commsim.calibrate.verdict`) names causes only from what a
log shows. The parser keeps the settings and the ``nvidia-smi topo -m``
matrix; this module reads the few other NCCL ``INFO`` lines the verdict
needs, each with its line number and text:

* NIC speeds: ``NET/IB : Made virtual device [0] name=mlx5_0 speed=400000
  ndevs=1`` (Mb/s, NCCL 2.21+ ``src/transport/net_ib.cc``), the topology
  XML dump ``<net name="mlx5_0" dev="0" speed="400000" ...>`` (Mb/s) and the
  GRAPH dump ``+ NET[50.0] - NET/0 (...)`` (GB/s, ``src/graph/topo.cc``).
  ``Could not get speed from /sys/class/net/eth0/speed. Defaulting to 10
  Gbps`` means NCCL guessed: the speeds are then no evidence.
* channels: ``32 coll channels, 32 collnet channels, ...`` (``src/init.cc``);
* transports: ``Channel 00/0 : 0[0] -> 1[1] via P2P/IPC`` (also ``via
  SHM/direct/direct``, ``[send] via NET/IB/0/GDRDMA``; ``Ring 00 : ...`` before
  NCCL 2.7) (``src/transport.cc``);
* GPUDirect RDMA refused for distance: ``GPU Direct RDMA Disabled for GPU 0 /
  HCA 0 (distance 7 > 5)`` (``src/graph/paths.cc``): the NIC is too far from
  the GPU, typically on the other socket.
* GPUs whose every NIC is ``SYS`` in the ``topo -m`` matrix: the GPU and the
  NICs sit on different sockets (nccl-tests issue #293).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from commsim.calibrate.evidence import Evidence
from commsim.errors import ParseError
from commsim.topology.model import Topology

__all__ = [
    "Transport",
    "coll_channels",
    "far_nic_gpus",
    "gdr_off",
    "gdr_refused",
    "nic_speeds",
    "speed_guessed",
    "tool_lines",
    "transports",
]

_VDEV = re.compile(r"NET/\w+\s*:\s*Made virtual device \[\d+\] name=(\S+) speed=(\d+)")
_XML_NET = re.compile(r"<net\b[^>]*\bname=\"([^\"]+)\"[^>]*\bspeed=\"(\d+)\"")
_GRAPH_NET = re.compile(r"\+?\s*NET\[([\d.]+)\]\s*-\s*(NET/\S+)")
_GUESSED = re.compile(r"Could not get speed from \S+\.\s*Defaulting to ([\d.]+) Gbps")
_CHANNELS = re.compile(r"NCCL INFO (\d+) coll channels\b")
_TRANSPORT = re.compile(
    r"NCCL INFO (?:Channel|Ring) \d+(?:/\d+)? : (\d+)\[[0-9a-fA-F]+\] -> (\d+)\[[0-9a-fA-F]+\]"
    r"(?: \[(?:send|receive)\])? via (P2P|SHM|NET|CollNet|NVLS)\S*"
)
_GDR_OFF = re.compile(r"GPU Direct RDMA Disabled for GPU \S+ / HCA \S+ \(distance (\d+) >=? (\d+)\)")
_NO_GDR = re.compile(
    r"NCCL INFO (?:Connected all rings, use ring PXN \d+ GDR 0\b"
    r"|NET/OFI .*(?:disabling GDR|GDR not supported))"
)
_GDR_ON = re.compile(r"NCCL INFO Connected all rings, use ring PXN \d+ GDR 1\b")
_IB_CHANNEL = re.compile(
    r"NCCL INFO Channel \d+(?:/\d+)? : \d+\[[0-9a-fA-F]+\] -> \d+\[[0-9a-fA-F]+\]"
    r"(?: \[(?:send|receive)\])? via NET/IB/\d+(?:\(\d+\))?(/GDRDMA(?:\(PCI\))?)?(?:/Shared)?\s*$"
)


def tool_lines(text: str, last_line: int | None = None) -> list[tuple[int, str]]:
    """(1-based number, line) of the tool's own lines up to ``last_line``: our ``## `` commentary dropped."""
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if last_line is not None and number > last_line:
            break
        if not line.lstrip().startswith("## "):
            out.append((number, line))
    return out


def nic_speeds(lines: Sequence[tuple[int, str]]) -> dict[str, Evidence]:
    """NIC name -> Evidence of its speed (bytes/s), the first line that gives it."""
    found: dict[str, Evidence] = {}
    for number, text in lines:
        for pattern, scale in ((_VDEV, 1e6 / 8), (_XML_NET, 1e6 / 8)):
            match = pattern.search(text)
            if match:
                found.setdefault(
                    match.group(1), Evidence.at(int(match.group(2)) * scale, "NCCL NIC speed", number, text)
                )
        match = _GRAPH_NET.search(text)
        if match:
            found.setdefault(
                match.group(2), Evidence.at(float(match.group(1)) * 1e9, "NCCL topology dump", number, text)
            )
    return found


def speed_guessed(lines: Sequence[tuple[int, str]]) -> Evidence | None:
    """The line where NCCL says it could not read a NIC's speed and guessed one, if any."""
    for number, text in lines:
        match = _GUESSED.search(text)
        if match:
            return Evidence.at(float(match.group(1)), "NCCL INFO line", number, text)
    return None


def coll_channels(lines: Sequence[tuple[int, str]]) -> Evidence | None:
    """The fewest ``N coll channels`` any rank printed, with its line."""
    seen = [
        Evidence.at(int(m.group(1)), "NCCL INFO line", number, text)
        for number, text in lines
        if (m := _CHANNELS.search(text))
    ]
    return min(seen, key=lambda e: int(e.value)) if seen else None


@dataclass(frozen=True)
class Transport:
    """One ``Channel .. : a[..] -> b[..] via X`` line: ranks and NCCL transport."""

    src_rank: int
    dst_rank: int
    transport: str
    line: int
    text: str


def transports(lines: Sequence[tuple[int, str]]) -> list[Transport]:
    """Every channel connection line, in file order."""
    out = []
    for number, text in lines:
        match = _TRANSPORT.search(text)
        if match:
            src, dst, kind = match.groups()
            out.append(Transport(int(src), int(dst), kind, number, text.strip()))
    return out


def gdr_refused(lines: Sequence[tuple[int, str]]) -> Evidence | None:
    """The first line where NCCL refused GPUDirect RDMA because the NIC is too far from the GPU."""
    for number, text in lines:
        match = _GDR_OFF.search(text)
        if match:
            return Evidence.at((int(match.group(1)), int(match.group(2))), "NCCL INFO line", number, text)
    return None


def gdr_off(lines: Sequence[tuple[int, str]]) -> Evidence | None:
    """The first line where NCCL says its network runs without GPUDirect RDMA, whatever the cause.

    NCCL 2.19 on prints ``Connected all rings, use ring PXN <p> GDR <0|1>`` (``src/init.cc``: the
    rings' network connections use GPUDirect RDMA or not); aws-ofi-nccl prints ``disabling GDR``
    or ``Need to force simple protocol: GDR not supported`` when its provider cannot register GPU
    memory. Without it every network transfer is staged through a host-memory bounce buffer.
    Older releases say it only in each network channel line: ``via NET/IB/1/GDRDMA/Shared`` with
    it, ``via NET/IB/1/Shared`` without (``src/transport/net.cc``); when no InfiniBand/RoCE channel
    line of the log has ``/GDRDMA`` (and no ``GDR 1`` summary says otherwise), the first is the
    evidence.
    """
    channels = []
    for number, text in lines:
        if _NO_GDR.search(text):
            return Evidence.at(0, "NCCL INFO line", number, text)
        match = _IB_CHANNEL.search(text)
        if match or _GDR_ON.search(text):  # NCCL's 'GDR 1' summary outweighs its channel lines
            channels.append((number, text, match is None or match.group(1) is not None))
    if channels and not any(gdr for _, _, gdr in channels):  # every IB channel lacks '/GDRDMA'
        return Evidence.at(0, "NCCL INFO channel line", channels[0][0], channels[0][1])
    return None


def far_nic_gpus_in(topology: Topology, gpus: Sequence[str]) -> list[str]:
    """GPUs among ``gpus`` whose route to every NIC of their box crosses an inter-socket link.

    The same sign as :func:`far_nic_gpus` read from a machine the user gave (``--topology``,
    an imported matrix or a topology file) rather than a matrix printed in the log. Empty when the
    box has no NIC.
    """
    out = []
    for gpu in gpus:
        box = topology.device(gpu).box
        nics = [d.name for d in topology.devices if d.kind == "nic" and d.box == box]
        if not nics:
            continue
        crossing = [
            any(topology.links[i].family == "inter_socket" for i in topology.route(gpu, nic)) for nic in nics
        ]
        if all(crossing):
            out.append(gpu)
    return out


def far_nic_gpus(matrix_text: str | None, devices: Sequence[int] | None = None) -> list[str]:
    """GPUs of the ``topo -m`` matrix whose every NIC is ``SYS`` (across the inter-socket link).

    Parameters
    ----------
    matrix_text : str or None
        The matrix as the parser kept it (``NcclTestsLog.topo_matrix``).
    devices : sequence of int, optional
        CUDA device indices the run used (default: every GPU of the matrix).

    Returns
    -------
    list of str
        Labels (``GPU0`` ...) of the far GPUs; empty without a matrix or without NIC columns.
    """
    if not matrix_text:
        return []
    from commsim.topology.nvsmi_parse import parse_topo_matrix

    try:
        matrix = parse_topo_matrix(matrix_text)
    except ParseError:
        return []
    nics = [j for j in range(len(matrix.labels)) if not matrix.is_gpu(j)]
    if not nics:
        return []
    wanted = None if devices is None else {f"GPU{d}" for d in devices}
    return [
        label
        for i, label in enumerate(matrix.labels)
        if matrix.is_gpu(i)
        and (wanted is None or label in wanted)
        and all(matrix.cells[(i, j)] == "SYS" for j in nics)
    ]
