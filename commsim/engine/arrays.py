"""Whole-array helpers of the replay: CSR gathers, transposes and small uniques.

Everything here works on int64 numpy arrays in a fixed number of numpy
calls, whatever the array sizes: the replay calls these once per event, so
their cost is per event, not per send.
"""

from __future__ import annotations

from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from commsim.schedule.paths import sorted_unique  # shared with the schedule's path tables

__all__ = ["expand_rows", "gather_csr", "sorted_unique", "transpose_csr"]

IntArray = NDArray[np.int64]
IndexArray = NDArray[np.integer[Any]]  # int64, or int32 where it holds every index
IndexT = TypeVar("IndexT", bound=np.integer[Any])


def gather_csr(ptr: IndexArray, values: NDArray[IndexT], rows: IntArray) -> tuple[IntArray, NDArray[IndexT]]:
    """(row position per entry, value per entry) of the given CSR rows, in row order."""
    first = ptr[rows]
    lengths = ptr[rows + 1] - first
    if lengths.size and lengths.min() == 1 == lengths.max():  # one entry per row
        return np.arange(rows.size), values[first]
    owner = np.repeat(np.arange(rows.size), lengths)
    # output entry k reads values[first[owner[k]] + (k - start of its row in the output)]
    shift = np.repeat(first - (lengths.cumsum() - lengths), lengths)
    return owner, values[np.arange(owner.size) + shift]


def expand_rows(ptr: IntArray, values: IntArray, rows: IntArray) -> tuple[IntArray, IntArray]:
    """CSR (ptr, values) of ``rows`` of a CSR table, e.g. every op's links from its path's.

    Builds no per-entry owner array, and when every row has the same length
    only a reshaped gather.
    """
    lengths = np.diff(ptr)
    if lengths.size and lengths.min() == lengths.max() > 0:
        width = int(lengths[0])
        new_ptr = np.arange(rows.size + 1, dtype=np.int64) * width
        return new_ptr, values.reshape(-1, width)[rows].reshape(-1)
    row_lengths = lengths[rows]
    new_ptr = np.zeros(rows.size + 1, np.int64)
    np.cumsum(row_lengths, out=new_ptr[1:])
    shift = np.repeat(ptr[rows] - new_ptr[:-1], row_lengths)
    shift += np.arange(shift.size)
    return new_ptr, values[shift]


def transpose_csr(
    ptr: IntArray, indices: IntArray, n_cols: int, dtype: type = np.int64
) -> tuple[IndexArray, IndexArray]:
    """The transpose of a CSR 0/1 matrix: for each column, the rows naming it, ascending.

    ``dtype`` is the integer type of the result (int32 halves its memory when
    every row number and entry count fits).
    """
    owner: IndexArray = np.repeat(np.arange(ptr.size - 1, dtype=dtype), np.diff(ptr))
    order = np.argsort(indices, kind="stable")
    new_ptr: IndexArray = np.zeros(n_cols + 1, dtype)
    np.cumsum(np.bincount(indices, minlength=n_cols), out=new_ptr[1:])
    return new_ptr, owner[order]
