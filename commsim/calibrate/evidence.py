"""Where a fact about a run came from: a line of the log, an option, or an assumption.

Every fact ``commsim validate`` uses (ranks, hosts, GPU model, network, NCCL
version, forced settings ...) is kept with its evidence so the report can
show how the tool knows it, and so a fact that is only assumed is never
presented as known.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Evidence", "Fact"]

_TEXT_WIDTH = 160


@dataclass(frozen=True)
class Evidence:
    """One source's word on one fact.

    Attributes
    ----------
    value : Any
        What this source says (a rank count, a version string ...).
    source : str
        The kind of source, in words: ``"device list"``,
        ``"busbw/algbw ratio"``, ``"NCCL INFO line"``, ``"option --gpus"`` ...
    line : int or None
        1-based line of the log it was read from, None for options and
        defaults.
    text : str or None
        That line (stripped, cut to 160 characters), None where there is none.
    """

    value: Any
    source: str
    line: int | None = None
    text: str | None = None

    @classmethod
    def at(cls, value: Any, source: str, line: int | None, text: str | None) -> Evidence:
        """Evidence from a log line; the text is stripped and cut for display."""
        if text is not None:
            text = text.strip()
            if len(text) > _TEXT_WIDTH:
                text = text[: _TEXT_WIDTH - 3] + "..."
        return cls(value, source, line, text)

    def describe(self) -> str:
        """``busbw/algbw ratio (line 23)`` or ``option --gpus``."""
        where = f" (line {self.line})" if self.line is not None else ""
        return f"{self.source}{where}"


@dataclass(frozen=True)
class Fact:
    """A fact about the run or the machine, with how it is known.

    Attributes
    ----------
    name : str
        What it is: ``"ranks"``, ``"nodes"``, ``"gpus_per_node"``, ``"gpu"``,
        ``"network"``, ``"nccl_version"`` ...
    value : Any
        The value used.
    evidence : list of Evidence
        Every source that gave a value, the one used first.
    assumed : bool
        True when nothing in the log or the options says it: the value is a
        default, and ``option`` names how to give the real one.
    option : str or None
        The command-line option that supplies or overrides the fact.
    note : str
        Why this value, in one sentence (for an assumption: what it assumed).
    """

    name: str
    value: Any
    evidence: tuple[Evidence, ...] = ()
    assumed: bool = False
    option: str | None = None
    note: str = ""

    def describe(self) -> str:
        """One line: ``ranks = 72 (busbw/algbw ratio (line 14))`` or ``... assumed: ...``."""
        if self.assumed:
            how = f"assumed: {self.note}" if self.note else "assumed"
            if self.option:
                how += f"; give the real value with {self.option}"
        else:
            how = ", ".join(e.describe() for e in self.evidence[:3]) or self.note
            if self.note and self.evidence:
                how += f"; {self.note}"
        return f"{self.name} = {self.value} ({how})"

    def to_json(self) -> dict[str, Any]:
        """The fact as a JSON object (``value`` must be JSON-serialisable)."""
        return {
            "value": self.value,
            "assumed": self.assumed,
            "option": self.option,
            "note": self.note,
            "evidence": [
                {"source": e.source, "line": e.line, "text": e.text, "value": e.value} for e in self.evidence
            ],
        }
