"""A verdict withheld for a fact no option gives says how to learn it (outside/97, 101).

aws-ofi-nccl's protocol (SENDRECV or RDMA) sets EFA's per-step overhead; a log without the plugin's
INFO lines leaves it assumed, and ``commsim validate`` has no option for it. The withheld verdict used
to end "give the options named to judge it" with no option named: the plugin prints its protocol
under NCCL_DEBUG=INFO (``NET/OFI Using transport protocol RDMA``, since v1.7.0; older releases
have SENDRECV only and print their release).
"""

from __future__ import annotations

from commsim.calibrate.evidence import Fact
from commsim.calibrate.verdict import _how_to_give
from tests.test_verdict_latency import B200_EFA_97, P6_OPTIONS, _verdict


def test_an_assumed_protocol_says_no_option_gives_it() -> None:
    """Log 97 (2 x p6-b200, up to 256 B): withheld on net_protocol, and told how to show it."""
    verdict = _verdict(B200_EFA_97, P6_OPTIONS)
    assert verdict.startswith("cannot judge: the machine is partly assumed (net_protocol);")
    assert verdict.endswith(
        "net_protocol has no option: run it again with NCCL_DEBUG=INFO, where aws-ofi-nccl prints it"
    )
    assert "give the options named" not in verdict


def test_options_and_a_fact_without_one() -> None:
    """With an assumed network (--nic) too, the options are asked for and the protocol's way given."""
    facts = [
        Fact("network", "efa_v4", assumed=True, option="--nic"),
        Fact("net_protocol", "rdma", assumed=True),
    ]
    assert _how_to_give(facts) == (
        "give the options named to judge it (net_protocol has no option: run it again with "
        "NCCL_DEBUG=INFO, where aws-ofi-nccl prints it)"
    )
    assert _how_to_give(facts[:1]) == "give the options named to judge it"
