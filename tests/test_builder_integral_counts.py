"""Topology builders take any integral count (``numpy.int64(8)`` as well as ``8``), nothing else.

A count computed with NumPy (``numpy.arange``, a DataFrame column) is a whole number: it was refused
as ``gpus must be a whole number ... got np.int64(8) (a int64)``. Floats (``8.0``) and bools stay
refused, as before, with the same typed error.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import commsim
from commsim.errors import TopologyError
from commsim.topology import build, get_topology, ring
from commsim.topology.machines.pcie import pcie_box

INTEGRAL = [np.int64(8), np.int32(8), np.uint16(8)]
BUILDERS = ["ring", "fully_connected", "nvswitch_box", "pcie_box", "xgmi_box", "bridged_pairs_box"]


@pytest.mark.parametrize("builder", BUILDERS)
@pytest.mark.parametrize("gpus", INTEGRAL, ids=lambda v: type(v).__name__)
def test_numpy_integer_gpus_build_the_same_machine_as_an_int(builder: str, gpus: object) -> None:
    """A NumPy integer count builds the machine the int builds: same name, GPUs and links."""
    machine, expected = get_topology(builder, gpus=gpus), get_topology(builder, gpus=8)
    assert machine.name == expected.name
    assert machine.gpus == expected.gpus
    assert len(machine.links) == len(expected.links)


def test_numpy_integer_nodes_and_cluster_counts_are_taken() -> None:
    """cluster's nodes, nics_per_node and leaf_size take NumPy integers too."""
    machine = get_topology(
        "cluster", box="dgx_a100", nodes=np.int64(2), nics_per_node=np.int64(4), fabric="fat_tree",
        leaf_size=np.int64(4),
    )  # fmt: skip
    assert machine.name == "cluster_2xdgx_a100" and len(machine.gpus) == 16


def test_numpy_integer_counts_become_ints() -> None:
    """No NumPy scalar reaches the machine: called directly, its name and description read as with an
    int; through simulate, the result's record is JSON (no default= needed) and its time the int's."""
    assert ring(gpus=np.int64(3)).name == "ring_3"  # type: ignore[arg-type]
    box = pcie_box(gpus=np.int64(4), sockets=np.int64(2), nics=np.int16(2))  # type: ignore[arg-type]
    assert box.description == pcie_box(gpus=4, sockets=2, nics=2).description
    result = commsim.simulate("ring", "ring", gpus=np.int64(4))  # type: ignore[arg-type]
    json.dumps(result.to_record())
    assert result.time_s == commsim.simulate("ring", "ring", gpus=4).time_s


@pytest.mark.parametrize(
    ("gpus", "shown"),
    [
        (8.0, "8.0 (a float)"),
        (np.float64(8.0), "np.float64(8.0) (a float64)"),
        (True, "True (a bool)"),
        (np.bool_(True), "np.True_ (a bool)"),
        ("8", "'8' (text)"),
    ],
)
def test_non_integral_gpus_are_still_refused(gpus: object, shown: str) -> None:
    """Floats (even whole ones), bools (Python's and NumPy's) and text are refused with the typed error."""
    with pytest.raises(
        TopologyError, match=r"builder 'nvswitch_box': gpus must be a whole number, e\.g\. 4, got "
    ):
        build("nvswitch_box", gpus=gpus)
    with pytest.raises(TopologyError) as raised:
        get_topology("nvswitch_box", gpus=gpus)
    assert str(raised.value).endswith(shown)


def test_numpy_integer_over_the_limit_is_refused() -> None:
    """The size limit applies to a NumPy count (it was checked for ints only)."""
    with pytest.raises(TopologyError, match=r"builder 'ring': gpus 1000000 is above the limit of 16,384"):
        get_topology("ring", gpus=np.int64(1_000_000))


def test_numpy_rank_counts_are_counts_in_simulate_tuned_gains_and_training_models() -> None:
    """simulate(ranks=numpy.int64(3)) was refused ('expected a GPU count ..., got np.int64(3)') and
    tuned_gains took a NumPy count for a list of names; a training model's batch likewise. Now a
    NumPy count is the count: 3 ranks on the 4-GPU PCIe box give the same time as ranks=3, tuned_gains
    on 4 of a DGX A100's GPUs the same as ranks=4, and resnet50(numpy.int64(64)) the same model as
    resnet50(64); floats and NumPy booleans are still refused."""
    import numpy as np

    from commsim import simulate
    from commsim.errors import CommsimError
    from commsim.recommend import tuned_gains
    from commsim.training import models

    args = ("pcie_4gpu_switch", "ring", "all_reduce", "1 MB")
    assert simulate(*args, ranks=np.int64(3)).time_s == simulate(*args, ranks=3).time_s
    a100 = get_topology("dgx_a100")
    assert tuned_gains(a100, "all_reduce", [1e6], ranks=np.int64(4)) == tuned_gains(
        a100, "all_reduce", [1e6], ranks=4
    )
    assert models.resnet50(np.int64(64)) == models.resnet50(64)
    for bad in (3.0, np.bool_(True)):
        with pytest.raises(CommsimError, match="expected a GPU count"):
            simulate(*args, ranks=bad)  # type: ignore[arg-type]
