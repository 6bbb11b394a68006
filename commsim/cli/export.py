"""``commsim export ...``: files other tools run or read, from commsim's plans and models.

A thin typer sub-app over :mod:`commsim.interop`; mounted by :mod:`commsim.cli`
as ``export``. Every file is written whole or not at all (a temporary file
renamed into place once its text is complete); bad input raises
:class:`~commsim.errors.CommsimError`, which the CLI turns into exit code 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from commsim.cli.console import say
from commsim.cli.options import GPUS_HELP, check_writable, parse_params, wrote
from commsim.errors import CommsimError
from commsim.textfile import write_whole as write_file
from commsim.units import SIZE_HELP

if TYPE_CHECKING:
    from commsim.topology import Topology

__all__ = ["export_app", "write_whole"]

export_app = typer.Typer(
    no_args_is_help=True,
    help="Write MSCCL algorithms, NCCL tuner rules and ASTRA-sim networks from commsim's plans and models.",
)

MSCCL_SUFFIXES = (".xml",)
TUNER_SUFFIXES = (".conf", ".csv")
ASTRA_SUFFIXES = (".yml", ".yaml")
"""What each export's ``-o`` may end with: a .png of MSCCL XML was written as asked (review 27)."""

TopologyName = Annotated[str, typer.Option(metavar="TEXT", help="Topology name, builder or YAML path.")]
Gpus = Annotated[int | None, typer.Option(help=GPUS_HELP)]


def write_whole(path: Path, text: str, suffixes: tuple[str, ...]) -> None:
    """Write ``text`` to ``path`` (an ``--output``) whole or not at all, after checking it can be."""
    check_writable(path, "--output", suffixes)
    write_file(path, text)


def _topology(name: str, gpus: int | None) -> Topology:
    from commsim.cli.options import machine_from_flags

    return machine_from_flags(name, gpus=gpus)


@export_app.command("msccl")
def export_msccl(
    topology: TopologyName,
    algorithm: Annotated[
        str, typer.Option(metavar="TEXT", help="Algorithm name (commsim algos lists them).")
    ],
    output: Annotated[Path, typer.Option("-o", "--output", help="The MSCCL XML file to write.")],
    collective: Annotated[
        str, typer.Option(metavar="TEXT", help="Collective, e.g. all_reduce.")
    ] = "all_reduce",
    size: Annotated[
        str, typer.Option(metavar="SIZE", help=f"Size the plan is made for ({SIZE_HELP}).")
    ] = "1 MB",
    param: Annotated[
        list[str] | None,
        typer.Option(metavar="KEY=VALUE", help="Algorithm parameter; VALUE is YAML (repeatable)."),
    ] = None,
    proto: Annotated[
        str, typer.Option(metavar="TEXT", help="MSCCL protocol: Simple, LL128 or LL (any case).")
    ] = "Simple",
    min_bytes: Annotated[int, typer.Option(help="Smallest call size the algorithm is for, bytes.")] = 0,
    max_bytes: Annotated[int | None, typer.Option(help="Largest call size, bytes (default: --size).")] = None,
    gpus: Gpus = None,
) -> None:
    """Plan, verify and write one collective as an MSCCL algorithm (for NCCL's and RCCL's MSCCL builds)."""
    from commsim.api import simulate
    from commsim.interop.msccl import schedule_to_msccl

    check_writable(output, "--output", MSCCL_SUFFIXES)
    if min_bytes < 0:
        raise CommsimError(f"--min-bytes must be at least 0, got {min_bytes}")
    if max_bytes is not None and max_bytes < max(min_bytes, 1):
        raise CommsimError(
            f"--max-bytes {max_bytes} must be at least 1 and at least --min-bytes ({min_bytes})"
        )
    result = simulate(
        _topology(topology, gpus), algorithm, collective, size, params=parse_params(param or []), verify=True
    )
    if result.schedule is None:  # simulate always plans; kept for the type checker
        raise CommsimError(f"algorithm {algorithm!r} gave no schedule to export")
    name = f"commsim_{algorithm}_{result.collective}_{result.ranks}gpus"
    export = schedule_to_msccl(
        result.schedule, name=name, proto=proto, min_bytes=min_bytes, max_bytes=max_bytes
    )
    write_whole(output, export.xml, MSCCL_SUFFIXES)
    algo = export.algo
    blocks = sum(len(gpu.tbs) for gpu in algo.gpus)
    grid = "exact" if export.exact else "chunk boundaries rounded to the grid"
    say(
        f"{wrote(output)}: {algo.coll} on {algo.ngpus} GPUs, {algo.nchannels} channels, "
        f"{blocks} thread blocks, {algo.nchunksperloop} chunks per loop ({grid})"
    )


@export_app.command("nccl-tuner")
def export_nccl_tuner(
    topology: TopologyName,
    output: Annotated[Path, typer.Option("-o", "--output", help="The tuner CSV file to write.")],
    collective: Annotated[
        list[str] | None,
        typer.Option(metavar="TEXT", help="Collective to tune (repeatable; default all five)."),
    ] = None,
    gpus: Gpus = None,
) -> None:
    """Write the NCCL model's algorithm and protocol per size as NCCL's example tuner plugin reads them.

    Load it with NCCL_TUNER_PLUGIN=<path to libnccl-tuner-example.so> and
    NCCL_TUNER_CONFIG_FILE=<this file> (see the README).
    """
    from commsim.collectives import get_collective
    from commsim.interop.nccl_tuner import TUNER_COLLECTIVES, tuner_csv, tuner_rows

    check_writable(output, "--output", TUNER_SUFFIXES)
    machine = _topology(topology, gpus)
    chosen = [get_collective(c) for c in collective] if collective else list(TUNER_COLLECTIVES)
    rules = tuner_rows(machine, chosen)
    write_whole(output, tuner_csv(rules, machine.name), TUNER_SUFFIXES)
    say(f"{wrote(output)}: {len(rules)} rules for {len(chosen)} collectives on {machine.name}")


@export_app.command("astra")
def export_astra(
    topology: TopologyName,
    output: Annotated[Path, typer.Option("-o", "--output", help="The ASTRA-sim network YAML file to write.")],
    gpus: Gpus = None,
) -> None:
    """Write a machine of rings, full meshes and switches as an ASTRA-sim analytical network (GB = 2^30 B)."""
    from commsim.interop.astra import astra_yaml, topology_to_astra

    check_writable(output, "--output", ASTRA_SUFFIXES)
    network = topology_to_astra(_topology(topology, gpus))
    write_whole(output, astra_yaml(network), ASTRA_SUFFIXES)
    dims = " x ".join(f"{b}({n})" for b, n in zip(network.topology, network.npus_count))
    say(f"{wrote(output)}: {dims}")
