"""The verifier checks schedules (data): it stands beside the schedule layer, not on the engine."""

from __future__ import annotations

import subprocess
import sys


def test_checking_a_schedule_does_not_load_the_engine_or_simpy() -> None:
    """``commsim.verify`` (imported by every ``Schedule.verify``) needs ``sorted_unique``, which the
    schedule's path tables hold; taking it from ``commsim.engine.arrays`` loaded the whole engine and
    simpy with it (d890ad2), which only ``engine/`` imports."""
    code = "import sys, commsim.verify; print([m for m in ('simpy', 'commsim.engine') if m in sys.modules])"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
