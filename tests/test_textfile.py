"""Text files in the encodings tools write: UTF-8 (with or without BOM), UTF-16 with BOM; binary refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from commsim.calibrate.parser import load_nccl_tests
from commsim.errors import ParseError
from commsim.textfile import decode_text

LOG = Path(__file__).parent / "data" / "nccl-tests" / "H100-SXM-HGX_all_gather_8gpu_1.txt"


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-16-be", "utf-32"])
def test_a_log_saved_with_a_byte_order_mark_reads_as_the_utf8_one(tmp_path: Path, encoding: str) -> None:
    """PowerShell's `>` writes UTF-16 with a BOM: the rows read are the same as from the UTF-8 file."""
    text = LOG.read_text(encoding="utf-8")
    data = text.encode(encoding)
    if encoding == "utf-16-be":
        data = b"\xfe\xff" + data
    saved = tmp_path / "log.txt"
    saved.write_bytes(data)
    assert load_nccl_tests(saved).rows == load_nccl_tests(LOG).rows


def test_binary_bytes_are_refused_at_the_line_of_the_first_nul() -> None:
    """Two text lines, then a NUL on line 3: refused there, with what to do."""
    with pytest.raises(ParseError, match=r"NUL bytes.*save it as UTF-8") as info:
        decode_text(b"# nThread 1\n# size\nab\x00cd", "x.txt")
    assert info.value.line == 3


def test_a_stray_latin1_byte_is_replaced_not_fatal() -> None:
    """One non-UTF-8 byte in an INFO line must not refuse a whole log: it becomes U+FFFD."""
    assert decode_text(b"host-\xe9:1 NCCL INFO x\n") == "host-\ufffd:1 NCCL INFO x\n"
