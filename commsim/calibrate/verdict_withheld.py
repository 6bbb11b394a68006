"""The verdict's text when it is withheld: a run the model cannot judge, and how to settle it.

:func:`~commsim.calibrate.verdict.judge` withholds its verdict when the run is several communicators
at once (``NCCL_TESTS_SPLIT_MASK``), when the GPUs of a host may talk over NCCL's network transport
(``NCCL_SHM_DISABLE=1``), or when a fact of the machine is assumed; these say why, and what would
settle it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from commsim.calibrate.settings import split_mask

if TYPE_CHECKING:
    from commsim.calibrate.evidence import Fact
    from commsim.calibrate.validate import Validation

__all__ = ["host_transport_text", "how_to_give", "split_text"]


def split_text(validation: Validation, ratio: float, where: str) -> str | None:
    """The verdict on a run whose ranks ``NCCL_TESTS_SPLIT_MASK`` splits into concurrent communicators.

    The model prices one communicator alone; how much the others slow it
    depends on which NICs and links they share, which the model does not
    describe, so no cause (channels, NICs) is blamed for the difference.
    """
    found = split_mask(validation.log.settings)
    if found is None:
        return None
    mask, seen = found
    ranks = len(validation.inference.ranks)
    return (
        f"cannot judge: NCCL_TESTS_SPLIT_MASK={seen.value} ({seen.describe()}) splits the ranks into "
        f"concurrent communicators (color = rank & {mask:#x}) that share the hosts' NICs and links; "
        f"the model prices one communicator of {ranks} rank(s) alone, and measured busbw {where} "
        f"is {ratio:.2f}x its figure"
    )


def host_transport_text(validation: Validation, ratio: float, where: str) -> str | None:
    """The verdict on a run whose GPUs of a host may talk over NCCL's network transport.

    ``NCCL_SHM_DISABLE=1`` without peer-to-peer leaves NCCL its network transport between GPUs of a
    host (:func:`~commsim.calibrate.infer_settings.infer_host_transport`), which the model does not
    price; no board or option would make the model's figure the run's, so none is named but
    ``--p2p/--no-p2p`` when peer-to-peer is only assumed.
    """
    fact = validation.inference.facts.get("host_transport")
    if fact is None:
        return None
    head = f"cannot judge: NCCL_SHM_DISABLE=1 ({fact.evidence[0].describe()})"
    net = "NCCL's network transport (the NIC's loopback or sockets), which the model does not price"
    if fact.assumed:
        return (
            f"{head} turns off NCCL's transport through host memory, so unless GPU peer-to-peer works "
            f"between the GPUs of a host (assumed; --p2p/--no-p2p gives it) they talk over {net}; "
            f"measured busbw {where} is {ratio:.2f}x the model's with peer-to-peer"
        )
    return (
        f"{head} with GPU peer-to-peer off leaves the GPUs of a host only {net}: it prices their "
        f"traffic through host memory; measured busbw {where} is {ratio:.2f}x that figure"
    )


_HOW_TO_LEARN = {"net_protocol": "NCCL_DEBUG=INFO shows it, where aws-ofi-nccl prints its protocol"}
"""How a user learns an assumed fact the log did not show (:mod:`~commsim.calibrate.infer_ofi`)."""


def how_to_give(assumed: list[Fact]) -> str:
    """What settles the ``assumed`` facts: the options named, how to learn a fact whose value the
    user may not know (``net_protocol``: a run with NCCL_DEBUG=INFO), and for a fact without an
    option that only a log showing it settles it (``give the options named`` alone read as if an
    option gave every one)."""
    ways = [
        f"{f.name}: {_HOW_TO_LEARN[f.name]}" if f.name in _HOW_TO_LEARN else f"{f.name}: given by no option"
        for f in assumed
        if f.name in _HOW_TO_LEARN or not f.option
    ]
    named = any(f.option for f in assumed)
    if not named:
        return "; ".join(ways) + "; only a log that shows it settles it"
    return "give the options named to judge it" + (f" ({'; '.join(ways)})" if ways else "")
