"""Parametric machines built in code: teaching graphs of any GPU count, machine classes, clusters.

Shipped real machines live as YAML data in ``topologies/``; builders make
the families that are parametrised by size: teaching graphs (``ring``,
``fully_connected``), machine classes (:mod:`commsim.topology.machines`) and
``cluster`` (K copies of a box on a network, :mod:`commsim.topology.cluster`).
"""

from __future__ import annotations

import importlib
import numbers
import operator
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeGuard

from commsim.errors import TopologyError, UnknownNameError
from commsim.topology.elements import Device, PhysicalLink
from commsim.topology.model import Topology
from commsim.units import parse_bandwidth, parse_time

if TYPE_CHECKING:
    from commsim.topology.cluster import cluster

__all__ = ["BUILDERS", "build", "cluster", "fully_connected", "ring"]


def is_whole_number(value: object) -> TypeGuard[numbers.Integral]:
    """Whether ``value`` is an integral number (an ``int``, a NumPy integer ...), a bool being none."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def whole_number_type(value: object, what: str, builder: str) -> int:
    """``value`` as an ``int`` if it is an integral number (``8``, ``numpy.int64(8)``); refused if
    not (``gpus="4"``, ``8.0``, ``True``): its type, not its value, is wrong.

    Raises
    ------
    TopologyError
        ``builder 'ring': gpus must be a whole number, e.g. 4, got '4' (text)``.
    """
    if not is_whole_number(value):
        kind = "text" if isinstance(value, str) else f"a {type(value).__name__}"
        raise TopologyError(
            f"builder {builder!r}: {what} must be a whole number, e.g. 4, got {value!r} ({kind})"
        )
    return operator.index(value)


def _check_gpus(gpus: int, minimum: int, builder: str) -> int:
    gpus = whole_number_type(gpus, "gpus", builder)
    if gpus < minimum:
        raise TopologyError(f"builder {builder!r} needs gpus >= {minimum}, got {gpus!r}")
    return gpus


def _figures(bandwidth: str | float | None, latency: str | float | None) -> tuple[float | None, float | None]:
    return (
        parse_bandwidth(bandwidth) if bandwidth is not None else None,
        parse_time(latency) if latency is not None else None,
    )


def ring(
    gpus: int = 8,
    kind: str = "nvlink2",
    bandwidth: str | float | None = None,
    latency: str | float | None = None,
) -> Topology:
    """GPUs joined in a cycle gpu0-gpu1-...-gpu(n-1)-gpu0.

    Parameters
    ----------
    gpus : int
        Number of GPUs, at least 2 (2 GPUs are joined by one link).
    kind : str
        Link kind of every link.
    bandwidth, latency : str or float, optional
        Per link per direction; the kind's defaults when omitted.
    """
    gpus = _check_gpus(gpus, 2, "ring")
    bandwidth_Bps, latency_s = _figures(bandwidth, latency)
    devices = [Device(f"gpu{i}", "gpu") for i in range(gpus)]
    pairs = {tuple(sorted((i, (i + 1) % gpus))) for i in range(gpus)}
    links = [PhysicalLink(f"gpu{a}", f"gpu{b}", kind, 1, bandwidth_Bps, latency_s) for a, b in sorted(pairs)]
    return Topology(f"ring_{gpus}", devices, links, description=f"{gpus} GPUs in a ring of {kind}")


def fully_connected(
    gpus: int = 4,
    kind: str = "nvlink2",
    bandwidth: str | float | None = None,
    latency: str | float | None = None,
) -> Topology:
    """Every pair of GPUs joined by a direct link (SEED_FACTS section 4's 4-GPU box).

    Parameters
    ----------
    gpus : int
        Number of GPUs, at least 2.
    kind : str
        Link kind of every link.
    bandwidth, latency : str or float, optional
        Per link per direction; the kind's defaults when omitted.
    """
    gpus = _check_gpus(gpus, 2, "fully_connected")
    bandwidth_Bps, latency_s = _figures(bandwidth, latency)
    devices = [Device(f"gpu{i}", "gpu") for i in range(gpus)]
    links = [
        PhysicalLink(f"gpu{a}", f"gpu{b}", kind, 1, bandwidth_Bps, latency_s)
        for a in range(gpus)
        for b in range(a + 1, gpus)
    ]
    return Topology(
        f"fully_connected_{gpus}", devices, links, description=f"{gpus} GPUs, all pairs linked by {kind}"
    )


_ELSEWHERE = {
    "cluster": "commsim.topology.cluster",
    "nvswitch_box": "commsim.topology.machines.nvidia",
    "nvlink_mesh_box": "commsim.topology.machines.nvidia",
    "bridged_pairs_box": "commsim.topology.machines.pcie",
    "pcie_box": "commsim.topology.machines.pcie",
    "xgmi_box": "commsim.topology.machines.amd",
    "nvl72_rack": "commsim.topology.machines.nvidia",
}
"""The builders defined in other modules, by name, in the order listed: ``cluster`` and
:data:`commsim.topology.machines.MACHINES` (a test checks the two agree)."""


class _Builders(Mapping[str, Callable[..., Topology]]):
    """Builders by name; one defined in another module is imported when it is first looked up.

    A machine made by ``ring`` or ``fully_connected`` (every small run) then
    does not load the machine classes and the cluster builder (5-7 ms).
    """

    def __init__(self, here: dict[str, Callable[..., Topology]], elsewhere: dict[str, str]) -> None:
        self._here = here
        self._elsewhere = elsewhere

    def __getitem__(self, name: str) -> Callable[..., Topology]:
        if name not in self._here:
            builder = getattr(importlib.import_module(self._elsewhere[name]), name)  # KeyError if unknown
            self._here[name] = builder
        return self._here[name]

    def __iter__(self) -> Iterator[str]:
        yield from ("ring", "fully_connected", *self._elsewhere)

    def __len__(self) -> int:
        return 2 + len(self._elsewhere)

    def __contains__(self, name: object) -> bool:
        return name in self._here or name in self._elsewhere

    def __repr__(self) -> str:
        return f"BUILDERS({', '.join(self)})"


BUILDERS: Mapping[str, Callable[..., Topology]] = _Builders(
    {"ring": ring, "fully_connected": fully_connected}, _ELSEWHERE
)
"""Builders by name; each takes keyword parameters (``gpus``, ``kind``, ``box``, ``nodes``, ...).

The machine classes of :mod:`commsim.topology.machines` (``nvswitch_box``,
``nvlink_mesh_box``, ``bridged_pairs_box``, ``pcie_box``, ``xgmi_box``,
``nvl72_rack``) are among them, and ``cluster``; each is imported when it is
first looked up."""


def __getattr__(name: str) -> Any:
    """``cluster``, re-exported here, imported on first use."""
    if name == "cluster":
        return BUILDERS["cluster"]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def build(name: str, **params: Any) -> Topology:
    """Call the builder ``name`` with ``params``.

    Raises
    ------
    UnknownNameError
        If there is no such builder.
    TopologyError
        If a parameter is not accepted by the builder.
    """
    if name not in BUILDERS:
        raise UnknownNameError("topology builder", name, list(BUILDERS))
    import inspect

    accepted = [p for p in inspect.signature(BUILDERS[name]).parameters if p != "kwargs"]
    for key in params:
        if key not in accepted:  # as a scenario's builder mapping says it, not Python's TypeError
            from commsim.errors import did_you_mean

            valid = f"valid: {', '.join(accepted)}{did_you_mean(key, accepted)}"
            raise TopologyError(f"builder {name!r} has no field {key!r}; {valid}")
    # an integral number (numpy.int64(8)) as an int, so that no NumPy scalar reaches the machine
    params = {key: int(value) if is_whole_number(value) else value for key, value in params.items()}
    try:
        return BUILDERS[name](**params)
    except TypeError as exc:
        raise TopologyError(f"builder {name!r}: {exc}") from None
