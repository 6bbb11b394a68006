"""What the commands share: option types, ``--param``, and flags that do not apply.

Option types carry click's usual metavars (``TEXT``, ``INTEGER``, ``PATH``,
``SIZE``) so that ``--help`` says what each option takes.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from commsim.errors import CommsimError
from commsim.units import SIZE_HELP

__all__ = [
    "Box",
    "Gpus",
    "Nic",
    "Nodes",
    "OutputFormat",
    "TopologyName",
    "check_not_input",
    "check_writable",
    "flags_given",
    "machine_from_flags",
    "parse_params",
    "reject_flags",
]

TopologyName = Annotated[
    str | None,
    typer.Option(
        metavar="TEXT",
        help="Topology name, builder or YAML path; the YAML describes a machine or names a builder with "
        "its fields, e.g. 'builder: nvswitch_box' and 'gpus: 16' on two lines.",
    ),
]
GPUS_HELP = (
    "GPU count for a builder (ring, fully_connected, nvswitch_box, pcie_box, ...: see 'commsim topo list')."
)
Gpus = Annotated[
    int | None,
    typer.Option(metavar="INTEGER", help=GPUS_HELP),
]
Box = Annotated[str | None, typer.Option(metavar="TEXT", help="Box of a cluster topology, e.g. dgx_a100.")]
Nodes = Annotated[int | None, typer.Option(metavar="INTEGER", help="Boxes in a cluster topology.")]
Nic = Annotated[str | None, typer.Option(metavar="TEXT", help="Network link kind of a cluster, e.g. ib_hdr.")]
SizeList = Annotated[
    list[str] | None,
    typer.Option(
        "--size",
        metavar="SIZE",
        help=f"Message size, e.g. '160 MB' or '1M' (repeatable; default 160 MB; {SIZE_HELP}).",
    ),
]
Params = Annotated[
    list[str] | None,
    typer.Option(
        "--param", metavar="KEY=VALUE", help="Algorithm parameter; VALUE is YAML, e.g. chunks=8 (repeatable)."
    ),
]
OutputFormat = Annotated[
    str | None,
    typer.Option(
        "--format", metavar="table|json|csv", help="Output for people (table) or scripts (json, csv)."
    ),
]

FORMATS = ("table", "json", "csv")


def parse_params(items: Iterable[str]) -> dict[str, Any]:
    """``["chunks=8", "kinds=[nvlink]"]`` to ``{"chunks": 8, "kinds": ["nvlink"]}``.

    Values are read as YAML (safely: no tags, within the YAML limits).

    Raises
    ------
    CommsimError
        Naming the ``--param`` that is not ``KEY=VALUE``, is given twice, or
        whose value is not readable YAML.
    """
    params: dict[str, Any] = {}
    for item in items:
        from commsim.yamlio import read_yaml  # PyYAML only once a --param is given

        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise CommsimError(f"--param {item!r} must look like KEY=VALUE, e.g. --param chunks=8")
        if key in params:
            raise CommsimError(f"--param {key} is given twice; give it once")
        try:
            params[key] = read_yaml(value, f"--param {key}", CommsimError)[0]
        except CommsimError as exc:
            raise CommsimError(str(exc).replace(f"--param {key}:1:", f"--param {key}: column ")) from None
    return params


def choose_format(output_format: str | None, json_out: bool = False, csv_out: bool = False) -> str:
    """One of ``table``, ``json``, ``csv`` from ``--format`` and the older ``--json``/``--csv``.

    Raises
    ------
    CommsimError
        If several are given, or ``--format`` names no format.
    """
    chosen = [f for f, on in (("json", json_out), ("csv", csv_out)) if on]
    if output_format is not None:
        if output_format not in FORMATS:
            from commsim.errors import did_you_mean

            hint = did_you_mean(output_format, FORMATS)
            raise CommsimError(f"--format {output_format!r}: valid: {', '.join(FORMATS)}{hint}")
        chosen.append(output_format)
    if len(set(chosen)) > 1:
        raise CommsimError("choose one output: --format table, --format json or --format csv")
    return chosen[0] if chosen else "table"


def flags_given(ctx: typer.Context, names: Sequence[str]) -> list[str]:
    """The options among ``names`` (parameter names) given on the command line, as ``--flag``."""
    given = []
    for param in ctx.command.params:
        if param.name not in names:
            continue
        source = ctx.get_parameter_source(param.name or "")
        if source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT"):
            given.append(max(param.opts, key=len) if param.opts else f"--{param.name}")
    return given


def reject_flags(ctx: typer.Context, names: Sequence[str], why: str) -> None:
    """Refuse the options among ``names`` that were given: they do not apply (``why``).

    Raises
    ------
    CommsimError
        ``--gpus, --collective do not apply to a scenario file: ...``.
    """
    given = flags_given(ctx, names)
    if given:
        verb = "does" if len(given) == 1 else "do"
        raise CommsimError(f"{', '.join(given)} {verb} not apply {why}")


def check_writable(path: Path, flag: str, suffixes: Sequence[str] = ()) -> None:
    """Refuse an output path before any work is done: a missing folder, a folder, a wrong suffix.

    Parameters
    ----------
    path : Path
        Where the command will write.
    flag : str
        The option that named it, e.g. ``"--trace"``, for the message.
    suffixes : sequence of str, optional
        The endings the file may have (``".json"``, ``".json.gz"``); any when empty.

    Raises
    ------
    CommsimError
        ``--trace out/t.json: the folder 'out' does not exist; create it first``.
    """
    name = str(path)
    if suffixes and not name.lower().endswith(tuple(suffixes)):
        raise CommsimError(
            f"{flag} {name}: unknown format {path.suffix or '(no suffix)'!r}; "
            f"use a file ending {', '.join(suffixes)}"
        )
    if path.is_dir():
        raise CommsimError(f"{flag} {name}: is a folder; give a file name in it")
    folder = path.parent
    if not folder.exists():
        raise CommsimError(f"{flag} {name}: the folder {str(folder)!r} does not exist; create it first")
    if not folder.is_dir():
        raise CommsimError(f"{flag} {name}: {str(folder)!r} is not a folder")
    if not os.access(folder, os.W_OK):
        raise CommsimError(f"{flag} {name}: cannot write into the folder {str(folder)!r} (permission denied)")
    if path.is_file():  # checked before the work, so wrote() can say the file was replaced
        _REPLACING.add(name)
    else:
        _REPLACING.discard(name)


_REPLACING: set[str] = set()
"""Output paths that :func:`check_writable` found already holding a file."""


def wrote(path: Path) -> str:
    """``wrote out/x.yaml``, with ``(replaced the file that was there)`` when the path held one.

    Overwriting is the rule for ``-o`` (as for most tools); the note makes it visible.
    """
    note = " (replaced the file that was there)" if str(path) in _REPLACING else ""
    return f"wrote {path}{note}"


def check_not_input(path: Path, flag: str, inputs: Iterable[Path]) -> None:
    """Refuse an output path that is one of the command's input files (it would be overwritten).

    Raises
    ------
    CommsimError
        ``--output run.txt: is one of the input files; give another name``.
    """
    for given in inputs:
        try:
            same = path.exists() and given.exists() and os.path.samefile(path, given)
        except OSError:
            same = False
        if same:
            raise CommsimError(
                f"{flag} {path}: is one of the input files ({given}); writing it would destroy it"
            )


def machine_from_flags(name: str, **builder: Any) -> Any:
    """``build_machine(name, **builder)``; a problem is prefixed with the flags that gave the machine.

    ``--topology ring --gpus 0: builder 'ring' needs gpus >= 2, got 0``: the
    builder's message names its field, the prefix names the flag to change.
    """
    from commsim.scenario.machine import build_machine

    try:
        return build_machine(name, **builder)
    except CommsimError as exc:
        given = [f"--{k.replace('_', '-')} {v}" for k, v in builder.items() if v is not None]
        if not given:
            raise
        raise CommsimError(f"--topology {name} {' '.join(given)}: {exc}") from None
