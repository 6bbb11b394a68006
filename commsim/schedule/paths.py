"""Path specs of a schedule being built: numbered once, routed pairs looked up fast.

A send travels over a :class:`PathSpec`: routed over allowed link kinds, or
an explicit device path. :class:`PathTable` numbers the specs in order of
first use, as :class:`~commsim.schedule.builder.ScheduleBuilder` stores
them, and finds the spec of each routed ``(src, dst)`` pair of a block of
sends with whole-array operations (a sorted pair table, a dense one for
blocks that touch most pairs, a dict for a few sends).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["PathSpec", "PathTable", "sorted_unique"]

IntArray = NDArray[np.int64]

_FEW_SENDS = 16
"""Calls of :meth:`ScheduleBuilder.sends` with at most this many sends look their routed
paths up in a dict (constant time per send) instead of the sorted pair table."""


@dataclass(frozen=True)
class PathSpec:
    """How a send travels: routed over allowed link kinds, or an explicit device path.

    Attributes
    ----------
    src, dst : str
        Endpoint devices.
    kinds : tuple of str or None
        Allowed link kinds or families for routing; None allows all.
    via : tuple of str or None
        An explicit path of device names from ``src`` to ``dst``.
    """

    src: str
    dst: str
    kinds: tuple[str, ...] | None = None
    via: tuple[str, ...] | None = None


class PathTable:
    """The path specs of one schedule, numbered in order of first use.

    Parameters
    ----------
    names : list of str
        Device names by index; the builder's own list, so devices it adds
        later are seen here.
    """

    def __init__(self, names: list[str]) -> None:
        self.specs: dict[PathSpec, int] = {}
        self._names = names
        # per allowed-kinds key: sorted (src << 32 | dst) codes of routed paths and their indices
        self._pair_cache: dict[tuple[str, ...] | None, tuple[IntArray, IntArray]] = {}
        # the same pairs as a dict (kept up to date), for calls with a few sends; a table whose
        # key is in _stale misses pairs added by such calls and is rebuilt before its next use
        self._pair_dict: dict[tuple[str, ...] | None, dict[int, int]] = {}
        self._stale: set[tuple[str, ...] | None] = set()

    def index(
        self, src: str, dst: str, kinds: Sequence[str] | None = None, via: Sequence[str] | None = None
    ) -> int:
        """Index of a path spec, adding it if new."""
        spec = PathSpec(
            src, dst, tuple(kinds) if kinds is not None else None, tuple(via) if via is not None else None
        )
        return self.specs.setdefault(spec, len(self.specs))

    def one(self, src: int, dst: int, kinds: Sequence[str] | None, via: Sequence[str] | None) -> int:
        """Path index of one send, registered as :meth:`many` would for a one-send block."""
        if via is not None:
            names = self._names
            return self.index(names[src], names[dst], kinds, via)
        key = tuple(kinds) if kinds is not None else None
        pairs = self._pair_dict.setdefault(key, {})
        code = (src << 32) | dst
        if code not in pairs:
            names = self._names
            pairs[code] = self.index(names[src], names[dst], list(key) if key is not None else None)
            self._stale.add(key)
        return pairs[code]

    def many(
        self,
        src: IntArray,
        dst: IntArray,
        kinds: Sequence[str] | None,
        via: Sequence[Sequence[str] | None] | None,
    ) -> IntArray:
        """Path index of every send of a block, between device indices ``src`` and ``dst``."""
        if via is not None:
            names = self._names
            return np.fromiter(
                (
                    self.index(names[s], names[d], kinds, v)
                    for s, d, v in zip(src.tolist(), dst.tolist(), via)
                ),
                np.int64,
                src.size,
            )
        key = tuple(kinds) if kinds is not None else None
        if src.size <= _FEW_SENDS:
            return self._few(src, dst, key)
        if key in self._stale:
            self._rebuild_table(key)
        empty = np.empty(0, np.int64)
        known, known_index = self._pair_cache.get(key, (empty, empty))
        n_devices = len(self._names)
        if n_devices * n_devices <= 4 * src.size:  # many sends: a dense pair table is cheaper
            return self._dense(src * n_devices + dst, n_devices, key, known, known_index)
        codes = (src << 32) | dst
        if known.size:
            at = np.minimum(np.searchsorted(known, codes), known.size - 1)
            hit = known[at] == codes
            if hit.all():
                return known_index[at]
            new_codes = sorted_unique(codes[~hit])
        else:
            new_codes = sorted_unique(codes)
        known, known_index = self._add_pairs(key, known, known_index, new_codes)
        return known_index[np.searchsorted(known, codes)]

    def _dense(
        self,
        pairs: IntArray,
        n_devices: int,
        key: tuple[str, ...] | None,
        known: IntArray,
        known_index: IntArray,
    ) -> IntArray:
        """Path index per ``src * n_devices + dst`` pair, through an n_devices**2 table."""
        table = np.full(n_devices * n_devices, -1, np.int64)
        table[(known >> 32) * n_devices + (known & 0xFFFFFFFF)] = known_index
        present = np.zeros(table.size, dtype=bool)
        present[pairs] = True
        new_pairs = np.flatnonzero(present & (table < 0))
        if new_pairs.size:
            new_codes = ((new_pairs // n_devices) << 32) | (new_pairs % n_devices)
            known, known_index = self._add_pairs(key, known, known_index, new_codes)
            table[(known >> 32) * n_devices + (known & 0xFFFFFFFF)] = known_index
        return table[pairs]

    def _few(self, src: IntArray, dst: IntArray, key: tuple[str, ...] | None) -> IntArray:
        """Path indices of a few sends through the pair dict: no table is sorted per call."""
        pairs = self._pair_dict.setdefault(key, {})
        codes = ((src << 32) | dst).tolist()
        new = sorted({c for c in codes if c not in pairs})
        if new:
            names = self._names
            kinds = list(key) if key is not None else None
            for c in new:
                pairs[c] = self.index(names[c >> 32], names[c & 0xFFFFFFFF], kinds)
            self._stale.add(key)
        return np.fromiter((pairs[c] for c in codes), np.int64, len(codes))

    def _rebuild_table(self, key: tuple[str, ...] | None) -> None:
        """The sorted pair table of ``key`` from its dict."""
        pairs = self._pair_dict.get(key, {})
        codes = np.fromiter(pairs.keys(), np.int64, len(pairs))
        index = np.fromiter(pairs.values(), np.int64, len(pairs))
        order = np.argsort(codes)
        self._pair_cache[key] = (codes[order], index[order])
        self._stale.discard(key)

    def _add_pairs(
        self, key: tuple[str, ...] | None, known: IntArray, known_index: IntArray, new_codes: IntArray
    ) -> tuple[IntArray, IntArray]:
        """Register the routed paths of new (src << 32 | dst) codes, ascending; update the table."""
        names = self._names
        kinds = list(key) if key is not None else None
        new_index = np.fromiter(
            (self.index(names[c >> 32], names[c & 0xFFFFFFFF], kinds) for c in new_codes.tolist()),
            np.int64,
            new_codes.size,
        )
        self._pair_dict.setdefault(key, {}).update(zip(new_codes.tolist(), new_index.tolist()))
        codes_all = np.concatenate([known, new_codes])
        order = np.argsort(codes_all, kind="stable")
        known, known_index = codes_all[order], np.concatenate([known_index, new_index])[order]
        self._pair_cache[key] = (known, known_index)
        return known, known_index


def sorted_unique(values: IntArray) -> IntArray:
    """``np.unique`` of an integer array, by sorting.

    Same result; on the few thousand elements of one event it is an order
    of magnitude faster than numpy 2's hash-based ``np.unique``.
    """
    result = np.sort(values)
    if result.size > 1:
        keep = np.empty(result.size, dtype=bool)
        keep[0] = True
        np.not_equal(result[1:], result[:-1], out=keep[1:])
        result = result[keep]
    return result
