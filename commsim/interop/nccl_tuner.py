"""The CSV that NCCL's example tuner plugin reads, written from the NCCL model's choices.

NCCL (2.19 and later) asks a *tuner plugin* which algorithm, protocol and
channel count to use for every collective call. The example plugin in
NCCL's repository (``ext-tuner/example``, built as
``libnccl-tuner-example.so``) reads its answers from a CSV file, one rule
per line::

    collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff

and makes the first matching rule's (algorithm, protocol) the cheapest in
NCCL's cost table. :func:`tuner_rows` asks the NCCL model what it would
choose at every size of a grid on a given machine, merges neighbouring
sizes with the same choice into one size range per rule, and
:func:`tuner_csv` writes them for exactly that machine's node and rank
counts. :func:`parse_tuner_csv` reads such a file with the plugin's own
rules (below), and :func:`TunerConfig.lookup` answers as the plugin would.

The plugin's parsing rules (``plugin.c``, ``loadConfig`` and
``pluginGetCollInfo``), mirrored by :func:`parse_tuner_csv`:

* a line is read with ``fgets`` into 256 bytes; a line that starts with
  ``#`` or is empty is skipped; only ``\\n`` is removed (a ``\\r`` stays);
* fields are split with ``strtok(",")``, so empty fields vanish (``a,,b``
  is two fields), at most 10 are kept, each trimmed of spaces and tabs;
  a line with fewer than 8 fields is ignored;
* collective, algorithm and protocol names are compared exactly
  (lower case); an unknown name silently becomes ``allreduce``, ``ring``,
  ``simple``; numbers are read with ``strtoull``/``atoi`` (leading digits);
* fields 9 (numPipeOps) and 10 (regBuff) are optional, -1 when absent;
  -1 in nNodes, nRanks, numPipeOps, regBuff matches anything; channels -1
  keeps NCCL's own count;
* the first rule whose collective matches, with ``min_bytes <= size <=
  max_bytes`` (both inclusive) and matching counts, wins.

Strict reading (the default) refuses what the plugin would silently
misread: unknown names, too few fields, lines over 255 bytes.

Sizes are NCCL's ``nBytes`` as the plugin receives it: the larger of the
send and receive buffers (all-gather's whole output, reduce-scatter's
whole input), which is nccl-tests' size and commsim's ``nbytes``.

The NCCL model is reached through one adapter, :func:`model_choices`, so
that this module follows the model's interface in one place.

References
----------
NVIDIA/nccl ``ext-tuner/example/README.md`` and ``plugin.c`` (tuner API v5).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path

from commsim.collectives import Collective
from commsim.interop.errors import ExportError, FormatError
from commsim.textfile import read_text_file
from commsim.topology.model import Topology

__all__ = [
    "TUNER_ALGORITHMS",
    "TUNER_COLLECTIVES",
    "TUNER_PROTOCOLS",
    "TunerConfig",
    "TunerRule",
    "model_choices",
    "parse_tuner_csv",
    "read_tuner_csv",
    "size_grid",
    "tuner_csv",
    "tuner_rows",
]

TUNER_COLLECTIVES = {
    Collective.BROADCAST: "broadcast",
    Collective.REDUCE: "reduce",
    Collective.ALL_GATHER: "allgather",
    Collective.REDUCE_SCATTER: "reducescatter",
    Collective.ALL_REDUCE: "allreduce",
}
"""The collectives the plugin tunes, with its names for them."""
TUNER_ALGORITHMS = ("tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat")
TUNER_PROTOCOLS = ("ll", "ll128", "simple")
HEADER = "collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff"
SIZE_MAX = 2**64 - 1
"""``max_bytes`` of the last range: every size (``size_t`` is 64 bits)."""
_MAX_LINE = 255
_PLUGIN_DEFAULTS = ("allreduce", "ring", "simple")


@dataclass(frozen=True)
class TunerRule:
    """One CSV line: for ``collective`` calls of ``min_bytes .. max_bytes`` bytes, use this.

    ``channels``, ``n_nodes``, ``n_ranks``, ``num_pipe_ops``, ``reg_buff``: -1 means any (or NCCL's default).
    """

    collective: str
    min_bytes: int
    max_bytes: int
    algorithm: str
    protocol: str
    channels: int = -1
    n_nodes: int = -1
    n_ranks: int = -1
    num_pipe_ops: int = -1
    reg_buff: int = -1
    line: int | None = None

    def csv(self) -> str:
        """The rule as one CSV line (10 fields)."""
        return (
            f"{self.collective},{self.min_bytes},{self.max_bytes},{self.algorithm},{self.protocol},"
            f"{self.channels},{self.n_nodes},{self.n_ranks},{self.num_pipe_ops},{self.reg_buff}"
        )

    def matches(
        self, collective: str, nbytes: int, n_nodes: int, n_ranks: int, pipe_ops: int, reg: int
    ) -> bool:
        """Whether the plugin would apply this rule to such a call."""
        return (
            self.collective == collective
            and self.min_bytes <= nbytes <= self.max_bytes
            and self.n_nodes in (-1, n_nodes)
            and self.n_ranks in (-1, n_ranks)
            and self.num_pipe_ops in (-1, pipe_ops)
            and self.reg_buff in (-1, reg)
        )


@dataclass
class TunerConfig:
    """The rules of a tuner CSV, in file order."""

    rules: list[TunerRule]

    def lookup(
        self, collective: str, nbytes: int, n_nodes: int, n_ranks: int, pipe_ops: int = 1, reg_buff: int = 0
    ) -> TunerRule | None:
        """The rule the plugin applies to a call (the first that matches), or None (NCCL decides)."""
        for rule in self.rules:
            if rule.matches(collective, nbytes, n_nodes, n_ranks, pipe_ops, reg_buff):
                return rule
        return None


# -- the model, through one adapter ----------------------------------------------------------


def model_choices(
    topology: Topology, collective: Collective, sizes: Sequence[float], ranks: Sequence[str] | None = None
) -> list[tuple[str, str]]:
    """(algorithm, protocol) the NCCL model picks at each size, in the plugin's lower-case names.

    The one place this module touches :mod:`commsim.nccl` (its ``predict``
    entry, with the machine's calibrated parameters when it carries them).
    """
    from commsim.algorithms.base import Problem
    from commsim.nccl.model import predict
    from commsim.nccl.params import NcclParams

    params = NcclParams.of(topology)
    names = tuple(ranks) if ranks is not None else tuple(topology.gpus)
    choices = []
    for size in sizes:
        chosen = predict(Problem(topology, names, collective, float(size)), params).chosen
        choices.append((chosen.algorithm.lower(), chosen.protocol.lower()))
    return choices


def size_grid(min_bytes: int = 1024, max_bytes: int = 16 * 2**30) -> list[int]:
    """Powers of two from ``min_bytes`` to ``max_bytes``: nccl-tests' ``-f 2`` sweep."""
    sizes, size = [], max(1, min_bytes)
    while size <= max_bytes:
        sizes.append(size)
        size *= 2
    return sizes


def tuner_rows(
    topology: Topology,
    collectives: Sequence[Collective] = tuple(TUNER_COLLECTIVES),
    sizes: Sequence[int] | None = None,
    ranks: Sequence[str] | None = None,
) -> list[TunerRule]:
    """The rules that make NCCL use the model's choice at every size of ``sizes``.

    A choice made at size ``s_k`` covers ``(s_{k-1}, s_k]``: the first range
    starts at 0, the last ends at :data:`SIZE_MAX`; neighbouring ranges with
    the same choice are merged. Rules match only this machine's node and rank counts.

    Raises
    ------
    ExportError
        For a collective the plugin cannot tune, or a choice it cannot name.
    """
    sizes = sorted(sizes or size_grid())
    names = tuple(ranks) if ranks is not None else tuple(topology.gpus)
    nodes = len({topology.device(r).box for r in names})
    rules: list[TunerRule] = []
    for collective in collectives:
        if collective not in TUNER_COLLECTIVES:
            valid = ", ".join(str(c) for c in TUNER_COLLECTIVES)
            raise ExportError(f"the tuner plugin does not tune {collective}; it tunes {valid}")
        choices = model_choices(topology, collective, sizes, names)
        rules += _ranges(TUNER_COLLECTIVES[collective], sizes, choices, nodes, len(names))
    return rules


def _ranges(
    name: str, sizes: list[int], choices: list[tuple[str, str]], nodes: int, n_ranks: int
) -> list[TunerRule]:
    rules: list[TunerRule] = []
    low = 0
    for k, (size, (algorithm, protocol)) in enumerate(zip(sizes, choices)):
        if algorithm not in TUNER_ALGORITHMS or protocol not in TUNER_PROTOCOLS:
            raise ExportError(f"the model chose {algorithm}/{protocol}, which the tuner plugin cannot name")
        last = k == len(sizes) - 1
        if not last and choices[k + 1] == (algorithm, protocol):
            continue
        rules.append(
            TunerRule(name, low, SIZE_MAX if last else size, algorithm, protocol, -1, nodes, n_ranks)
        )
        low = size + 1
    return rules


def tuner_csv(rules: Sequence[TunerRule], topology_name: str = "") -> str:
    """The CSV text: a comment header naming the machine and the columns, then one rule per line."""
    machine = f" for {topology_name}" if topology_name else ""
    head = [f"# NCCL tuner rules written by commsim from its NCCL model{machine}"]
    head.append(f"# {HEADER}")
    return "\n".join(head + [rule.csv() for rule in rules]) + "\n"


# -- reading, as the plugin does -------------------------------------------------------------


def _leading_int(text: str) -> int:
    """``atoi``/``strtoull``: the leading (signed) digits after white space, 0 if none."""
    stripped = text.lstrip(" \t\n\r\f\v")
    sign, digits = (-1, stripped[1:]) if stripped.startswith("-") else (1, stripped.lstrip("+"))
    count = len(digits) - len(digits.lstrip("0123456789"))
    return sign * int(digits[:count]) if count else 0


def _name(
    value: str, valid: Sequence[str], default: str, what: str, where: tuple[str | None, int], strict: bool
) -> str:
    if value in valid:
        return value
    if strict:
        raise FormatError(
            f"unknown {what} {value!r} (the plugin would use {default}); valid: {', '.join(valid)}", *where
        )
    return default


def _rule(tokens: list[str], where: tuple[str | None, int], strict: bool) -> TunerRule:
    collective = _name(tokens[0], list(TUNER_COLLECTIVES.values()), "allreduce", "collective", where, strict)
    algorithm = _name(tokens[3], TUNER_ALGORITHMS, "ring", "algorithm", where, strict)
    protocol = _name(tokens[4], TUNER_PROTOCOLS, "simple", "protocol", where, strict)
    low, high = (_leading_int(t) % 2**64 for t in tokens[1:3])  # strtoull wraps negatives
    ints = [_leading_int(t) for t in tokens[5:]] + [-1] * (10 - len(tokens))
    channels, n_nodes, n_ranks, pipe_ops, reg_buff = ints[:5]
    return TunerRule(
        collective,
        low,
        high,
        algorithm,
        protocol,
        channels,
        n_nodes,
        n_ranks,
        pipe_ops,
        reg_buff,
        line=where[1],
    )


def parse_tuner_csv(text: str, source: str | None = None, *, strict: bool = True) -> TunerConfig:
    """The rules of a tuner CSV, read by the example plugin's rules (module docstring).

    Parameters
    ----------
    strict : bool
        Refuse (:class:`FormatError`, with file and line) what the plugin
        would silently skip or misread; False reads exactly as the plugin does.
    """
    rules = []
    for number, raw in enumerate(text.split("\n"), 1):
        if len(raw) > _MAX_LINE and strict:
            raise FormatError(
                f"line of {len(raw)} bytes; the plugin reads at most {_MAX_LINE}", source, number
            )
        line = raw[:_MAX_LINE]
        if not line or line.startswith("#"):
            continue
        tokens = [t.strip(" \t") for t in line.split(",") if t != ""][:10]
        if len(tokens) < 8:
            if strict:
                raise FormatError(f"{len(tokens)} fields, the plugin needs 8 to 10: {HEADER}", source, number)
            continue
        rules.append(_rule(tokens, (source, number), strict))
    return TunerConfig(rules)


def read_tuner_csv(path: str | PathLike[str], *, strict: bool = True) -> TunerConfig:
    """Read a tuner CSV file (see :func:`parse_tuner_csv`)."""
    return parse_tuner_csv(read_text_file(path, "NCCL tuner CSV"), str(Path(path)), strict=strict)
