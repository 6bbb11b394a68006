"""Guards of a calibration: one machine per fit, and fitted values a real machine can have.

A fit of logs from different machines gives one set of parameters that is
neither machine's: :func:`check_one_machine` refuses it (a
:class:`~commsim.errors.CalibrationError` naming both files and what
differs) unless the caller asks for parameters shared across machines.

A least-squares fit always returns numbers; some mean the model, not the
machine, is wrong. :func:`implausible` warns about each fitted value
outside the range a real machine gives (:data:`PLAUSIBLE`), and about each
one that ended on its bound:

* link efficiencies (``efficiency.*``, ``shm_efficiency``,
  ``nvls_efficiency``) from 0.3 to 0.95: NCCL's protocols spend part of a
  link on flags and headers (Simple reaches 80-92 % of NVLink and
  InfiniBand in the development logs' per-file fits), and a machine under
  30 % of its datasheet rate has a slower link than the one modelled
  (a TCP log fitted against an assumed 100 Gb/s NIC gives 0.06);
* ``latency_scale`` from 1/3 to 3: it scales NCCL's own latency tables
  (``baseLat``/``hwLat`` of ``src/graph/tuning.cc``), which NCCL tunes to
  its hardware; per-file fits of the normal development logs whose
  algorithm the model gets right lie in 0.49-2.9, while 0.087 (a 4-GPU H100
  all-reduce the model runs on one ring where NCCL uses every link) and
  12.5 (GB200 NVL72) absorb a structural miss;
* ``launch_s`` from 0.5 us to 30 us: a CUDA kernel launch costs a few
  microseconds (2.9-13.5 us in the per-file fits of single-host logs);
  343 us (10-node all-gather) is network latency the model lacks, not a
  launch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from commsim.errors import CalibrationError

__all__ = ["PLAUSIBLE", "MachineKey", "check_one_machine", "implausible", "machine_key"]

PLAUSIBLE: dict[str, tuple[float, float]] = {
    "efficiency": (0.3, 0.95),
    "latency_scale": (1 / 3, 3.0),
    "launch_s": (0.5e-6, 30e-6),
    "ring_channel_net": (5e9, 50e9),
}
"""Plausible range of each fitted parameter (``efficiency`` covers every link efficiency)."""

_WHY = {
    "efficiency": (
        "below it the link is slower than the one modelled (check the NIC, PCIe width or network kind)",
        "above it the model's link is slower than the machine's, or NCCL uses an algorithm the model lacks",
    ),
    "latency_scale": (
        "the model's latencies are too high for this machine, or its algorithm choice is wrong",
        "latency the model lacks (a network provider, a launcher) is blamed on NCCL's tables",
    ),
    "launch_s": (
        "a kernel launch cannot be that fast: another parameter is absorbing the latency",
        "no kernel launch costs that much: network latency the model lacks is blamed on the launch",
    ),
    "ring_channel_net": (
        "the runs are degraded (public runs of 400 Gb/s NICs measure 16-22 GB/s per channel), or the log's "
        "NICs are fewer or slower than modelled",
        "the channels are not what limits these rings: the NICs or the box do",
    ),
}


@dataclass(frozen=True)
class MachineKey:
    """What makes two logs' machines the same: GPU model, board, hosts, network."""

    gpu: Any
    board: Any
    nodes: Any
    network: Any

    def differences(self, other: MachineKey) -> list[str]:
        """``["GPU model: A vs B", ...]`` for every field that differs."""
        labels = {"gpu": "GPU model", "board": "board", "nodes": "node count", "network": "network"}
        return [
            f"{label}: {getattr(self, name)} vs {getattr(other, name)}"
            for name, label in labels.items()
            if getattr(self, name) != getattr(other, name)
        ]


def machine_key(facts: Mapping[str, Any]) -> MachineKey:
    """The machine of a run from its inferred facts (``RunInference.facts``)."""

    def value(name: str) -> Any:
        fact = facts.get(name)
        return None if fact is None else fact.value

    network = value("network")
    if network is not None and value("nics_per_node") is not None:
        network = f"{value('nics_per_node')} x {network}"
    return MachineKey(value("gpu"), value("board"), value("nodes"), network)


def check_one_machine(keys: Sequence[tuple[str, MachineKey]]) -> None:
    """Raise if the logs ``(name, key)`` come from more than one machine.

    Raises
    ------
    CalibrationError
        Naming the first log, the first log of another machine, and what differs.
    """
    first_name, first = keys[0]
    for name, key in keys[1:]:
        differences = first.differences(key)
        if differences:
            raise CalibrationError(
                f"{first_name} and {name} were measured on different machines ({'; '.join(differences)}): "
                "one fit of both would describe neither; calibrate each machine on its own logs (one "
                "commsim calibrate per machine); parameters shared by every machine can be fitted only "
                "from Python, commsim.fit(..., across_machines=True)"
            )


def _family(name: str) -> str:
    return "efficiency" if "efficiency" in name else name.split(".", 1)[0]


def scaled(name: str, value: float) -> tuple[float, str]:
    """A fitted parameter's value in the unit it is shown in, and that unit's suffix: ``launch_s`` in
    microseconds, a ring channel's rate in GB/s, the rest as they are."""
    if name == "launch_s":
        return value * 1e6, " us"
    if name.startswith("ring_channel_net."):
        return value / 1e9, " GB/s"
    return value, ""


def _show(name: str, value: float) -> str:
    number, unit = scaled(name, value)
    return f"{number:.3g}{unit}"


def implausible(
    fitted: Mapping[str, tuple[float, float]], bounds: Mapping[str, tuple[float, float]]
) -> list[str]:
    """Warnings for fitted values outside :data:`PLAUSIBLE` or on their fitting bounds.

    Parameters
    ----------
    fitted : mapping
        ``{name: (value, sigma)}`` as :attr:`Calibration.fitted`.
    bounds : mapping
        ``{name: (low, high)}``: the bounds the fit kept each value in.
    """
    out = []
    for name, (value, _) in fitted.items():
        low, high = bounds[name]
        if math.isclose(value, low, rel_tol=1e-6) or math.isclose(value, high, rel_tol=1e-6):
            out.append(
                f"{name} = {_show(name, value)} ended on its bound: the logs want it beyond what the fit "
                "allows, so the model, not this parameter, is what misses them"
            )
            continue
        family = _family(name)
        plausible_low, plausible_high = PLAUSIBLE[family]
        if not plausible_low <= value <= plausible_high:
            below = value < plausible_low
            out.append(
                f"{name} = {_show(name, value)} is implausible (a real machine gives "
                f"{_show(name, plausible_low)} to {_show(name, plausible_high)}): "
                + _WHY[family][0 if below else 1]
            )
    return out
