"""The simulation engine: the only package that imports simpy."""

from commsim.engine.fairshare import MaxMinFair, SharingPolicy, max_min_rates
from commsim.engine.recorder import LinkActivity, Recorder
from commsim.engine.replay import ReplayRecord, reduction_delays_s, replay

__all__ = [
    "LinkActivity",
    "MaxMinFair",
    "Recorder",
    "ReplayRecord",
    "SharingPolicy",
    "max_min_rates",
    "reduction_delays_s",
    "replay",
]
