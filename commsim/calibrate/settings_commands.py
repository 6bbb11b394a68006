"""Forced ``NCCL_*`` settings, and the GPUs a host exposes, read from the command lines a log shows.

``mpirun -x NCCL_X=V`` (backslash-continued lines joined), ``export
NCCL_X=V``, ``NCCL_X=V ./build/...`` (or the assignment alone on a line, as
``env`` prints it), ``srun --export=ALL,NCCL_X=V``, ``mpiexec -genv NCCL_X V``.
The same forms set :data:`~commsim.calibrate.settings_lines.DEVICE_VARIABLES`
(``CUDA_VISIBLE_DEVICES=0,2,4,6``): which GPUs of a host the ranks see, and
:data:`~commsim.calibrate.settings_lines.LIBFABRIC_VARIABLES` (``FI_PROVIDER=cxi``). They
are the least trusted source of a setting (rank 2;
:mod:`commsim.calibrate.settings_choice`): NCCL's own lines say what it was given.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Sequence

from commsim.calibrate.evidence import Evidence
from commsim.calibrate.settings_choice import Found
from commsim.calibrate.settings_lines import DEVICE_VARIABLES, LIBFABRIC_VARIABLES, NOT_SETTINGS

__all__ = ["ASSIGNMENT", "read_commands"]

_NAME = rf"NCCL_[A-Z0-9_]+|{LIBFABRIC_VARIABLES}|{'|'.join(DEVICE_VARIABLES)}"
ASSIGNMENT = re.compile(rf"^({_NAME})=(.*)$")
"""``NCCL_X=V`` (or ``CUDA_VISIBLE_DEVICES=V`` ...) as one word: the name and the value."""
_NAMED = re.compile(rf"(?:^|[^A-Z0-9_])(?:{_NAME})\b")
_SHELL_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:=|$)")
"""A word ``export`` takes: ``NAME=value`` or ``NAME``."""
_NCCL_LOG = re.compile(r"\bNCCL (?:INFO|WARN|TRACE)\b")
ENV_PREFIX = r"(?:\([\w.-]+\)\s+)?"
"""A conda or virtualenv name before a shell prompt: ``(base) ``."""
BRACKET_PROMPT = r"\[[^\]\s]+@[^\]]*\][#$]\s+"
"""Red Hat's shell prompt: ``[user@host dir]$ `` (``#`` for root)."""
_PROMPT = re.compile(rf"^{ENV_PREFIX}(?:\$>\s+|[>$#]\s+|[\w.@:~/-]+[$#]\s+|{BRACKET_PROMPT})")
_COMMENT = re.compile(r"^#\s")
"""Root's prompt, or a shell comment when the log shows its commands without it."""


def read_commands(
    found: Found, lines: Sequence[str], first_line: int, *, root_prompt: bool = True, ran: int | None = None
) -> None:
    """Add to ``found`` the settings of every command line in ``lines`` (``lines[0]`` is
    line ``first_line``), each cited at the line of its command that names it; a line starting
    with ``# `` is a command after root's prompt when ``root_prompt``, else a shell comment. The
    command starting at line ``ran`` (the one that ran the test) is read first, so its settings win."""
    commands = sorted(_commands(lines, first_line, root_prompt), key=lambda item: item[0] != ran)
    for number, command in commands:
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


def _commands(lines: Sequence[str], first_line: int, root_prompt: bool) -> Iterator[tuple[int, str]]:
    """Command lines (backslash continuations joined) with the line they start on."""
    pending, start = "", first_line
    for number, line in enumerate(lines, start=first_line):
        if not pending and not root_prompt and _COMMENT.match(line.strip()):
            continue
        text = _PROMPT.sub("", line.strip(), count=1) if not pending else line.strip().lstrip(">").strip()
        if not pending:
            start = number
        if text.endswith("\\"):
            pending += text[:-1].strip() + " "
            continue
        command, pending = (pending + text).strip(), ""
        if _NAMED.search(command) and not _NCCL_LOG.search(command):
            yield start, command


def _command_settings(command: str) -> Iterator[tuple[str, str, str]]:
    """(name, value, source) of each setting (``NCCL_*``, GPU visibility) a command line makes."""
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
        after = tokens[index + 2 : index + 3] if token != "export" else _words_after(tokens, index + 2)
        yield from _option_settings(token, following, after)


def _words_after(tokens: list[str], start: int) -> list[str]:
    """The words of an ``export`` after its first, up to a shell separator."""
    words = []
    for word in tokens[start:]:
        if word in (";", "&&", "||", "|"):
            break
        words.append(word)
    return words


def _option_settings(token: str, following: str, after: list[str]) -> Iterator[tuple[str, str, str]]:
    if token == "-x" and ASSIGNMENT.match(following):
        name, value = following.split("=", 1)
        yield name, value, "mpirun -x"
    elif token == "export":  # export A=1 B=2: every assignment up to the next other word
        for word in [following, *after]:
            if not _SHELL_WORD.match(word):
                break
            match = ASSIGNMENT.match(word)
            if match:
                yield match.group(1), match.group(2), "export"
    elif token.startswith(("--export=", "--env=")):
        for part in token.split("=", 1)[1].split(","):
            match = ASSIGNMENT.match(part)
            if match:
                yield match.group(1), match.group(2), "srun --export"
    elif token in ("-genv", "-env", "--env") and _NAMED.match(following) and after and "=" not in following:
        yield following, after[0], f"mpiexec {token}"
