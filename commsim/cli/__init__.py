"""The ``commsim`` command: parses arguments, calls the Python API, renders.

One module per family of commands (:mod:`.run`, :mod:`.catalogue`,
:mod:`.plot`, :mod:`.sweep`, :mod:`.calibrate`, :mod:`.export`);
:mod:`.console` holds the two consoles (results on stdout, messages on
stderr) and :mod:`.options` what the commands share. A command's module is
imported only when that command runs or shows its own help (``commsim
--help`` lists every command from :data:`COMMANDS`), and heavy modules
(numpy, pydantic, the engine) are imported inside the commands, so start-up
pays only for the command run.

Results go to stdout; errors to stderr as one ``error: ...`` message with
exit code 2 (bad input) and no traceback.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer
import typer.core
import typer.main

from commsim.cli.console import err, error
from commsim.errors import CommsimError

__all__ = ["COMMANDS", "app", "main"]

COMMANDS: dict[str, tuple[str, str]] = {
    "sweep": (
        "commsim.cli.sweep:sweep",
        "Run every scenario of a sweep file's grid and write one row per scenario.",
    ),
    "measure": (
        "commsim.cli.sweep:measure",
        "Run nccl-tests on this machine and keep the logs for 'commsim calibrate'.",
    ),
    "run": (
        "commsim.cli.run:run",
        "Simulate a scenario file, or one built from flags, and print the results.",
    ),
    "validate": (
        "commsim.cli.calibrate:validate",
        "Compare a real nccl-tests log with the NCCL model's prediction for every size.",
    ),
    "calibrate": (
        "commsim.cli.calibrate:calibrate",
        "Fit the NCCL model's physical parameters to logs and write a calibrated topology.",
    ),
    "recommend": (
        "commsim.cli.run:recommend",
        "Rank every applicable algorithm for one case and say why the winner wins.",
    ),
    "gpus": (
        "commsim.cli.catalogue:gpus",
        "List the GPU catalogue (links, host interface, boards), or resolve one printed name.",
    ),
    "algos": (
        "commsim.cli.catalogue:algos",
        "List the registered algorithms and the collectives each implements.",
    ),
    "topo": (
        "commsim.cli.catalogue:topo_app",
        "List, show and import machine topologies; print their schema.",
    ),
    "plot": (
        "commsim.cli.plot:plot_app",
        "Draw bandwidth curves, link timelines, utilisation heat maps and machines (PNG, SVG, PDF).",
    ),
    "export": (
        "commsim.cli.export:export_app",
        "Write MSCCL algorithms, NCCL tuner rules and ASTRA-sim networks from commsim's plans and models.",
    ),
}
"""Command name -> (``module:function`` or ``module:typer_app``, the first line of its help).

The help line is what ``commsim --help`` lists without importing the
command's module; a test checks it against the command's own docstring.
"""


class _LazyGroup(typer.core.TyperGroup):
    """The top-level group: each command is built from its module on first use.

    Until then ``commands`` holds a stand-in carrying the command's name and
    help line, which is all the group's own help (and click's "did you mean")
    reads; :meth:`format_help` lists the stand-ins without loading anything.
    """

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self._listing = False
        for name, (_, help_line) in COMMANDS.items():
            self.commands.setdefault(name, _StandIn(name, help=help_line))

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = self.commands.get(cmd_name)
        if isinstance(command, _StandIn) and not self._listing:
            command = self.commands[cmd_name] = _load(cmd_name)
        return command

    def format_help(self, ctx: Any, formatter: Any) -> None:
        with self._list_only():
            super().format_help(ctx, formatter)

    @contextmanager
    def _list_only(self) -> Iterator[None]:
        self._listing = True
        try:
            yield
        finally:
            self._listing = False


class _StandIn(typer.core.TyperCommand):
    """A command not loaded yet: its name and help line, for listing."""


def _load(name: str) -> Any:
    """Build command ``name`` from its module as ``app.command`` / ``app.add_typer`` would have."""
    module_name, _, attribute = COMMANDS[name][0].partition(":")
    target = getattr(importlib.import_module(module_name), attribute)
    holder = typer.Typer()
    if isinstance(target, typer.Typer):
        holder.add_typer(target, name=name)
        command: Any = typer.main.get_group_from_info(
            holder.registered_groups[0],
            pretty_exceptions_short=app.pretty_exceptions_short,
            rich_markup_mode=app.rich_markup_mode,
            suggest_commands=app.suggest_commands,
        )
    else:
        holder.command(name)(target)
        command = typer.main.get_command_from_info(
            holder.registered_commands[0],
            pretty_exceptions_short=app.pretty_exceptions_short,
            rich_markup_mode=app.rich_markup_mode,
        )
    _click_metavars(command)
    return command


app = typer.Typer(
    cls=_LazyGroup,
    pretty_exceptions_enable=False,
    add_completion=False,
    no_args_is_help=True,
    help="Predict and explain the time of collective communication on GPU machines.",
)


def _version(value: bool) -> None:
    if value:
        from commsim import __version__

        print(f"commsim {__version__}")
        raise typer.Exit()


@app.callback()
def _main_options(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Predict and explain the time of collective communication on GPU machines."""


_METAVARS = {"int": "INTEGER", "float": "FLOAT", "str": "TEXT", "Path": "PATH", "bool": "BOOLEAN"}


def _metavar(param: Any) -> str | None:
    """click's usual metavar for a parameter typer would show as ``<int>``; None to keep it."""
    if getattr(param, "is_flag", False):
        return ""
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    if annotation is None:
        return None
    args = getattr(annotation, "__args__", None)
    if args and getattr(annotation, "__origin__", None) is list:
        annotation = args[0]
    name = getattr(annotation, "__name__", str(annotation))
    return _METAVARS.get(name)


def _click_metavars(command: Any) -> None:
    """Give every option of every command click's metavars (``TEXT``, ``INTEGER``, ``PATH``)."""
    for sub in getattr(command, "commands", {}).values():
        if not isinstance(sub, _StandIn):  # done by _load
            _click_metavars(sub)
    for param in command.params:
        if param.metavar is None:
            metavar = _metavar(param)
            if metavar is not None:
                param.metavar = metavar
    try:  # --help itself is a flag
        help_option = command.get_help_option(command.context_class(command))
    except Exception:  # pragma: no cover - depends on the click build typer uses
        return
    if help_option is not None:
        help_option.metavar = ""


def _command() -> Any:
    command = typer.main.get_command(app)
    _click_metavars(command)
    return command


def _is_click_error(exc: BaseException) -> bool:
    """Usage errors of click, whichever copy raised them (typer may bundle its own)."""
    return any(cls.__name__ == "ClickException" for cls in type(exc).__mro__) and hasattr(exc, "show")


def _no_final_collection() -> None:
    """Spare the process its last garbage collections: :func:`gc.freeze` when it exits.

    The interpreter's clean-up after the output is written collects garbage
    over every object the imports made (numpy, pydantic, typer, rich, the
    engine): about 50 ms of CPU of an 8-GPU ``run``. Frozen at exit (after
    the command, before that clean-up), those objects are left out of the
    collections; they are still freed by reference counting, the standard
    streams are still flushed and the other exit handlers still run. Only
    objects kept alive by a reference cycle are no longer finalized (the
    language does not promise that at exit); commsim closes its files with
    ``with`` or ``finally``. Registered once however often :func:`main` runs.
    """
    atexit.unregister(gc.freeze)
    atexit.register(gc.freeze)


def _one_blas_thread() -> None:
    """Let numpy's OpenBLAS start one thread rather than one per core, unless the user set a number.

    OpenBLAS starts its threads when numpy is imported, and they spin while
    the process imports the rest: about 40 ms of wall time and 110 ms of CPU
    of an 8-GPU ``run`` on 2 cores, more on a server with many. commsim's work
    gains nothing from them (the engine is elementwise numpy; the fits of
    ``calibrate`` have a few parameters). Only in a process that has not
    imported numpy yet (the variable is read then); ``OPENBLAS_NUM_THREADS``
    set by the user is kept.
    """
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


_CLICK_WORDS = (
    (re.compile(r"Input should be greater than or equal to (\S+)"), r"must be at least \1"),
    (re.compile(r"Input should be less than or equal to (\S+)"), r"must be at most \1"),
    (re.compile(r"Input should be greater than (\S+)"), r"must be more than \1"),
    (re.compile(r"Input should be less than (\S+)"), r"must be less than \1"),
    (re.compile(r"Input should be a valid integer.*"), "expected a whole number, e.g. 4"),
    (re.compile(r"Input should be a valid number.*"), "expected a number, e.g. 2.5"),
    (re.compile(r"Input should be a valid boolean.*"), "expected true or false"),
)
"""typer validates option values with pydantic; its wording -> a user's."""


def _user_words(exc: Any) -> None:
    """Rewrite pydantic's wording in a click usage error (``--workers 0``) in place."""
    message = getattr(exc, "message", None)
    if not isinstance(message, str):
        return
    for pattern, words in _CLICK_WORDS:
        message = pattern.sub(words, message)
    if message.startswith("must be ") and _is_nan(getattr(exc, "__cause__", None)):
        message = "must be a number, got nan"  # NaN fails every bound: the bound is not the problem
    exc.message = message


def _is_nan(cause: Any) -> bool:
    """Whether pydantic's error behind a click one (``--threshold nan``) was given NaN."""
    errors = getattr(cause, "errors", None)
    if not callable(errors):
        return False
    try:
        return any(str(e.get("input")).strip().lower() in ("nan", "+nan", "-nan") for e in errors())
    except (TypeError, ValueError):
        return False


def main() -> None:
    """Entry point: run the app, turning input errors into one message and exit code 2."""
    _one_blas_thread()
    _no_final_collection()
    try:
        code = _command()(standalone_mode=False)
        if isinstance(code, int) and code:
            sys.exit(code)
    except CommsimError as exc:
        error(str(exc))
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        err.print("aborted", highlight=False)
        sys.exit(1)
    except OSError as exc:
        where = f" {exc.filename}" if exc.filename else ""
        error(f"cannot use{where}: {exc.strerror or exc}")
        sys.exit(2)
    except MemoryError:
        error("out of memory: the case is too large for this machine (fewer GPUs, or a smaller schedule)")
        sys.exit(2)
    except RecursionError:
        error("the input is nested too deeply to be read")
        sys.exit(2)
    except Exception as exc:
        if _is_click_error(exc):
            _user_words(exc)
            exc.show()  # type: ignore[attr-defined]
            sys.exit(2)
        raise
