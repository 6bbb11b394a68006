"""Export a commsim schedule as an MSCCL algorithm, and read MSCCL algorithms back.

:func:`schedule_to_msccl` writes any schedule among GPUs (ring, multi-ring,
tree packing, hybrid, hierarchical, direct, halving-doubling, ...) as the
XML the MSCCL runtime loads (``MSCCL_XML_FILES`` or ``mscclLoadAlgo`` in
NCCL's and RCCL's MSCCL builds). The translation:

* **Chunks.** MSCCL cuts the call's buffer into ``nchunksperloop`` equal
  chunks; a step moves ``cnt`` consecutive ones. commsim chunks are byte
  ranges, so the export finds the coarsest grid on which every chunk starts
  and ends (``N`` chunks; e.g. 48 for a 4-ring all-reduce whose rings cut
  the buffer in 24 and 48). Chunks that sit on no grid (``hybrid``'s split
  by bandwidth) are rounded to the finest grid that keeps every step below
  MSCCL's count limit (boundaries rounded, so chunks still tile the
  buffer); :attr:`MscclExport.exact` says which happened.
* **Thread blocks and channels.** Each send of chunk ``c`` from ``a`` to
  ``b`` on channel ``k`` becomes a ``s`` step in ``a``'s thread block that
  sends to ``b`` on channel ``k`` and an ``r`` (copy) or ``rrc``
  (receive-reduce-copy) step in ``b``'s thread block that receives from
  ``a`` on channel ``k``: one thread block per GPU, peer, direction and
  channel, steps in the order the schedule adds them, which is the order
  commsim serves a connection ``(a, b, k)`` in (:mod:`commsim.schedule`).
* **Dependencies.** MSCCL dependencies join steps of one GPU. A send's
  dependency on an earlier send is attached on the sender when that send
  reached or left the sender, else on the receiver (where the receive then
  waits); one step carries one dependency, so more are carried by ``nop``
  steps before it, as msccl-tools does. A dependency between four other
  GPUs cannot be written and raises :class:`ExportError`.
* **Routes.** MSCCL has no routes: the runtime uses NCCL's transport
  between two GPUs. A schedule that pins routes (``hybrid`` sends some
  data over PCIe; ``multi_ring`` names its hops) keeps them as
  ``commsim_via`` / ``commsim_kinds`` attributes of the sending thread
  block, which the runtime ignores (it reads attributes by name) and
  :func:`msccl_to_schedule` reads back, so a round trip replays the same.
* **Buffers.** Exports are in-place (``inplace="1"``): all-gather and
  gather work in the output buffer ``o``, the others in the input ``i``
  (an in-place all-gather's input is its rank's slice of the output).

References
----------
The format: see :mod:`commsim.interop.msccl_format`. The approach of
emitting MSCCL XML from a synthesised schedule is TACCL's (Shah et al.,
NSDI 2023) and TE-CCL's (Liu et al., SIGCOMM 2024).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from commsim.collectives import Collective
from commsim.errors import did_you_mean
from commsim.interop.errors import ExportError
from commsim.interop.msccl_check import MAX_COUNT, msccl_problems
from commsim.interop.msccl_format import PROTOCOLS, MscclAlgo, MscclGpu, MscclStep, MscclTb, algo_to_xml
from commsim.interop.msccl_import import msccl_to_schedule
from commsim.schedule import Schedule

__all__ = ["MSCCL_COLLECTIVES", "MscclExport", "msccl_to_schedule", "schedule_to_msccl", "write_msccl"]

MSCCL_COLLECTIVES = {
    Collective.ALL_REDUCE: "allreduce",
    Collective.REDUCE_SCATTER: "reducescatter",
    Collective.ALL_GATHER: "allgather",
    Collective.BROADCAST: "broadcast",
    Collective.REDUCE: "reduce",
    Collective.GATHER: "gather",
}
"""The collectives an export can write, with their MSCCL ``coll`` names."""

_SLICED = (Collective.REDUCE_SCATTER, Collective.ALL_GATHER, Collective.GATHER)
_MAX_GRID = 1 << 16


@dataclass
class MscclExport:
    """An exported algorithm and how faithful it is.

    Attributes
    ----------
    algo : MscclAlgo
        The algorithm (``algo_to_xml(algo)`` is the file's text).
    exact : bool
        True if every chunk sits on the grid exactly; False if chunk
        boundaries were rounded to ``algo.nchunksperloop`` chunks.
    """

    algo: MscclAlgo
    exact: bool

    @property
    def xml(self) -> str:
        """The XML text."""
        return algo_to_xml(self.algo)


def _grid(schedule: Schedule, multiple: int) -> tuple[int, bool]:
    """Chunks of the buffer (a multiple of ``multiple``) on which every chunk lies, and whether exactly."""
    values = np.concatenate([schedule.offsets, schedule.offsets + schedule.chunk_nbytes]) / schedule.nbytes
    grid = multiple
    for value in values.tolist():
        fraction = Fraction(value).limit_denominator(_MAX_GRID)
        if abs(float(fraction) - value) > 1e-9:
            break
        grid = math.lcm(grid, fraction.denominator)
        if grid > _MAX_GRID:
            break
    else:
        largest = float(schedule.chunk_nbytes.max()) / schedule.nbytes
        if round(largest * grid) < MAX_COUNT:
            return grid, True
    # no common grid: the finest grid whose largest chunk stays below MSCCL's count limit
    largest = float(schedule.chunk_nbytes.max()) / schedule.nbytes
    grid = max(multiple, int((MAX_COUNT - 1) / largest) // multiple * multiple)
    return grid, False


def _units(schedule: Schedule, grid: int) -> tuple[list[int], list[int]]:
    """Every chunk's first grid chunk and count (boundaries rounded to the grid)."""
    start = np.rint(schedule.offsets / schedule.nbytes * grid).astype(np.int64)
    end = np.rint((schedule.offsets + schedule.chunk_nbytes) / schedule.nbytes * grid).astype(np.int64)
    small = np.flatnonzero(end <= start)
    if small.size:
        c = int(small[0])
        raise ExportError(
            f"chunk {c} ({schedule.chunk_nbytes[c]:.0f} B) is smaller than one of {grid} MSCCL chunks "
            "of the buffer"
        )
    return start.tolist(), (end - start).tolist()


@dataclass
class _Writer:
    """Thread blocks under construction, GPU by GPU."""

    tbs: list[dict[tuple[int, int, str], MscclTb]]
    route: dict[tuple[int, int], tuple[str, str]] = field(default_factory=dict)

    def block(self, gpu: int, peer: int, chan: int, role: str) -> MscclTb:
        blocks = self.tbs[gpu]
        key = (peer, chan, role)
        if key not in blocks:
            send, recv = (peer, -1) if role == "send" else (-1, peer)
            blocks[key] = MscclTb(id=len(blocks), send=send, recv=recv, chan=chan)
        return blocks[key]

    def add(
        self, gpu: int, tb: MscclTb, step: MscclStep, waits: list[tuple[int, int]]
    ) -> tuple[int, int, int]:
        """Append ``step`` to ``tb`` of ``gpu`` after nops carrying all but the last wait."""
        waits = [w for w in dict.fromkeys(waits) if w[0] != tb.id]  # own earlier steps run before anyway
        blocks = {t.id: t for t in self.tbs[gpu].values()}
        for depid, deps in waits[:-1]:
            nop = MscclStep(
                len(tb.steps), "nop", step.srcbuf, step.srcoff, step.dstbuf, step.dstoff, step.cnt
            )
            nop.depid, nop.deps = depid, deps
            tb.steps.append(nop)
        if waits:
            step.depid, step.deps = waits[-1]
        for depid, deps in waits:
            blocks[depid].steps[deps].hasdep = 1
        step.s = len(tb.steps)
        tb.steps.append(step)
        return gpu, tb.id, step.s


def _route_hint(schedule: Schedule, op: int) -> dict[str, str]:
    spec = schedule.paths[int(schedule.op_path[op])]
    if spec.via is not None:
        return {"commsim_via": ",".join(spec.via)}
    if spec.kinds is not None:
        return {"commsim_kinds": ",".join(spec.kinds)}
    return {}


def _check_exportable(schedule: Schedule, proto: str) -> str:
    coll = MSCCL_COLLECTIVES.get(schedule.collective)
    if coll is None:
        valid = ", ".join(str(c) for c in MSCCL_COLLECTIVES)
        raise ExportError(f"cannot export {schedule.collective} as MSCCL; exportable collectives: {valid}")
    if proto not in PROTOCOLS:
        valid = f"valid: {', '.join(PROTOCOLS)} (any case){did_you_mean(proto, PROTOCOLS)}"
        raise ExportError(f"unknown MSCCL protocol {proto!r}; {valid}")
    n = len(schedule.ranks)
    outside = np.flatnonzero((schedule.op_src >= n) | (schedule.op_dst >= n))
    if outside.size:
        op = int(outside[0])
        a, b = schedule.devices[schedule.op_src[op]], schedule.devices[schedule.op_dst[op]]
        raise ExportError(f"send {op} runs {a} -> {b}; MSCCL moves data between GPUs (ranks) only")
    return coll


def _waits(
    schedule: Schedule, op: int, placed: list[tuple[tuple[int, int, int], tuple[int, int, int]]]
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The (tb, step) pairs op's send and its receive wait for."""
    src, dst = int(schedule.op_src[op]), int(schedule.op_dst[op])
    on_sender: list[tuple[int, int]] = []
    on_receiver: list[tuple[int, int]] = []
    for dep in schedule.deps(op).tolist():
        send_key, recv_key = placed[dep]
        for gpu, waits in ((src, on_sender), (dst, on_receiver)):
            match = [key for key in (recv_key, send_key) if key[0] == gpu]
            if match:
                waits.append(match[0][1:])
                break
        else:
            a, b = schedule.devices[schedule.op_src[dep]], schedule.devices[schedule.op_dst[dep]]
            raise ExportError(
                f"send {op} ({schedule.devices[src]} -> {schedule.devices[dst]}) depends on send {dep} "
                f"({a} -> {b}), "
                "which touches neither of its GPUs; MSCCL dependencies join steps of one GPU"
            )
    return on_sender, on_receiver


def schedule_to_msccl(
    schedule: Schedule,
    *,
    name: str = "",
    proto: str = "Simple",
    min_bytes: int = 0,
    max_bytes: int | None = None,
) -> MscclExport:
    """Translate ``schedule`` into an MSCCL algorithm (see the module docstring for the rules).

    Parameters
    ----------
    schedule : Schedule
        A schedule among GPUs (every send from one rank to another).
    name : str
        The algorithm's name (default: collective and rank count).
    proto : {"Simple", "LL128", "LL"}
        The protocol MSCCL runs it with, in any case (``simple`` is written ``Simple``).
    min_bytes, max_bytes : int
        Call sizes, in bytes, for which the runtime picks it (default
        ``0 .. schedule.nbytes``).

    Returns
    -------
    MscclExport
        The algorithm, checked by :func:`commsim.interop.msccl_check.check_msccl`.

    Raises
    ------
    ExportError
        If the collective has no MSCCL form, a send leaves the GPUs, a
        dependency joins no GPU of its send, or the result breaks a limit
        of the format (too many steps or thread blocks).
    """
    proto = {p.lower(): p for p in PROTOCOLS}.get(str(proto).lower(), proto)
    coll = _check_exportable(schedule, proto)
    n = len(schedule.ranks)
    grid, exact = _grid(schedule, n if schedule.collective in _SLICED else 1)
    start, count = _units(schedule, grid)
    buffer = "o" if schedule.collective in (Collective.ALL_GATHER, Collective.GATHER) else "i"
    writer = _Writer([{} for _ in range(n)])
    placed: list[tuple[tuple[int, int, int], tuple[int, int, int]]] = []
    for op in range(schedule.n_ops):
        src, dst, chan = int(schedule.op_src[op]), int(schedule.op_dst[op]), int(schedule.channels[op])
        chunk = int(schedule.op_chunk[op])
        on_sender, on_receiver = _waits(schedule, op, placed)
        sender = writer.block(src, dst, chan, "send")
        hint = _route_hint(schedule, op)
        if sender.steps and sender.extra != hint:
            raise ExportError(
                f"sends {schedule.devices[src]} -> {schedule.devices[dst]} on channel {chan} take "
                "different routes; MSCCL keeps one per connection"
            )
        sender.extra = hint
        receiver = writer.block(dst, src, chan, "recv")
        kind = "rrc" if schedule.op_reduce[op] else "r"
        u, c = start[chunk], count[chunk]
        send_key = writer.add(src, sender, MscclStep(0, "s", buffer, u, buffer, u, c), on_sender)
        recv_key = writer.add(dst, receiver, MscclStep(0, kind, buffer, u, buffer, u, c), on_receiver)
        placed.append((send_key, recv_key))
    algo = _algo(schedule, coll, proto, grid, writer, name, min_bytes, max_bytes)
    problems = msccl_problems(algo)
    if problems:
        raise ExportError("the MSCCL translation breaks the format's limits: " + "; ".join(problems[:3]))
    return MscclExport(algo, exact)


def _algo(
    schedule: Schedule,
    coll: str,
    proto: str,
    grid: int,
    writer: _Writer,
    name: str,
    min_bytes: int,
    max_bytes: int | None,
) -> MscclAlgo:
    n = len(schedule.ranks)
    inputs = grid // n if schedule.collective in (Collective.ALL_GATHER, Collective.GATHER) else grid
    outputs = grid // n if schedule.collective is Collective.REDUCE_SCATTER else grid
    algo = MscclAlgo(
        name=name or f"commsim_{coll}_{n}gpus",
        proto=proto,
        nchannels=int(schedule.channels.max()) + 1 if schedule.n_ops else 1,
        nchunksperloop=grid,
        ngpus=n,
        coll=coll,
        inplace=1,
        outofplace=0,
        min_bytes=int(min_bytes),
        max_bytes=int(schedule.nbytes if max_bytes is None else max_bytes),
    )
    algo.gpus = [MscclGpu(g, inputs, outputs, 0, list(writer.tbs[g].values())) for g in range(n)]
    return algo


def write_msccl(schedule: Schedule, path: str, **kwargs: object) -> MscclExport:
    """Export ``schedule`` (see :func:`schedule_to_msccl`) and write the XML to ``path``.

    The file is written only once the export succeeded and passed the checker.
    """
    export = schedule_to_msccl(schedule, **kwargs)  # type: ignore[arg-type]
    text = export.xml
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return export
