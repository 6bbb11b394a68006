"""commsim: predict and explain the time of collective communication on GPU machines.

The short API::

    import commsim
    r = commsim.simulate(topology="dgx1_v100", algorithm="multi_ring",
                         collective="all_reduce", size="160 MB")
    r.time_s, r.busbw_Bps, r.bottleneck, r.link_utilisation
    r.plot_timeline("timeline.png")

``simulate`` and ``run_scenario`` are imported on first use, so importing
``commsim`` (and starting the CLI) stays cheap.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["__version__", "run_scenario", "simulate"]


def __getattr__(name: str) -> Any:
    if name in ("simulate", "run_scenario"):
        from commsim import api

        return getattr(api, name)
    raise AttributeError(f"module 'commsim' has no attribute {name!r}")
