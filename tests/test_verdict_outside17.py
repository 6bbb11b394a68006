"""Verdict evidence found by probe 17's public logs (tests/data/outside 290-299)."""

from __future__ import annotations

from commsim.calibrate.verdict_evidence import gdr_off

RECEIVE = (
    "MOC-R4PCC04U37:574577:574608 [0] NCCL INFO Channel 00/1 : 1[0] -> 0[0] [receive] via NET/IB/1/Shared"
)
SEND = "MOC-R4PCC04U37:574577:574608 [0] NCCL INFO Channel 00/1 : 0[0] -> 1[0] [send] via NET/IB/1/Shared"


def test_network_channels_without_gdrdma_are_evidence_of_no_gpudirect() -> None:
    """Probe 17's 291 (CCI-MOC/roce-testing sendrecv_roce_1gpu.log, 2 x H100 over one RoCE NIC, NCCL
    2.26.2) prints no 'GDR 0' summary, only channel lines 'via NET/IB/1/Shared'; NCCL's net transport
    (src/transport/net.cc) prints 'via NET/<net>/<dev>/GDRDMA' when it uses GPUDirect RDMA, so no
    '/GDRDMA' on any InfiniBand/RoCE channel means staging through host memory (its busbw is 13.96 GB/s
    on a 400 Gb/s NIC, as 201's all_reduce on the same hosts, whose 'GDR 0' line is read)."""
    lines = [(52, RECEIVE), (54, SEND)]
    found = gdr_off(lines)
    assert found is not None
    assert (
        found.line == 52 and found.text is not None and found.text.endswith("[receive] via NET/IB/1/Shared")
    )


def test_one_channel_with_gdrdma_is_no_such_evidence() -> None:
    """One channel 'via NET/IB/1/GDRDMA/Shared' among them: GPUDirect is in use on some path, so the
    log is not read as running without it."""
    with_gdr = SEND.replace("NET/IB/1/Shared", "NET/IB/1/GDRDMA/Shared")
    assert gdr_off([(52, RECEIVE), (54, with_gdr)]) is None


def test_socket_channels_are_no_such_evidence() -> None:
    """'via NET/Socket/0' never uses GPUDirect RDMA; a TCP run is not reported as missing it."""
    assert gdr_off([(40, RECEIVE.replace("NET/IB/1/Shared", "NET/Socket/0"))]) is None


def test_nccls_gdr_1_summary_outweighs_its_channel_lines() -> None:
    """NCCL 2.19 on sums up its rings in 'Connected all rings, use ring PXN 0 GDR 1': with that line
    the channel lines without '/GDRDMA' are not read as running without GPUDirect RDMA."""
    summary = "MOC-R4PCC04U37:574691:574719 [0] NCCL INFO Connected all rings, use ring PXN 0 GDR 1"
    assert gdr_off([(52, RECEIVE), (54, SEND), (55, summary)]) is None


def test_gdrdma_pci_and_proxied_channels_are_read() -> None:
    """Review 28: NCCL prints '/GDRDMA(PCI)' where GPUDirect RDMA goes through PCIe (Grace hosts)
    and 'NET/IB/0(5)' for a send proxied through another GPU's NIC (PXN); neither was read as an
    InfiniBand channel, so a '/GDRDMA(PCI)' receive beside a plain send was reported as no GPUDirect."""
    recv = "h:1:2 [0] NCCL INFO Channel 00/1 : 1[0] -> 0[0] [receive] via NET/IB/0/GDRDMA(PCI)"
    send = "h:1:2 [0] NCCL INFO Channel 00/1 : 0[0] -> 1[0] [send] via NET/IB/0"
    assert gdr_off([(10, recv), (11, send)]) is None
    proxied = "h:1:2 [0] NCCL INFO Channel 01/1 : 0[0] -> 1[0] [send] via NET/IB/0(5)"
    found = gdr_off([(12, proxied), (13, send)])
    assert found is not None and found.line == 12
