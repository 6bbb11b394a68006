"""NCCL's topology dump (``NCCL_TOPO_DUMP_FILE``) as a commsim machine.

NCCL writes what it detected as XML: ``<system>`` holds one ``<cpu>`` per
NUMA node; under it, ``<pci>`` elements nest as the PCIe tree does (bridges
and switches hold further ``<pci>``; an endpoint holds a ``<gpu>`` or a
``<nic>``), each with ``link_speed`` (``"32.0 GT/s PCIe"``) and
``link_width`` (lanes); a ``<gpu dev sm rank>`` lists its NVLinks as
``<nvlink target=busid count>`` (the target is another GPU, or an NVSwitch
when its bus id is no GPU's, e.g. ``fffffff:ff:ff.0``); a ``<nic>`` holds
``<net name dev speed(Mb/s) gdr>`` ports. A ``<nic>`` directly under a
``<cpu>`` has no PCI device: it is a kernel network interface that NCCL's
socket transport uses.

The machine built from it:

* ``cpu<k>`` per ``<cpu>``, joined pairwise by the inter-socket link of
  the vendor (Intel: UPI, AMD: xGMI; :func:`commsim.topology.nvsmi_build.choose_kinds`);
* ``pcisw_<busid>`` per PCI bridge or switch, ``gpu<dev>`` per GPU,
  ``nic<dev>`` per network port under a PCI device, each joined to its
  parent by the PCIe link the dump states (generation from ``link_speed``,
  lanes from ``link_width``; a width of 0 or a missing speed, as virtual
  machines report, is assumed x16 of the GPU's own host interface and said
  in :attr:`NcclTopoImport.notes`);
* NVLinks between GPUs as bonds of ``count`` links; all NVSwitch targets
  as one ``nvswitch0`` with each GPU's links to them summed (NCCL too merges
  NVSwitches into one node); the NVLink generation from the GPU's PCI
  device ID in commsim's GPU catalogue, else from NVLinks per GPU;
* a GPU's own link to its CPU, ``<c2c bw count>`` (Grace: NVLink-C2C at
  ``bw`` MB/s per link, as NCCL reads it) or an ``<nvlink>`` whose target
  class is a host bridge (POWER9: NVLink 2), joins the GPU to its CPU; when
  the GPU's PCIe link goes straight to that CPU too, it is replaced (NCCL
  routes over the faster link; the note says so);
* socket-only interfaces are no device: they are listed in
  :attr:`NcclTopoImport.host_interfaces` (a host with only those has no NIC
  for GPUDirect or RDMA).

References
----------
NVIDIA/nccl ``src/graph/xml.cc`` (``ncclTopoDumpXmlToFile``, the element
and attribute names), ``src/graph/topo.cc`` (``ncclTopoAddNvLinks``: NVLink
targets that are no GPU become one NVS node; ``ncclTopoAddNet``), and real
dumps: ``tests/data/h100-1gpu/nccl_topo.xml`` (NCCL 2.28.9, one H100 SXM in
a virtual machine) and the HGX H100 dump in NVIDIA/nccl issue discussions
(PCIe switches holding one GPU and one ConnectX-7 each, four NVSwitch
targets per GPU).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from os import PathLike
from pathlib import Path

from commsim.interop.xmlread import XmlElement, read_xml_file
from commsim.topology.model import Device, PhysicalLink, Topology
from commsim.topology.nvsmi_build import choose_kinds

__all__ = ["NcclTopoImport", "nccl_topo_to_topology", "read_nccl_topo"]

_GENERATION_BY_GT = {2.5: 3, 5.0: 3, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}
_LANES = (1, 2, 4, 8, 16)
_GPU_CLASSES = ("0x0300", "0x0302")


@dataclass
class NcclTopoImport:
    """A machine read from an NCCL topology dump.

    Attributes
    ----------
    topology : Topology
    gpu_model : str or None
        The GPU's catalogue name, found by its PCI device ID.
    nic_speeds_bps : dict of str to float
        Line rate of every NIC port, bits per second (the dump's Mb/s x 1e6).
    host_interfaces : list of str
        Network interfaces without a PCI device (NCCL's socket transport).
    notes : list of str
        Every assumption made (unknown widths, speeds), for the user to check.
    """

    topology: Topology
    gpu_model: str | None = None
    nic_speeds_bps: dict[str, float] = field(default_factory=dict)
    host_interfaces: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class _Builder:
    devices: list[Device] = field(default_factory=list)
    links: list[PhysicalLink] = field(default_factory=list)
    gpu_bus: dict[str, str] = field(default_factory=dict)  # busid -> gpu name
    nvlinks: list[tuple[str, str, int, XmlElement]] = field(default_factory=list)
    cpu: str = "cpu0"  # the <cpu> being walked
    host_links: dict[str, tuple[PhysicalLink, XmlElement]] = field(default_factory=dict)  # gpu -> C2C/NVLink
    gpu_model: str | None = None
    host_pcie: str = "pcie4_x16"
    notes: list[str] = field(default_factory=list)
    nics: dict[str, float] = field(default_factory=dict)
    sockets: list[str] = field(default_factory=list)


def _pcie_kind(node: XmlElement, builder: _Builder) -> str:
    """The PCIe link kind of a ``<pci>`` element, from its link speed and width."""
    speed = node.attrs.get("link_speed", "")
    width_text = node.attrs.get("link_width", "0") or "0"
    if not width_text.isdigit():
        raise node.error(
            f"link_width={width_text!r} is not a number of lanes ({', '.join(map(str, _LANES))})"
        )
    width = int(width_text)
    match = re.match(r"\s*([\d.]+)\s*GT/s", speed)
    default_gen = int(builder.host_pcie[4])
    if match is None:
        if speed.strip():
            raise node.error(
                f"link_speed={speed!r} is not like '32.0 GT/s PCIe' (2.5, 5, 8, 16, 32 or 64 GT/s)"
            )
        builder.notes.append(
            f"line {node.line}: {node.attrs.get('busid')} gives no link speed; PCIe gen {default_gen} assumed"
        )
        gen = default_gen
    else:
        gts = float(match.group(1))
        if gts not in _GENERATION_BY_GT:
            raise node.error(f"link_speed {gts:g} GT/s is no PCIe rate; valid: 2.5, 5, 8, 16, 32, 64 GT/s")
        gen = _GENERATION_BY_GT[gts]
    if width == 0:
        builder.notes.append(f"line {node.line}: {node.attrs.get('busid')} gives link width 0; x16 assumed")
        width = 16
    lanes = max(n for n in _LANES if n <= width)
    return f"pcie{gen}_x{lanes}"


def _walk(node: XmlElement, parent: str, box: int, builder: _Builder) -> None:
    """Add the devices under ``node`` (a ``<cpu>`` or ``<pci>``) hanging from device ``parent``."""
    for child in node.children:
        if child.tag == "pci":
            _pci(child, parent, box, builder)
        elif child.tag == "nic":
            builder.sockets += [net.attrs.get("name", "?") for net in child.children if net.tag == "net"]


def _pci(node: XmlElement, parent: str, box: int, builder: _Builder) -> None:
    busid = node.text("busid", "a PCI bus id like 0000:18:00.0")
    kind = _pcie_kind(node, builder)
    gpus = [c for c in node.children if c.tag == "gpu"]
    nics = [c for c in node.children if c.tag == "nic"]
    if gpus:
        gpu = gpus[0]
        name = f"gpu{gpu.integer('dev')}"
        builder.devices.append(Device(name, "gpu", box=box, model=builder.gpu_model))
        builder.links.append(PhysicalLink(name, parent, kind))
        builder.gpu_bus[busid.lower()] = name
        for link in gpu.children:
            if link.tag == "nvlink" and link.attrs.get("tclass", "").startswith("0x0600"):
                _to_cpu(
                    name, PhysicalLink(name, builder.cpu, "nvlink2", link.integer("count")), link, builder
                )
            elif link.tag == "nvlink":
                target = link.text("target", "the bus id of the GPU or NVSwitch at the other end")
                builder.nvlinks.append((name, target.lower(), link.integer("count"), link))
            elif link.tag == "c2c":
                bandwidth = link.number("bw") * 1e6 * link.integer("count")  # MB/s per link, as NCCL reads it
                _to_cpu(name, PhysicalLink(name, builder.cpu, "nvlink_c2c", 1, bandwidth), link, builder)
    elif nics:
        for nic in nics:
            for net in (c for c in nic.children if c.tag == "net"):
                name = f"nic{net.integer('dev')}"
                builder.devices.append(Device(name, "nic", box=box, model=net.attrs.get("name")))
                builder.links.append(PhysicalLink(name, parent, kind))
                builder.nics[name] = net.number("speed") * 1e6
    elif any(c.tag == "pci" for c in node.children) or node.attrs.get("class", "").startswith("0x0604"):
        name = f"pcisw_{busid}"
        builder.devices.append(Device(name, "pcie_switch", box=box, model=f"PCI bridge {busid}"))
        builder.links.append(PhysicalLink(name, parent, kind))
        _walk(node, name, box, builder)
    else:
        builder.notes.append(
            f"line {node.line}: PCI device {busid} (class {node.attrs.get('class')}) is neither GPU, "
            "NIC nor switch: left out"
        )


def _to_cpu(gpu: str, link: PhysicalLink, node: XmlElement, builder: _Builder) -> None:
    """A GPU's own link to its CPU (NVLink-C2C on Grace, NVLink on POWER9), kept for :func:`_host_links`."""
    if link.count < 1 or (link.bandwidth_Bps is not None and not link.bandwidth_Bps > 0):
        raise node.error("count and bw must be positive")
    builder.host_links[gpu] = (link, node)


def _host_links(builder: _Builder) -> None:
    """Add the GPUs' CPU links; one straight to the CPU replaces the GPU's PCIe link (NCCL uses it)."""
    for gpu, (link, node) in builder.host_links.items():
        pcie = next(k for k, p in enumerate(builder.links) if p.a == gpu and p.b != "nvswitch0")
        if builder.links[pcie].b == link.b:
            builder.notes.append(
                f"line {node.line}: {gpu}'s PCIe link to {link.b} is replaced by its {link.kind}"
            )
            del builder.links[pcie]
        builder.links.append(link)


def _gpu_model(root: XmlElement) -> tuple[str | None, str | None]:
    """(catalogue name, host interface kind) of the first GPU's PCI device ID, if the catalogue knows it."""
    from commsim.hardware.catalogue import get_gpu, load_gpu_catalogue

    catalogue = load_gpu_catalogue()
    for pci in root.iter("pci"):
        if any(c.tag == "gpu" for c in pci.children):
            keys = catalogue.pci.get(pci.attrs.get("device", "").lower(), ())
            if keys:
                spec = get_gpu(keys[0])
                return spec.name, spec.pcie
            return None, None
    return None, None


def _nvlinks(builder: _Builder, nvlink_kind: str) -> None:
    """GPU-to-GPU bonds and one NVSwitch for every target that is no GPU."""
    pairs: dict[tuple[str, str], int] = {}
    to_switch: dict[str, int] = {}
    for gpu, target, count, node in builder.nvlinks:
        if count < 1:
            raise node.error(f"nvlink count={count} must be at least 1")
        peer = builder.gpu_bus.get(target)
        if peer == gpu:
            raise node.error(f"{gpu} has an NVLink to itself ({target})")
        if peer is None:
            to_switch[gpu] = to_switch.get(gpu, 0) + count
        else:
            pairs.setdefault((min(gpu, peer), max(gpu, peer)), count)
    builder.links += [PhysicalLink(a, b, nvlink_kind, count) for (a, b), count in sorted(pairs.items())]
    if to_switch:
        builder.devices.append(
            Device("nvswitch0", "nvswitch", model="NVSwitch (NVLink targets that are no GPU)")
        )
        builder.links += [PhysicalLink(g, "nvswitch0", nvlink_kind, n) for g, n in sorted(to_switch.items())]


def nccl_topo_to_topology(root: XmlElement, name: str = "nccl_topo") -> NcclTopoImport:
    """The machine an NCCL topology dump describes (see the module docstring).

    Raises
    ------
    FormatError
        On a root that is no ``<system>``, a dump without GPUs, a missing
        attribute, or a link speed or width that is no PCIe one, naming the line.
    """
    if root.tag != "system":
        raise root.error("an NCCL topology dump starts with <system version=...>")
    cpus = [c for c in root.children if c.tag == "cpu"]
    if not cpus:
        raise root.error("no <cpu> element: an NCCL topology dump holds one per NUMA node")
    gpu_model, host_pcie = _gpu_model(root)
    vendor = cpus[0].attrs.get("vendor", "")
    builder = _Builder(gpu_model=gpu_model, host_pcie=host_pcie or "pcie4_x16")
    for k, cpu in enumerate(cpus):
        builder.cpu = f"cpu{k}"
        builder.devices.append(
            Device(f"cpu{k}", "cpu", model=f"{vendor} NUMA node {cpu.attrs.get('numaid', k)}")
        )
        _walk(cpu, f"cpu{k}", 0, builder)
    links_per_gpu = max(
        (sum(c for g2, _, c, _ in builder.nvlinks if g2 == g) for g, _, _, _ in builder.nvlinks), default=0
    )
    kinds = choose_kinds(
        gpu_model, "AMD EPYC" if "AMD" in vendor else vendor or None, None, None, None, None, links_per_gpu
    )
    _host_links(builder)
    _nvlinks(builder, kinds["nvlink"][0])
    socket = kinds["socket"][0]
    builder.links += [
        PhysicalLink(f"cpu{a}", f"cpu{b}", socket) for a in range(len(cpus)) for b in range(a + 1, len(cpus))
    ]
    if not any(d.kind == "gpu" for d in builder.devices):
        raise root.error("no <gpu> element under any <pci>: nothing to simulate")
    devices = _with_served_gpus(sorted(builder.devices, key=_device_order), builder.links)
    description = f"imported from an NCCL topology dump ({gpu_model or 'unknown GPU'})"
    topology = Topology(name, devices, builder.links, description=description)
    return NcclTopoImport(topology, gpu_model, builder.nics, builder.sockets, builder.notes)


def _with_served_gpus(devices: list[Device], links: list[PhysicalLink]) -> list[Device]:
    """NICs serve the GPUs under their own PCI switch (NCCL picks the nearest NIC per GPU)."""
    parent = {link.a: link.b for link in links if link.b.startswith(("pcisw_", "cpu"))}
    kinds = {d.name: d.kind for d in devices}
    out = []
    for device in devices:
        if device.kind == "nic":
            near = tuple(g for g, p in parent.items() if kinds.get(g) == "gpu" and p == parent[device.name])
            device = replace(device, serves=near)
        out.append(device)
    return out


def _device_order(device: Device) -> tuple[int, int, str]:
    """GPUs first in device order (their rank order), then the rest as found."""
    if device.kind == "gpu":
        return 0, int(device.name[3:]), ""
    return 1, 0, ""


def read_nccl_topo(path: str | PathLike[str], name: str | None = None) -> NcclTopoImport:
    """Read an ``NCCL_TOPO_DUMP_FILE`` and build its machine (see :func:`nccl_topo_to_topology`)."""
    return nccl_topo_to_topology(read_xml_file(path, "NCCL topology dump"), name or Path(path).stem)
