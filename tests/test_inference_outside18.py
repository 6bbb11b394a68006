"""Public nccl-tests logs of out-of-sample probe 18 whose run was inferred wrong.

Each test holds a real excerpt inline (the probe's file number and source in the comment above it)
and asserts what the log, read as the shell and nccl-tests read it, says about the run.
"""

from __future__ import annotations

from pathlib import Path

from commsim.calibrate.parser_command import read_command
from commsim.calibrate.validate import validate_file

# 300: github.com/aws/aws-ofi-nccl/issues/65, comment by zarzen 2021-05-12: the launch command as
# the author pasted it (its host list and process count left as shell variables) and the head of
# "the full log" on two p4d instances; the device list is cut after rank 8 by the excerpt.
# (Rows kept: 2 of 7; device lines kept: ranks 0, 7 and 8.)
UNEXPANDED_HOSTS = """\
/opt/amazon/openmpi/bin/mpirun \\
     -n ${NUM_PROCS} -H ${HOSTS} \\
     -x FI_EFA_USE_DEVICE_RDMA=1 -x RDMAV_FORK_SAFE=1 --mca pml ^cm \\
     -x NCCL_DEBUG=INFO \\
     -x FI_PROVIDER="efa" --mca btl tcp,self --mca btl_tcp_if_exclude lo,docker0 --bind-to none \\
     $HOME/nccl-tests/build/all_reduce_perf -b 32M -e 100M -i 2097152 -g 1 -c 1 -n 20
# nThread 1 nGpus 1 minBytes 33554432 maxBytes 104857600 step: 2097152(bytes) warmup iters: 5 iters: 20 validation: 1
#
# Using devices
#   Rank  0 Pid   3685 on ip-172-31-13-103 device  0 [0x10] A100-SXM4-40GB
#   Rank  7 Pid   3695 on ip-172-31-13-103 device  7 [0xa0] A100-SXM4-40GB
#   Rank  8 Pid   3910 on ip-172-31-6-104 device  0 [0x10] A100-SXM4-40GB
ip-172-31-13-103:3695:3748 [7] NCCL INFO comm 0x7fd9f0000dc0 rank 7 nranks 16 cudaDev 7 busId a01d0 - Init COMPLETE
#
#                                                     out-of-place                       in-place
#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
    33554432       8388608   float     sum   1965.1   17.08   32.02  5e-07   1962.7   17.10   32.06  5e-07
    46137344      11534336   float     sum   2549.8   18.09   33.93  5e-07   2624.0   17.58   32.97  5e-07
"""  # noqa: E501


def test_an_unexpanded_host_variable_is_no_host_list() -> None:
    """300: '-H ${HOSTS}' names no host: the shell would expand it to the author's list, which the
    page does not show. Read as a list of one host with one slot, it said 1 process per host."""
    command = read_command("mpirun -n ${NUM_PROCS} -H ${HOSTS} ./all_reduce_perf -g 1", None)
    assert command is not None
    assert command.per_host is None
    written = read_command("mpirun -np 16 -H a:8,b:8 ./all_reduce_perf -g 1", None)
    assert written is not None and written.per_host == 8  # a written list is still read


def test_the_cut_device_list_gives_the_hosts_not_the_launcher(tmp_path: Path) -> None:
    """300: with '-H ${HOSTS}' read as one slot per host, the 16 ranks were modelled as 16 hosts of
    1 GPU ('known nodes = 16'), though the device list shows device 7 on the first host; it is 2
    hosts of 8 (device indices 0-7 on a board of 8)."""
    path = tmp_path / "p4d.txt"
    path.write_text(UNEXPANDED_HOSTS)
    facts = validate_file(path).inference.facts
    assert facts["ranks"].value == 16
    assert facts["gpus_per_node"].value == 8
    assert facts["nodes"].value == 2


def test_fi_provider_efa_asks_for_efa(tmp_path: Path) -> None:
    """300 sets -x FI_PROVIDER="efa" (libfabric's EFA provider, which NCCL uses through aws-ofi-nccl)
    but prints no aws-ofi-nccl line: the network was assumed to be 8 InfiniBand NICs, as for any
    NVLink board. The setting asks for EFA: efa_v2 for an A100 (p4d), 4 per host, still assumed
    (the NIC's speed is not printed), with the setting's line cited."""
    path = tmp_path / "p4d.txt"
    path.write_text(UNEXPANDED_HOSTS)
    facts = validate_file(path).inference.facts
    network = facts["network"]
    assert (network.value, network.assumed) == ("efa_v2", True)
    assert network.evidence[0].line == 5 and "FI_PROVIDER=efa" in network.evidence[0].source
    assert facts["nics_per_node"].value == 4
