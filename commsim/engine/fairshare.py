"""Max-min fair sharing of directed links among flows (progressive filling).

Flows are described in CSR form: flow ``f`` crosses the links
``entry_link[entry_ptr[f]:entry_ptr[f+1]]``. All flows' rates rise together;
when a link fills, the flows crossing it freeze at its fair share and the
rest keep rising (Bertsekas & Gallager, *Data Networks*, section 6.5.2). A
flow held back by a link elsewhere thus leaves its unused share to the
others. The loop runs once per distinct bottleneck level, vectorised over
all flows.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
from numpy.typing import NDArray

__all__ = ["MaxMinFair", "SharingPolicy", "max_min_rates"]

_REL_TOL = 1e-12


def max_min_rates(
    entry_flow: NDArray[np.int64],
    entry_link: NDArray[np.int64],
    n_flows: int,
    capacity_Bps: NDArray[np.float64],
) -> NDArray[np.float64]:
    """Max-min fair rates of ``n_flows`` flows over links of given capacity.

    Parameters
    ----------
    entry_flow, entry_link : int arrays of equal length
        One entry per (flow, link) crossing; every flow crosses at least one
        link, and no link twice.
    n_flows : int
        Number of flows; flow ids are ``0..n_flows-1``.
    capacity_Bps : float array
        Capacity of every link, bytes per second (only links named by
        entries matter).

    Returns
    -------
    numpy.ndarray
        Rate of each flow in bytes per second.
    """
    rates = np.zeros(n_flows)
    if n_flows == 0:
        return rates
    # Work on the links the flows use only, renumbered 0..L-1 when the
    # topology has many more links than the flows cross (same arithmetic
    # per link, so the same rates to the last bit).
    if capacity_Bps.size > 8 * entry_link.size + 64:
        link_ids, live_link = np.unique(entry_link, return_inverse=True)
        remaining = capacity_Bps[link_ids].astype(np.float64)
        live_link = live_link.reshape(-1)
    else:
        remaining = capacity_Bps.astype(np.float64)  # a copy
        live_link = entry_link
    n_links = remaining.size
    live_flow = entry_flow
    # Every round freezes the flows crossing the links that fill first; the
    # entries (flow, link) of frozen flows leave the live set.
    while live_flow.size:
        users = np.bincount(live_link, minlength=n_links)
        used = users.nonzero()[0]
        share = remaining[used] / users[used]
        level = share.min()
        is_full = np.zeros(n_links, dtype=bool)
        is_full[used[share <= level * (1 + _REL_TOL)]] = True
        newly = np.zeros(n_flows, dtype=bool)
        newly[live_flow[is_full[live_link]]] = True
        rates[newly] = level
        taking = newly[live_flow]
        remaining -= np.bincount(live_link[taking], minlength=n_links) * level
        np.maximum(remaining, 0.0, out=remaining)
        rest = ~taking
        live_flow, live_link = live_flow[rest], live_link[rest]
    return rates


class SharingPolicy(Protocol):
    """How concurrent flows share links: one object, replaceable (``replay(..., sharing=)``)."""

    def rates(
        self,
        entry_flow: NDArray[np.int64],
        entry_link: NDArray[np.int64],
        n_flows: int,
        capacity_Bps: NDArray[np.float64],
    ) -> NDArray[np.float64]:
        """Rate of each flow (bytes/s), same arguments as :func:`max_min_rates`."""
        ...


class MaxMinFair:
    """The default policy: max-min fair sharing by progressive filling (:func:`max_min_rates`)."""

    def rates(
        self,
        entry_flow: NDArray[np.int64],
        entry_link: NDArray[np.int64],
        n_flows: int,
        capacity_Bps: NDArray[np.float64],
    ) -> NDArray[np.float64]:
        """See :func:`max_min_rates`."""
        return max_min_rates(entry_flow, entry_link, n_flows, capacity_Bps)
