"""A text log as runs: where each run begins and ends, each read, what a later run takes from earlier.

A log may hold several runs (scripts that loop over tests, node counts or
datatypes): a new run starts at a run header (``# nThread``) or a column
header that follows result rows; :func:`split_runs` finds them. Each run's
lines are read by :class:`~commsim.calibrate.parser_text.TextReader`.
"""

from __future__ import annotations

from commsim.calibrate.parser import find_program
from commsim.calibrate.parser_command import find_command, root_prompt
from commsim.calibrate.parser_common import RunData
from commsim.calibrate.parser_lines import CleanText, find_topo_matrix
from commsim.calibrate.parser_run_lines import NCCL_LOG, RUN_HEADER, TABLE_END, is_column_header
from commsim.calibrate.parser_table import looks_like_row
from commsim.calibrate.parser_text import TextReader
from commsim.calibrate.settings import inherit_settings, read_settings

__all__ = ["read_text_runs", "split_runs"]


def split_runs(lines: list[str]) -> list[tuple[int, int]]:
    """The runs of a log as ``(start, end)`` slices of ``lines`` (0-based, end exclusive).

    A run starts at a run header or column header that follows result rows;
    the lines between the previous run's last row or footer and that header
    (the command, ``# Collective test starting: ...``) belong to the new run.
    """
    starts, rows_seen, last_table, layout_seen = [0], False, -1, False
    for index, line in enumerate(lines):
        text = line.strip()
        if not text or NCCL_LOG.match(text):
            continue
        header = is_column_header(text)
        if header or RUN_HEADER.match(text):
            if rows_seen:
                starts.append(last_table + 1)
                rows_seen = False
            layout_seen = layout_seen or header
        elif TABLE_END.match(text):
            last_table = index if rows_seen else last_table
        elif layout_seen and not text.startswith("#") and looks_like_row(text.split()):
            rows_seen, last_table = True, index
    return list(zip(starts, [*starts[1:], len(lines)], strict=True))


def read_text_runs(text: CleanText, source: str | None) -> list[RunData]:
    """Read the cleaned text of an nccl-tests log: one RunData per run, in file order."""
    runs: list[RunData] = []
    for start, end in split_runs(text.lines):
        data = _read_segment(text, start, end, source)
        if runs:
            _inherit(data, runs[-1], text.lines[:start])
        runs.append(data)
    return _without_empty_runs(runs)


def _without_empty_runs(runs: list[RunData]) -> list[RunData]:
    """Drop runs without result rows (killed at start) when others have rows; their neighbour says so."""
    kept = [data for data in runs if data.rows]
    if not kept or len(kept) == len(runs):
        return runs
    for data in runs:
        if not data.rows:
            earlier = [k for k in kept if (k.first_line or 0) < (data.first_line or 0)]
            neighbour = earlier[-1] if earlier else kept[0]
            neighbour.warnings.append(
                f"lines {data.first_line}-{data.last_line}: a run without result rows (stopped before "
                "its table?) was skipped"
            )
    return kept


def _read_segment(text: CleanText, start: int, end: int, source: str | None) -> RunData:
    lines = text.lines[start:end]
    reader = TextReader(source)
    for number, line in enumerate(lines, start=start + 1):
        reader.feed(number, line)
    reader.finish()
    data = reader.data
    data.nccl_version = data.nccl_version or reader.library_version
    data.program = _nearest_program(text.lines, start, end)
    table = next((i for i, line in enumerate(lines) if _table_start(line.strip())), len(lines))
    prompt = root_prompt(lines[:table])  # decided once, by the lines before the table, for both readers
    data.command, data.command_line = find_command(
        lines[:table], start + 1, prompt
    )  # after it: the next test's
    data.topo_matrix = find_topo_matrix(lines) or find_topo_matrix(text.lines[:start])
    data.prefix_ranks = {n: r for n, r in text.prefix_ranks.items() if start < n <= end}
    data.settings = read_settings(lines, start + 1, root_prompt=prompt, ran=data.command_line)
    filled = [n for n, line in enumerate(lines, start=start + 1) if line.strip()]
    data.first_line, data.last_line = start + 1, (filled[-1] if filled else end)
    data.last_text = text.lines[filled[-1] - 1].strip() if filled else None
    return data


def _nearest_program(lines: list[str], start: int, end: int) -> str | None:
    """The ``*_perf`` name nearest before the run's table, else the first in a ``#`` line after it.

    The table starts at its column header, or at its first result row when the text has none
    (an excerpt quoted from inside the table). After it only nccl-tests' own ``#`` lines (the
    footer's ``# Collective test concluded: all_reduce_perf``) name this test: a command there
    (``./broadcast_perf -b 8 ...``) starts the next one.
    """
    table = next((i for i in range(start, end) if _table_start(lines[i].strip())), end)
    for index in range(table - 1, -1, -1):
        program = find_program(lines[index])
        if program:
            return program
    after = (line for line in lines[table:end] if line.lstrip().startswith("#"))
    return next(filter(None, map(find_program, after)), None)


def _table_start(text: str) -> bool:
    """Whether a line is a column header or a result row (not a '#' line, not NCCL's own log)."""
    if is_column_header(text):
        return True
    return not text.startswith("#") and not NCCL_LOG.match(text) and looks_like_row(text.split())


def _inherit(data: RunData, previous: RunData, earlier: list[str]) -> None:
    """A later run takes what it does not print itself from the text before it."""
    if earlier:
        before = read_settings(earlier, 1, root_prompt=root_prompt(earlier))
        data.settings = inherit_settings(data.settings, before)
    data.nccl_version = data.nccl_version or previous.nccl_version
    if not data.header and not data.devices:
        data.header, data.header_line, data.devices = previous.header, previous.header_line, previous.devices
        data.warnings.append(
            f"line {data.first_line}: this run has no header or device list of its own; "
            f"they are taken from the run at lines {previous.first_line}-{previous.last_line}"
        )
