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

import numpy as np
from numpy.typing import NDArray

__all__ = ["max_min_rates"]

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
    n_links = capacity_Bps.size
    remaining = capacity_Bps.astype(np.float64).copy()
    live_entry = np.ones(entry_flow.size, dtype=bool)
    frozen = np.zeros(n_flows, dtype=bool)
    while live_entry.any():
        links_live = entry_link[live_entry]
        users = np.bincount(links_live, minlength=n_links)
        used = users > 0
        share = np.full(n_links, np.inf)
        share[used] = remaining[used] / users[used]
        level = share.min()
        full = used & (share <= level * (1 + _REL_TOL))
        newly = np.unique(entry_flow[live_entry & full[entry_link]])
        rates[newly] = level
        frozen[newly] = True
        taking = live_entry & frozen[entry_flow]
        remaining -= np.bincount(entry_link[taking], minlength=n_links) * level
        np.maximum(remaining, 0.0, out=remaining)
        live_entry &= ~frozen[entry_flow]
    return rates
