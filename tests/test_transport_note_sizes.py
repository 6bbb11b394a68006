"""The note on a network transport's unknown per-step overhead points at the sizes it matters for only
when the log has them.

The note says the model prices the transport's network steps with NCCL's InfiniBand table and that
"sizes below 64 KiB rest on it". Outside log 246 (2 OCI MI300X nodes over 8 RoCE NICs) holds only 1 to
16 GiB rows: the note there says the log has no such size instead of pointing at sizes it lacks.
"""

from __future__ import annotations

from pathlib import Path

from commsim.calibrate.defaults import transport_note
from commsim.calibrate.inference import RunOptions
from commsim.calibrate.validate import validate_file
from commsim.nccl.params import NcclParams

OUTSIDE = Path(__file__).parent / "data" / "outside"


def test_the_roce_note_of_a_log_without_small_sizes_says_so() -> None:
    """246: every row is 1 GiB or more; its RoCE note must not claim sizes below 64 KiB rest on it."""
    log = next(OUTSIDE.glob("246_*.txt"))
    facts = RunOptions(gpu="MI300X", nodes=2, gpus_per_node=8, nic="roce_400g", nics_per_node=8)
    validation = validate_file(log, options=facts)
    assert min(r.nbytes for r in validation.rows) >= 2**30
    (note,) = [n for n in validation.notes() if "roce transport" in n]
    assert "this log has no size below 64 KiB" in note and "sizes below 64 KiB rest on it" not in note


def test_the_note_points_at_small_sizes_by_default() -> None:
    """Without word of the log's sizes, the note says the sizes below 64 KiB rest on the overhead."""
    note = transport_note("roce", NcclParams())
    assert note is not None and "sizes below 64 KiB rest on it" in note
    assert "no size below" in (transport_note("roce", NcclParams(), small_sizes=False) or "")
