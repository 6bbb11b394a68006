"""Whether the hosts of a GB200/GB300 run share one NVLink domain, and how that is known.

A GB200 or GB300 compute tray (one host, 4 GPUs) reaches another tray over
NVLink only when both sit in one NVLink domain (an NVL72 rack, or a
partition of one) and NCCL uses it (multi-node NVLink, "MNNVL", NCCL 2.19+
with IMEX); else its GPUs talk to the other host over their NICs, as any
two hosts do. Cloud nodes of the same machine type can land either way
(Google's A4X Max page: "If Pods are scheduled on nodes in distinct NVLink
domains, this test represents cross-domain RDMA throughput"). A table-only
log does not say which, so without evidence the hosts are *assumed* to share
one domain (a rack is the usual home of such hosts) and the verdict is
withheld until ``--nvlink-domain`` says.

Evidence, most direct first, each NCCL ``INFO`` line as NCCL 2.19-2.28
prints it:

* ``NCCL_MNNVL_ENABLE=0`` (any source the settings reader knows): NCCL does
  not use NVLink between hosts, so they talk over the network;
* ``comm 0x.. rank R nRanks N nNodes K localRanks L localRank l MNNVL M``
  (``src/init.cc``): NCCL counts a clique of hosts on one NVLink domain as
  one node, so ``K`` is the number of domains: 1 (or fewer than the hosts)
  means shared, ``K`` equal to the hosts means separate;
* ``MNNVL 1 cliqueId C cliqueSize S cliqueRank r`` (``src/mnnvl.cc``; before
  2.23 ``src/init.cc``, also with ``MNNVL 0``): ``S`` ranks share rank ``r``'s
  domain; ``S`` equal to the ranks means shared, at most one host's ranks
  (or ``MNNVL 0``) separate;
* channel lines between ranks of different hosts (``Channel 00/0 : 3[3] ->
  4[0] via P2P/MNNVL``; :func:`~commsim.calibrate.verdict_evidence.transports`):
  ``via P2P`` means shared; ``via NET`` only, with every host in such a line,
  separate.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from commsim.calibrate.evidence import Evidence, Fact
from commsim.calibrate.infer_layout import InferenceError, conflict, given
from commsim.calibrate.parser import NcclTestsLog
from commsim.calibrate.verdict_evidence import tool_lines, transports

__all__ = ["DOMAIN_CHOICES", "NvlinkDomain", "check_nvlink_domain", "infer_nvlink_domain"]

DOMAIN_CHOICES = ("shared", "separate")
"""Values of ``--nvlink-domain``: the hosts share NVLink domains (NVL72 racks), or each is its own."""

OPTION = "--nvlink-domain"

_COMM = re.compile(
    r"NCCL INFO comm 0x[0-9a-fA-F]+ rank \d+ nRanks (\d+) nNodes (\d+) localRanks \d+ localRank \d+"
    r"(?: MNNVL (\d+))?"
)
_CLIQUE = re.compile(r"NCCL INFO MNNVL (\d+) cliqueId [0-9a-fA-Fx]+ cliqueSize (\d+) cliqueRank \d+")
_SOURCE = "NCCL INFO line"


@dataclass(frozen=True)
class NvlinkDomain:
    """The ``nvlink_domain`` fact and, when the log counts them, the NVLink domains the hosts fill.

    Attributes
    ----------
    fact : Fact
        ``"shared"`` or ``"separate"``, with its evidence.
    domains : int or None
        NVLink domains the run spans (NCCL's node count), None when the log does not count them.
    """

    fact: Fact
    domains: int | None = None

    @property
    def separate(self) -> bool:
        """Whether every host is an NVLink domain of its own (its GPUs reach other hosts over NICs)."""
        return self.fact.value == "separate"


def infer_nvlink_domain(
    log: NcclTestsLog, raw: str, option: str | None, hosts: int, per_node: int, warnings: list[str]
) -> NvlinkDomain:
    """Whether the ``hosts`` hosts of an NVL72-class run share NVLink domains.

    Parameters
    ----------
    log : NcclTestsLog
        The parsed run (its settings and device list).
    raw : str
        The log's text, for NCCL's ``INFO`` lines up to the run's last line.
    option : str, optional
        ``--nvlink-domain``: ``"shared"`` or ``"separate"``; wins over the log.
    hosts, per_node : int
        Hosts of the run (at least 2) and ranks per host.
    warnings : list of str
        Receives the log's disagreement with the option.

    Raises
    ------
    InferenceError
        If ``option`` is neither ``"shared"`` nor ``"separate"``.
    """
    check_nvlink_domain(option)
    seen = _from_log(log, raw, hosts, per_node, warnings)
    if option is None:
        return seen or NvlinkDomain(_assumed(hosts))
    conflict("NVLink domain", OPTION, option, seen.fact if seen else None, warnings)
    note = _NOTES[option]
    domains = hosts if option == "separate" else None
    return NvlinkDomain(given("nvlink_domain", option, OPTION, note), domains)


def check_nvlink_domain(option: str | None) -> None:
    """Refuse an ``--nvlink-domain`` that is none of :data:`DOMAIN_CHOICES`, whatever the run.

    Raises
    ------
    InferenceError
        Naming the valid values.
    """
    if option is not None and option not in DOMAIN_CHOICES:
        raise InferenceError(f"{OPTION} {option!r}: give one of {', '.join(DOMAIN_CHOICES)}")


_NOTES = {
    "shared": "the hosts' GPUs reach each other over NVLink (one NVLink domain per rack)",
    "separate": "each host is an NVLink domain of its own: its GPUs reach other hosts over its NICs",
}


def _assumed(hosts: int) -> Fact:
    note = (
        f"the log does not say whether its {hosts} hosts share an NVLink domain; one per NVL72 rack is "
        "assumed (the usual case), but hosts in distinct domains (cloud nodes can be) talk over their "
        "NICs at a fraction of that bandwidth"
    )
    return Fact("nvlink_domain", "shared", (), assumed=True, option=OPTION, note=note)


def _from_log(
    log: NcclTestsLog, raw: str, hosts: int, per_node: int, warnings: list[str]
) -> NvlinkDomain | None:
    """What NCCL's own lines say, most direct first; None when they say nothing."""
    disabled = log.settings.env.get("NCCL_MNNVL_ENABLE")
    if disabled is not None and str(disabled.value).strip() == "0":
        note = "NCCL_MNNVL_ENABLE=0: NCCL does not use NVLink between hosts"
        return NvlinkDomain(_known("separate", (disabled,), note), hosts)
    lines = tool_lines(raw, log.last_line)
    return (
        _from_comm_line(lines, log.n_ranks, hosts, warnings)
        or _from_clique_line(lines, log.n_ranks, hosts, per_node, warnings)
        or _from_channels(lines, log, hosts)
    )


def _known(value: str, evidence: tuple[Evidence, ...], note: str) -> Fact:
    return Fact("nvlink_domain", value, evidence, option=OPTION, note=note)


def _from_comm_line(
    lines: Sequence[tuple[int, str]], ranks: int, hosts: int, warnings: list[str]
) -> NvlinkDomain | None:
    """NCCL's node count for the run's communicator: NVLink domains (MNNVL) or hosts (without).

    A count NCCL cannot print for these hosts (below 1, above the hosts) is no evidence: warned about.
    """
    for number, text in lines:
        match = _COMM.search(text)
        if match is None or int(match.group(1)) != ranks:
            continue
        nodes, mnnvl = int(match.group(2)), match.group(3)
        if not 1 <= nodes <= hosts:
            warnings.append(
                f"line {number}: NCCL counts {nodes} node(s) for a run of {hosts} hosts, which no "
                "placement gives; the line is not used for the NVLink domain"
            )
            continue
        seen = (Evidence.at(nodes, _SOURCE, number, text),)
        if nodes == hosts or mnnvl == "0":
            note = f"NCCL counts {nodes} nodes for {hosts} hosts: no two hosts share an NVLink domain"
            if mnnvl == "0":
                note = f"MNNVL 0 on NCCL's communicator line: hosts talk over the network ({nodes} nodes)"
            return NvlinkDomain(_known("separate", seen, note), hosts)
        note = f"NCCL counts {nodes} node(s) for {hosts} hosts: hosts of one NVLink domain are one node"
        return NvlinkDomain(_known("shared", seen, note), nodes)
    return None


def _from_clique_line(
    lines: Sequence[tuple[int, str]], ranks: int, hosts: int, per_node: int, warnings: list[str]
) -> NvlinkDomain | None:
    """NCCL's MNNVL clique: how many ranks share one rank's NVLink domain.

    A clique is whole hosts and no larger than the run: another size is no evidence (warned about).
    """
    for number, text in lines:
        match = _CLIQUE.search(text)
        if match is None:
            continue
        enabled, size = int(match.group(1)), int(match.group(2))
        if enabled and (size > ranks or size < 1 or size % per_node):
            warnings.append(
                f"line {number}: an NVLink clique of {size} ranks cannot hold whole hosts of {per_node} "
                f"GPUs within {ranks} ranks; the line is not used for the NVLink domain"
            )
            continue
        seen = (Evidence.at(size, _SOURCE, number, text),)
        if not enabled or size <= per_node:
            note = f"MNNVL {enabled}, {size} rank(s) per NVLink clique: hosts talk over the network"
            return NvlinkDomain(_known("separate", seen, note), hosts)
        note = f"{size} of the {ranks} ranks share one NVLink domain (NCCL's MNNVL clique)"
        return NvlinkDomain(_known("shared", seen, note), -(-ranks // size))
    return None


def _from_channels(lines: Sequence[tuple[int, str]], log: NcclTestsLog, hosts: int) -> NvlinkDomain | None:
    """Channels between ranks of different hosts: over NVLink (P2P) or the network (NET)."""
    host_of = {d.rank: d.host for d in log.devices if d.host}
    across = [
        t
        for t in transports(lines)
        if t.src_rank in host_of and t.dst_rank in host_of and host_of[t.src_rank] != host_of[t.dst_rank]
    ]
    nvlink = next((t for t in across if t.transport == "P2P"), None)
    if nvlink is not None:
        seen = (Evidence.at("P2P", "NCCL INFO channel line", nvlink.line, nvlink.text),)
        note = "NCCL joins ranks of different hosts over NVLink (P2P across hosts)"
        return NvlinkDomain(_known("shared", seen, note))
    network = [t for t in across if t.transport == "NET"]
    reached = {host_of[r] for t in network for r in (t.src_rank, t.dst_rank)}
    if network and len(reached) >= hosts:
        seen = (Evidence.at("NET", "NCCL INFO channel line", network[0].line, network[0].text),)
        note = "NCCL joins every host to the others over the network, none over NVLink"
        return NvlinkDomain(_known("separate", seen, note), hosts)
    return None
