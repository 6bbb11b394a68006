# ruff: noqa: E501  (the logs are quoted as nccl-tests prints them)
"""NCCL_SHM_DISABLE=1 without peer-to-peer: NCCL's network transport between GPUs of a host, not priced.

The log is outside probe 6's log 100 (NVIDIA/nccl-tests issue #182): two A100-PCIE-40GB in a VM
(both on bus 0x03: no peer-to-peer), ``mpirun -x NCCL_SHM_DISABLE=1 ... -x NCCL_IB_HCA=mlx5_0``;
NCCL then joins the two GPUs over its network transport (the IB HCA's loopback), 53-60 us per call
where the model prices host memory at about 10 us. No board explains that, so the verdict names
the setting, never --topology.
"""

from __future__ import annotations

from commsim.calibrate.inference import RunOptions
from commsim.calibrate.parser import parse_nccl_tests
from commsim.calibrate.validate import validate_log

COMMAND = "root@testgpu1:/nccl-tests# mpirun -x NCCL_DEBUG=WARN -x NCCL_IB_HCA=mlx5_0 -x NCCL_NET_GDR_LEVEL=5 -x NCCL_SHM_DISABLE=1 -x NCCL_IB_MERGE_VFS=0 -x NCCL_IB_DISABLE=0 -np 2 --allow-run-as-root -H testgpu1,testgpu2 ./build/all_reduce_perf -b 8 -e 256M -f 2 -g 2\n"
RUN = """# nThread 1 nGpus 2 minBytes 8 maxBytes 268435456 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid   3591 on   testgpu1 device  0 [0x03] NVIDIA A100-PCIE-40GB
#  Rank  1 Group  0 Pid   3591 on   testgpu1 device  1 [0x03] NVIDIA A100-PCIE-40GB
NCCL version 2.19.3+cuda12.3
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
        1024           256     float     sum      -1    57.90    0.02    0.02      0    57.87    0.02    0.02      0
        2048           512     float     sum      -1    57.01    0.04    0.04      0    60.72    0.03    0.03      0
        4096          1024     float     sum      -1    57.33    0.07    0.07      0    56.84    0.07    0.07      0
"""
LOG_100 = COMMAND + RUN


def _validate(text: str, options: RunOptions | None = None):  # type: ignore[no-untyped-def]
    return validate_log(parse_nccl_tests(text), text, options=options)


def test_shm_disabled_with_p2p_off_withholds_the_verdict_naming_the_setting() -> None:
    """--no-p2p (the VM's GPUs share bus 0x03) and NCCL_SHM_DISABLE=1 (mpirun -x, line 1): the
    host's two GPUs talk over the network transport, which the model does not price."""
    validation = _validate(LOG_100, RunOptions(p2p=False))
    fact = validation.inference.facts["host_transport"]
    assert (fact.value, fact.assumed) == (
        "the network transport (not modelled: priced as through host memory)",
        False,
    )
    assert (fact.evidence[0].value, fact.evidence[0].line) == ("1", 1)
    verdict = validation.verdict()
    assert verdict.startswith(
        "cannot judge: NCCL_SHM_DISABLE=1 (mpirun -x (line 1)) with GPU peer-to-peer off leaves the GPUs "
        "of a host only NCCL's network transport (the NIC's loopback or sockets), which the model does "
        "not price: it prices their traffic through host memory; measured busbw at every size it has "
        "(1 KiB - 4 KiB) is "
    )
    assert "--topology" not in verdict


def test_shm_disabled_with_p2p_assumed_names_the_p2p_option() -> None:
    """Without --no-p2p peer-to-peer is assumed on (an A100 PCIe with a stock driver): which transport
    ran depends on it, so the verdict names --p2p/--no-p2p, not the board."""
    validation = _validate(LOG_100)
    assert validation.inference.facts["host_transport"].assumed
    verdict = validation.verdict()
    assert (
        "unless GPU peer-to-peer works between the GPUs of a host (assumed; --p2p/--no-p2p gives it)"
        in verdict
    )
    assert "--topology" not in verdict


def test_shm_left_on_or_peer_to_peer_on_is_priced_as_before() -> None:
    """Without the setting, or with peer-to-peer known on (--p2p), NCCL never needs the network
    transport inside the host: no host_transport fact, and the usual verdict branches."""
    without = COMMAND.replace("-x NCCL_SHM_DISABLE=1 ", "") + RUN
    assert "host_transport" not in _validate(without, RunOptions(p2p=False)).inference.facts
    with_p2p = _validate(LOG_100, RunOptions(p2p=True))
    assert "host_transport" not in with_p2p.inference.facts
    assert "NCCL_SHM_DISABLE" not in with_p2p.verdict()


def test_a_one_host_machine_names_no_nic_kind() -> None:
    """Log 100's modelled machine is one host of two PCIe GPUs: it used to read "0 roce_100g NIC(s)",
    a NIC kind nothing in the run names; now the clause says no NIC is used."""
    description = _validate(LOG_100, RunOptions(p2p=False)).inference.topology.description
    assert "1 socket(s) (upi), no NIC (no network used). Datasheet defaults" in description
    assert "roce" not in description
