"""What every link did over time, as the engine reports it, for traces and plots.

:func:`link_profiles` replays the run's schedule once more with a
:class:`~commsim.engine.LinkActivity` recorder attached: the engine itself
reports, at every instant a link's state changes, how many flows cross it
and how many bytes per second they use. Nothing is re-solved or averaged,
so a profile is exactly what the replay did (the replay is deterministic:
the same schedule on the same topology gives the same events), whatever the
sharing policy, multipath or connection order. Bytes are conserved: the
binned utilisation of a link sums to its recorded ``link_bytes``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from commsim.engine import LinkActivity, ReplayRecord, reduction_delays_s, replay
from commsim.errors import CommsimError
from commsim.results import Result
from commsim.schedule import Schedule
from commsim.topology.model import Topology

__all__ = ["LinkProfile", "Run", "binned_utilisation", "flow_end_s", "link_profiles", "run_parts"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@dataclass(frozen=True)
class Run:
    """The parts of a :class:`Result` that renderings need, checked to be present."""

    result: Result
    record: ReplayRecord
    schedule: Schedule
    topology: Topology


def run_parts(result: Result) -> Run:
    """The record, schedule and topology of ``result``.

    Raises
    ------
    CommsimError
        If the result was built without them (e.g. read back from JSON).
    """
    if result.record is None or result.schedule is None or result.topology_obj is None:
        raise CommsimError(
            f"result {result.label!r} has no replay record; traces and timelines need a Result "
            "from commsim.api.simulate or run_scenario"
        )
    return Run(result, result.record, result.schedule, result.topology_obj)


def flow_end_s(run: Run) -> FloatArray:
    """Per send: when its last byte arrived (its completion minus the engine's reduction time)."""
    return run.record.op_end_s - reduction_delays_s(run.schedule, run.topology)


@dataclass(frozen=True)
class LinkProfile:
    """One link's load as a step function of time.

    From ``times_s[k]`` until the next time, ``flows[k]`` flows crossed the
    link and used ``load[k]`` of its capacity. Only instants where the state
    changes are kept; the last step always has no flows.
    """

    link: int
    times_s: FloatArray
    flows: IntArray
    load: FloatArray


def link_profiles(run: Run, links: IntArray | None = None, exact: bool | None = None) -> list[LinkProfile]:
    """The load profile of every link that carried data (or of ``links``), in link order.

    Parameters
    ----------
    run : Run
    links : int array, optional
        Link indices (default: every link with bytes).
    exact : bool, optional
        Ignored: profiles are always what the engine reported (kept so
        older callers still work).
    """
    del exact
    wanted = np.flatnonzero(run.record.link_bytes > 0) if links is None else np.asarray(links, np.int64)
    if not wanted.size or not (run.record.link_bytes[wanted] > 0).any():
        return []
    activity = LinkActivity(wanted)
    replay(run.schedule, run.topology, recorder=activity)
    link, time, count, load_Bps = activity.states()
    capacity = np.array([lk.bandwidth_Bps for lk in run.topology.links])
    load = np.round(load_Bps / capacity[link], 12)  # drop the sums' rounding noise
    changed = np.ones(link.size, dtype=bool)
    changed[1:] = (link[1:] != link[:-1]) | (count[1:] != count[:-1]) | (load[1:] != load[:-1])
    link, time, count, load = link[changed], time[changed], count[changed], load[changed]
    bounds = np.flatnonzero(np.diff(link)) + 1
    return [
        LinkProfile(int(link[a]), time[a:b], count[a:b], load[a:b])
        for a, b in zip(
            np.concatenate([[0], bounds]).tolist(), np.concatenate([bounds, [link.size]]).tolist()
        )
    ]


def binned_utilisation(run: Run, links: IntArray, edges_s: FloatArray) -> FloatArray:
    """Share of capacity each link used in each time bin: ``(len(links), len(edges_s) - 1)``.

    The bytes a link carried in a bin, divided by what it could carry in it
    (capacity times bin width), from :func:`link_profiles`.
    """
    capacity = np.array([run.topology.links[i].bandwidth_Bps for i in links.tolist()])
    carried = np.zeros((links.size, edges_s.size))
    row_of = {int(lk): i for i, lk in enumerate(links.tolist())}
    for profile in link_profiles(run, links):
        load_Bps = profile.load * capacity[row_of[profile.link]]
        cumulative = np.concatenate([[0.0], np.cumsum(load_Bps[:-1] * np.diff(profile.times_s))])
        carried[row_of[profile.link]] = np.interp(edges_s, profile.times_s, cumulative)
    widths = np.diff(edges_s)
    return np.diff(carried, axis=1) / (capacity[:, None] * widths[None, :])
