"""The MSCCL algorithm XML format: its elements as data, reading and writing.

An MSCCL algorithm is one ``<algo>`` element holding one ``<gpu>`` per
rank; each GPU runs thread blocks (``<tb>``), each bound to one channel,
at most one peer it sends to and one it receives from; a thread block runs
its ``<step>`` elements in order. A step moves ``cnt`` chunks between
buffers ``i`` (input), ``o`` (output) and ``s`` (scratch) at chunk offsets,
and may wait for one step of another thread block of the same GPU
(``depid``/``deps``; -1 for none); ``hasdep="1"`` marks a step that some
other step waits for. Step types: ``s`` send, ``r`` receive, ``rcs``
receive-copy-send, ``rrc`` receive-reduce-copy, ``rrs``
receive-reduce-send, ``rrcs`` receive-reduce-copy-send, ``cpy`` local
copy, ``re`` local reduce, ``nop`` (a carrier of one more dependency).

References
----------
The attribute names and meanings follow the MSCCL runtime's parser,
``src/misc/msccl/msccl_parser.cc`` (``mscclGetAlgoFromXmlFile``) in
microsoft/msccl (also NVIDIA/nccl, ROCm/rccl and Azure/msccl-executor-nccl),
and its limits ``src/include/msccl/msccl_struct.h``; the layout matches what
microsoft/msccl-tools writes (``msccl/language/ir.py``) and the generators
in microsoft/msccl ``src/xml_generator/`` (e.g.
``allpair_allreduce_low_latency.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from os import PathLike
from xml.sax.saxutils import quoteattr

from commsim.interop.xmlread import XmlElement, parse_xml, read_xml_file

__all__ = [
    "BUFFERS",
    "COLLECTIVES",
    "PROTOCOLS",
    "STEP_TYPES",
    "MscclAlgo",
    "MscclGpu",
    "MscclStep",
    "MscclTb",
    "algo_from_xml",
    "algo_to_xml",
    "parse_msccl",
    "read_msccl",
]

PROTOCOLS = ("Simple", "LL128", "LL")
"""``proto`` values the runtime accepts (``mscclProtocolStrToId``)."""

COLLECTIVES = (
    "allreduce",
    "reducescatter",
    "allgather",
    "broadcast",
    "reduce",
    "gather",
    "scatter",
    "alltoall",
    "alltoallv",
    "send",
    "recv",
)
"""``coll`` values the runtime accepts."""

BUFFERS = ("i", "o", "s")
"""Buffer names: input, output, scratch."""

STEP_TYPES = ("s", "r", "rcs", "rrc", "rrs", "rrcs", "cpy", "re", "nop")
"""Step types; which of them send, receive or read and write buffers is in :data:`SENDS` etc."""

SENDS = frozenset({"s", "rcs", "rrs", "rrcs"})
RECEIVES = frozenset({"r", "rcs", "rrc", "rrs", "rrcs"})
REDUCES = frozenset({"rrc", "rrs", "rrcs", "re"})


@dataclass
class MscclStep:
    """One ``<step>``: ``s`` index, ``type``, buffers, offsets and count in chunks, one dependency."""

    s: int
    type: str
    srcbuf: str
    srcoff: int
    dstbuf: str
    dstoff: int
    cnt: int
    depid: int = -1
    deps: int = -1
    hasdep: int = 0
    line: int | None = None


@dataclass
class MscclTb:
    """One ``<tb>`` (thread block): peers it sends to and receives from (-1 none), channel, steps.

    ``extra`` holds attributes the runtime ignores (commsim writes its route hints there).
    """

    id: int
    send: int
    recv: int
    chan: int
    steps: list[MscclStep] = field(default_factory=list)
    extra: dict[str, str] = field(default_factory=dict)
    line: int | None = None


@dataclass
class MscclGpu:
    """One ``<gpu>``: rank ``id``, chunks of its input, output and scratch buffers, thread blocks."""

    id: int
    i_chunks: int
    o_chunks: int
    s_chunks: int
    tbs: list[MscclTb] = field(default_factory=list)
    line: int | None = None


@dataclass
class MscclAlgo:
    """One ``<algo>``: the whole algorithm.

    Attributes
    ----------
    name, proto, coll : str
    nchannels, nchunksperloop, ngpus : int
    inplace, outofplace : int
        Whether it serves in-place and out-of-place calls (0 or 1).
    min_bytes, max_bytes : int
        The call sizes it applies to (``minBytes``/``maxBytes``), bytes.
    gpus : list of MscclGpu
    source : str or None
        The file it was read from.
    """

    name: str
    proto: str
    nchannels: int
    nchunksperloop: int
    ngpus: int
    coll: str
    inplace: int = 1
    outofplace: int = 0
    min_bytes: int = 0
    max_bytes: int = 0
    gpus: list[MscclGpu] = field(default_factory=list)
    source: str | None = None
    line: int | None = None

    def where(self, line: int | None) -> str:
        """``file:line: `` prefix for messages."""
        if self.source is None:
            return f"line {line}: " if line is not None else ""
        return f"{self.source}:{line}: " if line is not None else f"{self.source}: "


_STEP_INTS = ("s", "srcoff", "dstoff", "cnt", "depid", "deps", "hasdep")


def _step(node: XmlElement) -> MscclStep:
    ints = {name: node.integer(name) for name in _STEP_INTS}
    kind = node.text("type", "one of " + ", ".join(STEP_TYPES))
    if kind not in STEP_TYPES:
        raise node.error(f"unknown step type {kind!r}; valid: {', '.join(STEP_TYPES)}")
    bufs = {}
    for name in ("srcbuf", "dstbuf"):
        bufs[name] = node.text(name, "i, o or s")
        if bufs[name] not in BUFFERS:
            raise node.error(
                f"unknown buffer {name}={bufs[name]!r}; valid: i (input), o (output), s (scratch)"
            )
    return MscclStep(type=kind, srcbuf=bufs["srcbuf"], dstbuf=bufs["dstbuf"], line=node.line, **ints)


def _tb(node: XmlElement) -> MscclTb:
    known = {"id", "send", "recv", "chan"}
    tb = MscclTb(
        id=node.integer("id"),
        send=node.integer("send"),
        recv=node.integer("recv"),
        chan=node.integer("chan"),
        extra={k: v for k, v in node.attrs.items() if k not in known},
        line=node.line,
    )
    tb.steps = [_step(child) for child in node.children if child.tag == "step"]
    return tb


def _gpu(node: XmlElement) -> MscclGpu:
    gpu = MscclGpu(
        id=node.integer("id"),
        i_chunks=node.integer("i_chunks"),
        o_chunks=node.integer("o_chunks"),
        s_chunks=node.integer("s_chunks"),
        line=node.line,
    )
    gpu.tbs = [_tb(child) for child in node.children if child.tag == "tb"]
    return gpu


def algo_from_xml(root: XmlElement) -> MscclAlgo:
    """The algorithm of a parsed document (``<algo>`` at its root).

    Raises
    ------
    FormatError
        On a missing or non-integer attribute, an unknown protocol,
        collective, step type or buffer name, naming the file and line.
    """
    if root.tag != "algo":
        raise root.error("the root element of an MSCCL algorithm must be <algo>")
    proto = root.text("proto", "Simple, LL128 or LL")
    if proto not in PROTOCOLS:
        raise root.error(f"unknown protocol {proto!r}; valid: {', '.join(PROTOCOLS)}")
    coll = root.text("coll", "e.g. allreduce")
    if coll not in COLLECTIVES:
        raise root.error(f"unknown collective {coll!r}; valid: {', '.join(COLLECTIVES)}")
    algo = MscclAlgo(
        name=root.attrs.get("name", ""),
        proto=proto,
        nchannels=root.integer("nchannels"),
        nchunksperloop=root.integer("nchunksperloop"),
        ngpus=root.integer("ngpus"),
        coll=coll,
        inplace=root.integer("inplace"),
        outofplace=root.integer("outofplace", default=0),
        min_bytes=root.integer("minBytes", default=0),
        max_bytes=root.integer("maxBytes", default=0),
        source=root.source,
        line=root.line,
    )
    algo.gpus = [_gpu(child) for child in root.children if child.tag == "gpu"]
    return algo


def read_msccl(path: str | PathLike[str]) -> MscclAlgo:
    """Read an MSCCL algorithm XML file (see :func:`algo_from_xml`)."""
    return algo_from_xml(read_xml_file(path, "MSCCL algorithm"))


def parse_msccl(text: str, source: str | None = None) -> MscclAlgo:
    """Parse the text of an MSCCL algorithm XML file."""
    return algo_from_xml(parse_xml(text, source))


def algo_to_xml(algo: MscclAlgo) -> str:
    """The XML text of ``algo``, laid out as msccl-tools writes it (two-space indents)."""
    head = (
        f'<algo name={quoteattr(algo.name)} proto="{algo.proto}" nchannels="{algo.nchannels}" '
        f'nchunksperloop="{algo.nchunksperloop}" ngpus="{algo.ngpus}" coll="{algo.coll}" '
        f'inplace="{algo.inplace}" outofplace="{algo.outofplace}" '
        f'minBytes="{algo.min_bytes}" maxBytes="{algo.max_bytes}">'
    )
    lines = [head]
    for gpu in algo.gpus:
        lines.append(
            f'  <gpu id="{gpu.id}" i_chunks="{gpu.i_chunks}" o_chunks="{gpu.o_chunks}" '
            f's_chunks="{gpu.s_chunks}">'
        )
        for tb in gpu.tbs:
            extra = "".join(f" {k}={quoteattr(v)}" for k, v in tb.extra.items())
            lines.append(f'    <tb id="{tb.id}" send="{tb.send}" recv="{tb.recv}" chan="{tb.chan}"{extra}>')
            lines.extend(_step_line(step) for step in tb.steps)
            lines.append("    </tb>")
        lines.append("  </gpu>")
    lines.append("</algo>")
    return "\n".join(lines) + "\n"


def _step_line(step: MscclStep) -> str:
    return (
        f'      <step s="{step.s}" type="{step.type}" srcbuf="{step.srcbuf}" srcoff="{step.srcoff}" '
        f'dstbuf="{step.dstbuf}" dstoff="{step.dstoff}" cnt="{step.cnt}" depid="{step.depid}" '
        f'deps="{step.deps}" hasdep="{step.hasdep}"/>'
    )
