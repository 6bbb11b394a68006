"""aws-ofi-nccl's provider, when only assumed to be EFA, is said to be assumed (review nit 2).

NCCL prints ``Using network AWS Libfabric`` for the aws-ofi-nccl plugin, which drives AWS EFA (its
usual provider) and HPE Slingshot (libfabric's cxi provider, CSCS Alps logs 118-122). With no
``NET/OFI Selected provider is ...`` line, no ``FI_PROVIDER`` and no ``FI_CXI_*`` setting the log does
not show EFA: the network fact used to read "the log shows efa".
"""

from __future__ import annotations

from commsim.calibrate.infer_network import infer_network
from commsim.calibrate.settings import read_settings

LIBFABRIC = "host:1:1 [0] NCCL INFO Using network AWS Libfabric"
PROVIDER = "host:1:1 [0] NCCL INFO NET/OFI Selected Provider is efa (found 4 nics)"


def test_an_assumed_provider_is_said_to_be_assumed() -> None:
    """Only the plugin's name: EFA is assumed, and why (its usual provider; what would show cxi)."""
    fact, _ = infer_network(read_settings([LIBFABRIC]), None, "ampere", True)
    assert fact.assumed and fact.value == "efa_v2"
    assert "the log shows" not in fact.note
    assert "names no provider: EFA, its usual one, assumed" in fact.note
    assert "FI_PROVIDER=cxi or FI_CXI_*" in fact.note


def test_a_printed_provider_is_shown() -> None:
    """NCCL's provider line names EFA: the log does show it (only the speed is assumed)."""
    fact, _ = infer_network(read_settings([LIBFABRIC, PROVIDER]), None, "ampere", True)
    assert fact.note.startswith("the log shows efa; its speed is not printed")
