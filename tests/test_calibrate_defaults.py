"""The NCCL model's fitted defaults, derived again from the development logs (commsim.calibrate.defaults).

A default fitted on logs must be reproducible from them, and a leave-one-machine-out study must be
able to take a machine's logs away from it.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from commsim.calibrate.defaults import (
    ONE_GPU_LOGS,
    TRANSPORT_OVERHEAD_LOGS,
    host_issue_per_gpu_s,
    transport_overhead_s,
    without_machine,
)
from commsim.calibrate.inference import RunOptions
from commsim.calibrate.validate import Validation, validate_file
from commsim.nccl.params import NcclParams

DATA = Path(__file__).parent / "data" / "nccl-tests"

SINGLE_PROCESS_MACHINES = [
    ["A100-SXM4-80GB-HGX-NVSwitch_all_reduce_8gpu_1.txt"],
    ["H100-SXM-HGX_all_gather_8gpu_1.txt", "H100-SXM-HGX_reduce_scatter_8gpu_1.txt"],
    [
        "H100-SXM5-4GPU-NVLink_all_gather_4gpu_1.txt",
        "H100-SXM5-4GPU-NVLink_all_reduce_4gpu_1.txt",
        "H100-SXM5-4GPU-NVLink_reduce_scatter_4gpu_1.txt",
    ],
    [
        "RTX2080Ti-PCIe-PIX-noP2P_all_gather_2gpu_1.txt",
        "RTX2080Ti-PCIe-PIX-noP2P_all_reduce_2gpu_1.txt",
        "RTX2080Ti-PCIe-PIX-noP2P_broadcast_2gpu_1.txt",
    ],
    [
        "RTX4090-PCIe-P2Punlocked-8NUMA_all_reduce_8gpu_1.txt",
        "RTX4090-PCIe-noP2P-8NUMA_all_reduce_8gpu_1.txt",
    ],
    ["V100-PCIe-32GB-noNVLink_all_reduce_4gpu_2.txt"],
    ["V100-SXM2-hybridcubemesh_all_reduce_8gpu_1.txt"],
]
"""The 13 development logs run with ``-g 2`` to ``-g 8`` in one process, by machine (7 machines)."""


@pytest.fixture(scope="module")
def machines() -> list[list[Validation]]:
    return [[validate_file(DATA / name) for name in logs] for logs in SINGLE_PROCESS_MACHINES]


def test_launch_s_is_the_median_host_issue_time_of_seven_machines(machines: list[list[Validation]]) -> None:
    """``launch_s`` (4.9 us) is derived, not chosen: in each -g N log the sizes up to 1 KiB take
    N x the host's issue time; per-machine medians of time / N are 4.0 (V100 PCIe), 4.2 (H100 4-GPU),
    4.4 (H100 HGX), 4.9 (A100), 5.2 (RTX 4090), 5.7 (RTX 2080 Ti) and 6.1 us (V100 SXM2): median 4.9."""
    assert all(v.inference.gpus_per_thread > 1 for logs in machines for v in logs)
    derived = host_issue_per_gpu_s(machines)
    assert derived is not None
    assert derived == pytest.approx(NcclParams().launch_s, abs=0.05e-6)
    assert 4.0e-6 < derived < 6.1e-6


def test_leaving_a_machine_out_moves_launch_s_by_little(machines: list[list[Validation]]) -> None:
    """Without any one of the seven machines, the median of the other six per-machine values stays
    within 0.3 us of the default (the range is 4.65-5.06 us)."""
    for k in range(len(machines)):
        value = host_issue_per_gpu_s(machines[:k] + machines[k + 1 :])
        assert value is not None and abs(value - NcclParams().launch_s) < 0.3e-6


def test_logs_without_a_single_process_run_derive_nothing() -> None:
    """A multi-process run (-g 1) says nothing about the host's issue time: no value, and the
    defaults keep theirs."""
    p3dn = validate_file(DATA / "V100-SXM2-p3dn_all_reduce_16gpu_2node-EFA100_1.txt")
    assert p3dn.inference.gpus_per_thread == 1
    assert host_issue_per_gpu_s([[p3dn]]) is None
    assert without_machine([], [[p3dn]]).launch_s == NcclParams().launch_s


def test_a_machines_own_constants_fall_back_without_its_logs(machines: list[list[Validation]]) -> None:
    """Without the one-GPU H100 logs: no kernel cost (0), a one-rank call costs one host issue
    (launch_s derived from the other machines), and a copy runs at half the memory bandwidth (each
    byte read and written once). Without the A3 Mega log TCPXO runs at the Ethernet family's 0.70 and,
    no other machine using TCPXO, has no step overhead. Everything else keeps its default."""
    params = without_machine((*ONE_GPU_LOGS, "nccl_info_all_reduce_1gpu.txt"), machines)
    launch = host_issue_per_gpu_s(machines)
    assert params.kernel_s == 0.0 and params.local_copy_efficiency == 0.5
    assert params.one_rank_s == launch == params.launch_s
    tcpxo = without_machine(TRANSPORT_OVERHEAD_LOGS["tcpxo"], machines)
    assert tcpxo.network_efficiency("tcpxo_200g", "tcpxo", "ethernet") == 0.70
    assert tcpxo.transport_latency("tcpxo") == 0.0 and tcpxo.kernel_s == NcclParams().kernel_s
    assert NcclParams().network_efficiency("tcpxo_200g", "tcpxo", "ethernet") == 0.90


_TRANSPORT_OPTIONS = {
    "V100-SXM2-p3dn_all_reduce_16gpu_2node-EFA100_1.txt": RunOptions(nic="efa_v1", nics_per_node=1),
    "A100-SXM4-p4d_all_reduce_16gpu_2node-EFA400_1.txt": RunOptions(
        nic="efa_v2", nics_per_node=4, algorithms=("ring",)
    ),
    "H100-SXM-GCP-A3Mega_all_reduce_16gpu_2node-TCPXO-8x200G_1.txt": RunOptions(
        nic="tcpxo_200g", nics_per_node=8
    ),
}
"""The NICs the data README states for the logs the transports' overheads are derived from (as
``tools/validation_table.py`` gives them; the p4d run forced NCCL_ALGO=ring on its command line)."""


def _transport_logs(transport: str, params: NcclParams | None = None) -> list[list[Validation]]:
    """The development logs a transport's default overhead is derived from, one machine each."""
    names = TRANSPORT_OVERHEAD_LOGS[transport]
    return [[validate_file(DATA / n, options=_TRANSPORT_OPTIONS[n], params=params)] for n in names]


def test_transport_overheads_are_derived_from_every_machine_that_measures_them() -> None:
    """EFA's 37.8 us per network step is the median of two machines' values, each the median over its
    sizes up to 1 KiB of the overhead that makes the model's time the measured one (2 network steps per
    call): 2 x p3dn (EFA v1) 32.2 us, 2 x p4d (EFA v2) 43.3 us. TCPXO's 29.1 us is one machine's
    (2 x a3-megagpu-8g)."""
    efa = _transport_logs("efa")
    p3dn, p4d = (transport_overhead_s([m], "efa") for m in efa)
    assert p3dn is not None and p4d is not None
    assert 31e-6 < p3dn < 33e-6 and 42e-6 < p4d < 44e-6
    assert transport_overhead_s(efa, "efa") == pytest.approx((p3dn + p4d) / 2)
    assert NcclParams().transport_latency("efa") == pytest.approx((p3dn + p4d) / 2, abs=0.1e-6)
    tcpxo = transport_overhead_s(_transport_logs("tcpxo"), "tcpxo")
    assert tcpxo is not None and NcclParams().transport_latency("tcpxo") == pytest.approx(tcpxo, abs=0.1e-6)


def test_leaving_an_efa_machine_out_derives_its_overhead_from_the_other() -> None:
    """Without one EFA machine's log, the overhead is the other machine's (32.2 or 43.3 us), and the
    machine left out is then predicted at its sizes up to 1 KiB within a median 20 % (its own figure
    differs by 11 us per step, 2 steps, on calls of 137-160 us); with no overhead at all (no other EFA
    machine) the model misses every one of them by more than 35 %."""
    efa = _transport_logs("efa")
    for held, other in ((0, 1), (1, 0)):
        name = TRANSPORT_OVERHEAD_LOGS["efa"][held]
        params = without_machine([name], [efa[other]])
        assert params.transport_latency("efa") == pytest.approx(transport_overhead_s([efa[other]], "efa"))
        again = validate_file(DATA / name, options=_TRANSPORT_OPTIONS[name], params=params)
        small = [abs(r.error) for r in again.rows if r.nbytes <= 1024]
        assert len(small) == 8 and statistics.median(small) < 0.20
        alone = without_machine([name], [])
        assert alone.transport_latency("efa") == 0.0
        bare = validate_file(DATA / name, options=_TRANSPORT_OPTIONS[name], params=alone)
        assert min(abs(r.error) for r in bare.rows if r.nbytes <= 1024) > 0.35


def test_validate_says_what_a_transports_latency_rests_on() -> None:
    """A socket run's small sizes rest on NCCL's table and the links alone, which fits bare-metal hosts
    but not a virtualised cloud network (70-80 us more per step on the g5.2xlarge containers): validate
    says so in its warnings, with the figure; over EFA the overhead is derived from two machines'
    logs (38 us, p3dn and p4d, NCCL 2.4.8 and 2.7.8 with aws-ofi-nccl's SENDRECV protocol), which it
    says too;
    over RoCE no overhead is known and NCCL's InfiniBand
    table stands in, which it says too; over InfiniBand, NCCL's own table applies and nothing is said;
    a calibrated overhead is the machine's own, so nothing is said either."""
    from commsim.calibrate.inference import RunOptions

    a10g = validate_file(
        DATA / "A10G-AWS-g5.2xlarge_all_reduce_2gpu_2node-TCP-socket_1.txt",
        options=RunOptions(nic="tcp_10g", nics_per_node=1),
    )
    (note,) = a10g.notes()
    assert note.startswith("no overhead per network step is known for the socket transport")
    assert "fits bare-metal hosts" in note and "70-80 us more per step" in note
    assert note in a10g.to_json()["warnings"]
    p3dn = DATA / "V100-SXM2-p3dn_all_reduce_16gpu_2node-EFA100_1.txt"
    (efa,) = validate_file(p3dn, options=RunOptions(nic="efa_v1", nics_per_node=1)).notes()
    derived = "efa transport's overhead per network step (38 us) is derived from the logs of 2 development"
    assert (
        derived in efa and "NCCL 2.4.8 and 2.7.8" in efa and "SENDRECV protocol, the only one before" in efa
    )
    roce = validate_file(p3dn, options=RunOptions(nic="roce_100g", nics_per_node=1))
    assert roce.notes() == [
        "no overhead per network step is known for the roce transport: the model prices its network "
        "steps with NCCL's own latency table, made for InfiniBand; sizes below 64 KiB rest on it; "
        "'commsim calibrate' on this machine's logs fits a latency scale for it"
    ]
    assert validate_file(p3dn, options=RunOptions(nic="ib_hdr", nics_per_node=1)).notes() == []
    own = NcclParams(transport_latency_s={"efa": 40e-6})
    assert validate_file(p3dn, options=RunOptions(nic="efa_v1", nics_per_node=1), params=own).notes() == []


def test_validate_says_when_small_sizes_rest_on_the_default_host_issue_time() -> None:
    """A -g 8 run's small sizes take 8 x launch_s; the shipped 4.9 us is other hosts' median, which
    validate says; a -g 1 run (GPU-bound at small sizes) and a calibrated launch_s say nothing."""
    from commsim.calibrate.defaults import host_note

    hgx = validate_file(DATA / "H100-SXM-HGX_all_gather_8gpu_1.txt")
    assert hgx.inference.gpus_per_thread == 8
    notes = [n for n in hgx.notes() if "-g 8" in n]
    assert notes == [
        "one thread drives 8 GPUs (-g 8), so small sizes take 8 x the host's issue time per call: "
        "4.9 us, the median of 7 development machines' hosts (4.0-6.1 us), not this host's; "
        "'commsim calibrate' on this machine's logs fits it (launch_s)"
    ]
    a100 = validate_file(DATA / "A100-SXM4-80GB-HGX-NVSwitch_all_reduce_8gpu_2.txt")
    assert a100.inference.gpus_per_thread == 1 and a100.notes() == []
    assert host_note(8, 8, NcclParams(launch_s=3.0e-6)) is None
    assert host_note(8, 1, NcclParams()) is None


def test_a_one_gpu_run_of_another_gpu_says_its_constants_are_an_h100s() -> None:
    """The one-rank constants (6.25 us per call, copies at 0.449 of the memory bandwidth) were
    measured on one H100 SXM: said for any other GPU, not for an H100 SXM, a multi-rank run or
    calibrated constants."""
    from commsim.calibrate.defaults import one_gpu_note

    assert one_gpu_note("A100 SXM4 80GB", 1, NcclParams()) == (
        "a one-GPU call is priced with constants measured on one H100 SXM (the host's 6.25 us per "
        "call, copies at 0.449 of the memory bandwidth), not on this GPU"
    )
    assert one_gpu_note("H100 SXM5 80GB", 1, NcclParams()) is None
    assert one_gpu_note("A100 SXM4 80GB", 2, NcclParams()) is None
    assert one_gpu_note("A100 SXM4 80GB", 1, NcclParams(local_copy_efficiency=0.4)) is None
    h100 = validate_file(DATA.parent / "h100-1gpu" / "all_reduce_1gpu.txt")
    assert h100.notes() == []
