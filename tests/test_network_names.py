"""Network names: aws-ofi-nccl drives EFA or Slingshot, IBext/gIB are IB verbs plugins (review 2, item 5).

Real lines: CSCS Alps (probe 7, log 118: ``export 'NCCL_NET=AWS Libfabric'`` and the cxi provider's
``FI_CXI_*`` settings, no provider line); outside/22 (``Using network IBext_v8``, nccl-rdma-sharp-plugins
on HDR InfiniBand); outside/06 and 76's ``NCCL_NET=gIB`` (GKE A4, Google's gIB plugin: GPUDirect
RDMA over RoCE, NVIDIA AICR "GKE GB200 (A4X) Networking Prerequisites"). The provider lines are in
the form aws-ofi-nccl 1.19 prints ("NET/OFI Selected provider is cxi, fabric is cxi (found 4 nics)").
"""

from __future__ import annotations

import pytest

from commsim.calibrate.infer_network import infer_network
from commsim.calibrate.settings import read_settings
from commsim.calibrate.settings_lines import network_name

ALPS_118 = [
    "+ export FI_CXI_DEFAULT_CQ_SIZE=131072",
    "+ FI_CXI_DEFAULT_CQ_SIZE=131072",
    "+ export 'NCCL_NET=AWS Libfabric'",
    "+ NCCL_NET='AWS Libfabric'",
]


def transport(lines: list[str]) -> tuple[str, bool]:
    """(link kind, assumed) on Hopper GPUs."""
    fact, _ = infer_network(read_settings(lines), None, "hopper", True)
    return str(fact.value), fact.assumed


def test_libfabric_with_cxi_settings_is_slingshot() -> None:
    """118's NCCL_NET='AWS Libfabric' beside FI_CXI_* settings is Slingshot (slingshot_200g), where it
    was EFA (efa_v2, with EFA's 38 us per network step); the evidence names the cxi setting."""
    fact, per_host = infer_network(read_settings(ALPS_118), None, "hopper", True)
    assert (fact.value, per_host) == ("slingshot_200g", 4)
    assert fact.evidence[0].source.startswith("FI_CXI_DEFAULT_CQ_SIZE")


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "nid001:1:1 [0] NCCL INFO NET/OFI Selected provider is cxi, fabric is cxi (found 4 nics)",
            "slingshot_200g",
        ),
        ("export FI_PROVIDER=cxi", "slingshot_200g"),
        (
            "nid001:1:1 [0] NCCL INFO NET/OFI Selected provider is efa, fabric is efa-direct (found 4 nics)",
            "efa_v2",
        ),
    ],
)
def test_the_provider_decides_what_libfabric_drives(line: str, expected: str) -> None:
    """A provider line or FI_PROVIDER wins over the name alone (NCCL_NET='AWS Libfabric')."""
    assert transport(["+ export 'NCCL_NET=AWS Libfabric'", line])[0] == expected


def test_libfabric_alone_is_efa_as_assumed() -> None:
    """Nothing says the provider: EFA, aws-ofi-nccl's usual one, and the fact is assumed."""
    assert transport(["+ export 'NCCL_NET=AWS Libfabric'"]) == ("efa_v2", True)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("test1:5425:5439 [0] NCCL INFO Using network IBext_v8", "ib_ndr"),
        ("mpirun -x NCCL_NET=IBext ./build/all_reduce_perf", "ib_ndr"),
        ("export NCCL_NET=gIB", "roce_400g"),
    ],
)
def test_plugin_names_map_to_ib_verbs(line: str, expected: str) -> None:
    """IBext/IBext_v8 (NCCL's external IB plugin) read as IB, gIB as RoCE; they read as nothing before
    (the network fell back to the board's default with no evidence)."""
    kind, _ = transport([line])
    assert kind == expected
    fact, _ = infer_network(read_settings([line]), None, "hopper", True)
    assert fact.evidence


@pytest.mark.parametrize("name", ["I_B", "i b", "Socket2", "IBextra", "gIB2"])
def test_nonsense_names_name_nothing(name: str) -> None:
    """NCCL compares whole names (strcasecmp): punctuation or digits added name no network."""
    assert network_name(name) is None


@pytest.mark.parametrize(("name", "expected"), [("ib", "ib"), ("SOCKET", "socket"), ("aws libfabric", "ofi")])
def test_names_match_without_case(name: str, expected: str) -> None:
    assert network_name(name) == expected
