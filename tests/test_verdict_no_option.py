"""A withheld verdict says how to settle each assumed fact (outside/97, 101).

aws-ofi-nccl's protocol (SENDRECV or RDMA) sets EFA's per-step overhead; a log without the plugin's
INFO lines leaves it assumed. ``--net-protocol`` gives it, but a user rarely knows which protocol
ran: the plugin prints it under NCCL_DEBUG=INFO (``NET/OFI Using transport protocol RDMA``, since
v1.7.0; older releases have SENDRECV only and print their release), so the verdict says so beside
the option. A fact no option gives is said to be settled only by a log that shows it.
"""

from __future__ import annotations

from commsim.calibrate.evidence import Fact
from commsim.calibrate.verdict_withheld import how_to_give as _how_to_give
from tests.test_verdict_latency import B200_EFA_97, P6_OPTIONS, _verdict

LEARN = "net_protocol: NCCL_DEBUG=INFO shows it, where aws-ofi-nccl prints its protocol"


def test_an_assumed_protocol_names_its_option_and_how_to_learn_it() -> None:
    """Log 97 (2 x p6-b200, up to 256 B): withheld on net_protocol, its option and its source named."""
    verdict = _verdict(B200_EFA_97, P6_OPTIONS)
    assert verdict.startswith("cannot judge: the machine is partly assumed (net_protocol (--net-protocol));")
    assert verdict.endswith(f"give the options named to judge it ({LEARN})")


def test_options_and_a_fact_without_one() -> None:
    """An assumed network (--nic) is asked for by its option alone; the protocol adds how to learn
    it; a fact with no option says so, and that only a log showing it settles it."""
    network = Fact("network", "efa_v4", assumed=True, option="--nic")
    protocol = Fact("net_protocol", "rdma", assumed=True, option="--net-protocol")
    orphan = Fact("launch", "threads", assumed=True)
    assert _how_to_give([network, protocol]) == f"give the options named to judge it ({LEARN})"
    assert _how_to_give([network]) == "give the options named to judge it"
    assert _how_to_give([network, orphan]) == (
        "give the options named to judge it (launch: given by no option)"
    )
    assert _how_to_give([orphan]) == "launch: given by no option; only a log that shows it settles it"
