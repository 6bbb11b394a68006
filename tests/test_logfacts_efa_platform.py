"""The AWS instance aws-ofi-nccl names: network kind and EFA NICs per host, known from the catalogue.

aws-ofi-nccl prints ``NET/OFI Running on P4d platform, Setting NCCL_TOPO_FILE ...``
(older plugins) or ``Running on p5.48xlarge platform ...`` (src/platform-aws.c).
The link kind catalogue (:mod:`commsim.topology.linkkinds`, from the AWS
instance pages) gives p4d.24xlarge 4 x 100 Gbit/s EFA (efa_v2), p5.48xlarge
32 x efa_v2, p5en.48xlarge 16 x efa_v3; a family it does not name (p4de) is
not guessed. The p4d line is from an EKS nccl-tests-efa example (NCCL 2.8.3).
"""

from __future__ import annotations

import pytest

from commsim.calibrate.evidence import Evidence
from commsim.calibrate.infer_network import infer_network
from commsim.calibrate.infer_nics import infer_nics
from commsim.calibrate.settings import read_settings

_INFO = "ip-172-31-70-88:18546:18546 [0] NCCL INFO "
P4D = _INFO + (
    "NET/OFI Running on P4d platform, Setting NCCL_TOPO_FILE environment variable to "
    "/usr/local/cuda-11.0/efa/share/aws-ofi-nccl/xml/p4d-24xl-topo.xml"
)
PROVIDER = _INFO + "NET/OFI Selected Provider is efa"


@pytest.mark.parametrize(
    ("platform", "kind", "nics"),
    [
        ("P4d", "efa_v2", 4),
        ("p4d.24xlarge", "efa_v2", 4),
        ("p5.48xlarge", "efa_v2", 32),
        ("p5en.48xlarge", "efa_v3", 16),
    ],
)
def test_a_known_platform_makes_the_network_and_its_nics_known(platform: str, kind: str, nics: int) -> None:
    line = P4D.replace("P4d", platform)
    settings = read_settings([PROVIDER, line], 23)
    network, per_host = infer_network(settings, None, "ampere", True)
    assert (network.value, network.assumed, per_host) == (kind, False, nics)
    assert (network.evidence[0].line, network.evidence[0].source) == (24, "NET/OFI platform line")
    fact = infer_nics(settings, None, per_host, 8)
    assert (fact.value, fact.assumed, fact.evidence[0].line) == (nics, False, 24)


def test_the_platform_line_alone_says_efa() -> None:
    settings = read_settings([P4D])
    assert settings.network is not None and settings.network.value == "efa"
    assert settings.platform == Evidence.at("p4d", "NET/OFI platform line", 1, P4D)


def test_a_family_the_catalogue_does_not_name_keeps_only_the_transport() -> None:
    """p4de is not in the catalogue: efa known, kind and NIC count stay assumed (the GPU generation's)."""
    settings = read_settings([PROVIDER, P4D.replace("P4d", "p4de.24xlarge")])
    network, per_host = infer_network(settings, None, "ampere", True)
    assert (network.value, network.assumed, network.evidence[0].value) == ("efa_v2", True, "efa")
    assert infer_nics(settings, None, per_host, 8).assumed


def test_a_plugin_nic_count_does_not_override_the_instance() -> None:
    """Newer aws-ofi-nccl print '(found 1 nics)' on a p4d: the NICs near one GPU, not the host's 4."""
    found = _INFO + "NET/OFI Selected provider is efa, fabric is efa (found 1 nics)"
    settings = read_settings([found, P4D.replace("P4d", "p4d.24xlarge")])
    assert infer_nics(settings, None, 4, 8).value == 4


def test_the_options_still_win() -> None:
    settings = read_settings([PROVIDER, P4D])
    network, _ = infer_network(settings, "efa_v3", "ampere", True)
    assert network.value == "efa_v3" and network.evidence[0].source == "option --nic"
    assert infer_nics(settings, 2, 4, 8).value == 2


def test_the_platform_gives_no_nic_count_to_a_network_that_is_not_efa() -> None:
    """A p5 host whose NCCL ran over sockets (``Using network Socket``): the instance's 32 EFA NICs are
    not the sockets' NICs, so the platform line settles nothing about a TCP network's NIC count; it does
    for the EFA network it names."""
    line = P4D.replace("P4d", "p5.48xlarge")
    settings = read_settings([line, _INFO + "Using network Socket"], 23)
    socket = infer_nics(settings, None, 1, 8, "tcp_100g")
    assert (socket.value, socket.assumed) == (1, True)
    efa = infer_nics(settings, None, 32, 8, "efa_v2")
    assert (efa.value, efa.assumed) == (32, False)
