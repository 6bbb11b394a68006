"""Another choice of NCCL's that fits a run the model's choice misses.

NCCL picks an algorithm and protocol per size from its own cost tables, and
users force them (``NCCL_ALGO``, ``NCCL_PROTO``) in ways a pasted table does
not show: a launcher's environment, a site default, a tuner plugin. When the
model's choice misses a run by far at the sizes the verdict judges while
another candidate NCCL could have run (the same machine, the same forced
settings) matches it, the likely story is the choice, not the machine: a DGX-1
pair over 2 x 100G RoCE on NCCL 2.5.6 (outside probe 8, log 134, a page that
calls it a "ring test") measures 22.9 GB/s busbw at 2 GiB where the model's
tree gives 42.0 and NCCL's ring 22.4.

The verdict says so as a possibility, never as a cause the log shows.
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING

from commsim.calibrate.validate import BANDWIDTH_BOUND_BYTES
from commsim.calibrate.verdict_causes import large_indices

if TYPE_CHECKING:
    from commsim.calibrate.validate import Validation

__all__ = ["FITS", "other_choice"]

FITS = 0.10
"""Median |time error| at the judged sizes within which another candidate is said to fit.

The model's own expected miss at >= 64 MiB on machines it never saw is 9-11 %
(docs/validation.md, leave-one-machine-out and outside logs); a candidate that
fits closer than that is as good an account of the run as the model can give.
"""


def other_choice(validation: Validation) -> str | None:
    """A sentence naming another NCCL choice that fits the judged sizes, or None.

    Over the sizes the verdict's ratio is taken at, each (algorithm, protocol)
    NCCL could have run at every one of them is scored by its median |time error|;
    the best is named when it is within :data:`FITS`, no judged size misses by more
    than twice that (the candidate fits the run's shape, not only its median), and
    the model's choice misses by more than twice as much. A choice the run forced
    (``NCCL_ALGO``/``NCCL_PROTO`` in the log) leaves no other candidate, so nothing
    is said.

    LL is not offered at bandwidth-bound sizes (>= 64 MiB): it sends half its bytes
    as flags, so NCCL's tuning never picks it there and only ``NCCL_PROTO=LL``
    would; a run that slow is far more often a slow machine, and LL's halved
    bandwidth would "fit" any run about half as fast as the model (outside logs 09
    and 22: 4 RTX 4090 in Docker at 0.17x, 2 A100 PCIe with the NIC across sockets
    at 0.29x).
    """
    rows = validation.rows
    judged = [rows[i] for i in large_indices(r.nbytes for r in rows)]
    if not judged or any(not r.alternatives for r in judged):
        return None
    chosen = statistics.median(abs(r.error) for r in judged)
    chosen_names = {f"{r.algorithm}/{r.protocol}" for r in judged}
    scores: dict[str, list[float]] = {}
    bandwidth_bound = all(r.nbytes >= BANDWIDTH_BOUND_BYTES for r in judged)
    for row in judged:
        for algorithm, protocol, time_s in row.alternatives:
            if bandwidth_bound and protocol == "LL":
                continue
            scores.setdefault(f"{algorithm}/{protocol}", []).append(abs(time_s / row.measured_time_s - 1))
    complete = {
        name: statistics.median(errors)
        for name, errors in scores.items()
        if len(errors) == len(judged) and name not in chosen_names and max(errors) <= 2 * FITS
    }
    if not complete:
        return None
    name, best = min(complete.items(), key=lambda item: (item[1], item[0]))
    if best > FITS or chosen <= 2 * best:
        return None
    model = " and ".join(sorted(chosen_names))
    return (
        f"{name} would take the measured times within {best:.0%} there, where the model's choice "
        f"({model}, as NCCL's own tuning picks it) misses by {chosen:.0%}: NCCL_ALGO or NCCL_PROTO set "
        "outside the log, a tuner plugin, or another NCCL release's choice would explain the run"
    )
