"""GPU hardware as data: the catalogue of GPUs and the lookup of printed names.

:mod:`commsim.hardware.catalogue` loads ``gpus.yaml`` (every GPU's links,
host interface, memory, machine classes and printed names, each with its
source); :mod:`commsim.hardware.matching` finds the entry for a name printed by
nvidia-smi, rocm-smi or nccl-tests, for a PCI device ID, or for a model token
in a host name.
"""

from commsim.hardware.catalogue import (
    ARCHS,
    Board,
    Bridge,
    CatalogueError,
    GpuCatalogue,
    GpuSpec,
    catalogue_markdown,
    get_gpu,
    gpu_arch,
    gpu_catalogue,
    load_gpu_catalogue,
    parse_gpu_catalogue,
)
from commsim.hardware.matching import (
    GpuMatch,
    PciIdError,
    find_gpu,
    find_gpu_in_text,
    match_gpu,
    parse_pci_id,
)

__all__ = [
    "ARCHS",
    "Board",
    "Bridge",
    "CatalogueError",
    "GpuCatalogue",
    "GpuMatch",
    "GpuSpec",
    "PciIdError",
    "catalogue_markdown",
    "find_gpu",
    "find_gpu_in_text",
    "get_gpu",
    "gpu_arch",
    "gpu_catalogue",
    "load_gpu_catalogue",
    "match_gpu",
    "parse_gpu_catalogue",
    "parse_pci_id",
]
