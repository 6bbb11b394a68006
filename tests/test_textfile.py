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


def _coloured_and_web_spaced(text: str) -> str:
    """Every line wrapped in terminal colour codes (as a CI or ``kubectl`` log keeps them), with the
    runs of two spaces of a web page's copy turned into a no-break space and a space, and a zero-width
    space after each '#'."""
    lines = [f"\x1b[0;32m{line}\x1b[0m" for line in text.splitlines()]
    return "\n".join(lines).replace("  ", "\u00a0 ").replace("#", "#\u200b") + "\n"


def test_a_log_with_colour_codes_and_web_spaces_reads_as_the_plain_one(tmp_path: Path) -> None:
    """A copied log with ECMA-48 colour codes, no-break and zero-width spaces gives the same rows.

    Before, the header split into more fields than the rows ('result row has 14 fields but the column
    header announces 13') or was hidden behind the colour code ('lines start with ESC[0m').
    """
    saved = tmp_path / "log.txt"
    saved.write_text(_coloured_and_web_spaced(LOG.read_text(encoding="utf-8")), encoding="utf-8")
    assert load_nccl_tests(saved).rows == load_nccl_tests(LOG).rows


def test_a_coloured_log_keeps_what_its_nccl_info_lines_say(tmp_path: Path) -> None:
    """validate reads NCCL's INFO lines through the colour codes too.

    Outside log 201 prints ``NCCL version 2.26.2``, ``NCCL_ALGO set by environment to RING``,
    ``GDR 0`` and two hosts with one H100 each: the coloured copy must infer the same version,
    algorithm restriction, ranks and ranks per host, predict the same times and give the same verdict.
    """
    from commsim.calibrate.inference import RunOptions
    from commsim.calibrate.validate import validate_file

    log = next((Path(__file__).parent / "data" / "outside").glob("201_*.txt"))
    saved = tmp_path / log.name
    saved.write_text(_coloured_and_web_spaced(log.read_text(encoding="utf-8")), encoding="utf-8")
    facts = RunOptions(nic="roce_400g")  # its page: "Largest possible bandwidth value: 400 Gbps"
    plain, coloured = validate_file(log, options=facts), validate_file(saved, options=facts)
    assert coloured.inference.nccl_version == plain.inference.nccl_version == "2.26.2"
    assert coloured.inference.algorithms == plain.inference.algorithms == ("ring",)
    assert len(coloured.inference.ranks) == 2 and coloured.inference.per_node == 1
    assert [r.predicted_time_s for r in coloured.rows] == [r.predicted_time_s for r in plain.rows]
    assert "without GPUDirect RDMA" in coloured.verdict() and coloured.verdict() == plain.verdict()


def test_plain_text_keeps_line_breaks_and_ascii_text() -> None:
    """Line numbers must not move: only escape sequences and odd spaces change."""
    from commsim.textfile import plain_text

    text = "a\x1b[1mb\x1b[0m\n\x1b]0;title\x07c\u2009d\u200b\ne"
    assert plain_text(text) == "ab\nc d\ne"
    assert plain_text("[1,0]&lt;stdout&gt;: #  size\n") == "[1,0]<stdout>: #  size\n"
    # only references with their semicolon: a URL's '&region=' is not '\u00aeion='
    assert plain_text("&lt;x&gt; https://a.b/?c=1&region=eu\n") == "<x> https://a.b/?c=1&region=eu\n"
    ascii_log = LOG.read_text(encoding="utf-8")
    assert plain_text(ascii_log) is ascii_log


def test_escapes_with_intermediate_bytes_and_line_separators_leave_no_trace() -> None:
    """``tput sgr0`` prints ``ESC[m`` then ``ESC(B`` (designate G0 as ASCII: an escape with an intermediate
    byte); a row wrapped in it was refused as "field 13 (in-place wrong) should be a number or N/A,
    found '0\\x1b(B'". ``ESC c`` / ``ESC =`` are two-character escapes; a bare ESC before a digit or a
    space stays (it must not eat a size's first digit). A reference to a line break (``&#10;`` in a
    page's ``title``) and a raw U+2028 or form feed would start a new line for ``str.splitlines`` and
    move every later line number; they become spaces."""
    from commsim.textfile import plain_text

    assert plain_text("\x1b[1m  8  2  float\x1b(B\x1b[m 0\n") == "  8  2  float 0\n"
    assert plain_text("a\x1bcb\x1b=c\n") == "abc\n"
    # a bare ESC (a broken colour filter's leftover) takes no digit or space with it: 8388608 stays
    assert plain_text("\x1b8388608  2097152\n") == "\x1b8388608  2097152\n"
    assert plain_text("\x1b  4294967296\n") == "\x1b  4294967296\n"
    assert (
        plain_text('<pre title="run&#10;1">x\ny\u2028z\x0cw&#x2028;v\n') == '<pre title="run 1">x\ny z w v\n'
    )
    assert len(plain_text("a\u2028b\u2029c\x85d\n").splitlines()) == 1


def test_a_row_wrapped_in_tput_sgr0_codes_reads_as_the_plain_one(tmp_path: Path) -> None:
    """Every line of the development log wrapped as ``ESC[1m<line>ESC(BESC[m``: the same rows."""
    text = LOG.read_text(encoding="utf-8")
    saved = tmp_path / "log.txt"
    saved.write_text("".join(f"\x1b[1m{line}\x1b(B\x1b[m\n" for line in text.splitlines()), encoding="utf-8")
    assert load_nccl_tests(saved).rows == load_nccl_tests(LOG).rows


def test_a_tag_output_log_copied_from_a_pages_source_reads_as_the_plain_one(tmp_path: Path) -> None:
    """mpirun --tag-output prefixes every line with ``[1,0]<stdout>:``; in a page's HTML source it is
    ``[1,0]&lt;stdout&gt;:``, which hid every table of outside 51 (2 x 8 H100, EFA) behind an unknown
    prefix. Decoded, its 32 rows read as from the file itself."""
    log = next((Path(__file__).parent / "data" / "outside").glob("51_*.txt"))
    text = log.read_text(encoding="utf-8")
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    assert "&lt;stdout&gt;" in escaped
    saved = tmp_path / log.name
    saved.write_text(escaped, encoding="utf-8")
    rows = load_nccl_tests(saved).rows
    assert len(rows) == 32 and rows == load_nccl_tests(log).rows


def test_an_xml_files_character_references_are_left_to_its_parser(tmp_path: Path) -> None:
    """An XML dump whose attributes escape '&' and '<' (``R&amp;D``, ``a &lt; b``) reads with those
    values: decoding the references before the XML parser (as for a log copied from a page's source)
    would leave a bare '&' and '<' in the attributes, which is not XML."""
    from commsim.interop.xmlread import read_xml_file

    path = tmp_path / "topo.xml"
    path.write_text('<system version="1">\n  <cpu host="R&amp;D" note="a &lt; b"/>\n</system>\n')
    cpu = read_xml_file(path, "NCCL topology dump").children[0]
    assert (cpu.attrs["host"], cpu.attrs["note"], cpu.line) == ("R&D", "a < b", 2)
