"""A command commented out in a log is not the command that ran.

Root's shell prompt is ``# ``, which is also how a script comments a command out; nccl-tests'
own header lines start with ``# `` too (``# nThread 1 nGpus 8 ...``). A ``# `` line naming an
nccl-tests binary is read as a command after root's prompt only when the log shows no command
without it; beside a command shown bare (or after ``$ ``) it is a commented-out alternative, and
neither its launcher nor its ``NCCL_*`` settings are read.
"""

from __future__ import annotations

import pytest

from commsim.calibrate.parser import parse_nccl_tests
from commsim.calibrate.parser_command import LAUNCHED, find_command, root_prompt
from commsim.errors import ParseError

_HEADER = "# nThread 1 nGpus 1 minBytes 268435456 maxBytes 536870912 step: 2(factor) warmup iters: 5\n#\n"
_TABLE = """\
#                                  out-of-place                 in-place
#  size    count  type redop root   time  algbw  busbw #wrong   time  algbw  busbw #wrong
#   (B) (elements)                  (us) (GB/s) (GB/s)          (us) (GB/s) (GB/s)
 268435456  67108864 float sum -1 1423.3 188.60 188.60  0  1420.2 189.01 189.01  N/A
 536870912 134217728 float sum -1 2785.4 192.75 192.75  0  2772.2 193.66 193.66  N/A
"""
RAN = "mpirun -np 16 -x NCCL_ALGO=Ring ./build/sendrecv_perf -b 256M -e 512M -g 1"
COMMENTED = "# mpirun -np 8 -x NCCL_ALGO=Tree ./build/sendrecv_perf -b 256M -e 512M -g 1"


def test_a_commented_alternative_below_the_command_is_not_the_command() -> None:
    """The '# mpirun -np 8' line (the last naming the binary) was stripped of its '# ' as a prompt
    and read as the run's command: 8 ranks and NCCL_ALGO=Tree; the bare 'mpirun -np 16' above it ran."""
    log = parse_nccl_tests(f"{RAN}\n{COMMENTED}\n{_HEADER}{_TABLE}", "x.txt")
    assert log.command == RAN
    assert (log.n_ranks, log.rank_source) == (16, LAUNCHED)
    assert [e.line for e in log.rank_evidence if e.source == LAUNCHED] == [1]
    assert log.settings.env["NCCL_ALGO"].value == "Ring"
    assert log.settings.env["NCCL_ALGO"].line == 1


def test_a_commented_alternative_after_a_dollar_prompt_is_not_the_command() -> None:
    """'$ ' is the prompt of the commands that ran, so a '# ' line beside them is a comment."""
    log = parse_nccl_tests(f"$ {RAN}\n{COMMENTED}\n{_HEADER}{_TABLE}", "x.txt")
    assert (log.command, log.n_ranks) == (RAN, 16)


def test_a_command_after_roots_prompt_alone_is_still_read() -> None:
    """'# mpirun ...' with no command shown otherwise is root's prompt (outside log 65, the RTX 4090
    page's '# ./build/all_reduce_perf ...'); nccl-tests' '# nThread ..' header does not change that."""
    log = parse_nccl_tests(f"{COMMENTED}\n{_HEADER}{_TABLE}", "x.txt")
    assert log.command == COMMENTED[2:]
    assert (log.n_ranks, log.rank_source) == (8, LAUNCHED)
    assert log.settings.env["NCCL_ALGO"].value == "Tree"
    assert root_prompt([COMMENTED, *_HEADER.splitlines(), *_TABLE.splitlines()])
    assert not root_prompt([RAN, COMMENTED])


def test_a_hash_without_a_space_is_a_comment_not_a_prompt() -> None:
    """A prompt is followed by a space: '#./build/sendrecv_perf -g 8' is commented out, so it gives
    no rank count (it was read as one process of 8 GPUs)."""
    assert find_command(["#./build/sendrecv_perf -g 8"], 1) == (None, None)
    with pytest.raises(ParseError, match="cannot tell the number of ranks"):
        parse_nccl_tests("#./build/sendrecv_perf -b 256M -e 512M -g 8\n#\n" + _TABLE, "x.txt")


@pytest.mark.parametrize(
    ("before", "why"),
    [
        ("# which sendrecv_perf\n/opt/nccl-tests/build/sendrecv_perf", "which's output: the path alone"),
        (
            "$ ./build/sendrecv_perf -b 256M -e 512M -g 1\nbash: ./build/sendrecv_perf: Permission denied",
            "a user's '$ ' session (then sudo -i: '# ' is root's prompt) and the shell's error",
        ),
        (
            "/opt/nccl-tests/build/sendrecv_perf",
            "an absolute path alone: which's output, its command not shown",
        ),
        ("$ which sendrecv_perf\n./build/sendrecv_perf", "which's output for a relative PATH entry"),
        (
            "$ which all_reduce_perf sendrecv_perf\n./all_reduce_perf\n./sendrecv_perf",
            "which of two binaries",
        ),
    ],
)
def test_lines_that_only_name_the_binary_leave_roots_prompt(before: str, why: str) -> None:
    """Review 28: any line naming the binary without a leading '#' turned root's '# mpirun ...'
    into a comment, so its launcher and NCCL_ALGO=Tree were lost and ring was priced. A line that
    runs nothing (``which``'s output, ``bash: ...: Permission denied``) decides nothing, and a command
    after a user's '$ ' prompt is an interactive session, where '# ' is root's prompt."""
    log = parse_nccl_tests(f"{before}\n{COMMENTED}\n{_HEADER}{_TABLE}", "x.txt")
    assert log.command == COMMENTED.removeprefix("# "), why
    assert log.settings.env["NCCL_ALGO"].value == "Tree", why


def test_a_backtrace_after_the_table_does_not_undo_roots_prompt() -> None:
    """Review 28: the settings reader decided root's prompt from the whole run, so a backtrace frame
    after the table ('[nodea:54741] [ 3] ./build/sendrecv_perf(+0x5b2c)') made the '# mpirun' line
    a comment for the settings (NCCL_ALGO=Tree lost) while the command reader kept it. Both now
    decide once, from the lines before the table, and a frame is no command anyway."""
    frame = "[nodea:54741] [ 3] ./build/sendrecv_perf(+0x5b2c)[0x55d0c8a7eb2c]"
    log = parse_nccl_tests(f"{COMMENTED}\n{_HEADER}{_TABLE}{frame}\n", "x.txt")
    assert log.command == COMMENTED.removeprefix("# ")
    assert log.settings.env["NCCL_ALGO"].value == "Tree"


@pytest.mark.parametrize(
    "prompt", ["[user@node1 build]$ ", "(base) user@host:~$ ", "(venv) $ ", "[root@node1 build]# "]
)
def test_red_hat_and_conda_prompts_are_prompts(prompt: str) -> None:
    """Review 29: Red Hat's '[user@host dir]$ ' and a conda or virtualenv '(base) ' before the prompt
    were not recognised, so the command after them did not count as one that ran and a '# mpirun'
    comment below it was read as the command (8 ranks, NCCL_ALGO=Tree); root's '[root@host dir]# '
    hid the command's settings."""
    log = parse_nccl_tests(f"{prompt}{RAN}\n{_HEADER}{_TABLE}", "x.txt")
    assert (log.command, log.n_ranks) == (RAN, 16)
    assert log.settings.env["NCCL_ALGO"].value == "Ring"
    if not prompt.endswith("# "):
        below = parse_nccl_tests(f"{prompt}{RAN}\n{COMMENTED}\n{_HEADER}{_TABLE}", "x.txt")
        assert (below.command, below.n_ranks) == (RAN, 16)
        assert below.settings.env["NCCL_ALGO"].value == "Ring"


def test_a_sessions_settings_come_from_the_command_that_ran() -> None:
    """Review 29: a user's command fails, root reruns it with other settings; the command reader
    took root's line but the settings kept the failed command's NCCL_ALGO (both readers took the
    first before). The command that ran is read first, so its settings win, and the other is warned."""
    session = (
        "$ mpirun -np 16 -x NCCL_ALGO=Tree ./build/sendrecv_perf -b 256M -e 512M -g 1\n"
        "bash: mpirun: command not found\n"
        "$ sudo -i\n"
        f"# {RAN}\n"
    )
    log = parse_nccl_tests(f"{session}{_HEADER}{_TABLE}", "x.txt")
    assert log.command == RAN
    assert (log.settings.env["NCCL_ALGO"].value, log.settings.env["NCCL_ALGO"].line) == ("Ring", 4)
    assert any("says 'Tree'" in w and "using 'Ring'" in w for w in log.settings.warnings), (
        log.settings.warnings
    )


@pytest.mark.parametrize(
    "bare",
    [
        "./build/sendrecv_perf",
        "build/sendrecv_perf",
        "~/nccl-tests/build/sendrecv_perf",
        "sendrecv_perf",
        "$ ./build/sendrecv_perf",
        "[user@node1 nccl-tests]$ ./build/sendrecv_perf",
        "$ /opt/nccl-tests/build/sendrecv_perf",
    ],
)
def test_the_binary_alone_is_the_command_that_ran_with_the_defaults(bare: str) -> None:
    """A script's line or a prompt's command that is the binary alone ran it with nccl-tests' defaults
    (-t 1 -g 1: one rank, as the header says); it was taken for which's output, so the '# mpirun -np 8
    -x NCCL_ALGO=Tree' comment below it was read as root's command: 8 ranks and NCCL_ALGO=Tree. Only an
    absolute path alone, or a path right after a which command, is which's output."""
    log = parse_nccl_tests(f"{bare}\n{COMMENTED}\n{_HEADER}{_TABLE}", "x.txt")
    assert log.command == bare.split()[-1]
    assert log.n_ranks == 1 and log.rank_source != LAUNCHED
    assert "NCCL_ALGO" not in log.settings.env
    assert not root_prompt([bare, COMMENTED])


def test_a_scripts_commented_setting_beside_the_binary_alone_is_not_read() -> None:
    """'# export NCCL_ALGO=Tree' above a script's bare './build/sendrecv_perf' is a comment: it was read
    as a setting of root's prompt (the bare binary was taken for which's output, so no command ran)."""
    log = parse_nccl_tests(f"# export NCCL_ALGO=Tree\n./build/sendrecv_perf\n{_HEADER}{_TABLE}", "x.txt")
    assert log.command == "./build/sendrecv_perf"
    assert "NCCL_ALGO" not in log.settings.env


@pytest.mark.parametrize(
    "listing",
    [
        "# ls build\nall_gather_perf\nsendrecv_perf",
        "# ls ./build/*_perf\n./build/all_gather_perf\n./build/sendrecv_perf",
        "# find . -name '*_perf'\n./build/all_gather_perf\n./build/sendrecv_perf",
        "# find . -name sendrecv_perf\n./build/sendrecv_perf",
    ],
)
def test_a_listing_of_binaries_is_no_command(listing: str) -> None:
    """Paths printed one per line by ls or find name the binary alone but ran nothing: the root
    session's '# mpirun -np 8 -x NCCL_ALGO=Tree ...' below them is the command that ran (8 ranks,
    NCCL_ALGO=Tree), as it was before a script's bare binary line counted as a command (review 30:
    the listing was read as the command, 1 rank and no setting)."""
    log = parse_nccl_tests(f"{listing}\n{COMMENTED}\n{_HEADER}{_TABLE}", "x.txt")
    assert log.command is not None and log.command.startswith("mpirun -np 8")
    assert log.n_ranks == 8 and log.settings.env["NCCL_ALGO"].value == "Tree"
