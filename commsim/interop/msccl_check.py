"""Check an MSCCL algorithm against the rules of its format, before anyone runs it.

Every rule comes from the MSCCL runtime's loader or its limits (see
:mod:`commsim.interop.msccl_format` for the references): what the runtime
would refuse at load time, and what would make it hang or read out of
bounds at run time.

1. GPUs are numbered ``0 .. ngpus-1``, each once; ``nchannels >= 1`` and
   every thread block's ``chan`` is below it.
2. Chunk counts agree: ``i_chunks`` and ``o_chunks`` positive (an
   in-place all-reduce may give ``o_chunks="0"``, as msccl-tools writes:
   its output is its input), ``s_chunks`` not negative; ``nchunksperloop``
   is ``max(i_chunks, o_chunks)`` (the runtime cuts the call's buffer into
   that many chunks); all-gather's output is ``ngpus`` inputs,
   reduce-scatter's input ``ngpus`` outputs, all-reduce's input and output
   are the same size.
3. Thread blocks of a GPU are numbered ``0 .. k-1`` (a gap is refused), at
   most :data:`MAX_THREAD_BLOCKS`; peers are -1 or another GPU; no two
   thread blocks of a GPU send to (or receive from) the same peer on one
   channel, and one channel serves at most :data:`MAX_TBS_PER_CHANNEL`;
   an attribute value holds at most :data:`MAX_STRING` characters.
4. Steps are numbered ``0 .. n-1`` in order, at most :data:`MAX_STEPS` per
   thread block; a sending step needs a send peer, a receiving step a
   receive peer; ``cnt`` is in ``1 .. MAX_COUNT-1``; every chunk a step
   reads or writes, ``offset .. offset+cnt-1``, is inside its buffer.
5. A dependency names another thread block of the same GPU and one of its
   steps, which carries ``hasdep="1"``; ``hasdep`` is 0 or 1; ``nop`` steps
   carry a dependency and are followed by a transfer that carries one too.
6. On every connection (sender, receiver, channel) the sends of the sender
   and the receives of the receiver pair up, in order, with equal counts.
7. No deadlock: the steps, ordered by their thread blocks, their
   dependencies and each send before its receive, form no cycle.
"""

from __future__ import annotations

from collections import defaultdict

from commsim.interop.errors import FormatError
from commsim.interop.msccl_format import RECEIVES, SENDS, MscclAlgo, MscclGpu, MscclStep, MscclTb

__all__ = [
    "MAX_BYTES",
    "MAX_COUNT",
    "MAX_STEPS",
    "MAX_STRING",
    "MAX_TBS_PER_CHANNEL",
    "MAX_THREAD_BLOCKS",
    "check_msccl",
    "msccl_problems",
]

MAX_STEPS = 256
"""Steps per thread block (``MSCCL_MAX_NUM_STEPS``)."""
MAX_THREAD_BLOCKS = 216
"""Thread blocks per GPU (``MSCCL_MAX_NUM_THREAD_BLOCKS``, 108 x 2)."""
MAX_TBS_PER_CHANNEL = 32
"""Send (or receive) thread blocks per channel (``MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL``)."""
MAX_STRING = 255
"""Characters of an attribute value the runtime's XML reader keeps (``MSCCL_MAX_STR_LEN``)."""
MAX_COUNT = 72
"""A step's ``cnt`` must be below this (``MSCCL_MAX_COUNT``)."""
MAX_BYTES = 2**63 - 1
"""The largest ``minBytes``/``maxBytes``: the runtime reads them as 64-bit signed integers."""

_READS = frozenset({"s", "rrs", "rrc", "rrcs", "cpy", "re"})
_WRITES = frozenset({"r", "rcs", "rrc", "rrcs", "cpy", "re"})

StepKey = tuple[int, int, int]  # gpu, tb, step


def msccl_problems(algo: MscclAlgo) -> list[str]:
    """Every violation of the format's rules, as ``file:line: message`` strings (empty: valid)."""
    out: list[str] = []
    _check_header(algo, out)
    for gpu in algo.gpus:
        _check_chunks(algo, gpu, out)
        _check_tbs(algo, gpu, out)
        for tb in gpu.tbs:
            _check_steps(algo, gpu, tb, out)
    if not out:  # pairing and deadlock need well-formed thread blocks
        pairs = pair_connections(algo, out)
        if not out:
            _check_deadlock(algo, pairs, out)
    return out


def check_msccl(algo: MscclAlgo) -> None:
    """Raise :class:`FormatError` listing the first violations, if any (see :func:`msccl_problems`)."""
    problems = msccl_problems(algo)
    if problems:
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise FormatError("invalid MSCCL algorithm: " + "; ".join(problems[:5]) + more)


def _check_header(algo: MscclAlgo, out: list[str]) -> None:
    at = algo.where(algo.line)
    if algo.ngpus < 1 or algo.nchannels < 1 or algo.nchunksperloop < 1:
        out.append(f"{at}ngpus, nchannels and nchunksperloop must be at least 1")
    ids = sorted(gpu.id for gpu in algo.gpus)
    if len(ids) != algo.ngpus or ids != list(range(len(ids))):  # no list of ngpus items: it may be 10^9
        out.append(f"{at}<gpu> ids are {ids}, expected 0..{algo.ngpus - 1} once each")
    if algo.inplace not in (0, 1) or algo.outofplace not in (0, 1) or not (algo.inplace or algo.outofplace):
        out.append(f"{at}inplace and outofplace must be 0 or 1, and at least one of them 1")
    if algo.min_bytes < 0 or algo.max_bytes < algo.min_bytes:
        out.append(f"{at}size range minBytes={algo.min_bytes} .. maxBytes={algo.max_bytes} is empty")
    elif algo.max_bytes > MAX_BYTES:  # written as is, it would wrap or saturate in the runtime's int64
        out.append(f"{at}maxBytes={algo.max_bytes} is above {MAX_BYTES:,}, the largest size MSCCL reads")


def _check_chunks(algo: MscclAlgo, gpu: MscclGpu, out: list[str]) -> None:
    at = algo.where(gpu.line)
    i, o, n = gpu.i_chunks, gpu.o_chunks, algo.ngpus
    if o == 0 and algo.coll == "allreduce" and algo.inplace:
        o = i  # msccl-tools' in-place all-reduce: the output is the input
    if i < 1 or o < 1 or gpu.s_chunks < 0:
        out.append(f"{at}gpu {gpu.id}: i_chunks and o_chunks must be positive, s_chunks not negative")
        return
    if algo.nchunksperloop != max(i, o):
        out.append(
            f"{at}gpu {gpu.id}: nchunksperloop={algo.nchunksperloop} is not "
            f"max(i_chunks, o_chunks)={max(i, o)}"
        )
    want = {"allgather": (i * n, o), "reducescatter": (i, o * n), "allreduce": (i, o)}.get(algo.coll)
    if want is not None and want[0] != want[1]:
        rule = {"allgather": "o_chunks = ngpus x i_chunks", "reducescatter": "i_chunks = ngpus x o_chunks"}
        out.append(f"{at}gpu {gpu.id}: {algo.coll} needs {rule.get(algo.coll, 'i_chunks = o_chunks')}")


def _check_tbs(algo: MscclAlgo, gpu: MscclGpu, out: list[str]) -> None:
    ids = sorted(tb.id for tb in gpu.tbs)
    at = algo.where(gpu.line)
    if ids != list(range(len(ids))):
        out.append(f"{at}gpu {gpu.id}: thread block ids are {ids}, expected 0..{len(ids) - 1} once each")
    if len(ids) > MAX_THREAD_BLOCKS:
        out.append(f"{at}gpu {gpu.id}: {len(ids)} thread blocks, at most {MAX_THREAD_BLOCKS}")
    seen: dict[tuple[str, int, int], int] = {}
    per_channel: dict[tuple[str, int], int] = defaultdict(int)
    for tb in gpu.tbs:
        at = algo.where(tb.line)
        if not 0 <= tb.chan < algo.nchannels:
            out.append(f"{at}tb {tb.id}: chan={tb.chan} outside 0..{algo.nchannels - 1}")
        for key, value in tb.extra.items():
            if len(value) > MAX_STRING:
                out.append(
                    f"{at}tb {tb.id}: attribute {key} has {len(value)} characters, at most {MAX_STRING}"
                )
        for role, peer in (("send", tb.send), ("recv", tb.recv)):
            if peer == -1:
                continue
            if not 0 <= peer < algo.ngpus or peer == gpu.id:
                out.append(f"{at}tb {tb.id}: {role}={peer} must be -1 or another GPU in 0..{algo.ngpus - 1}")
            elif (role, peer, tb.chan) in seen:
                first = seen[(role, peer, tb.chan)]
                out.append(f"{at}tb {tb.id}: {role} peer {peer} on channel {tb.chan} is already tb {first}'s")
            else:
                seen[(role, peer, tb.chan)] = tb.id
                per_channel[(role, tb.chan)] += 1
    for (role, chan), count in per_channel.items():
        if count > MAX_TBS_PER_CHANNEL:
            out.append(
                f"{at}gpu {gpu.id}: {count} {role} thread blocks on channel {chan}, "
                f"at most {MAX_TBS_PER_CHANNEL}"
            )


def _check_steps(algo: MscclAlgo, gpu: MscclGpu, tb: MscclTb, out: list[str]) -> None:
    if len(tb.steps) > MAX_STEPS:
        out.append(
            f"{algo.where(tb.line)}gpu {gpu.id} tb {tb.id}: {len(tb.steps)} steps, at most {MAX_STEPS}"
        )
    aliased = gpu.o_chunks == 0 and algo.coll == "allreduce" and bool(algo.inplace)
    sizes = {"i": gpu.i_chunks, "o": gpu.i_chunks if aliased else gpu.o_chunks, "s": gpu.s_chunks}
    tbs = {t.id: t for t in gpu.tbs}
    for position, step in enumerate(tb.steps):
        at = f"{algo.where(step.line)}gpu {gpu.id} tb {tb.id} step {step.s}: "
        if step.s != position:
            out.append(f"{at}s={step.s} but it is step {position} of its thread block")
        if step.type in SENDS and tb.send < 0:
            out.append(f"{at}type {step.type} sends but the thread block has send=-1")
        if step.type in RECEIVES and tb.recv < 0:
            out.append(f"{at}type {step.type} receives but the thread block has recv=-1")
        if step.type != "nop" and not 1 <= step.cnt < MAX_COUNT:
            out.append(f"{at}cnt={step.cnt} outside 1..{MAX_COUNT - 1}")
        for role, used, buf, off in (
            ("src", _READS, step.srcbuf, step.srcoff),
            ("dst", _WRITES, step.dstbuf, step.dstoff),
        ):
            if step.type in used and not (off >= 0 and off + step.cnt <= sizes[buf]):
                out.append(
                    f"{at}{role} chunks {off}..{off + step.cnt - 1} outside buffer {buf} "
                    f"of {sizes[buf]} chunks"
                )
        _check_dependency(algo, tb, tbs, step, position, at, out)


def _check_dependency(
    algo: MscclAlgo,
    tb: MscclTb,
    tbs: dict[int, MscclTb],
    step: MscclStep,
    position: int,
    at: str,
    out: list[str],
) -> None:
    if step.hasdep not in (0, 1):
        out.append(f"{at}hasdep={step.hasdep} must be 0 or 1")
    if step.depid == -1:
        if step.type == "nop":
            out.append(f"{at}a nop step must carry a dependency (depid >= 0)")
        elif position and tb.steps[position - 1].type == "nop":
            out.append(
                f"{at}follows a nop, so it must carry a dependency too (the runtime refuses the chain)"
            )
        return
    target = tbs.get(step.depid)
    if target is None or step.depid == tb.id:
        out.append(f"{at}depid={step.depid} is not another thread block of this GPU")
    elif not 0 <= step.deps < len(target.steps):
        out.append(f"{at}deps={step.deps} is not a step of tb {step.depid} (it has {len(target.steps)})")
    elif target.steps[step.deps].hasdep != 1:
        out.append(f'{at}waits for tb {step.depid} step {step.deps}, which does not set hasdep="1"')


def pair_connections(algo: MscclAlgo, out: list[str]) -> dict[StepKey, StepKey]:
    """Each sending step's matching receiving step, connection by connection."""
    sends: dict[tuple[int, int, int], list[StepKey]] = defaultdict(list)
    recvs: dict[tuple[int, int, int], list[StepKey]] = defaultdict(list)
    counts: dict[StepKey, int] = {}
    for gpu in algo.gpus:
        for tb in gpu.tbs:
            for k, step in enumerate(tb.steps):
                counts[(gpu.id, tb.id, k)] = step.cnt
                if step.type in SENDS:
                    sends[(gpu.id, tb.send, tb.chan)].append((gpu.id, tb.id, k))
                if step.type in RECEIVES:
                    recvs[(tb.recv, gpu.id, tb.chan)].append((gpu.id, tb.id, k))
    pairs: dict[StepKey, StepKey] = {}
    for conn in sorted(set(sends) | set(recvs)):
        a, b = sends.get(conn, []), recvs.get(conn, [])
        src, dst, chan = conn
        if len(a) != len(b):
            out.append(
                f"{algo.where(None)}connection gpu {src} -> gpu {dst} channel {chan}: "
                f"{len(a)} sends but {len(b)} receives"
            )
            continue
        for send, recv in zip(a, b):
            if counts[send] != counts[recv]:
                out.append(
                    f"{algo.where(None)}connection gpu {src} -> gpu {dst} channel {chan}: "
                    f"a send of {counts[send]} chunks (tb {send[1]} step {send[2]}) meets a receive "
                    f"of {counts[recv]} (tb {recv[1]} step {recv[2]})"
                )
            pairs[send] = recv
    return pairs


def _check_deadlock(algo: MscclAlgo, pairs: dict[StepKey, StepKey], out: list[str]) -> None:
    before: dict[StepKey, list[StepKey]] = defaultdict(list)
    for gpu in algo.gpus:
        for tb in gpu.tbs:
            for k, step in enumerate(tb.steps):
                key = (gpu.id, tb.id, k)
                if k:
                    before[key].append((gpu.id, tb.id, k - 1))
                if step.depid >= 0:
                    before[key].append((gpu.id, step.depid, step.deps))
    for send, recv in pairs.items():
        before[recv].append(send)
    keys = [(g.id, t.id, k) for g in algo.gpus for t in g.tbs for k in range(len(t.steps))]
    waiting = {key: len(before[key]) for key in keys}
    after: dict[StepKey, list[StepKey]] = defaultdict(list)
    for key, preds in before.items():
        for pred in preds:
            after[pred].append(key)
    ready = [key for key, n in waiting.items() if n == 0]
    done = 0
    while ready:
        key = ready.pop()
        done += 1
        for nxt in after[key]:
            waiting[nxt] -= 1
            if waiting[nxt] == 0:
                ready.append(nxt)
    if done < len(keys):
        stuck = min(key for key, n in waiting.items() if n > 0)
        out.append(
            f"{algo.where(None)}deadlock: {len(keys) - done} steps wait in a cycle, "
            f"the first at gpu {stuck[0]} tb {stuck[1]} step {stuck[2]}"
        )
