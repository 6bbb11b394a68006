# ruff: noqa: E501  (the log is quoted as nccl-tests prints it)
"""A one-GPU copy faster than the GPU's memory can move it measured the cache, not the model's figures.

Outside probe 9's log 159 (NixOS/nixpkgs PR 251856): one GeForce RTX 4090, all_gather of 32 MiB
out of place in 18.48 us. One rank's call is a device-to-device copy: 32 MiB read and 32 MiB
written, which through the 4090's 1.008 TB/s GDDR6X takes at least 2 x 33554432 B / 1.008e12 B/s
= 66.6 us; 33554432 B / 18.48 us = 1.82 TB/s is only possible with both buffers in its 72 MB L2.
The verdict said "the model's figures for this machine are too low"; it now says the run stayed in
cache. Also: where the verdict's ratio was taken, worded for logs of one or few sizes.
"""

from __future__ import annotations

from types import SimpleNamespace

from commsim.calibrate.parser import parse_nccl_tests
from commsim.calibrate.validate import validate_log
from commsim.calibrate.verdict import size_phrase
from commsim.calibrate.verdict_latency import cache_resident

RTX4090_159 = """Running /nix/store/6v92dmg26nf71b46b20q4664b3d9y08i-nccl-tests-2.13.6/bin/all_gather_perf
# nThread 1 nGpus 1 minBytes 33554432 maxBytes 33554432 step: 1048576(bytes) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid 272738 on nixos-desktop device  0 [0x01] NVIDIA GeForce RTX 4090
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
    33554432       8388608     float    none      -1    18.48  1816.16    0.00      0     0.05  619657.10    0.00      0
# Out of bounds values : 0 OK
"""


def _validation(text: str):  # type: ignore[no-untyped-def]
    return validate_log(parse_nccl_tests(text, "159.txt"), text)


def test_a_copy_faster_than_memory_is_said_to_be_cache_resident() -> None:
    """1.82 TB/s (33554432 B / 18.48 us) against the 4090's 1.008 TB/s shared by read and write
    (0.504 TB/s of copy): the verdict names the cache, not the model's figures."""
    verdict = _validation(RTX4090_159).verdict()
    assert (
        "x faster than the model expects at its one size (32 MiB): 32 MiB copied in 18.48 us is "
        "1.82 TB/s, more than the GeForce RTX 4090's memory can copy (1.01 TB/s shared by the read and "
        "the write: 0.504 TB/s), so the buffers stayed in its cache"
    ) in verdict
    assert "figures for this machine are too low" not in verdict


def test_a_copy_within_memory_speed_is_no_cache_case() -> None:
    """1 GiB in 2.5 ms is 0.43 TB/s, below the 0.504 TB/s a copy through the 4090's memory allows."""
    text = RTX4090_159.replace(
        "    33554432       8388608     float    none      -1    18.48  1816.16    0.00      0     0.05  619657.10    0.00      0",
        "  1073741824     268435456     float    none      -1   2500.0   429.50    0.00      0   2500.0   429.50    0.00      0",
    )
    assert cache_resident(_validation(text)) is None


def test_several_ranks_are_never_a_cache_case() -> None:
    """Two ranks talk over a link: the copy bound of one GPU does not apply."""
    two = SimpleNamespace(inference=SimpleNamespace(ranks=("gpu0", "gpu1"), facts={}), rows=[])
    assert cache_resident(two) is None  # type: ignore[arg-type]


def _rows(*sizes: int) -> SimpleNamespace:
    return SimpleNamespace(rows=[SimpleNamespace(nbytes=n) for n in sizes])


def test_size_phrase_says_how_many_sizes_the_ratio_rests_on() -> None:
    """One size, up to three sizes (all of them), more small sizes, one and several >= 64 MiB, and
    the one size the ratio's rows (the last three when none is >= 64 MiB) share."""
    mib = 1 << 20
    assert size_phrase(_rows(8)) == "at its one size (8 B)"  # type: ignore[arg-type]
    assert size_phrase(_rows(8, 16, 64)) == "at every size it has (8 B - 64 B)"  # type: ignore[arg-type]
    assert size_phrase(_rows(8, 16, 32, 1024)) == "at its largest sizes (up to 1 KiB)"  # type: ignore[arg-type]
    assert size_phrase(_rows(mib, 32 * mib, 64 * mib)) == "at its one large size (64 MiB)"  # type: ignore[arg-type]
    assert size_phrase(_rows(mib, 64 * mib, 128 * mib)) == "at large sizes"  # type: ignore[arg-type]
    # the ratio takes the three last rows: here all of one size measured again (review)
    repeated = _rows(1024, 2048, 4096, 4096, 4096)
    assert size_phrase(repeated) == "at its largest size (4 KiB)"  # type: ignore[arg-type]


def test_a_copy_too_large_for_any_cache_is_said_not_to_have_copied() -> None:
    """128 MiB in 20 us on the 4090 is 6.71 TB/s; its two buffers (268 MB) exceed the largest GPU
    cache (the MI300X's 256 MB Infinity Cache), so no cache explains it: the call did not copy."""
    text = RTX4090_159.replace(
        "    33554432       8388608     float    none      -1    18.48  1816.16",
        "   134217728      33554432     float    none      -1    20.00  6710.89",
    )
    verdict = _validation(text).verdict()
    assert "128 MiB copied in 20 us is 6.71 TB/s" in verdict
    assert "larger than any GPU's cache: the call did not copy what it reports" in verdict


def test_no_cache_case_when_the_memory_bandwidth_is_assumed() -> None:
    """A GPU the catalogue has no memory figure for is priced with the H100's 3.35 TB/s, an
    assumption: no verdict may call that the GPU's memory."""
    validation = _validation(RTX4090_159)
    facts = dict(validation.inference.facts)
    memory = facts["memory_bandwidth"]
    facts["memory_bandwidth"] = type(memory)(memory.name, memory.value, memory.evidence, assumed=True)
    inference = SimpleNamespace(ranks=validation.inference.ranks, facts=facts)
    assumed = SimpleNamespace(inference=inference, rows=validation.rows)
    assert cache_resident(validation) is not None
    assert cache_resident(assumed) is None  # type: ignore[arg-type]
