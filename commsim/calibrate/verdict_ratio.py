"""The words of a verdict drawn from the ratio: above or below the model, in bandwidth or latency.

:func:`~commsim.calibrate.verdict.judge` decides the verdict; here is what an *above* or
*below* one says: a copy held in cache, the model's figures too low, the causes the log
shows or where to look for one, NCCL's other choice that fits; when every size compared is
latency-bound (:func:`latency_only`), the model's per-call floor and overheads, with what a
network transport's latency rests on (:func:`~commsim.calibrate.defaults.transport_note`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from commsim.calibrate.verdict_causes import across_nodes, large_indices
from commsim.calibrate.verdict_choice import other_choice
from commsim.calibrate.verdict_latency import cache_resident

if TYPE_CHECKING:
    from commsim.calibrate.validate import Validation

__all__ = ["above_text", "below_text", "choice_text", "latency_only"]


def latency_only(validation: Validation) -> bool:
    """Whether every size the ratio is taken over is latency-bound (below 64 KiB, the regime
    boundary of the error summary), so the ratio compares per-call floors and overheads, not
    bandwidth."""
    from commsim.calibrate.validate import LATENCY_BOUND_BYTES

    rows = validation.rows
    return all(rows[i].nbytes < LATENCY_BOUND_BYTES for i in large_indices(r.nbytes for r in rows))


def above_text(validation: Validation, ratio: float, where: str, latency: bool) -> str:
    """The above verdict's text: a copy held in cache, the model's latency (``latency``: every size
    compared is latency-bound), or its figures too low."""
    cached = cache_resident(validation)
    if cached:
        return f"{ratio:.1f}x faster than the model expects {where}: {cached}"
    if latency:
        return _latency_text(validation, f"latency {ratio:.1f}x lower than modelled", where, "too high")
    return (
        f"{ratio:.1f}x faster than the model expects {where}: the model's figures for this "
        "machine are too low (check the machine it used, or calibrate it with commsim calibrate)"
    )


def below_text(
    validation: Validation,
    ratio: float,
    where: str,
    latency: bool,
    causes: tuple[str, ...],
    lines: list[tuple[int, str]],
) -> str:
    """The below verdict's text: its head (in latency when ``latency``), the ``causes`` the log shows
    or what to look for (:func:`_causes_text`, told what the machine modelled already holds: a
    matrix, peer-to-peer known off, hosts and NICs), and NCCL's other choice that fits."""
    board = validation.inference.facts.get("board")
    given_box = board is not None and any(
        e.source in ("option --topology", "option --calibrated", "option --nccl-topo") for e in board.evidence
    )
    has_matrix = validation.log.topo_matrix is not None or given_box
    p2p = validation.inference.facts.get("p2p")
    p2p_off = p2p is not None and not p2p.assumed and not p2p.value and _hosts_share(validation)
    head = f"{1 / ratio:.1f}x below what this machine should reach {where}"
    if latency:
        head = _latency_text(validation, f"latency {1 / ratio:.1f}x higher than modelled", where, "too low")
    scope = (across_nodes(validation), _hosts_share(validation))
    return _causes_text(head, causes, lines, has_matrix, p2p_off, scope) + choice_text(validation)


def choice_text(validation: Validation) -> str:
    """``"; possibly NCCL's choice: ..."`` when another candidate fits (:func:`other_choice`), else ``""``."""
    choice = other_choice(validation)
    return f"; possibly NCCL's choice: {choice}" if choice else ""


def _latency_text(validation: Validation, head: str, where: str, model: str) -> str:
    """A verdict drawn from latency-bound sizes only: about the model's floor and overheads, with
    what the model's network latency rests on when it is not NCCL's own table (the transport's note)."""
    from commsim.calibrate.defaults import transport_note
    from commsim.topology.linkkinds import LINK_KINDS

    text = (
        f"{head} {where}, where every size compared is below 64 KiB: the time there is the per-call "
        f"floor and per-step overheads, not bandwidth, and the model's are {model} for this machine"
    )
    network = validation.inference.facts.get("network")
    entry = LINK_KINDS.get(str(network.value)) if network is not None else None
    protocol = validation.inference.net_protocol
    per_node = validation.inference.per_node
    note = None if entry is None else transport_note(entry.transport, validation.params, protocol, per_node)
    above = model == "too high"
    if note:
        lead = "the likely cause" if above else "what the model's network latency rests on"
        return f"{text}; {lead}: {note}"
    return f"{text} (calibrate it with commsim calibrate)" if above else text


def _hosts_share(validation: Validation) -> bool:
    """Whether some host runs several ranks (so peer-to-peer between its GPUs matters)."""
    per_node = validation.inference.facts.get("gpus_per_node")
    return per_node is None or int(per_node.value) > 1


def _causes_text(
    head: str,
    causes: tuple[str, ...],
    lines: list[tuple[int, str]],
    has_matrix: bool,
    p2p_off: bool = False,
    scope: tuple[bool, bool] = (True, True),
) -> str:
    """The below verdict after its ``head``: the causes the log shows, or what to run again to see one
    (not a matrix the user already gave, with the log or as ``--topology``). Peer-to-peer known off is
    in the machine modelled (through host memory), so it is not a cause of running below it. ``scope``
    is (the run crosses hosts, a host runs several ranks): the usual causes named are those that
    could apply, no NIC on one host and no peer-to-peer with one GPU per host."""
    if causes:
        return f"{head}; causes the log shows: " + "; ".join(causes)
    network, shared = scope  # one host: a run below the model has no NIC or network to blame
    if any("NCCL INFO" in text for _, text in lines):
        usual = ", ".join(
            c
            for c, applies in (
                ("GPU and NIC on different sockets", network),
                ("peer-to-peer off", shared and not p2p_off),
                ("a slow NIC", network),
                ("few channels", True),
            )
            if applies
        )
        modelled = "; peer-to-peer is off, and so is the machine modelled" if p2p_off else ""
        look = "a busy GPU, a degraded link or a shared network"
        look = look if network else "a busy GPU or a degraded link"
        return f"{head}; the log shows none of the usual causes ({usual}){modelled}: look for {look}"
    more = "" if has_matrix else " and include nvidia-smi topo -m"
    return f"{head}; the log shows no cause: run it again with NCCL_DEBUG=INFO{more} to see one"
