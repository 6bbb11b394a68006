"""A host that lists NICs of two kinds: the kind, count and speed of those NCCL's channels use.

Lines from nccl-tests issue 350 (two A100 PCIe hosts, one GPU each, NCCL
2.16.5): NCCL lists a RoCE port and an InfiniBand HCA, prints 25 GB/s for
the HCA (``NET[25.0] - NET/1``: 200 Gb/s, HDR) and 3.1 GB/s for the RoCE
port, and every channel runs ``via NET/IB/1/GDRDMA``.
"""

from __future__ import annotations

from commsim.calibrate.infer_network import infer_network
from commsim.calibrate.infer_nics import infer_nics
from commsim.calibrate.settings import read_settings

_INFO = "n013:101855:101885 [0] NCCL INFO "
LOG = [
    _INFO + "NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_2:1/IB [RO]; OOB ibp209s0f0:10.128.3.13<0>",
    _INFO + "Using network IB",
    _INFO + "              + NET[25.0] - NET/1 (7a852d0003f6ceb8/1/25.000000)",
    _INFO + "             + NET[3.1] - NET/0 (b8e2ce0003f6ceb8/1/3.125000)",
    _INFO + "Channel 00/0 : 1[81000] -> 0[81000] [receive] via NET/IB/1/GDRDMA",
    _INFO + "Channel 01/0 : 0[81000] -> 1[81000] [send] via NET/IB/1/GDRDMA",
]


def test_the_nic_the_channels_use_sets_kind_count_and_speed() -> None:
    """Lines 10-15: channels use device 1 only (line 14), an IB HCA at 25 GB/s (line 12)."""
    settings = read_settings(LOG, 10)
    assert settings.network is not None and settings.nics is not None and settings.nic_speed is not None
    assert (settings.network.value, settings.network.line) == ("ib", 14)
    assert (settings.nics.value, settings.nics.line) == (1, 14)
    assert (settings.nic_speed.value, settings.nic_speed.line) == (25.0, 12)
    network, per_host = infer_network(settings, None, "ampere", False)
    assert (network.value, network.assumed, per_host) == ("ib_hdr", False, None)
    assert network.note == "NCCL prints 25 GB/s for the NIC its channels use: ib_hdr"
    nics = infer_nics(settings, None, per_host, 1)
    assert (nics.value, nics.assumed) == (1, False)


def test_channels_on_the_roce_port_make_it_roce() -> None:
    """The same listing with the channels on device 0: RoCE, one NIC, 3.1 GB/s: 25 Gb/s Ethernet
    (roce_25g, 3.125 GB/s, within 1 %)."""
    lines = [text.replace("NET/IB/1/", "NET/IB/0/") for text in LOG]
    settings = read_settings(lines)
    assert settings.network is not None and settings.network.value == "roce"
    assert settings.nic_speed is not None and settings.nic_speed.value == 3.1
    network, _ = infer_network(settings, None, "ampere", False)
    assert (network.value, network.assumed) == ("roce_25g", False)


def test_one_kind_listed_keeps_the_device_list() -> None:
    """Two IB HCAs listed, a log of one rank's channels on device 1: the host still has 2 NICs."""
    lines = [LOG[0].replace("/RoCE", "/IB"), *LOG[1:]]
    settings = read_settings(lines)
    assert settings.nics is not None and (settings.nics.value, settings.nics.source) == (2, "NET device list")
    assert settings.nic_speed is None


def test_a_turing_gpu_on_efa_is_a_g4dn_with_one_first_generation_efa() -> None:
    settings = read_settings(["x:1:1 [0] NCCL INFO NET/OFI Selected Provider is efa (found 1 nics)"])
    network, per_host = infer_network(settings, None, "turing", False)
    assert (network.value, network.assumed, per_host) == ("efa_v1", True, 1)
