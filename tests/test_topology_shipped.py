"""Shipped machines read without the file schema give what the full reader gives, and only then."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from commsim.errors import TopologyError
from commsim.topology import shipped
from commsim.topology.io import load_topology_file
from commsim.topology.model import Topology
from commsim.topology.shipped import load_shipped, plain_topology, shipped_topologies


def fields(topology: Topology) -> tuple[object, ...]:
    """Everything a Topology is made of, and the directed links it derives."""
    return (
        topology.name,
        topology.description,
        topology.devices,
        topology.physical_links,
        topology.kind_overrides,
        topology.peer_to_peer,
        topology.nccl,
        topology.multipath,
        topology.links,
    )


@pytest.mark.parametrize("name", sorted(shipped_topologies()))
def test_every_shipped_file_takes_the_plain_path_and_matches_the_full_reader(name: str) -> None:
    """Each shipped file keeps to the plain subset (so no run pays for the schema) and reads the same."""
    path = shipped_topologies()[name]
    plain = plain_topology(yaml.safe_load(path.read_text()))
    assert plain is not None
    assert fields(plain) == fields(load_topology_file(path))
    assert fields(load_shipped(name)) == fields(plain)


BOX = {
    "name": "box",
    "devices": [{"name": "gpu0", "kind": "gpu"}, {"name": "gpu1", "kind": "gpu"}],
    "links": [{"between": ["gpu0", "gpu1"], "kind": "nvlink2"}],
}


@pytest.mark.parametrize(
    "change",
    [
        {"peer_to_peer": False},  # a field outside the plain subset
        {"devices": [{"name": "gpu0", "kind": "gpu"}, {"name": "gpu0", "kind": "gpu"}]},
        {"devices": [{"name": "gpu0", "kind": "gpu", "box": 1}, {"name": "gpu1", "kind": "gpu"}]},
        {"devices": [{"name": "gpu0", "kind": "tpu"}, {"name": "gpu1", "kind": "gpu"}]},
        {"links": [{"between": ["gpu0", "gpu9"], "kind": "nvlink2"}]},
        {"links": [{"between": ["gpu0", "gpu0"], "kind": "nvlink2"}]},
        {"links": [{"between": ["gpu0", "gpu1"], "kind": "nvlink9"}]},
        {"links": [{"between": ["gpu0", "gpu1"], "kind": "nvlink2", "count": "2"}]},
        {"links": [{"between": ["gpu0", "gpu1"], "kind": "nvlink2", "bandwidth": "1 GB/s"}]},
        {"link_kinds": {"nvlink2": {"bandwidth": 16}}},  # a figure without its unit
        {"link_kinds": {"nvlink2": {"bandwidth": "0 GB/s"}}},
        {"link_kinds": {"warp_drive": {"latency": "1 us"}}},
        {"description": None},
    ],
)
def test_anything_outside_the_plain_subset_is_left_to_the_full_reader(change: dict[str, object]) -> None:
    """Other fields, other types, unknown or repeated names, figures without units: not read plainly."""
    assert plain_topology(BOX) is not None
    assert plain_topology({**BOX, **change}) is None


def test_a_broken_shipped_file_reports_what_the_full_reader_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plain path never words an error itself: a bad file fails with the full reader's message."""
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: broken\ndevices:\n  - {name: gpu0, kind: gpu}\n  - {name: gpu0, kind: gpu}\n")
    monkeypatch.setattr(shipped, "_data_dir", lambda: tmp_path)
    with pytest.raises(TopologyError) as full:
        load_topology_file(broken)
    with pytest.raises(TopologyError) as plain:
        load_shipped("broken")
    assert str(plain.value) == str(full.value)
    assert "broken.yaml:4" in str(plain.value) and "declared twice" in str(plain.value)
