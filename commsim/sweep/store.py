"""Sweep output files: rows appended as they arrive, resumable, in scenario order at the end.

CSV and JSON Lines hold one row per line. Rows are appended (and flushed)
as chunks finish, so an interrupted sweep keeps every finished row; a torn
last line is cut off when the file is reopened. Reopening reads only each
line's key, error flag, offset and length, never whole rows into memory.
When a sweep finishes, the file is rewritten in scenario order if it is not
already (after a resume, or when rows of scenarios no longer in the sweep
are dropped); the rewrite copies lines by offset.

Parquet cannot be appended to: rows go to ``OUT.partial.jsonl`` beside it,
which becomes ``OUT`` when the sweep finishes (a resumed Parquet sweep
first copies the existing rows back into the partial file).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from array import array
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from commsim.sweep.errors import SweepError
from commsim.sweep.evaluate import INTERNAL_ERROR

__all__ = ["FORMATS", "LineStore", "ParquetStore", "StoreReport", "open_store", "output_format", "read_rows"]

FORMATS = ("csv", "jsonl", "parquet")
_SUFFIXES = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet", ".pq": "parquet"}
_NUMERIC = {"nbytes": float, "n_ranks": int, "time_s": float, "algbw_Bps": float, "busbw_Bps": float}
_BATCH_ROWS = 10_000
PYARROW_INSTALL = "pip install pyarrow"

Row = dict[str, Any]


def output_format(path: str | Path, fmt: str | None = None) -> str:
    """The output format: ``fmt`` if given, else from the file's suffix.

    Raises
    ------
    SweepError
        For an unknown format, a suffix that names none, or a format the
        suffix contradicts (``--format jsonl`` for ``x.csv``).
    """
    suffix = Path(path).suffix.lower()
    if fmt is not None:
        if fmt not in FORMATS:
            raise SweepError(f"unknown output format {fmt!r}; valid: {', '.join(FORMATS)}")
        if _SUFFIXES.get(suffix, fmt) != fmt:  # JSONL in a .csv file: every reader of it is misled
            endings = ", ".join(s for s, f in _SUFFIXES.items() if f == fmt)
            raise SweepError(
                f"--format {fmt} does not match {path}, whose suffix {suffix} means {_SUFFIXES[suffix]}; "
                f"name a file ending {endings}, or leave out --format"
            )
        return fmt
    if suffix not in _SUFFIXES:
        raise SweepError(
            f"cannot tell the format of {path} from its suffix; use .csv, .jsonl or .parquet, "
            "or give --format"
        )
    return _SUFFIXES[suffix]


@dataclass(frozen=True)
class StoreReport:
    """What the finished output holds: rows, rows with an error, stale rows dropped."""

    rows: int
    errors: int
    dropped: int


class LineStore:
    """A CSV or JSON Lines output, one row per line.

    Parameters
    ----------
    path : Path
    fmt : {"csv", "jsonl"}
    columns : tuple of str
        Every column, in order (CSV header; JSON key order).
    index_of : mapping
        Scenario index by key: the order of the finished file.
    resume : bool
        Keep the rows already in ``path`` (else start it afresh).

    Attributes
    ----------
    done : set of str
        Keys of scenarios whose rows are already in the file (and need not
        be computed again); rows of internal errors do not count.
    """

    def __init__(
        self, path: Path, fmt: str, columns: tuple[str, ...], index_of: Mapping[str, int], resume: bool
    ) -> None:
        self.path, self.fmt, self.columns, self.index_of = path, fmt, columns, index_of
        self.done: set[str] = set()
        self._entries = _Entries()
        self._size = 0
        self.written = 0
        """Rows written by this store (not counting those it found in the file)."""
        if resume and path.exists() and path.stat().st_size > 0:
            self._scan()
        else:
            self._create()
        self._file: IO[bytes] | None = path.open("ab")

    def _create(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        header = self._csv_line(list(self.columns)) if self.fmt == "csv" else b""
        self.path.write_bytes(header)
        self._size = len(header)

    def _scan(self) -> None:
        with self.path.open("rb+") as f:
            offset = 0
            for number, line in enumerate(f, start=1):
                if not line.endswith(b"\n"):  # torn by an interruption: cut it off
                    f.truncate(offset)
                    break
                if number == 1 and self.fmt == "csv":
                    self._check_header(line)
                else:
                    self._add_existing(line, number, offset)
                offset += len(line)
        self._size = offset
        if offset == 0:  # even the header was torn
            self._create()

    def _check_header(self, line: bytes) -> None:
        header = next(csv.reader([line.decode("utf-8")]))
        if header != list(self.columns):
            raise self._mismatch(header)

    def _mismatch(self, found: list[str]) -> SweepError:
        missing = [c for c in self.columns if c not in found]
        extra = [c for c in found if c not in self.columns]
        return SweepError(
            f"{self.path} has other columns than this sweep writes (missing: {missing or 'none'}; "
            f"extra: {extra or 'none'}); write to another file, or pass --no-resume to overwrite it"
        )

    def _add_existing(self, line: bytes, number: int, offset: int) -> None:
        try:
            key, error = self._key_and_error(line)
        except (ValueError, KeyError, StopIteration) as exc:
            raise SweepError(
                f"{self.path}:{number}: cannot read this row ({exc}); delete the line, or pass --no-resume"
            ) from None
        index = self.index_of.get(key, -1)
        if index >= 0 and not error.startswith(INTERNAL_ERROR):
            self.done.add(key)
        self._entries.add(index, offset, len(line), bool(error))

    def _key_and_error(self, line: bytes) -> tuple[str, str]:
        text = line.decode("utf-8")
        if self.fmt == "csv":
            fields = next(csv.reader([text]))
            if len(fields) != len(self.columns):
                raise ValueError(f"{len(fields)} fields, expected {len(self.columns)}")
            return fields[0], fields[-1]
        row = json.loads(text)
        if not isinstance(row, dict):
            raise ValueError("not a JSON object")
        if list(row) != list(self.columns):
            raise self._mismatch(list(row))
        return str(row["key"]), row["error"] or ""

    def write(self, rows: Iterable[tuple[int, Row]]) -> None:
        """Append rows (``(index, row)`` pairs) and flush them to the file."""
        assert self._file is not None, "write after close"
        for index, row in rows:
            line = self._encode(row)
            self._file.write(line)
            self._entries.add(index, self._size, len(line), row.get("error") is not None)
            self._size += len(line)
            self.written += 1
        self._file.flush()

    def _encode(self, row: Row) -> bytes:
        if self.fmt == "csv":  # one row per line: no line breaks inside fields
            fields = [_one_line(row[c]) for c in self.columns]
            return self._csv_line(fields)
        clean = {c: _finite(row[c]) for c in self.columns}
        return (json.dumps(clean, ensure_ascii=False) + "\n").encode("utf-8")

    @staticmethod
    def _csv_line(fields: list[Any]) -> bytes:
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="\n").writerow(fields)
        return buffer.getvalue().encode("utf-8")

    def close(self) -> None:
        """Close the file (rows written so far stay)."""
        if self._file is not None:
            self._file.close()
            self._file = None

    def finish(self) -> StoreReport:
        """Close, and rewrite the file in scenario order if it is not already."""
        self.close()
        entries = self._entries
        kept = entries.latest_per_index()
        dropped = sum(1 for index in entries.index if index < 0)
        if kept != list(range(len(entries.index))):
            self._rewrite(kept)
        return StoreReport(len(kept), sum(entries.error[p] for p in kept), dropped)

    def _rewrite(self, positions: list[int]) -> None:
        temporary = self.path.with_name(f".{self.path.name}.sorting")
        with self.path.open("rb") as source, temporary.open("wb") as target:
            if self.fmt == "csv":
                target.write(source.readline())
            for p in positions:
                source.seek(self._entries.offset[p])
                target.write(source.read(self._entries.length[p]))
        os.replace(temporary, self.path)


class _Entries:
    """Where each line of an output file is: scenario index (-1: stale), offset, length, error flag.

    Compact arrays (25 bytes a line), so a million-line file costs 25 MB to track.
    """

    def __init__(self) -> None:
        self.index = array("q")
        self.offset = array("q")
        self.length = array("q")
        self.error = bytearray()

    def add(self, index: int, offset: int, length: int, error: bool) -> None:
        self.index.append(index)
        self.offset.append(offset)
        self.length.append(length)
        self.error.append(error)

    def latest_per_index(self) -> list[int]:
        """Positions of the last line of every scenario, in scenario order (stale lines left out)."""
        last = {index: p for p, index in enumerate(self.index) if index >= 0}
        return [last[index] for index in sorted(last)]


def _one_line(value: Any) -> Any:
    if value is None:
        return ""
    return " ".join(value.splitlines()) if isinstance(value, str) else value


def _finite(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value


class ParquetStore:
    """A Parquet output, written through a JSON Lines file beside it (needs pyarrow)."""

    def __init__(
        self, path: Path, columns: tuple[str, ...], index_of: Mapping[str, int], resume: bool
    ) -> None:
        self.pa, self.pq = import_pyarrow()
        self.path, self.columns = path, columns
        self.partial = path.with_name(path.name + ".partial.jsonl")
        if not resume:
            self.partial.unlink(missing_ok=True)
        elif path.exists() and not self.partial.exists():
            self._copy_back()
        self.lines = LineStore(self.partial, "jsonl", columns, index_of, resume)
        self.done = self.lines.done

    def _copy_back(self) -> None:
        with self.partial.open("w", encoding="utf-8") as out:
            for batch in self.pq.ParquetFile(self.path).iter_batches(_BATCH_ROWS):
                for row in batch.to_pylist():
                    out.write(json.dumps(row, ensure_ascii=False) + "\n")

    @property
    def written(self) -> int:
        """Rows written by this store (not counting those it found)."""
        return self.lines.written

    def write(self, rows: Iterable[tuple[int, Row]]) -> None:
        """Append rows to the partial file."""
        self.lines.write(rows)

    def close(self) -> None:
        """Close the partial file."""
        self.lines.close()

    def finish(self) -> StoreReport:
        """Order the partial file, convert it to Parquet, and remove it."""
        report = self.lines.finish()
        schema = self._schema()
        temporary = self.path.with_name(f".{self.path.name}.writing")
        with self.pq.ParquetWriter(temporary, schema) as writer:
            for batch in _batches(read_rows(self.partial, "jsonl"), _BATCH_ROWS):
                types = [(c, schema.field(c).type) for c in self.columns]
                rows = [{c: _as(row[c], kind, self.pa) for c, kind in types} for row in batch]
                writer.write_table(self.pa.Table.from_pylist(rows, schema=schema))
        os.replace(temporary, self.path)
        self.partial.unlink()
        return report

    def _schema(self) -> Any:
        kinds: dict[str, set[type]] = {c: set() for c in self.columns}
        for row in read_rows(self.partial, "jsonl"):
            for column in self.columns:
                if row[column] is not None:
                    kinds[column].add(type(row[column]))
        pa = self.pa
        fixed = {"n_ranks": pa.int64(), "bottleneck": pa.string(), "error": pa.string(), "key": pa.string()}
        fixed.update({c: pa.float64() for c in ("nbytes", "time_s", "algbw_Bps", "busbw_Bps")})
        return pa.schema([(c, fixed.get(c) or _arrow_type(pa, kinds[c])) for c in self.columns])


def _arrow_type(pa: Any, kinds: set[type]) -> Any:
    if kinds == {bool}:
        return pa.bool_()
    if kinds == {int}:
        return pa.int64()
    if kinds and kinds <= {int, float}:
        return pa.float64()
    return pa.string()


def _as(value: Any, arrow_type: Any, pa: Any) -> Any:
    if value is None or arrow_type != pa.string() or isinstance(value, str):
        return value
    return json.dumps(value)


def _batches(rows: Iterator[Row], size: int) -> Iterator[list[Row]]:
    batch: list[Row] = []
    for row in rows:
        batch.append(row)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def import_pyarrow() -> tuple[Any, Any]:
    """``(pyarrow, pyarrow.parquet)``, or a :class:`SweepError` saying how to install them."""
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise SweepError(f"Parquet output needs pyarrow, which is not installed: {PYARROW_INSTALL}") from None
    return pyarrow, pyarrow.parquet


def open_store(
    path: Path, fmt: str, columns: tuple[str, ...], index_of: Mapping[str, int], resume: bool
) -> LineStore | ParquetStore:
    """The store for ``fmt`` (see :func:`output_format`)."""
    if fmt == "parquet":
        return ParquetStore(path, columns, index_of, resume)
    return LineStore(path, fmt, columns, index_of, resume)


def read_rows(path: str | Path, fmt: str | None = None) -> Iterator[Row]:
    """The rows of a sweep output, with numbers as numbers and empty cells as None."""
    fmt = output_format(path, fmt)
    if fmt == "parquet":
        _, pq = import_pyarrow()
        for batch in pq.ParquetFile(path).iter_batches(_BATCH_ROWS):
            yield from batch.to_pylist()
        return
    with Path(path).open(encoding="utf-8", newline="") as f:
        if fmt == "jsonl":
            for line in f:
                yield json.loads(line)
            return
        for row in csv.DictReader(f):
            yield {c: _cell(c, v) for c, v in row.items()}


def _cell(column: str, text: str) -> Any:
    if text == "":
        return None
    convert = _NUMERIC.get(column)
    return convert(text) if convert else text
