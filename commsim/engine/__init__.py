"""The simulation engine: the only package that imports simpy."""

from commsim.engine.fairshare import max_min_rates
from commsim.engine.replay import ReplayRecord, replay

__all__ = ["ReplayRecord", "max_min_rates", "replay"]
