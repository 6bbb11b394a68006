"""Machine classes as builders: whole families of real servers, parametrised by their figures.

Each builder returns ONE box (every device ``box = 0``) whose docstring
states its wiring and its sources. They are registered in
:data:`commsim.topology.builders.BUILDERS`, so
``get_topology("nvswitch_box", gpus=8, fabric="nvlink5")`` works, and any of
them can be the ``box`` of :func:`commsim.topology.cluster.cluster`.

- :func:`nvswitch_box`: HGX/DGX A100, H100, H200, B200 (NVSwitch baseboards);
- :func:`nvlink_mesh_box`: HGX A100/H100 4-GPU (direct NVLink between all pairs);
- :func:`bridged_pairs_box`: PCIe GPUs NVLink-bridged in pairs;
- :func:`pcie_box`: PCIe-only servers, with or without peer-to-peer;
- :func:`xgmi_box`: AMD MI300X/MI325X/MI355X 8-GPU OAM boards;
- :func:`nvl72_rack`: GB200/GB300 NVL72, one NVLink domain as one box.

The DGX-1 cube meshes stay shipped YAML (``dgx1_v100``, ``dgx1_p100``).
"""

from __future__ import annotations

from collections.abc import Callable

from commsim.topology.machines.amd import xgmi_box
from commsim.topology.machines.nvidia import nvl72_rack, nvlink_mesh_box, nvswitch_box
from commsim.topology.machines.pcie import bridged_pairs_box, pcie_box
from commsim.topology.model import Topology

__all__ = [
    "MACHINES",
    "bridged_pairs_box",
    "nvl72_rack",
    "nvlink_mesh_box",
    "nvswitch_box",
    "pcie_box",
    "xgmi_box",
]

MACHINES: dict[str, Callable[..., Topology]] = {
    "nvswitch_box": nvswitch_box,
    "nvlink_mesh_box": nvlink_mesh_box,
    "bridged_pairs_box": bridged_pairs_box,
    "pcie_box": pcie_box,
    "xgmi_box": xgmi_box,
    "nvl72_rack": nvl72_rack,
}
"""Machine-class builders by name."""
