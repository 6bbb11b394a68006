"""``commsim gpus``, ``commsim algos`` and ``commsim topo ...``: the catalogues, printed.

Names and descriptions come from files and plug-ins, so every cell is
escaped before rich renders it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from commsim.cli.console import escape, out, say

__all__ = ["algos", "gpus", "topo_app"]

topo_app = typer.Typer(
    no_args_is_help=True, help="List, show and import machine topologies; print their schema."
)


def gpus(
    name: Annotated[str | None, typer.Argument(help="Show how a printed GPU name is resolved.")] = None,
) -> None:
    """List the GPU catalogue (links, host interface, boards), or resolve one printed name."""
    from rich.markup import escape

    from commsim.hardware import find_gpu, gpu_catalogue

    if name is not None:
        match = find_gpu(name)
        if match.spec is None:
            from commsim.errors import CommsimError, did_you_mean

            names = [spec.name for spec in gpu_catalogue().values()]
            raise CommsimError(f"{match.why}{did_you_mean(name, names)}; 'commsim gpus' lists the catalogue")
        out.print(escape(match.why), highlight=False)
        out.print(escape(match.spec.describe()), highlight=False)
        return
    table = Table(title="GPU catalogue")
    for column in ("key", "name", "arch", "form", "GPU-GPU links", "host", "boards"):
        table.add_column(column)
    for spec in gpu_catalogue().values():
        links = f"{spec.fabric} x {spec.fabric_links}" if spec.fabric else "-"
        boards = ", ".join(f"{b.machine_class}:{b.gpus}" for b in spec.boards) or "-"
        table.add_row(
            *map(escape, (spec.key, spec.name, spec.arch, spec.form, links, spec.pcie or "-", boards))
        )
    out.print(table)


def algos() -> None:
    """List the registered algorithms and the collectives each implements."""
    from commsim.algorithms import algorithm_names, get_algorithm

    table = Table(title="algorithms")
    for column in ("name", "collectives", "parameters", "what it does"):
        table.add_column(column)
    for name in algorithm_names():
        cls = get_algorithm(name)
        table.add_row(
            escape(name),
            ", ".join(sorted(c.value for c in cls.collectives)),
            escape(", ".join(cls.Params.model_fields) or "-"),
            escape(cls.summary),
        )
    out.print(table)


@topo_app.command("list")
def topo_list() -> None:
    """List shipped topologies and builders."""
    from commsim.topology import BUILDERS, get_topology, shipped_topologies

    table = Table(
        title="topologies",
        caption="A builder's other fields, and its GPU count where --gpus means something else (validate): "
        "a YAML file naming it, e.g. 'builder: nvswitch_box' and 'gpus: 16' on two lines, given as "
        "--topology FILE.",
    )
    for column in ("name", "GPUs", "description"):
        table.add_column(column)
    for name in shipped_topologies():
        topo = get_topology(name)
        table.add_row(escape(name), str(len(topo.gpus)), escape(topo.description))
    options = {"cluster": "--box B --nodes K --nic KIND"}
    for name, builder in BUILDERS.items():
        doc = (builder.__doc__ or "").strip().splitlines()[0].replace("``", "")
        doc = doc.split(" (SEED_FACTS")[0]
        table.add_row(f"{name} (builder)", options.get(name, "--gpus N"), escape(doc))
    out.print(table)


@topo_app.command("show")
def topo_show(
    name: Annotated[str, typer.Argument(help="Topology name, builder or YAML path.")],
    gpus: Annotated[int | None, typer.Option(help="GPU count for builders.")] = None,
    yaml_out: Annotated[bool, typer.Option("--yaml", help="Print the topology as YAML.")] = False,
) -> None:
    """Show a topology's devices and links."""
    import yaml

    from commsim.cli.options import machine_from_flags
    from commsim.topology import topology_to_dict

    topo = machine_from_flags(name, gpus=gpus)
    if yaml_out:
        print(yaml.safe_dump(topology_to_dict(topo), sort_keys=False, width=100), end="")
        return
    out.print(f"[bold]{escape(topo.name)}[/]: {escape(topo.description)}", highlight=False)
    out.print(escape(f"GPUs (rank order): {', '.join(topo.gpus)}"), highlight=False)
    table = Table()
    for column in ("link", "kind", "count", "bandwidth per direction", "latency"):
        table.add_column(column)
    from commsim.units import format_bandwidth, format_time

    for link in topo.links[::2]:
        table.add_row(
            escape(f"{link.src} <-> {link.dst}"),
            escape(link.kind),
            str(link.count),
            format_bandwidth(link.bandwidth_Bps),
            format_time(link.latency_s),
        )
    out.print(table)


@topo_app.command("import")
def topo_import(
    matrix: Annotated[Path, typer.Argument(help="Text holding 'nvidia-smi topo -m' output.")],
    gpu_model: Annotated[
        str | None, typer.Option("--gpu", "--gpu-model", help="GPU model, e.g. A100-SXM4-80GB.")
    ] = None,
    cpu_model: Annotated[
        str | None, typer.Option(help="CPU model (AMD selects xGMI between sockets).")
    ] = None,
    name: Annotated[str | None, typer.Option(help="Name of the topology.")] = None,
    nvlink_kind: Annotated[str | None, typer.Option(help="NVLink kind, e.g. nvlink3.")] = None,
    pcie_kind: Annotated[str | None, typer.Option(help="PCIe kind, e.g. pcie4_x16.")] = None,
    nic_kind: Annotated[str | None, typer.Option(help="Network kind of the NICs, e.g. ib_hdr.")] = None,
    p2p: Annotated[
        bool | None,
        typer.Option("--p2p/--no-p2p", help="GPU peer-to-peer (default: from a topo -p2p matrix, else yes)."),
    ] = None,
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Write the topology YAML here.")
    ] = None,
) -> None:
    """Build a topology from a real machine's 'nvidia-smi topo -m' output."""
    import yaml

    from commsim.cli.options import check_not_input, check_writable, wrote
    from commsim.topology import load_topo_matrix, save_topology, topology_to_dict

    if output is not None:
        check_writable(output, "--output", (".yaml", ".yml"))  # --topology knows a file by it
        check_not_input(output, "--output", [matrix])
    if gpu_model is not None:
        from commsim.hardware import find_gpu

        if find_gpu(gpu_model).spec is None:
            say(
                f"warning: --gpu {gpu_model!r} is not in the GPU catalogue ('commsim gpus' lists it); "
                "its links get the defaults for an unknown GPU"
            )
    given = {
        "gpu_model": gpu_model,
        "cpu_model": cpu_model,
        "name": name,
        "nvlink_kind": nvlink_kind,
        "pcie_kind": pcie_kind,
        "nic_kind": nic_kind,
        "p2p": p2p,
    }
    topo = load_topo_matrix(matrix, **{k: v for k, v in given.items() if v is not None})
    if output is not None:
        save_topology(topo, output)
        say(f"{wrote(output)}: {len(topo.gpus)} GPUs, {len(topo.physical_links)} links. {topo.description}")
    else:
        print(yaml.safe_dump(topology_to_dict(topo), sort_keys=False, width=100), end="")


@topo_app.command("schema")
def topo_schema() -> None:
    """Print the JSON Schema of the topology YAML format."""
    from commsim.topology import topology_json_schema

    print(topology_json_schema())
