"""The verdict's disturbed-row notes keep the three worst rows, not the three smallest.

A row more than 1.5x slower than the next larger size is a disturbed measurement (nccl-tests'
time grows with size). Outside probe 10's log 180 (4 x 2 A100 over HDR) has four: 16 B (1.9x the
64 B row), 256 B (1.7x), 64 KiB (1.8x) and 1 MiB (1.473 ms against 402.7 us at 4 MiB: 3.7x). The
notes stopped at the first three, leaving out the largest disturbance.
"""

from __future__ import annotations

from commsim.calibrate.parser import parse_nccl_tests
from commsim.calibrate.verdict_causes import non_monotone

HEADER = """#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)
"""  # noqa: E501


def _table(times_us: dict[int, float]) -> str:
    rows = [
        f"{n:>12} {n // 4:>12}     float     sum      -1  {t:8.2f}  0.00  0.00  0  {t:8.2f}  0.00  0.00  0"
        for n, t in times_us.items()
    ]
    return HEADER + "\n".join(rows) + "\n"


def test_the_worst_three_are_kept_in_size_order_and_the_rest_counted() -> None:
    """Ratios 1.9 (16 B), 1.7 (256 B), 1.8 (64 KiB), 3.7 (1 MiB): 256 B (the mildest) is left out
    and counted; the others are said smallest first."""
    times = {16: 151.3, 64: 79.6, 256: 138.0, 1024: 81.2, 65536: 150.2, 262144: 83.4}
    times |= {1 << 20: 1473.0, 4 << 20: 398.1}
    log = parse_nccl_tests(_table(times), "180.txt", collective="all_reduce", n_ranks=8)
    notes = non_monotone(log.rows, 8, large_only=False)
    assert [note.split(" row ")[0] for note in notes] == ["the 16 B", "the 64 KiB", "the 1 MiB"]
    assert "is 3.7x slower than the larger 4 MiB one" in notes[2]
    assert notes[2].endswith("(1 more row slower than the next larger size)")


def test_three_or_fewer_are_all_said_with_no_count() -> None:
    times = {16: 151.3, 64: 79.6, 256: 80.0, 1024: 81.2}
    log = parse_nccl_tests(_table(times), "x.txt", collective="all_reduce", n_ranks=8)
    notes = non_monotone(log.rows, 8, large_only=False)
    assert len(notes) == 1 and "more row" not in notes[0]
    assert notes[0].startswith("the 16 B row (line 3, out-of-place) is 1.9x slower than the larger 64 B one")


def test_a_huge_ratio_is_said_in_three_significant_digits() -> None:
    """A 16 B row of 12,345,678.00 us against 5.00 us at 64 B is 2,469,135.6x slower: said as
    '2.47e+06x', not as a long integer (a corrupt 1e300 us row printed 400 digits, review 27)."""
    times = {16: 12345678.0, 64: 5.0, 256: 5.1}
    log = parse_nccl_tests(_table(times), "x.txt", collective="all_reduce", n_ranks=8)
    notes = non_monotone(log.rows, 8, large_only=False)
    assert "is 2.47e+06x slower than the larger 64 B one" in notes[0]
