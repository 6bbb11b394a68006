"""Read an MSCCL algorithm into a commsim schedule, to verify and replay it.

Each send step paired with its receive step (connection by connection, in
order: :func:`commsim.interop.msccl_check.pair_connections`) becomes one
commsim send of the chunks ``offset .. offset+cnt-1``; it reduces on arrival
when the receiving step reduces (``rrc``, ``rrs``, ``rrcs``). A send waits
for what its two steps wait for: their explicit dependencies (with those of
the ``nop`` steps before them), the step before them in their thread block
(thread blocks run their steps in order), and, for a step that receives and
then sends (``rcs``, ``rrs``, ``rrcs``), its own receive. Chunks are the
byte ranges ``[offset, offset+cnt) x nbytes / nchunksperloop``; ranges no
step moves are added as chunks that stay where they are, so chunks tile the
buffer as the verifier requires. ``commsim_via``/``commsim_kinds``
attributes of a sending thread block (written by commsim's export) pin
routes; without them sends take the machine's best route.

Not imported (:class:`FormatError` says so): local ``cpy``/``re`` steps and
the scratch buffer (commsim chunks keep their place in the buffer), a
receive that stores data elsewhere than the sender read it, and
collectives without a commsim counterpart here (all-to-all, scatter,
send/recv).
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from dataclasses import dataclass

from commsim.algorithms.base import check_routes
from commsim.collectives import Collective
from commsim.errors import UnitError
from commsim.interop.errors import FormatError
from commsim.interop.msccl_check import check_msccl, pair_connections
from commsim.interop.msccl_format import RECEIVES, REDUCES, MscclAlgo, MscclStep, MscclTb
from commsim.schedule import Schedule, ScheduleBuilder
from commsim.topology.model import Topology

__all__ = ["msccl_to_schedule"]

_COLLECTIVES = {
    "allreduce": Collective.ALL_REDUCE,
    "reducescatter": Collective.REDUCE_SCATTER,
    "allgather": Collective.ALL_GATHER,
    "broadcast": Collective.BROADCAST,
    "reduce": Collective.REDUCE,
    "gather": Collective.GATHER,
}
_SLICED = (Collective.REDUCE_SCATTER, Collective.ALL_GATHER, Collective.GATHER)

StepKey = tuple[int, int, int]


@dataclass
class _Op:
    src: int
    dst: int
    chan: int
    offset: int
    count: int
    reduce: bool
    send: StepKey
    recv: StepKey


Blocks = dict[tuple[int, int], MscclTb]


def _blocks(algo: MscclAlgo) -> Blocks:
    """Every thread block by (gpu, tb id)."""
    return {(gpu.id, tb.id): tb for gpu in algo.gpus for tb in gpu.tbs}


def _step(blocks: Blocks, key: StepKey) -> tuple[MscclTb, MscclStep]:
    tb = blocks[key[:2]]
    return tb, tb.steps[key[2]]


def _refuse_unsupported(algo: MscclAlgo) -> Collective:
    collective = _COLLECTIVES.get(algo.coll)
    if collective is None:
        raise FormatError(
            f"{algo.where(algo.line)}collective {algo.coll!r} cannot be imported; "
            f"valid: {', '.join(_COLLECTIVES)}"
        )
    for gpu in algo.gpus:
        for tb in gpu.tbs:
            for step in tb.steps:
                if step.type in ("cpy", "re"):
                    raise FormatError(
                        f"{algo.where(step.line)}local {step.type!r} steps cannot be imported "
                        "(commsim chunks keep their place); importable: s, r, rcs, rrc, rrs, rrcs, nop"
                    )
                if step.type != "nop" and "s" in (step.srcbuf, step.dstbuf):
                    raise FormatError(
                        f"{algo.where(step.line)}the scratch buffer cannot be imported (commsim chunks keep "
                        "their place); use buffers i and o"
                    )
    return collective


def _sent_offset(step: MscclStep) -> int:
    """Where the data a sending step sends sits: what it forwards (rcs) or reads (s, rrs, rrcs)."""
    return step.dstoff if step.type == "rcs" else step.srcoff


def _received_offset(step: MscclStep) -> int:
    return step.srcoff if step.type == "rrs" else step.dstoff


def _ops(algo: MscclAlgo, blocks: Blocks) -> list[_Op]:
    pairs = pair_connections(algo, [])
    ops = []
    for send, recv in pairs.items():
        (stb, sstep), (_, rstep) = _step(blocks, send), _step(blocks, recv)
        if _sent_offset(sstep) != _received_offset(rstep):
            raise FormatError(
                f"{algo.where(rstep.line)}gpu {recv[0]} receives chunk {_sent_offset(sstep)} "
                f"of gpu {send[0]} "
                f"at chunk {_received_offset(rstep)}; commsim chunks keep their place in the buffer"
            )
        reduce = rstep.type in REDUCES
        ops.append(_Op(send[0], recv[0], stb.chan, _sent_offset(sstep), sstep.cnt, reduce, send, recv))
    return ops


def _completes(ops: list[_Op]) -> dict[StepKey, int]:
    """The send whose completion a step stands for: what it receives, else what it sends."""
    done: dict[StepKey, int] = {}
    for index, op in enumerate(ops):
        done.setdefault(op.send, index)
        done[op.recv] = index  # a receive wins over a send of the same (fused) step
    return done


def _waits_of(blocks: Blocks, key: StepKey, done: dict[StepKey, int], sending: bool) -> set[int]:
    """Sends the step ``key`` waits for: its dependency, the nops' before it, and if it is
    the sending side of a send, the step before it (a receive waits in its connection's order
    only: the step before it has handed its data over, which commsim does not model)."""
    gpu, tb_id, position = key
    tb = blocks[key[:2]]
    found: set[int] = set()
    k = position
    while True:
        step = tb.steps[k]
        if step.depid >= 0:
            target = (gpu, step.depid, step.deps)
            found |= _resolve(blocks, target, done, set())
        if k == 0 or tb.steps[k - 1].type != "nop":
            break
        k -= 1
    if sending and k > 0 and (gpu, tb_id, k - 1) in done:
        found.add(done[(gpu, tb_id, k - 1)])
    if sending and tb.steps[position].type in RECEIVES and key in done:
        found.add(done[key])
    return found


def _resolve(blocks: Blocks, key: StepKey, done: dict[StepKey, int], seen: set[StepKey]) -> set[int]:
    """Sends a dependency on ``key`` means (a nop stands for what it waits for)."""
    if key in done:
        return {done[key]}
    if key in seen:
        return set()
    seen.add(key)
    step = blocks[key[:2]].steps[key[2]]
    if step.depid >= 0:
        return _resolve(blocks, (key[0], step.depid, step.deps), done, seen)
    return set()


def _order(ops: list[_Op], deps: list[set[int]]) -> list[int]:
    """A topological order of the sends that keeps connections in order (smallest index first)."""
    after: dict[int, list[int]] = defaultdict(list)
    waiting = [0] * len(ops)
    last: dict[tuple[int, int, int], int] = {}
    edges = [set(d) for d in deps]
    for index, op in enumerate(ops):  # pairs come out connection by connection, in order
        conn = (op.src, op.dst, op.chan)
        if conn in last:
            edges[index].add(last[conn])
        last[conn] = index
    for index, preds in enumerate(edges):
        preds.discard(index)
        waiting[index] = len(preds)
        for pred in preds:
            after[pred].append(index)
    ready = [i for i, n in enumerate(waiting) if n == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        index = heapq.heappop(ready)
        order.append(index)
        for nxt in after[index]:
            waiting[nxt] -= 1
            if waiting[nxt] == 0:
                heapq.heappush(ready, nxt)
    if len(order) < len(ops):
        raise FormatError("the algorithm's sends wait for each other in a cycle (a deadlock)")
    return order


def _route(tb: MscclTb) -> tuple[tuple[str, ...] | None, tuple[str, ...] | None]:
    """The (kinds, via) route hint commsim's export left on a sending thread block."""
    via = tb.extra.get("commsim_via")
    kinds = tb.extra.get("commsim_kinds")
    return (tuple(kinds.split(",")) if kinds else None), (tuple(via.split(",")) if via else None)


def _chunks(
    builder: ScheduleBuilder, ops: list[_Op], grid: int, nbytes: float, collective: Collective, n: int
) -> dict[tuple[int, int], int]:
    """Chunk ids of every moved range, plus chunks for the ranges nothing moves."""
    ranges = sorted({(op.offset, op.count) for op in ops})
    cuts = sorted({0, grid} | ({grid * r // n for r in range(n)} if collective in _SLICED else set()))
    covered = [False] * grid
    for offset, count in ranges:
        for u in range(offset, min(offset + count, grid)):
            covered[u] = True
    gaps = []
    u = 0
    while u < grid:
        if covered[u]:
            u += 1
            continue
        end = u
        while end < grid and not covered[end] and (end == u or end not in cuts):
            end += 1
        gaps.append((u, end - u))
        u = end
    unit = nbytes / grid
    ids = {}
    for offset, count in sorted(ranges + gaps):
        owner = offset * n // grid if collective in _SLICED else -1
        ids[(offset, count)] = builder.chunk(count * unit, owner=owner, offset=offset * unit)
    return ids


def _root(algo: MscclAlgo, collective: Collective, ops: list[_Op], root: int | None) -> int | None:
    if collective not in (Collective.BROADCAST, Collective.REDUCE, Collective.GATHER):
        return None
    if root is not None:
        return root
    ends = {op.dst for op in ops} if collective is Collective.BROADCAST else {op.src for op in ops}
    candidates = [g for g in range(algo.ngpus) if g not in ends]
    if len(candidates) != 1:
        raise FormatError(f"{algo.where(algo.line)}cannot tell the root of this {algo.coll}; give root=")
    return candidates[0]


def msccl_to_schedule(
    algo: MscclAlgo,
    topology: Topology,
    nbytes: float,
    *,
    ranks: tuple[str, ...] | None = None,
    root: int | None = None,
) -> Schedule:
    """The commsim schedule of an MSCCL algorithm, for a call of ``nbytes`` on ``topology``.

    Parameters
    ----------
    algo : MscclAlgo
        As read by :func:`commsim.interop.msccl_format.read_msccl`.
    topology : Topology
        The machine; rank ``i`` is its ``i``-th GPU unless ``ranks`` says otherwise.
    nbytes : float
        The call's size (nccl-tests convention, as :class:`Schedule.nbytes`), bytes.
    ranks : tuple of str, optional
        GPU names of ranks ``0 .. ngpus-1``.
    root : int, optional
        Root of a broadcast, reduce or gather (default: the one rank that
        never receives, or never sends).

    Raises
    ------
    FormatError
        If the algorithm breaks the format's rules (:func:`check_msccl`) or
        uses what commsim cannot import (see the module docstring).
    UnitError
        If ``nbytes`` is not a size of more than 0 bytes.
    """
    if isinstance(nbytes, bool) or not isinstance(nbytes, (int, float)) or not 0 < nbytes < float("inf"):
        raise UnitError(f"nbytes {nbytes!r}: a call's size is a number of bytes above 0, e.g. 1048576")
    check_msccl(algo)
    collective = _refuse_unsupported(algo)
    names = ranks if ranks is not None else tuple(topology.gpus[: algo.ngpus])
    if len(names) != algo.ngpus:
        raise FormatError(
            f"{algo.where(algo.line)}the algorithm has {algo.ngpus} GPUs but topology "
            f"{topology.name!r} gives {len(names)}"
        )
    blocks = _blocks(algo)
    ops = _ops(algo, blocks)
    done = _completes(ops)
    deps = [_waits_of(blocks, op.send, done, True) | _waits_of(blocks, op.recv, done, False) for op in ops]
    for index, found in enumerate(deps):
        found.discard(index)
    builder = ScheduleBuilder(collective, nbytes, names, root=_root(algo, collective, ops, root))
    ids = _chunks(builder, ops, algo.nchunksperloop, nbytes, collective, algo.ngpus)
    new_id: dict[int, int] = {}
    for index in _order(ops, deps):
        op = ops[index]
        kinds, via = _route(blocks[op.send[:2]])
        new_id[index] = builder.send(
            names[op.src],
            names[op.dst],
            ids[(op.offset, op.count)],
            reduce=op.reduce,
            deps=sorted(new_id[d] for d in deps[index]),
            channel=op.chan,
            kinds=kinds,
            via=via,
        )
    schedule = builder.build()
    check_routes(schedule, topology)
    return schedule
