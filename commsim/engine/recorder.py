"""Observers of a replay: what the engine did, event by event.

Pass a :class:`Recorder` to :func:`commsim.engine.replay` to be told, at
every instant something changes, which flows started and ended, the new
rates of the flows whose rates were re-shared, and the state of every link
whose state changed (flows crossing it and the bytes per second they use).
Traces, timelines and heat maps read these instead of re-solving the rates.
Every hook of the base class does nothing; override the ones you need.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["LinkActivity", "Recorder"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


class Recorder:
    """Base observer of a replay; every hook does nothing.

    Times are simulated seconds. ``ops`` name sends (a send sprayed over
    several routes has one flow per route, so an op can appear several
    times in one call). Arrays are the engine's: copy what you keep.
    """

    def flows_started(self, time_s: float, ops: IntArray) -> None:
        """Flows of these sends started to move bytes (after their path latency)."""

    def flows_ended(self, time_s: float, ops: IntArray) -> None:
        """Flows of these sends delivered their last byte."""

    def rates_changed(self, time_s: float, ops: IntArray, rates_Bps: FloatArray) -> None:
        """These flows were re-shared and now move at ``rates_Bps`` (until the next call naming them)."""

    def links_changed(self, time_s: float, links: IntArray, flows: IntArray, load_Bps: FloatArray) -> None:
        """From now on, link ``links[k]`` carries ``flows[k]`` flows using ``load_Bps[k]`` bytes/s."""


class LinkActivity(Recorder):
    """Collects every link's state changes: (link, time, flows, load) rows.

    Parameters
    ----------
    links : int array, optional
        Keep only these links (default all).
    """

    def __init__(self, links: IntArray | None = None) -> None:
        self.links = None if links is None else np.asarray(links, np.int64)
        self._rows: list[tuple[IntArray, FloatArray, IntArray, FloatArray]] = []

    def links_changed(self, time_s: float, links: IntArray, flows: IntArray, load_Bps: FloatArray) -> None:
        if self.links is not None:
            keep = np.isin(links, self.links)
            links, flows, load_Bps = links[keep], flows[keep], load_Bps[keep]
        if links.size:
            self._rows.append((links.copy(), np.full(links.size, time_s), flows.copy(), load_Bps.copy()))

    def states(self) -> tuple[IntArray, FloatArray, IntArray, FloatArray]:
        """(link, time, flows, load_Bps) rows sorted by link then time; at one instant, the last state."""
        if not self._rows:
            empty = np.empty(0, np.int64)
            return empty, np.empty(0), empty, np.empty(0)
        link, time, flows, load = (np.concatenate(c) for c in zip(*self._rows))
        order = np.lexsort((np.arange(link.size), time, link))
        link, time, flows, load = link[order], time[order], flows[order], load[order]
        last = np.ones(link.size, dtype=bool)
        last[:-1] = (link[1:] != link[:-1]) | (time[1:] != time[:-1])
        return link[last], time[last], flows[last], load[last]
