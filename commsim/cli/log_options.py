"""The options of ``commsim validate`` and ``commsim calibrate`` that describe a log's run and machine,
and the checks of their values (each refused with the valid ones, exit code 2)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from commsim.errors import CommsimError

if TYPE_CHECKING:
    from commsim.calibrate.inference import RunOptions

__all__ = [
    "Algo",
    "Collective",
    "Collnet",
    "Devices",
    "Gpu",
    "Gpus",
    "GpusPerNode",
    "LogTopology",
    "NcclTopo",
    "NcclVersion",
    "NetProtocol",
    "Nic",
    "NicsPerNode",
    "Nodes",
    "NvlinkDomain",
    "P2p",
    "Proto",
    "check_nic",
    "choice_list",
    "with_devices",
    "with_net_protocol",
    "with_nvlink_domain",
]


LogTopology = Annotated[
    str | None,
    typer.Option(
        help="Machine of one host: a shipped name, a builder (with its defaults), a topology YAML, an "
        "nvidia-smi topo -m file, or a board class the report names (nvswitch8, nvlink_mesh4, dgx1_cube, "
        "xgmi8, pcie ...: that board of the log's GPU) (default: inferred from the log). The YAML "
        "describes a machine or names a builder with its fields, e.g. 'builder: nvswitch_box' and "
        "'gpus: 16' on two lines (--gpus is the run's rank count here, not a builder's)."
    ),
]
Nic = Annotated[
    str | None,
    typer.Option(help="Network link kind between hosts, e.g. ib_ndr, roce_400g, efa_v2, tcp_100g."),
]
Gpus = Annotated[
    int | None,
    typer.Option(help="Total ranks of the run (wins over the log; without it, --nodes x --gpus-per-node)."),
]
Nodes = Annotated[int | None, typer.Option(help="Hosts the run spans (wins over the log).")]
GpusPerNode = Annotated[
    int | None, typer.Option("--gpus-per-node", help="Ranks per host (wins over the log).")
]
NicsPerNode = Annotated[int | None, typer.Option("--nics-per-node", help="NICs per host that carry traffic.")]
Gpu = Annotated[str | None, typer.Option(help="GPU model, e.g. 'H100 SXM' or 'MI300X' (see commsim gpus).")]
P2p = Annotated[
    bool | None, typer.Option("--p2p/--no-p2p", help="Whether GPU peer-to-peer works (default: inferred).")
]
Algo = Annotated[
    str | None, typer.Option(help="Restrict NCCL's algorithms like NCCL_ALGO, e.g. ring or ring,tree.")
]
Proto = Annotated[
    str | None, typer.Option(help="Restrict NCCL's protocols like NCCL_PROTO, e.g. Simple or LL,LL128.")
]
NcclVersion = Annotated[
    str | None, typer.Option("--nccl-version", help="NCCL version of the run, e.g. 2.21.5.")
]
NvlinkDomain = Annotated[
    str | None,
    typer.Option(
        "--nvlink-domain",
        help="Whether the hosts of a GB200/GB300 run share NVLink domains: shared (NVL72 racks) or separate "
        "(each host its own, reaching the others over its NICs). Default: NCCL's INFO lines, else shared "
        "(assumed).",
    ),
]
NetProtocol = Annotated[
    str | None,
    typer.Option(
        "--net-protocol",
        help="The protocol aws-ofi-nccl ran AWS EFA with: sendrecv or rdma (p5/p6 since plugin 1.7). "
        "Default: what the log shows (the plugin's protocol line, OFI_NCCL_PROTOCOL, the instance it "
        "names; a plugin before 1.7, NCCL before 2.12 or efa_v1: sendrecv), else the GPU generation's "
        "default (assumed).",
    ),
]
Collnet = Annotated[
    bool | None,
    typer.Option(
        "--collnet/--no-collnet",
        help="Whether the run used CollNet, the network switch's reduction (InfiniBand SHARP: "
        "NCCL_COLLNET_ENABLE=1 with a SHARP plugin). Default: what the log's NCCL lines say ('Connected "
        "CollNet', from 2.23 'Connected Collnet Chains', or an NCCL_ALGO leaving only CollNet), else not "
        "(NCCL's default).",
    ),
]
Devices = Annotated[
    str | None,
    typer.Option(
        "--devices",
        help="The board's GPUs (nvidia-smi indices) each host's ranks run on, in local rank order, e.g. "
        "0,2,4,6, when the log does not say (no device list or CUDA_VISIBLE_DEVICES) and the choice "
        "changes the NICs or links reached.",
    ),
]
Collective = Annotated[
    str | None,
    typer.Option(
        help="Collective, if neither the log's binary nor its table (busbw/algbw, redop, root) settles it."
    ),
]
NcclTopo = Annotated[
    Path | None,
    typer.Option(
        "--nccl-topo",
        help="NCCL's own topology dump of one host (the XML NCCL_TOPO_DUMP_FILE writes): the machine NCCL "
        "detected, used instead of inferring it (not with --topology).",
    ),
]


def with_net_protocol(options: RunOptions, net_protocol: str | None) -> RunOptions:
    """``options`` with ``--net-protocol``, refused unless it names one of aws-ofi-nccl's protocols."""
    from commsim.calibrate.infer_ofi import check_net_protocol

    check_net_protocol(net_protocol)
    if net_protocol is None:
        return options
    return replace(options, net_protocol=net_protocol)


def with_nvlink_domain(options: RunOptions, nvlink_domain: str | None) -> RunOptions:
    """``options`` with ``--nvlink-domain``, refused unless it names one of its values."""
    from commsim.calibrate.infer_domain import DOMAIN_CHOICES

    if nvlink_domain is None:
        return options
    if nvlink_domain not in DOMAIN_CHOICES:
        raise CommsimError(f"--nvlink-domain {nvlink_domain!r}: valid: {', '.join(DOMAIN_CHOICES)}")
    return replace(options, nvlink_domain=nvlink_domain)


def with_devices(options: RunOptions, devices: str | None) -> RunOptions:
    """``options`` with ``--devices``: distinct GPU indices, comma-separated, refused otherwise."""
    from dataclasses import replace

    if devices is None:
        return options
    parts = [p.strip() for p in devices.split(",")]
    if not all(re.fullmatch(r"[0-9]+", p) for p in parts) or len(set(parts)) != len(parts):
        raise CommsimError(
            f"--devices {devices!r}: give distinct GPU indices of a host, comma-separated (e.g. 0,2,4,6)"
        )
    return replace(options, devices=tuple(int(p) for p in parts))


def check_nic(nic: str) -> None:
    """Refuse a ``--nic`` that names no network link kind, even for a run on one host."""
    from commsim.errors import did_you_mean
    from commsim.topology.linkkinds import LINK_KINDS

    valid = sorted(k for k, v in LINK_KINDS.items() if v.family in ("infiniband", "ethernet"))
    if nic not in valid:
        raise CommsimError(
            f"--nic {nic!r} is no network link kind; valid: {', '.join(valid)}{did_you_mean(nic, valid)}"
        )


def choice_list(text: str | None, option: str, valid: dict[str, str]) -> tuple[str, ...] | None:
    if text is None:
        return None
    names = [t.strip().lower().replace("_", "") for t in text.split(",") if t.strip()]
    unknown = [n for n in names if n not in valid]
    if unknown or not names:
        raise CommsimError(
            f"{option} {text!r}: unknown {', '.join(map(repr, unknown)) or 'empty list'}; "
            f"valid: {', '.join(sorted(set(valid.values())))} (comma-separated)"
        )
    return tuple(dict.fromkeys(valid[n] for n in names))
