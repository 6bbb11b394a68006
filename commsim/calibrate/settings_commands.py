"""Forced ``NCCL_*`` settings read from the command lines a log shows.

``mpirun -x NCCL_X=V`` (backslash-continued lines joined), ``export
NCCL_X=V``, ``NCCL_X=V ./build/...``, ``srun --export=ALL,NCCL_X=V``,
``mpiexec -genv NCCL_X V``. They are the least trusted source of a setting
(rank 2; :mod:`commsim.calibrate.settings_choice`): NCCL's own lines say what
it was given.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Sequence

from commsim.calibrate.evidence import Evidence
from commsim.calibrate.settings_choice import Found
from commsim.calibrate.settings_lines import NOT_SETTINGS

__all__ = ["ASSIGNMENT", "read_commands"]

ASSIGNMENT = re.compile(r"^(NCCL_[A-Z0-9_]+)=(.*)$")
"""``NCCL_X=V`` as one word: the name and the value."""
_NCCL_LOG = re.compile(r"\bNCCL (?:INFO|WARN|TRACE)\b")
_PROMPT = re.compile(r"^(?:[>$#]\s+|[\w.@:~/-]+[$#]\s+)")


def read_commands(found: Found, lines: Sequence[str], first_line: int) -> None:
    """Add to ``found`` the ``NCCL_*`` settings of every command line in ``lines`` (``lines[0]`` is
    line ``first_line``), each cited at the line of its command that names it."""
    for number, command in _commands(lines, first_line):
        last = {name: (value, source) for name, value, source in _command_settings(command)}
        for name, (value, source) in last.items():  # a command setting one name twice: the last wins
            if name in NOT_SETTINGS:
                continue
            line = _line_naming(lines, first_line, number, name)
            found.add(name, 2, Evidence.at(value, source, line, command))


def _line_naming(lines: Sequence[str], first_line: int, start: int, name: str) -> int:
    """The last of a continued command's lines from ``start`` that names ``name`` (else ``start``)."""
    naming = start
    for number in range(start, first_line + len(lines)):
        text = lines[number - first_line]
        if name in text:
            naming = number
        if not text.rstrip().endswith("\\"):
            break
    return naming


def _commands(lines: Sequence[str], first_line: int) -> Iterator[tuple[int, str]]:
    """Command lines (backslash continuations joined) with the line they start on."""
    pending, start = "", first_line
    for number, line in enumerate(lines, start=first_line):
        text = _PROMPT.sub("", line.strip(), count=1) if not pending else line.strip().lstrip(">").strip()
        if not pending:
            start = number
        if text.endswith("\\"):
            pending += text[:-1].strip() + " "
            continue
        command, pending = (pending + text).strip(), ""
        if "NCCL_" in command and not _NCCL_LOG.search(command):  # every setting read is NCCL_*
            yield start, command


def _command_settings(command: str) -> Iterator[tuple[str, str, str]]:
    """(name, value, source) of each NCCL_* setting a command line makes."""
    try:
        tokens = shlex.split(command, comments=False)
    except ValueError:
        tokens = command.split()
    leading = True
    for index, token in enumerate(tokens):
        following = tokens[index + 1] if index + 1 < len(tokens) else ""
        assignment = ASSIGNMENT.match(token)
        if leading and (assignment or token == "env"):
            if assignment:
                yield assignment.group(1), assignment.group(2), "command line"
            continue
        leading = False
        yield from _option_settings(token, following, tokens[index + 2 : index + 3])


def _option_settings(token: str, following: str, after: list[str]) -> Iterator[tuple[str, str, str]]:
    if token == "-x" and ASSIGNMENT.match(following):
        name, value = following.split("=", 1)
        yield name, value, "mpirun -x"
    elif token == "export":
        match = ASSIGNMENT.match(following)
        if match:
            yield match.group(1), match.group(2), "export"
    elif token.startswith(("--export=", "--env=")):
        for part in token.split("=", 1)[1].split(","):
            match = ASSIGNMENT.match(part)
            if match:
                yield match.group(1), match.group(2), "srun --export"
    elif (
        token in ("-genv", "-env", "--env")
        and following.startswith("NCCL_")
        and after
        and "=" not in following
    ):
        yield following, after[0], f"mpiexec {token}"
