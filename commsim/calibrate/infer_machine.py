"""The machine behind a log: the GPU (catalogue), the board it sits on, and one host's topology.

The GPU comes from ``--gpu`` or the device list, looked up in the catalogue
(:mod:`commsim.hardware`). The board is the machine class the GPU ships on
that holds the run's GPUs per host (:data:`HOST_GPUS`): an 8-GPU NVSwitch
baseboard, the 16-GPU DGX-2 / HGX-2 NVSwitch machine, a 4-GPU NVLink mesh,
a DGX-1 cube mesh, a GB200/GB300 NVL72 rack, an AMD 8-GPU xGMI mesh, NVLink-bridged PCIe pairs or a plain PCIe
server. When the GPU ships on several boards that could hold the run, the
choice is an assumption and the report says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from commsim.calibrate.evidence import Evidence, Fact
from commsim.calibrate.infer_layout import InferenceError, given
from commsim.calibrate.parser import NcclTestsLog
from commsim.hardware import GpuMatch, GpuSpec
from commsim.topology.model import Topology

__all__ = ["BOARD_CLASSES", "HOST_GPUS", "Board", "board_for", "board_named", "build_box", "infer_gpu"]

HOST_GPUS: dict[str, int] = {
    "nvswitch8": 8,
    "nvswitch16": 16,
    "nvlink_mesh4": 4,
    "dgx1_cube": 8,
    "nvl72": 4,
    "nvl_superchip": 1,
    "xgmi8": 8,
}
"""GPUs per host of each fixed board class (``nvl72``: a compute tray; the NVLink domain is the rack)."""

NVL72_DOMAIN = 72
"""GPUs in one GB200/GB300 NVL72 NVLink domain (18 compute trays x 4)."""

MAX_DEVICE_INDEX = 1023
"""The highest GPU index of a host taken from a device list, ``CUDA_VISIBLE_DEVICES`` or ``--devices``:
a garbled ``device 4294967296`` built a PCIe server of 2^32 GPUs (hosts have at most a few dozen)."""

_FLEXIBLE = ("bridged_pairs", "pcie")
"""Board classes of any size."""

_SWITCH_BOARDS = ("nvswitch8", "nvswitch16")
"""Board classes whose GPUs are all ports of one NVLink switch (which of them a run uses does not matter)."""


BOARD_CLASSES = (*HOST_GPUS, *_FLEXIBLE)
"""Every board class the inference can name; ``--topology`` takes each, built with the log's GPU."""


def _classes(spec: GpuSpec) -> list[str]:
    return [b.machine_class for b in spec.boards]


def infer_gpu(log: NcclTestsLog, option: str | None) -> tuple[GpuSpec, Fact]:
    """The GPU's catalogue entry and how it is known.

    Raises
    ------
    InferenceError
        If the log names no GPU, only a generic one, or one the catalogue
        lacks, and ``--gpu`` does not say.
    """
    from commsim.hardware import find_gpu, find_gpu_in_text

    if option is not None:
        match = find_gpu(option)
        if match.spec is None:
            raise InferenceError(f"--gpu {option!r}: {match.why}; `commsim gpus` lists the catalogue")
        return match.spec, given("gpu", match.spec.name, "--gpu", match.why)
    printed = log.gpu_model
    if printed is None:
        why = (
            f"its '# Rank .. device ..' lines (line {log.devices[0].line}) end at the bus id, naming none"
            if log.devices
            else "it has no '# Rank .. device ..' line"
        )
        raise InferenceError(
            f"the log does not say which GPU ran ({why}); "
            "give --gpu MODEL (e.g. --gpu 'H100 SXM') or --topology",
            log.source,
        )
    device = next(d for d in log.devices if d.model == printed)
    seen = Evidence.at(printed, f"device list (rank {device.rank})", device.line, None)
    match = find_gpu(printed)
    if match.spec is not None and not match.generic:
        return match.spec, Fact("gpu", match.spec.name, (seen,), option="--gpu", note=match.why)
    if match.generic:
        hinted = find_gpu_in_text(" ".join([*log.hosts, log.command or ""]))
        if hinted is not None:
            note = (
                f"the driver prints the generic name {printed!r}; the host name or command names "
                f"{hinted.name} (weak evidence)"
            )
            return hinted, Fact(
                "gpu",
                hinted.name,
                (seen, Evidence(hinted.key, "host name or command")),
                option="--gpu",
                note=note,
            )
        why = (
            "ROCm prints this generic marketing name for Instinct GPUs in some setups"
            if re.search(r"\b(amd|radeon)\b", printed, re.IGNORECASE)
            else "a driver older than the GPU prints this"
        )
        raise InferenceError(
            f"the log names its GPUs only as {printed!r} ({why}); give --gpu MODEL", log.source
        )
    raise _unmatched(printed, match, log.source)


def _unmatched(printed: str, match: GpuMatch, source: str | None) -> InferenceError:
    """The refusal of a GPU name the catalogue has several entries for, or none."""
    if match.candidates:  # the name fits several entries: say so, and offer each
        options = " or ".join(f"--gpu {spec.key}" for spec in match.candidates)
        return InferenceError(
            f"GPU {printed!r} cannot be told apart: {match.why}; give {options} (or --topology)", source
        )
    return InferenceError(
        f"GPU {printed!r} is not in the catalogue; give --gpu with a catalogue name "
        "(`commsim gpus` lists them) or --topology",
        source,
    )


def host_gpus(spec: GpuSpec) -> int | None:
    """GPUs per host of the board this GPU usually ships on (None for PCIe cards)."""
    for cls in _classes(spec):
        if cls in HOST_GPUS:
            return HOST_GPUS[cls]
    return None


@dataclass(frozen=True)
class Board:
    """The board chosen for one host: its class, its GPU count, and the fact.

    For ``nvl72`` the GPU count is the NVLink domain's, the box of the machine: 72 (a rack) when the
    hosts share domains, 4 (one compute tray) when each host is a domain of its own.
    """

    cls: str
    gpus: int
    fact: Fact


def board_for(spec: GpuSpec, per_node: int, devices: tuple[tuple[int, ...], ...] | None) -> Board:
    """The machine class that holds ``per_node`` GPUs of this kind, and whether that is assumed.

    Raises
    ------
    InferenceError
        If no board this GPU ships on holds that many GPUs per host.
    """
    classes = _classes(spec) or ["pcie"]
    highest = _highest_used(devices, per_node)
    need = max(per_node, highest)
    if "nvl72" in classes and per_node <= HOST_GPUS["nvl72"]:
        note = (
            f"{spec.name} comes in NVL72 racks: compute trays of 4 GPUs, the 18 trays of a rack on one "
            "NVLink domain"
        )
        return Board("nvl72", NVL72_DOMAIN, Fact("board", "nvl72", (), option="--topology", note=note))
    fixed = [(c, HOST_GPUS[c]) for c in classes if c in HOST_GPUS]
    fits = [(c, g) for c, g in fixed if g >= need]
    flexible = [c for c in classes if c in _FLEXIBLE]
    if fits:
        return _fixed_board(spec, classes, fits, flexible, per_node)
    if not spec.boards:
        note = (
            f"the catalogue names no board for {spec.name} (a {spec.form} card); modelled as a PCIe "
            f"server of {need} GPU(s), its GPUs joined over PCIe only"
        )
        return Board("pcie", need, Fact("board", "pcie", (), assumed=True, option="--topology", note=note))
    if flexible:
        cls = flexible[0]
        note = f"{spec.name} is a {spec.form} card: a {cls} server of {need} GPU(s)"
        return Board(
            cls, need, Fact("board", cls, (), assumed=len(flexible) > 1, option="--topology", note=note)
        )
    largest = max(g for _, g in fixed)
    if highest > max(per_node, largest):
        raise InferenceError(
            f"a host's ranks use its GPU {highest - 1} (device list, CUDA_VISIBLE_DEVICES or --devices), "
            f"but {spec.name} ships on boards of at most {largest} GPUs ({', '.join(classes)}); give "
            f"--devices with indices 0-{largest - 1}, or --topology"
        )
    raise InferenceError(
        f"{per_node} GPUs per host, but {spec.name} ships on boards of at most "
        f"{largest} GPUs ({', '.join(classes)}); give --gpus-per-node or --topology"
        + _larger_siblings(spec, per_node)
    )


def _highest_used(devices: tuple[tuple[int, ...], ...] | None, per_node: int) -> int:
    """How many GPUs a host needs for the highest GPU index its ranks use (0 when none is known),
    if the host's ``per_node`` ranks and that index are within what commsim models."""
    if per_node > MAX_DEVICE_INDEX + 1:  # --gpus 65536 --nodes 1 routed a 65,536-GPU box for minutes
        raise InferenceError(
            f"{per_node} ranks per host is above the {MAX_DEVICE_INDEX + 1} GPUs a host may have in "
            "commsim; give --nodes or --gpus-per-node so that each host runs fewer"
        )
    highest = max((max(d) for d in devices or () if d), default=-1)
    if highest > MAX_DEVICE_INDEX:
        raise InferenceError(
            f"a host's ranks use its GPU {highest} (device list, CUDA_VISIBLE_DEVICES or --devices), "
            f"above the highest index commsim models ({MAX_DEVICE_INDEX}); if the device line is "
            "garbled, give --devices with the GPUs each host's ranks use, e.g. --devices 0,1"
        )
    return highest + 1


def _larger_siblings(spec: GpuSpec, per_node: int) -> str:
    """A clause naming the catalogue's other entries of the same GPU (its name's first word, form and
    generation) whose boards hold ``per_node`` GPUs: a bare 'H100' names the 4-GPU board's 94 GB part,
    as nvidia-smi does, where an 8-GPU host has the 80 GB one."""
    from commsim.hardware import load_gpu_catalogue

    others = [
        other
        for other in load_gpu_catalogue().gpus.values()
        if other.key != spec.key
        and (other.arch, other.form) == (spec.arch, spec.form)
        and other.name.split()[0] == spec.name.split()[0]
        and any(HOST_GPUS.get(c, 0) >= per_node for c in _classes(other))
    ]
    if not others:
        return ""
    named = ", ".join(f"--gpu {o.key} ({o.name})" for o in others)
    return f", or name the part whose boards hold {per_node}: {named}"


def board_named(spec: GpuSpec, cls: str, per_node: int, devices: tuple[tuple[int, ...], ...] | None) -> Board:
    """The board class ``--topology`` names (``nvlink_mesh4``, ``nvswitch8`` ...), for this GPU.

    Raises
    ------
    InferenceError
        If the GPU does not ship on that board class, or a host runs more GPUs than it holds.
    """
    classes = _classes(spec) or ["pcie"]
    if cls not in classes:
        raise InferenceError(
            f"--topology {cls}: {spec.name} ships on {', '.join(classes)}, not on {cls}; give one of "
            "those, or a machine (a shipped name, a builder or a topology YAML)"
        )
    fact = given("board", cls, "--topology", f"{spec.name} on its {cls} board")
    if cls == "nvl72":
        return Board(cls, NVL72_DOMAIN, fact)
    highest = _highest_used(devices, per_node)
    need = max(per_node, highest)
    gpus = HOST_GPUS.get(cls, need)
    if need > gpus:
        raise InferenceError(
            f"--topology {cls} holds {gpus} GPU(s) per host, but a host of the run uses {need}; give "
            f"a board of {spec.name} that holds them ({', '.join(classes)}) or --gpus-per-node"
        )
    return Board(cls, gpus, fact)


def _fixed_board(
    spec: GpuSpec, classes: list[str], fits: list[tuple[str, int]], flexible: list[str], per_node: int
) -> Board:
    """The first board of a fixed size that holds the run (the catalogue lists a GPU's usual board
    first); assumed when another could, or when the run uses part of it, unless every GPU of it is a
    port of one NVLink switch and the GPU ships on no other board."""
    cls, gpus = fits[0]
    others = [c for c, _ in fits if c != cls] + flexible
    only_home = len(classes) == 1 and cls in _SWITCH_BOARDS
    assumed = bool(others) or (gpus != per_node and not only_home)
    where = f"{'only ' if only_home else ''}on {', '.join(classes)}"
    note = f"{spec.name} ships {where}; {per_node} GPU(s) per host"
    if gpus != per_node:
        note += f" used of the board's {gpus}"
        if only_home:
            note += ", every one a port of the same NVLink switch"
    if others:
        note += f"; it could also be {', '.join(others)}"
    return Board(cls, gpus, Fact("board", cls, (), assumed=assumed, option="--topology", note=note))


def build_box(spec: GpuSpec, board: Board, p2p: bool, nics: int, nic: str | None) -> Topology:
    """One host (or, for NVL72, one NVLink domain of ``board.gpus`` GPUs: a rack, or a tray whose
    hosts share none) of the board class, with ``nics`` NICs of kind ``nic``; a run on one host has
    none, and its description says so instead of naming a NIC kind it does not use."""
    box = _board_box(spec, board, p2p, nics, nic)
    if nic and nics:
        return box
    from dataclasses import replace

    return replace(box, description=_NO_NIC.sub("no NIC (no network used)", box.description))


_NO_NIC = re.compile(r"\b0 [a-z0-9_]+ NIC\(s\)")
"""The builders' NIC clause with no NIC: ``0 roce_100g NIC(s)``."""


def _board_box(spec: GpuSpec, board: Board, p2p: bool, nics: int, nic: str | None) -> Topology:
    """The board's machine as its builder makes it."""
    from commsim.topology import machines
    from commsim.topology.resolve import get_topology

    common: dict[str, Any] = {"gpu_model": spec.name, "nics": nics if nic else 0}
    if nic:
        common["nic"] = nic
    if spec.pcie:
        common["pcie"] = spec.pcie
    fabric: dict[str, Any] = {
        "fabric": spec.fabric,
        "links": spec.fabric_links,
        "link_bandwidth": spec.fabric_link_Bps,
    }
    if board.cls == "nvswitch8":
        return machines.nvswitch_box(gpus=8, **fabric, **common)
    if board.cls == "nvswitch16":  # DGX-2: two Xeon 8168 (Skylake, UPI), 2 GPUs and a NIC per PCIe switch
        return machines.nvswitch_box(gpus=16, gpus_per_switch=2, inter_socket="upi", **fabric, **common)
    if board.cls == "nvlink_mesh4":
        return machines.nvlink_mesh_box(gpus=4, **fabric, **common)
    if board.cls == "xgmi8":
        per_peer = max(1, (spec.fabric_links or 7) // 7)
        return machines.xgmi_box(
            gpus=8, links_per_peer=per_peer, link_bandwidth=spec.fabric_link_Bps, **common
        )
    if board.cls == "nvl72":  # one NVLink domain: a rack, or one tray when hosts do not share one
        trays = board.gpus // HOST_GPUS["nvl72"]
        rack = {k: v for k, v in common.items() if k not in ("nics", "pcie")}
        rack["nics_per_tray"] = nics // trays if nic else 0
        return machines.nvl72_rack(gpus=board.gpus, **fabric, **rack)
    if board.cls == "dgx1_cube":
        return get_topology("dgx1_v100" if spec.arch == "volta" else "dgx1_p100")
    sockets = 1 if board.gpus <= 4 else 2
    if board.gpus == 1:
        return _one_gpu_box(spec)
    if board.cls == "bridged_pairs" and spec.bridge is not None:
        bridge = spec.bridge
        return machines.bridged_pairs_box(
            gpus=board.gpus,
            fabric=bridge.fabric,
            links=bridge.links,
            link_bandwidth=bridge.link_Bps,
            sockets=sockets,
            p2p=p2p,
            **common,
        )
    return machines.pcie_box(gpus=board.gpus, sockets=sockets, p2p=p2p, **common)


def _one_gpu_box(spec: GpuSpec) -> Topology:
    """A host with one GPU on a root port of its CPU (the PCIe builders start at two GPUs)."""
    from commsim.topology.model import Device, PhysicalLink

    devices = [Device("cpu0", "cpu"), Device("gpu0", "gpu", 0, spec.name)]
    links = [PhysicalLink("gpu0", "cpu0", spec.pcie or "pcie5_x16")]
    return Topology("one_gpu_host", devices, links, description=f"one {spec.name} on a PCIe root port")
