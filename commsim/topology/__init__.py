"""Machine models: link kinds, the Topology graph, routing, builders and files."""

from commsim.topology.builders import BUILDERS, build, fully_connected, ring
from commsim.topology.io import (
    load_topology_file,
    parse_topology,
    save_topology,
    shipped_topologies,
    topology_json_schema,
    topology_to_dict,
)
from commsim.topology.linkkinds import FAMILIES, LINK_KINDS, LinkKind, get_link_kind
from commsim.topology.model import DEVICE_KINDS, Device, Link, PhysicalLink, Topology
from commsim.topology.nvsmi import (
    classify_pair,
    find_p2p_status,
    import_topo_matrix,
    load_topo_matrix,
    parse_topo_matrix,
    topo_matrix_from_log,
)
from commsim.topology.resolve import available_topologies, get_topology

__all__ = [
    "BUILDERS",
    "DEVICE_KINDS",
    "FAMILIES",
    "LINK_KINDS",
    "Device",
    "Link",
    "LinkKind",
    "PhysicalLink",
    "Topology",
    "available_topologies",
    "build",
    "classify_pair",
    "find_p2p_status",
    "fully_connected",
    "get_link_kind",
    "get_topology",
    "import_topo_matrix",
    "load_topo_matrix",
    "load_topology_file",
    "parse_topo_matrix",
    "parse_topology",
    "ring",
    "save_topology",
    "shipped_topologies",
    "topo_matrix_from_log",
    "topology_json_schema",
    "topology_to_dict",
]
