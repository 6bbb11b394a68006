# ruff: noqa: E501  (the logs are quoted as nccl-tests prints them)
"""A verdict drawn only from latency-bound sizes talks about latency, not the machine's bandwidth figures.

Outside probe 6's log 97 (dstackai/dstack PR #3961): two AWS p6-b200 hosts (8 B200 and 8 EFA v4
NICs each), all_reduce from 8 B to 256 B only. The model's time there is its per-call floor plus
EFA's per-step overhead, derived from NCCL 2.4.8/2.7.8-era aws-ofi-nccl logs; the run is about
2.5x faster. The verdict used to say "the model's figures for this machine are too low" as if
bandwidth were compared.
"""

from __future__ import annotations

from commsim.calibrate.inference import RunOptions
from commsim.calibrate.parser import parse_nccl_tests
from commsim.calibrate.validate import validate_log

B200_EFA_97 = """#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)

           8             2     float     sum      -1    50.58    0.00    0.00       0    54.46    0.00    0.00       0
          16             4     float     sum      -1    54.55    0.00    0.00       0    54.52    0.00    0.00       0
          32             8     float     sum      -1    54.59    0.00    0.00       0    55.34    0.00    0.00       0
          64            16     float     sum      -1    55.60    0.00    0.00       0    55.51    0.00    0.00       0
         128            32     float     sum      -1    56.27    0.00    0.00       0    56.26    0.00    0.00       0
         256            64     float     sum      -1    57.14    0.00    0.01       0    56.54    0.00    0.01       0
"""
P6_OPTIONS = RunOptions(gpu="B200", gpus=16, nodes=2, gpus_per_node=8, nic="efa_v4", nics_per_node=8)

A100_PCIE_100 = """# nThread 1 nGpus 2 minBytes 8 maxBytes 268435456 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid   3591 on   testgpu1 device  0 [0x03] NVIDIA A100-PCIE-40GB
#  Rank  1 Group  0 Pid   3591 on   testgpu1 device  1 [0x03] NVIDIA A100-PCIE-40GB
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
        1024           256     float     sum      -1    57.90    0.02    0.02      0    57.87    0.02    0.02      0
        2048           512     float     sum      -1    57.01    0.04    0.04      0    60.72    0.03    0.03      0
        4096          1024     float     sum      -1    57.33    0.07    0.07      0    56.84    0.07    0.07      0
"""
"""Log 100's rows (two A100 PCIe of one host, IB loopback because SHM was disabled) without its
command: priced with peer-to-peer on, the run is several times slower than the model at 1-4 KiB."""


def _verdict(text: str, options: RunOptions) -> str:
    log = parse_nccl_tests(text, n_ranks=options.gpus)
    return validate_log(log, text, options=options, collective="all_reduce").verdict()


def test_a_faster_latency_only_run_blames_the_models_latency_and_names_the_efa_note() -> None:
    """Every compared size (the three largest: 64-256 B) is below 64 KiB, so the verdict speaks of
    latency and names the EFA per-step figure's origin as the likely cause. Log 97 shows no
    aws-ofi-nccl protocol: priced with p6's default (RDMA, assumed), its latency-only verdict is
    withheld; with the plugin's SENDRECV protocol forced (``OFI_NCCL_PROTOCOL=SENDRECV``, as a user
    could) the model prices it with the SENDRECV figure, and the run is 2.5x faster than that."""
    assumed = _verdict(B200_EFA_97, P6_OPTIONS)
    assert assumed.startswith("cannot judge: the machine is partly assumed (net_protocol (--net-protocol))")
    verdict = _verdict("export OFI_NCCL_PROTOCOL=SENDRECV\n" + B200_EFA_97, P6_OPTIONS)
    assert verdict.startswith("latency 2.5x lower than modelled")
    assert (
        "x lower than modelled at its largest sizes (up to 256 B), where every size compared is below "
        "64 KiB: the time there is the per-call floor and per-step overheads, not bandwidth, and the "
        "model's are too high for this machine; the likely cause: the efa transport's overhead per "
        "network step ("
    ) in verdict
    assert "(runs of NCCL 2.4.8 and 2.7.8 with aws-ofi-nccl's SENDRECV protocol" in verdict
    assert "figures for this machine are too low" not in verdict


def test_a_slower_latency_only_run_says_latency_higher_than_modelled() -> None:
    """One host given as two A100 PCIe on PCIe with peer-to-peer, no network: no transport note; the
    below verdict keeps its causes part."""
    from commsim.topology.machines import pcie_box

    machine = pcie_box(gpus=2, pcie="pcie4_x16", p2p=True, gpu_model="A100 40GB PCIe")
    verdict = _verdict(A100_PCIE_100, RunOptions(topology=machine))
    assert verdict.startswith("latency ")
    assert (
        "x higher than modelled at every size it has (1 KiB - 4 KiB), where every size compared is below "
        "64 KiB: the time there is the per-call floor and per-step overheads, not bandwidth, and the "
        "model's are too low for this machine; the log shows no cause: run it again with NCCL_DEBUG=INFO"
    ) in verdict
    assert "below what this machine should reach" not in verdict
