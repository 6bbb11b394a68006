"""Combining schedules: run several plans side by side as one schedule."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from commsim.errors import ScheduleError
from commsim.schedule import PathSpec, Schedule

__all__ = ["merge_schedules", "restrict_paths"]


def restrict_paths(schedule: Schedule, kinds: Sequence[str]) -> Schedule:
    """The same schedule with every routed (not explicit) path limited to ``kinds``."""
    paths = tuple(
        spec if spec.via is not None else PathSpec(spec.src, spec.dst, tuple(kinds), None)
        for spec in schedule.paths
    )
    return replace(schedule, paths=paths)


def merge_schedules(parts: Sequence[Schedule], nbytes: float) -> Schedule:
    """One schedule running ``parts`` concurrently (independent chunks, no cross deps).

    All parts must be the same collective over the same ranks; their chunks
    are disjoint pieces of the data, so the postcondition holds for the whole.
    """
    first = parts[0]
    for part in parts[1:]:
        if (part.collective, part.ranks, part.root) != (first.collective, first.ranks, first.root):
            raise ScheduleError("merged schedules must share collective, ranks and root")
    devices: dict[str, int] = {}
    for part in parts:
        for name in part.devices:
            devices.setdefault(name, len(devices))
    cols: dict[str, list[np.ndarray]] = {
        k: [] for k in ("src", "dst", "chunk", "path", "step", "reduce", "ptr", "deps", "channel")
    }
    chunk_off = op_off = path_off = channel_off = 0
    paths: list[PathSpec] = []
    for part in parts:
        remap = np.array([devices[name] for name in part.devices], dtype=np.int64)
        cols["src"].append(remap[part.op_src])
        cols["dst"].append(remap[part.op_dst])
        cols["chunk"].append(part.op_chunk + chunk_off)
        cols["path"].append(part.op_path + path_off)
        cols["step"].append(part.op_step)
        cols["reduce"].append(part.op_reduce)
        cols["ptr"].append(np.diff(part.dep_indptr))
        cols["deps"].append(part.dep_indices + op_off)
        cols["channel"].append(part.channels + channel_off)  # parts never share a connection
        channel_off += int(part.channels.max()) + 1 if part.n_ops else 0
        paths.extend(part.paths)
        chunk_off += part.chunk_nbytes.size
        op_off += part.n_ops
        path_off += len(part.paths)
    lengths = np.concatenate(cols["ptr"])
    return Schedule(
        collective=first.collective,
        nbytes=float(nbytes),
        ranks=first.ranks,
        devices=tuple(devices),
        root=first.root,
        chunk_nbytes=np.concatenate([p.chunk_nbytes for p in parts]),
        chunk_owner=np.concatenate([_remap_ranks(p) for p in parts]),
        chunk_target=np.concatenate([p.chunk_target for p in parts]),
        op_src=np.concatenate(cols["src"]),
        op_dst=np.concatenate(cols["dst"]),
        op_chunk=np.concatenate(cols["chunk"]),
        op_reduce=np.concatenate(cols["reduce"]),
        op_path=np.concatenate(cols["path"]),
        op_step=np.concatenate(cols["step"]),
        dep_indptr=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
        dep_indices=np.concatenate(cols["deps"]).astype(np.int64),
        paths=tuple(paths),
        op_channel=np.concatenate(cols["channel"]),
    )


def _remap_ranks(part: Schedule) -> np.ndarray:
    """Chunk owners are rank indices (ranks come first in every schedule's devices)."""
    return part.chunk_owner
