"""The Schedule IR: a DAG of transfers that an algorithm plans and the engine replays.

An algorithm turns (topology, ranks, collective, size) into a
:class:`Schedule`: pure data, no simulation. Data is cut into *chunks*:
byte ranges ``[offset, offset + nbytes)`` of the collective's buffer, each
with, for collectives that need it, an owner rank (and for all-to-all a
target rank). The only operation is a *send* of one chunk from one device
to another:

* ``reduce=False`` (a copy): on arrival the receiver's chunk becomes the
  sender's chunk, as in a broadcast or all-gather step;
* ``reduce=True``: on arrival the receiver adds the sender's chunk into its
  own, as in a reduce-scatter step. The engine charges the receiver's
  reduction bandwidth, if the topology gives one.

Every send travels on a *connection* ``(src, dst, channel)``. Sends on one
connection are served in the order they were added: a send starts only
after its dependencies *and* the previous send on its connection have
completed, as NCCL's channels are FIFOs of slots between two peers.
Different channels between the same two devices run side by side and share
links max-min fairly.

A chunk added without an offset is placed after the previous chunks of
its buffer region (see :func:`default_offsets`). Ops are stored as
numpy arrays, so a 1024-GPU ring (two million sends) stays compact;
:class:`ScheduleBuilder` offers both one-at-a-time and vectorised adds.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from commsim.collectives import Collective
from commsim.errors import ScheduleError

__all__ = [
    "BoxOrbits",
    "OrbitPattern",
    "PathSpec",
    "RingPattern",
    "Schedule",
    "ScheduleBuilder",
    "SendPattern",
    "connection_next",
    "default_offsets",
    "pattern_schedule",
    "routed_pairs",
]

IntArray = NDArray[np.int64]


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


@dataclass(frozen=True, eq=False)
class Schedule:
    """A planned collective: chunks, sends and their dependencies (CSR).

    Attributes
    ----------
    collective : Collective
    nbytes : float
        The collective's size (nccl-tests convention).
    ranks : tuple of str
        GPU device names, rank order.
    devices : tuple of str
        Every device named by a send; ranks first.
    root : int or None
        Root rank index for rooted collectives.
    chunk_nbytes, chunk_owner, chunk_target : arrays
        Per chunk: size in bytes, owner rank (-1 if none), and for all-to-all
        the destination rank (-1 if none).
    op_src, op_dst, op_chunk, op_path, op_step : int arrays
        Per send: device indices, chunk, path spec index and algorithm step.
    op_reduce : bool array
        Per send: whether the receiver reduces (else copies).
    dep_indptr, dep_indices : int arrays
        Dependencies of op ``i``: ``dep_indices[dep_indptr[i]:dep_indptr[i+1]]``.
    paths : tuple of PathSpec
    chunk_offset : float array, optional
        Per chunk: first byte of its range in the buffer; None places the
        chunks by :func:`default_offsets`.
    op_channel : int array, optional
        Per send: its channel (connection index between its two devices);
        None puts every send on channel 0.
    """

    collective: Collective
    nbytes: float
    ranks: tuple[str, ...]
    devices: tuple[str, ...]
    root: int | None
    chunk_nbytes: NDArray[np.float64]
    chunk_owner: IntArray
    chunk_target: IntArray
    op_src: IntArray
    op_dst: IntArray
    op_chunk: IntArray
    op_reduce: NDArray[np.bool_]
    op_path: IntArray
    op_step: IntArray
    dep_indptr: IntArray
    dep_indices: IntArray
    paths: tuple[PathSpec, ...]
    chunk_offset: NDArray[np.float64] | None = None
    op_channel: IntArray | None = None

    def __post_init__(self) -> None:
        if self.chunk_offset is None:
            offsets = default_offsets(
                self.collective,
                self.nbytes,
                len(self.ranks),
                self.chunk_nbytes,
                self.chunk_owner,
                self.chunk_target,
            )
            object.__setattr__(self, "chunk_offset", offsets)
        if self.op_channel is None:
            object.__setattr__(self, "op_channel", np.zeros(self.op_src.size, np.int64))

    @property
    def offsets(self) -> NDArray[np.float64]:
        """First byte of every chunk in the buffer (never None after construction)."""
        assert self.chunk_offset is not None
        return self.chunk_offset

    @property
    def channels(self) -> IntArray:
        """Channel of every send (never None after construction)."""
        assert self.op_channel is not None
        return self.op_channel

    @property
    def n_ops(self) -> int:
        """Number of sends."""
        return int(self.op_src.size)

    @property
    def op_nbytes(self) -> NDArray[np.float64]:
        """Bytes moved by each send."""
        return self.chunk_nbytes[self.op_chunk]

    def deps(self, op: int) -> IntArray:
        """Dependencies of one op."""
        return self.dep_indices[self.dep_indptr[op] : self.dep_indptr[op + 1]]

    def verify(self, check_races: bool | None = None) -> None:
        """Prove symbolically that the schedule achieves its collective.

        See :func:`commsim.verify.verify_schedule`.
        """
        from commsim.verify import verify_schedule

        verify_schedule(self, check_races=check_races)


@dataclass
class ScheduleBuilder:
    """Collects chunks and sends, then freezes them into a :class:`Schedule`.

    Parameters
    ----------
    collective : Collective
    nbytes : float
        The collective's size.
    ranks : sequence of str
        Participating GPUs in rank order.
    root : int, optional
        Root rank index for rooted collectives.
    """

    collective: Collective
    nbytes: float
    ranks: Sequence[str]
    root: int | None = None
    _devices: dict[str, int] = field(default_factory=dict, init=False)
    _names: list[str] = field(default_factory=list, init=False)  # the keys of _devices, in order
    _chunks: list[tuple[float, int, int]] = field(default_factory=list, init=False)
    _offsets: list[float] = field(default_factory=list, init=False)
    _paths: dict[PathSpec, int] = field(default_factory=dict, init=False)
    _cols: list[tuple[NDArray[Any], ...]] = field(default_factory=list, init=False)
    _deps: list[tuple[IntArray, IntArray]] = field(default_factory=list, init=False)
    _n_ops: int = field(default=0, init=False)
    # per allowed-kinds key: sorted (src << 32 | dst) codes of routed paths and their indices
    _pair_cache: dict[tuple[str, ...] | None, tuple[IntArray, IntArray]] = field(
        default_factory=dict, init=False
    )
    # the same pairs as a dict (kept up to date), for calls with a few sends; a table whose
    # key is in _stale misses pairs added by such calls and is rebuilt before its next use
    _pair_dict: dict[tuple[str, ...] | None, dict[int, int]] = field(default_factory=dict, init=False)
    _stale: set[tuple[str, ...] | None] = field(default_factory=set, init=False)
    # sends added one at a time (``send``), as Python rows, until the next block or ``build``
    _rows: list[tuple[int, int, int, bool, int, int, int]] = field(default_factory=list, init=False)
    _row_deps: list[list[int]] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        self.ranks = tuple(self.ranks)
        for rank in self.ranks:
            self.device_index(rank)

    @property
    def n_ops(self) -> int:
        """Sends added so far."""
        return self._n_ops

    def device_index(self, device: str) -> int:
        """Index of a device, adding it if new."""
        index = self._devices.get(device)
        if index is None:
            index = self._devices[device] = len(self._names)
            self._names.append(device)
        return index

    def chunk(self, nbytes: float, owner: int = -1, target: int = -1, offset: float | None = None) -> int:
        """Add a chunk of ``nbytes`` (owned by rank ``owner``) and return its id.

        ``offset`` is its first byte in the buffer; give it for every chunk
        or for none (then :func:`default_offsets` places them).
        """
        self._chunks.append((float(nbytes), owner, target))
        self._offsets.append(np.nan if offset is None else float(offset))
        return len(self._chunks) - 1

    def split(self, nbytes: float, parts: int, owners: Iterable[int] | None = None) -> list[int]:
        """Add ``parts`` equal chunks summing to ``nbytes``; return their ids."""
        owner_list = list(owners) if owners is not None else [-1] * parts
        return [self.chunk(nbytes / parts, owner_list[i]) for i in range(parts)]

    def path(
        self, src: str, dst: str, kinds: Sequence[str] | None = None, via: Sequence[str] | None = None
    ) -> int:
        """Index of a path spec, adding it if new."""
        spec = PathSpec(
            src, dst, tuple(kinds) if kinds is not None else None, tuple(via) if via is not None else None
        )
        return self._paths.setdefault(spec, len(self._paths))

    def send(
        self,
        src: str,
        dst: str,
        chunk: int,
        *,
        reduce: bool = False,
        deps: Iterable[int] = (),
        kinds: Sequence[str] | None = None,
        via: Sequence[str] | None = None,
        step: int = 0,
        channel: int = 0,
    ) -> int:
        """Add one send and return its op id (``channel``: see :meth:`sends`).

        Same checks, path indices and stored columns as a one-send call of
        :meth:`sends`, without building numpy arrays for one row: planners
        that add sends one by one (parameter servers, trees, ``direct``)
        spend their time here.
        """
        s, d = self.device_index(str(src)), self.device_index(str(dst))
        if s == d:
            raise ScheduleError(f"send from {self._device_names()[s]!r} to itself")
        chunk_id, flag = int(np.int64(chunk)), bool(reduce)
        path = self._one_path_index(s, d, kinds, via)
        step_id, channel_id = int(np.int64(step)), int(np.int64(channel))
        if channel_id < 0:
            raise ScheduleError(f"channel {channel_id} is negative; channels are 0, 1, ...")
        if chunk_id < 0 or chunk_id >= len(self._chunks):
            raise ScheduleError(f"sends name a chunk outside 0..{len(self._chunks) - 1}")
        op = self._n_ops
        dep_list: list[int] = np.asarray(list(deps), dtype=np.int64).tolist()
        for dep in dep_list:
            if dep < 0 or dep >= op:
                raise ScheduleError(f"op {op} depends on op {dep}, not added before it")
        self._rows.append((s, d, chunk_id, flag, path, step_id, channel_id))
        self._row_deps.append(dep_list)
        self._n_ops += 1
        return op

    def _one_path_index(
        self, src: int, dst: int, kinds: Sequence[str] | None, via: Sequence[str] | None
    ) -> int:
        """Path index of one send, registered as :meth:`_path_indices` would for a one-send block."""
        if via is not None:
            names = self._device_names()
            return self.path(names[src], names[dst], kinds, via)
        key = tuple(kinds) if kinds is not None else None
        pairs = self._pair_dict.setdefault(key, {})
        code = (src << 32) | dst
        if code not in pairs:
            names = self._device_names()
            pairs[code] = self.path(names[src], names[dst], list(key) if key is not None else None)
            self._stale.add(key)
        return pairs[code]

    def _flush_rows(self) -> None:
        """Turn the sends added one at a time into a block of columns, in op order."""
        if not self._rows:
            return
        columns = list(zip(*self._rows))
        cols = tuple(np.array(column, dtype=bool if i == 3 else np.int64) for i, column in enumerate(columns))
        lengths = np.fromiter((len(r) for r in self._row_deps), np.int64, len(self._row_deps))
        flat = np.fromiter((x for r in self._row_deps for x in r), np.int64, int(lengths.sum()))
        self._cols.append(cols)
        self._deps.append((lengths, flat))
        self._rows.clear()
        self._row_deps.clear()

    def sends(
        self,
        src: Sequence[str] | IntArray,
        dst: Sequence[str] | IntArray,
        chunk: ArrayLike,
        *,
        reduce: bool | ArrayLike = False,
        deps: Sequence[Iterable[int]] | ArrayLike | None = None,
        kinds: Sequence[str] | None = None,
        via: Sequence[Sequence[str] | None] | None = None,
        step: int | ArrayLike = 0,
        channel: int | ArrayLike = 0,
    ) -> IntArray:
        """Add many sends at once and return their op ids.

        ``src`` and ``dst`` are device names, or integer arrays of device
        indices (rank ``i`` is device ``i``). ``deps`` is either one iterable
        of op ids per send, or a 2-D integer array with one row per send,
        padded with -1. ``channel`` names the connection between the two
        devices each send uses: sends on one (src, dst, channel) are served
        in the order they are added.
        """
        src_idx, dst_idx = self._indices(src), self._indices(dst)
        count = src_idx.size
        if dst_idx.size != count:
            raise ScheduleError(f"sends: {count} sources but {dst_idx.size} destinations")
        if np.any(src_idx == dst_idx):
            bad = self._device_names()[int(src_idx[np.flatnonzero(src_idx == dst_idx)[0]])]
            raise ScheduleError(f"send from {bad!r} to itself")
        cols = (
            src_idx,
            dst_idx,
            _column(chunk, count, np.int64),
            _column(reduce, count, np.bool_),
            self._path_indices(src_idx, dst_idx, kinds, via),
            _column(step, count, np.int64),
            _column(channel, count, np.int64),
        )
        if cols[6].size and cols[6].min() < 0:
            raise ScheduleError(f"channel {int(cols[6].min())} is negative; channels are 0, 1, ...")
        if cols[2].size and (cols[2].min() < 0 or cols[2].max() >= len(self._chunks)):
            raise ScheduleError(f"sends name a chunk outside 0..{len(self._chunks) - 1}")
        first = self._n_ops
        dep_block = self._dep_rows(deps, count, first)
        self._flush_rows()  # blocks stay in op order
        self._deps.append(dep_block)
        self._cols.append(cols)
        self._n_ops += count
        return np.arange(first, first + count, dtype=np.int64)

    def route_indices(self, src: IntArray, dst: IntArray, kinds: Sequence[str] | None = None) -> IntArray:
        """Path indices of routed sends between device indices, registered as :meth:`sends` would."""
        return self._path_indices(np.asarray(src, np.int64), np.asarray(dst, np.int64), kinds, None)

    def _device_names(self) -> list[str]:
        return self._names

    def _indices(self, devices: Sequence[str] | IntArray) -> IntArray:
        if isinstance(devices, np.ndarray) and devices.dtype.kind in "iu":
            if devices.size and (devices.min() < 0 or devices.max() >= len(self._devices)):
                raise ScheduleError(f"device index outside 0..{len(self._devices) - 1}")
            return devices.astype(np.int64)
        return np.fromiter((self.device_index(str(d)) for d in devices), np.int64, len(devices))

    def _path_indices(
        self,
        src: IntArray,
        dst: IntArray,
        kinds: Sequence[str] | None,
        via: Sequence[Sequence[str] | None] | None,
    ) -> IntArray:
        if via is not None:
            names = self._device_names()
            return np.fromiter(
                (self.path(names[s], names[d], kinds, v) for s, d, v in zip(src.tolist(), dst.tolist(), via)),
                np.int64,
                src.size,
            )
        # Routed paths: look the (src, dst) pairs up in a table, and add the
        # new pairs in ascending (src, dst) order.
        key = tuple(kinds) if kinds is not None else None
        if src.size <= _FEW_SENDS:
            return self._few_path_indices(src, dst, key)
        if key in self._stale:
            self._rebuild_table(key)
        empty = np.empty(0, np.int64)
        known, known_index = self._pair_cache.get(key, (empty, empty))
        n_devices = len(self._devices)
        if n_devices * n_devices <= 4 * src.size:  # many sends: a dense pair table is cheaper
            return self._dense_path_indices(src * n_devices + dst, n_devices, key, known, known_index)
        codes = (src << 32) | dst
        if known.size:
            at = np.minimum(np.searchsorted(known, codes), known.size - 1)
            hit = known[at] == codes
            if hit.all():
                return known_index[at]
            new_codes = _sorted_unique(codes[~hit])
        else:
            new_codes = _sorted_unique(codes)
        known, known_index = self._add_pairs(key, known, known_index, new_codes)
        return known_index[np.searchsorted(known, codes)]

    def _dense_path_indices(
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

    def _few_path_indices(self, src: IntArray, dst: IntArray, key: tuple[str, ...] | None) -> IntArray:
        """Path indices of a few sends through the pair dict: no table is sorted per call."""
        pairs = self._pair_dict.setdefault(key, {})
        codes = ((src << 32) | dst).tolist()
        new = sorted({c for c in codes if c not in pairs})
        if new:
            names = self._device_names()
            kinds = list(key) if key is not None else None
            for c in new:
                pairs[c] = self.path(names[c >> 32], names[c & 0xFFFFFFFF], kinds)
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
        names = self._device_names()
        kinds = list(key) if key is not None else None
        new_index = np.fromiter(
            (self.path(names[c >> 32], names[c & 0xFFFFFFFF], kinds) for c in new_codes.tolist()),
            np.int64,
            new_codes.size,
        )
        self._pair_dict.setdefault(key, {}).update(zip(new_codes.tolist(), new_index.tolist()))
        codes_all = np.concatenate([known, new_codes])
        order = np.argsort(codes_all, kind="stable")
        known, known_index = codes_all[order], np.concatenate([known_index, new_index])[order]
        self._pair_cache[key] = (known, known_index)
        return known, known_index

    def _dep_rows(
        self, deps: Sequence[Iterable[int]] | ArrayLike | None, count: int, first: int
    ) -> tuple[IntArray, IntArray]:
        """Dependencies as (lengths, flat indices) for one block of sends."""
        if deps is None:
            return np.zeros(count, np.int64), np.empty(0, np.int64)
        if isinstance(deps, np.ndarray) and deps.ndim == 2:
            mask = deps >= 0
            lengths, flat = mask.sum(axis=1, dtype=np.int64), deps[mask].astype(np.int64, copy=False)
            if lengths.size == count and (deps < np.arange(first, first + count)[:, None]).all():
                return lengths, flat  # every dependency was added before its send
            owner = np.repeat(np.arange(first, first + count), lengths)
        else:
            rows = [np.asarray(list(d), dtype=np.int64) for d in deps]  # type: ignore[union-attr,arg-type]
            lengths = np.fromiter((r.size for r in rows), np.int64, len(rows))
            flat = np.concatenate(rows) if rows else np.empty(0, np.int64)
            owner = np.repeat(np.arange(first, first + len(rows)), lengths)
        if lengths.size != count:
            raise ScheduleError(f"sends: {count} sends but {lengths.size} dependency lists")
        bad = (flat < 0) | (flat >= owner)
        if np.any(bad):
            i = int(np.flatnonzero(bad)[0])
            raise ScheduleError(f"op {int(owner[i])} depends on op {int(flat[i])}, not added before it")
        return lengths, flat

    def build(self) -> Schedule:
        """Freeze into a :class:`Schedule`."""

        # One block of sends (a planner that adds all its sends at once) is
        # used as is, without a copy: the builder never writes to its blocks,
        # and schedules already share arrays (see dataclasses.replace).
        self._flush_rows()

        def joined(parts: list[NDArray[Any]], dtype: type = np.int64) -> NDArray[Any]:
            if len(parts) == 1:
                return parts[0]
            return np.concatenate(parts) if parts else np.empty(0, dtype)

        def column(i: int, dtype: type = np.int64) -> NDArray[Any]:
            return joined([c[i] for c in self._cols], dtype)

        indptr = np.zeros(self._n_ops + 1, np.int64)
        np.cumsum(joined([b[0] for b in self._deps]), out=indptr[1:])
        indices = joined([b[1] for b in self._deps])
        chunks = np.array(self._chunks, dtype=np.float64).reshape(-1, 3)
        offsets = np.array(self._offsets, dtype=np.float64)
        given = ~np.isnan(offsets)
        if given.any() and not given.all():
            raise ScheduleError(
                f"{int(given.sum())} of {given.size} chunks give an offset; give one for every chunk or none"
            )
        return Schedule(
            collective=self.collective,
            nbytes=float(self.nbytes),
            ranks=tuple(self.ranks),
            devices=tuple(self._devices),
            root=self.root,
            chunk_nbytes=chunks[:, 0].copy(),
            chunk_owner=chunks[:, 1].astype(np.int64),
            chunk_target=chunks[:, 2].astype(np.int64),
            op_src=column(0),
            op_dst=column(1),
            op_chunk=column(2),
            op_reduce=column(3, bool),
            op_path=column(4),
            op_step=column(5),
            dep_indptr=indptr,
            dep_indices=indices,
            paths=tuple(self._paths),
            chunk_offset=offsets if given.all() and given.size else None,
            op_channel=column(6),
        )


_FEW_SENDS = 16
"""Calls of :meth:`ScheduleBuilder.sends` with at most this many sends look their routed
paths up in a dict (constant time per send) instead of the sorted pair table."""

_PER_RANK_SLICE = (Collective.REDUCE_SCATTER, Collective.ALL_GATHER, Collective.GATHER)
"""Collectives whose buffer is cut into one slice per rank (rank r's slice is the r-th of n)."""


def default_offsets(
    collective: Collective,
    nbytes: float,
    n_ranks: int,
    chunk_nbytes: NDArray[np.float64],
    chunk_owner: IntArray,
    chunk_target: IntArray,
) -> NDArray[np.float64]:
    """Where chunks sit in the buffer when the algorithm does not say.

    Chunks are laid end to end, in id order, inside a region of the buffer:
    the whole buffer for all-reduce, broadcast and reduce; the owner's slice
    ``[r nbytes/n, (r+1) nbytes/n)`` for reduce-scatter, all-gather and
    gather; the target's slice of the owner's send buffer for all-to-all.
    A schedule whose chunks do not fill their regions exactly (too few, too
    small, or too many bytes for one owner) then fails
    :func:`commsim.verify.verify_schedule`'s coverage check.
    """
    sizes = np.asarray(chunk_nbytes, np.float64)
    if not sizes.size:
        return np.zeros(0)
    piece = nbytes / max(n_ranks, 1)
    if collective in _PER_RANK_SLICE:
        region, start = chunk_owner, np.maximum(chunk_owner, 0) * piece
    elif collective is Collective.ALL_TO_ALL:
        region = chunk_owner * (n_ranks + 1) + chunk_target
        start = np.maximum(chunk_target, 0) * piece
    else:
        region, start = np.zeros(sizes.size, np.int64), np.zeros(sizes.size)
    order = np.argsort(region, kind="stable")
    ends = np.cumsum(sizes[order])
    first = np.ones(order.size, dtype=bool)
    first[1:] = region[order][1:] != region[order][:-1]
    group_start = np.maximum.accumulate(np.where(first, np.arange(order.size), 0))
    before = ends - sizes[order]
    offsets = np.empty(sizes.size)
    offsets[order] = before - before[group_start]
    return offsets + start


def connection_next(schedule: Schedule) -> IntArray:
    """For every send, the next send on its connection ``(src, dst, channel)``, or -1.

    Sends on one connection are served in op order; this is the implicit
    dependency the engine and the verifier add to the explicit ones.
    """
    n = schedule.n_ops
    following = np.full(n, -1, np.int64)
    if n < 2:
        return following
    n_dev, n_channels = len(schedule.devices), int(schedule.channels.max()) + 1
    # int32 keys when every connection number fits: half the memory, and sorted faster
    key_type = np.int32 if n_channels * n_dev * n_dev < np.iinfo(np.int32).max else np.int64
    key: NDArray[np.signedinteger[Any]] = schedule.op_src.astype(key_type)
    key *= n_dev
    key += schedule.op_dst
    if n_channels > 1:  # else every send is on channel 0: the key needs no channel term
        key += schedule.channels * (n_dev * n_dev)
    order = np.argsort(key, kind="stable")  # by connection, then op order
    sorted_key = key[order]
    del key
    same = sorted_key[1:] == sorted_key[:-1]
    del sorted_key
    following[order[:-1][same]] = order[1:][same]
    return following


def routed_pairs(schedule: Schedule) -> dict[tuple[str, ...] | None, list[tuple[str, str]]]:
    """The (src, dst) pairs of the schedule's routed path specs, per allowed-kinds key."""
    by_kinds: dict[tuple[str, ...] | None, list[tuple[str, str]]] = {}
    for spec in schedule.paths:
        if spec.via is None:
            by_kinds.setdefault(spec.kinds, []).append((spec.src, spec.dst))
    return by_kinds


def _column(value: ArrayLike, count: int, dtype: type) -> NDArray[Any]:
    """One column of a block of sends: ``value`` broadcast to ``count`` rows, as a new array.

    A scalar 0 (or False) gives ``np.zeros``, whose pages the operating system
    supplies on first write: a column that stays zero (channel 0, step 0)
    costs no memory however many sends there are.
    """
    values: NDArray[Any] = np.asarray(value, dtype)
    if values.ndim == 0 and not values:
        return np.zeros(count, dtype)
    return np.broadcast_to(values, count).copy()


def _sorted_unique(values: IntArray) -> IntArray:
    """``np.unique`` of an integer array by sorting (faster than its hash path on small arrays)."""
    result = np.sort(values)
    if result.size > 1:
        keep = np.empty(result.size, dtype=bool)
        keep[0] = True
        np.not_equal(result[1:], result[:-1], out=keep[1:])
        result = result[keep]
    return result


_OP_FIELDS = frozenset(
    {
        "op_src",
        "op_dst",
        "op_chunk",
        "op_reduce",
        "op_path",
        "op_step",
        "dep_indptr",
        "dep_indices",
        "op_channel",
    }
)


@dataclass(frozen=True, eq=False)
class RingPattern:
    """The sends of a chunked ring, described by its steps instead of one row per send.

    ``n`` lanes (ring positions): lane ``i`` sends from device ``src[i]`` to
    ``dst[i]`` over path spec ``path[i]`` on channel 0. At step ``s``
    (``first <= s < stop``) lane ``i`` sends chunk ``chunks[(i - s) mod n]``,
    reducing iff ``s < reduce_until``, once lane ``(i - 1) mod n``'s send of
    step ``s - 1`` has completed. Op ``(s - first) * n + i`` is that send.
    A ring step is symmetric (n sends of one size on one path shape), so the
    engine can replay it as one flow group; the per-send columns are made
    only when something reads them (:meth:`columns`).
    """

    src: IntArray
    dst: IntArray
    path: IntArray
    chunks: IntArray
    first: int
    stop: int
    reduce_until: int

    @property
    def n(self) -> int:
        """Lanes (sends per step)."""
        return int(self.src.size)

    @property
    def n_steps(self) -> int:
        """Steps."""
        return self.stop - self.first

    @property
    def n_ops(self) -> int:
        """Sends."""
        return self.n * self.n_steps

    def columns(self) -> dict[str, NDArray[Any]]:
        """Every per-send column of the schedule, as :class:`ScheduleBuilder` would store them."""
        n, steps = self.n, np.arange(self.first, self.stop)
        step, i = steps.reshape(-1, 1), np.arange(n)
        held = i - step
        np.remainder(held, n, out=held)
        deps = (step - self.first - 1) * n + (i - 1) % n
        deps[0] = -1
        mask = deps >= 0
        indptr = np.zeros(self.n_ops + 1, np.int64)
        np.cumsum(mask.reshape(-1), out=indptr[1:])
        return {
            "op_src": np.tile(self.src, steps.size),
            "op_dst": np.tile(self.dst, steps.size),
            "op_chunk": self.chunks[held].reshape(-1),
            "op_reduce": np.repeat(steps < self.reduce_until, n),
            "op_path": np.tile(self.path, steps.size),
            "op_step": np.repeat(steps, n),
            "dep_indptr": indptr,
            "dep_indices": deps[mask].astype(np.int64, copy=False),
            "op_channel": np.zeros(self.n_ops, np.int64),
        }


class SendPattern(Protocol):
    """Sends described compactly (:class:`RingPattern`, or a planner's own), expanded on read."""

    @property
    def n_ops(self) -> int:
        """Sends."""
        ...

    def columns(self) -> dict[str, NDArray[Any]]:
        """Every per-send column, as :class:`ScheduleBuilder` would store them."""
        ...


@dataclass(frozen=True, eq=False)
class BoxOrbits:
    """A schedule's sends grouped into orbits of a rotation of its boxes, one class per orbit.

    Rotating the boxes (box ``k``'s devices onto box ``k+1``'s, in their
    order; devices outside the boxes stay) maps every send onto another of
    the same step. A *class* is one orbit: ``weight`` of its sends use the
    representative path in every box, all of one size, ready at the same
    time. Classes depend on classes (``dep_ptr``/``deps``, CSR), including
    the order of sends on a connection. The engine replays the classes
    (:mod:`commsim.engine.orbits`) when the topology and its routes are
    symmetric under the rotation, else the sends.

    Attributes
    ----------
    grid : int array (K, m)
        Device indices: ``grid[k, i]`` is position i of box k; the rotation
        maps it to ``grid[(k+1) % K, i]``.
    path : int array
        Per class: path spec index of its representative send.
    nbytes : float array
        Per class: bytes of each of its sends.
    reduce : bool array
        Per class: whether its sends reduce at the receiver.
    dst : int array
        Per class: device index of the representative send's receiver.
    weight : int array
        Per class: its sends on the representative path (side by side, on
        different channels).
    dep_ptr, deps : int arrays
        CSR: the classes each class waits for.
    """

    grid: IntArray
    path: IntArray
    nbytes: NDArray[np.float64]
    reduce: NDArray[np.bool_]
    dst: IntArray
    weight: IntArray
    dep_ptr: IntArray
    deps: IntArray


class OrbitPattern(SendPattern, Protocol):
    """A :class:`SendPattern` whose sends also come as :class:`BoxOrbits`."""

    def orbits(self) -> BoxOrbits:
        """The classes of sends."""
        ...

    def op_classes(self) -> IntArray:
        """Per send (op order of :meth:`columns`): its class in :meth:`orbits`."""
        ...


class _PatternSchedule(Schedule):
    """A :class:`Schedule` whose per-send columns come from a :class:`SendPattern` when first read."""

    pattern: SendPattern

    @property
    def n_ops(self) -> int:
        """Number of sends (without making the columns)."""
        pattern = self.__dict__.get("pattern")
        return pattern.n_ops if pattern is not None else int(self.op_src.size)

    def __getattr__(self, name: str) -> Any:
        if name in _OP_FIELDS and "pattern" in self.__dict__:
            for key, value in self.pattern.columns().items():
                object.__setattr__(self, key, value)
            return self.__dict__[name]
        raise AttributeError(name)

    def __reduce__(self) -> tuple[Any, ...]:
        fields = {k: v for k, v in self.__dict__.items() if k not in _OP_FIELDS}
        return (_rebuild_pattern_schedule, (fields,))


def _rebuild_pattern_schedule(fields: dict[str, Any]) -> _PatternSchedule:
    schedule = object.__new__(_PatternSchedule)
    for key, value in fields.items():
        object.__setattr__(schedule, key, value)
    return schedule


def pattern_schedule(builder: ScheduleBuilder, pattern: SendPattern) -> Schedule:
    """A schedule of ``builder``'s chunks, devices and paths whose sends are ``pattern``'s.

    It holds a few arrays per lane instead of several per send; reading a
    per-send column (``op_src``, ...) makes all of them, equal to what
    adding the sends to ``builder`` would have stored. The builder must
    hold no sends.
    """
    if builder.n_ops or builder._rows:
        raise ScheduleError("a pattern schedule cannot mix with sends added one by one")
    chunks = np.array(builder._chunks, dtype=np.float64).reshape(-1, 3)
    schedule = object.__new__(_PatternSchedule)
    ranks = tuple(builder.ranks)
    fields: dict[str, Any] = {
        "collective": builder.collective,
        "nbytes": float(builder.nbytes),
        "ranks": ranks,
        "devices": tuple(builder._devices),
        "root": builder.root,
        "chunk_nbytes": chunks[:, 0].copy(),
        "chunk_owner": chunks[:, 1].astype(np.int64),
        "chunk_target": chunks[:, 2].astype(np.int64),
        "paths": tuple(builder._paths),
        "pattern": pattern,
    }
    fields["chunk_offset"] = default_offsets(
        builder.collective,
        float(builder.nbytes),
        len(ranks),
        fields["chunk_nbytes"],
        fields["chunk_owner"],
        fields["chunk_target"],
    )
    for key, value in fields.items():
        object.__setattr__(schedule, key, value)
    return schedule
