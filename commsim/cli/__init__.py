"""The ``commsim`` command: parses arguments, calls the Python API, renders.

One module per family of commands (:mod:`.run`, :mod:`.catalogue`,
:mod:`.plot`, :mod:`.sweep`, :mod:`.calibrate`); :mod:`.console` holds the
two consoles (results on stdout, messages on stderr) and :mod:`.options` what
the commands share. Heavy modules (numpy, networkx, pydantic, the engine)
are imported inside the commands, so ``commsim --help`` starts fast.

Results go to stdout; errors to stderr as one ``error: ...`` message with
exit code 2 (bad input) and no traceback.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from commsim.cli.calibrate import calibrate, validate
from commsim.cli.catalogue import algos, gpus, topo_app
from commsim.cli.console import err, error
from commsim.cli.export import export_app
from commsim.cli.plot import plot_app
from commsim.cli.run import recommend, run
from commsim.cli.sweep import measure, sweep
from commsim.errors import CommsimError

__all__ = ["app", "main"]

app = typer.Typer(
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


app.command("sweep")(sweep)
app.command("measure")(measure)
app.command("run")(run)
app.command("validate")(validate)
app.command("calibrate")(calibrate)
app.command("recommend")(recommend)
app.command("gpus")(gpus)
app.command("algos")(algos)
app.add_typer(topo_app, name="topo")
app.add_typer(plot_app, name="plot")
app.add_typer(export_app, name="export")

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


def main() -> None:
    """Entry point: run the app, turning input errors into one message and exit code 2."""
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
            exc.show()  # type: ignore[attr-defined]
            sys.exit(2)
        raise
