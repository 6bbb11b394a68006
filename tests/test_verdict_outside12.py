"""Public nccl-tests logs of out-of-sample probe 12 (notes/outside12) whose verdict or inference misled.

Each test holds a real excerpt inline (the probe's file number and source in the comment above it)
and asserts what the verdict or the inferred fact says about the run.
"""

from __future__ import annotations

from pathlib import Path

from commsim.calibrate.validate import validate_file
from commsim.calibrate.verdict import judge

# 224: NVIDIA/nccl issue #258 (2019-10-21 comment): `mpirun -np 1 ./build/all_reduce_perf -b 8 -e 128M
# -f 2 -g 4` on 4 x V100-SXM3-32GB, posted as inline code (a backtick before '# Using devices'); the
# issue's excerpt ends inside the 128 B row's last field ('3e' of an error like '3e-08').
LAST_FIELD_CUT = """\
`# Using devices
#   Rank  0 Pid  71327 on 51e6e7896958 device  0 [0x1a] Tesla V100-SXM3-32GB
#   Rank  1 Pid  71327 on 51e6e7896958 device  1 [0x1b] Tesla V100-SXM3-32GB
#   Rank  2 Pid  71327 on 51e6e7896958 device  2 [0x1c] Tesla V100-SXM3-32GB
#   Rank  3 Pid  71327 on 51e6e7896958 device  3 [0x1e] Tesla V100-SXM3-32GB
#
#                                                     out-of-place                       in-place
#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2   float     sum    158.3    0.00    0.00  1e-07    158.4    0.00    0.00  0e+00
          64            16   float     sum    159.3    0.00    0.00  3e-08    278.1    0.00    0.00  3e-08
         128            32   float     sum    427.0    0.00    0.00  3e-08    158.6    0.00    0.00  3e
"""


def test_tiny_sizes_measured_apart_in_and_out_of_place_do_not_make_a_run_doubtful(tmp_path: Path) -> None:
    """224: 4 x V100-SXM3 at 8-128 B, the 64 B row 159.3 us out of place and 278.1 in place, the
    128 B row 427.0 us (its in-place half cut): judged "doubtful run: in-place and out-of-place times
    differ by a median 1.7x at large sizes", of a table whose largest size is 128 B. Below the
    bandwidth-bound sizes a call's time is fixed cost and jitters (the rule repeated sizes already
    follow), so the in-place comparison now needs a size >= 64 MiB and the run is judged on its
    times."""
    path = tmp_path / "v100_sxm3_small.txt"
    path.write_text(LAST_FIELD_CUT)
    verdict = judge(validate_file(path, collective="all_reduce"))
    assert verdict.kind != "doubtful"
    assert "in-place and out-of-place" not in verdict.text


def test_a_launch_read_from_the_command_says_so(tmp_path: Path) -> None:
    """224 has no run header; its '-g 4' comes from the command in the prose above the list
    (`mpirun -np 1 ./build/all_reduce_perf ... -g 4`). The launch fact read "threads, 4 GPU(s) per
    thread (assumed: one GPU per process assumed)", contradicting itself; the note now says where
    the 4 comes from."""
    text = "mpirun -np 1 ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 4\n" + LAST_FIELD_CUT
    path = tmp_path / "v100_sxm3_g4.txt"
    path.write_text(text)
    fact = validate_file(path, collective="all_reduce").inference.facts["launch"]
    assert fact.value == "threads, 4 GPU(s) per thread"
    assert fact.note == "no run header; -g 4 read from the nccl-tests command line, one thread assumed"
