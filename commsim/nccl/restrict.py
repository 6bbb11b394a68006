"""NCCL_ALGO / NCCL_PROTO (``--algo`` / ``--proto``): the candidates they leave, and why none is left.

:class:`~commsim.nccl.model.NcclModel` chooses among the candidates a restriction allows; when it
allows none, the error says what applies on this machine and why the rest does not (NVLS, LL128 and
PAT conditions; RCCL's own rules on AMD GPUs; point-to-point collectives, which no algorithm
restriction chooses).
"""

from __future__ import annotations

from commsim.collectives import Collective
from commsim.nccl import candidates as cand
from commsim.nccl import rccl
from commsim.nccl.candidates import P2P_COLLECTIVES
from commsim.nccl.machine import NcclMachine
from commsim.nccl.rccl_tables import RcclTable

__all__ = ["allowed", "none_allowed"]


def allowed(
    raw: list[cand.Raw], algorithms: tuple[str, ...] | None, protocols: tuple[str, ...] | None
) -> list[cand.Raw]:
    """The candidates ``NCCL_ALGO`` / ``NCCL_PROTO`` (None: all) let NCCL choose."""
    return [
        c
        for c in raw
        if (algorithms is None or c[0] in algorithms) and (protocols is None or c[1] in protocols)
    ]


_GFX = {"rdna4": "gfx12", "cdna3": "gfx942", "cdna4": "gfx950"}
"""The gfx targets RCCL's availability rules name (``rccl/src/graph/tuning.cc``), by architecture."""


def _rccl_disabled(m: NcclMachine, table: RcclTable) -> str:
    """Why an AMD machine lacks a pair the error lists as possible: RCCL's rules (:func:`rccl.rules`)."""
    gfx = _GFX.get(m.arch, m.arch)
    off = ["PAT (NCCL_PAT_ENABLE defaults to 0)"]
    if m.arch == "rdna4":
        off.insert(0, f"LL on {gfx} GPUs ('Disable LL protocol on gfx12xx')")
    if m.nodes == 1 and m.arch in table.tree_simple_single_node_off:
        off.insert(0, f"tree/Simple on a single {gfx} node")
    return f"; RCCL disables {' and '.join(off)} whatever the figures"


def none_allowed(
    collective: Collective,
    raw: list[cand.Raw],
    algorithms: tuple[str, ...] | None,
    protocols: tuple[str, ...] | None,
    tables: tuple[str, RcclTable],
    m: NcclMachine,
    collnet: bool = False,
) -> str:
    """Why no candidate is left of ``raw`` under the restriction, and what is available.

    ``collnet``: the run enables CollNet (``--collnet``), so the CollNet clause says what else it
    needs (several nodes, all-reduce) rather than asking for the option again.
    """
    available = sorted({f"{a}/{p}" for a, p, _, _ in raw})
    restriction = " and ".join(
        f"{what} {', '.join(names)}"
        for what, names in (("algorithm", algorithms), ("protocol", protocols))
        if names
    )
    head = f"no NCCL candidate of {restriction} applies to {collective} on {m.describe()} "
    head += f"(NCCL {tables[0]} tables); available here: {', '.join(available)}"
    if collective in P2P_COLLECTIVES:
        given = " and ".join(
            flag for flag, names in (("--algo", algorithms), ("--proto", protocols)) if names
        )
        return head + (
            f": NCCL runs {collective} as grouped point-to-point sends (p2p/Simple), which NCCL_ALGO and "
            f"NCCL_PROTO do not choose; drop {given} for it"
        )
    return (
        head + " (NVLS needs an NVSwitch box with Hopper or newer GPUs and NCCL 2.17+; LL128 needs NVLink "
        f"and NCCL 2.5+; PAT one GPU per node and NCCL 2.23+; {_collnet_needs(collective, m, collnet)})"
        + (_rccl_disabled(m, tables[1]) if rccl.is_amd(m.arch) else "")
    )


def _collnet_needs(collective: Collective, m: NcclMachine, collnet: bool) -> str:
    """What CollNet needs that this run lacks (the run, the collective or the node count)."""
    if not collnet:
        return (
            "CollNet all-reduce across nodes in a run that enabled it, NCCL_COLLNET_ENABLE=1 with a SHARP "
            "plugin: --collnet"
        )
    if m.nodes < 2:
        return "CollNet reduces in the network's switches, so only across nodes: this run is on one node"
    if collective is not Collective.ALL_REDUCE:
        return (
            f"commsim models CollNet for all-reduce only, not {collective} (NCCL 2.20+ also runs "
            "all-gather and reduce-scatter over it)"
        )
    box = "one GPU per node" if m.per_node == 1 else f"{m.per_node} GPUs per node over {m.transport}"
    return (
        "CollNet Direct needs an NVSwitch box, NVLS across nodes Hopper or newer GPUs on one, CollNet "
        f"Chain NCCL 2.12+: this run has {box}"
    )
