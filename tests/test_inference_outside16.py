"""Public nccl-tests logs of out-of-sample probe 16 whose run was inferred wrong.

Each test holds a real excerpt inline (the probe's file number and source in the comment above it)
and asserts what the log, read as the shell and nccl-tests read it, says about the run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from commsim.calibrate.inference_records import RunOptions
from commsim.calibrate.parser_command import LAUNCHED, read_command
from commsim.calibrate.validate import validate_file

# 287: GitHub README "HPC AI Environments" (containers for Cray EX systems with the Slingshot
# interconnect; code index id 24167259383), section "NCCL Tests": the example command, shown after a
# '$> ' prompt, and its output; the wrapper script left the device list empty, so the GPU is not
# printed (the page's nvidia-smi topo -m of the same nodes shows 4 GH200 per node).
# (Rows kept: the first, two middle and the last of 14.)
SLINGSHOT_PROMPT = """\
```
$> cd nccl-tests
$> env NCCL_ALGO=Tree srun --exclusive -c 72 --distribution=*:block --mpi=pmi2 -n 8 --ntasks-per-node=4 --cpu-bind=socket --ntasks-per-socket=1 --sockets-per-node=4 singularity run --nv --bind /projects --bind $TMPDIR --bind $HOME --bind `pwd` --bind /opt/cray/libfabric/1.15.2.0/lib64:/host/lib,/usr:/host/usr /projects/benchmarking/public/sif/pytorch-ngc-hpc-dev-hvd.sif /projects/benchmarking/public/examples/wrapper.sh ./build/all_reduce_perf -b 1M -e 8G -f 2 -n 100 >& out-n8-ppn4.txt
```

#### Example Output

```
# nThread 1 nGpus 1 minBytes 1048576 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 100 agg iters: 1 validation: 1 graph: 0
#
# Using devices
NCCL version 2.20.5+cuda12.4
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144     float     sum      -1    105.9    9.90   17.33      0    105.7    9.92   17.37      0
    67108864      16777216     float     sum      -1   1074.3   62.47  109.32      0   1074.1   62.48  109.34      0
   134217728      33554432     float     sum      -1   1866.5   71.91  125.84      0   1861.1   72.12  126.20      0
  8589934592    2147483648     float     sum      -1    94752   90.66  158.65      0    94730   90.68  158.69      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 103.965
#
```
"""  # noqa: E501


def test_a_command_after_a_dollar_angle_prompt_is_read(tmp_path: Path) -> None:
    """287: the '$> ' prompt was taken for the command's first word, so neither the launcher's
    process count nor NCCL_ALGO=Tree (set by 'env' on the same line) was read: the rank count rested
    on the busbw/algbw ratio alone and the algorithms were NCCL's own choice."""
    path = tmp_path / "slingshot.txt"
    path.write_text(SLINGSHOT_PROMPT)
    result = validate_file(path, options=RunOptions(gpu="GH200"))
    ranks = result.inference.facts["ranks"]
    assert ranks.value == 8
    assert any(e.source == LAUNCHED and e.value == 8 for e in ranks.evidence)
    algorithms = result.inference.facts["algorithms"]
    assert "Tree" in str(algorithms.value) and not algorithms.assumed
    assert "command line" in str(algorithms.evidence[0].source)


def test_a_plain_dollar_prompt_still_reads_the_same(tmp_path: Path) -> None:
    """The '$ ' prompt read before keeps working: the same command after it says the same."""
    path = tmp_path / "slingshot.txt"
    path.write_text(SLINGSHOT_PROMPT.replace("$> ", "$ "))
    result = validate_file(path, options=RunOptions(gpu="GH200"))
    assert any(e.source == LAUNCHED for e in result.inference.facts["ranks"].evidence)
    assert "Tree" in str(result.inference.facts["algorithms"].value)


def test_the_launchers_tasks_per_node_give_the_hosts(tmp_path: Path) -> None:
    """287 lists no device, so with '--gpu GH200' its 8 ranks were spread by the board the GPU ships
    on ('assumed nodes = 8', 'assumed gpus_per_node = 1'), though its srun starts 4 tasks per node
    ('--ntasks-per-node=4') of one GPU each ('nThread 1 nGpus 1'): 2 hosts of 4 ranks, known."""
    path = tmp_path / "slingshot.txt"
    path.write_text(SLINGSHOT_PROMPT)
    facts = validate_file(path, options=RunOptions(gpu="GH200")).inference.facts
    per_node, nodes = facts["gpus_per_node"], facts["nodes"]
    assert (per_node.value, per_node.assumed, nodes.value, nodes.assumed) == (4, False, 2, False)
    assert "processes per host" in per_node.evidence[0].source and per_node.evidence[0].line == 3


@pytest.mark.parametrize(
    ("command", "per_host"),
    [
        ("srun -n 8 --ntasks-per-node=4 ./build/all_reduce_perf", 4),
        ("srun --nodes=4 --ntasks-per-node 8 all_reduce_perf", 8),
        ("mpirun -np 16 -H gpu-53:8,gpu-56:8 --mca pml ucx ./all_reduce_perf -g 1", 8),  # 280's
        ("mpirun -np 2 -H 192.168.100.101:1,192.168.100.102:1 ./all_gather_perf", 1),
        ("mpirun -np 512 --map-by ppr:8:node -hostfile h ./all_reduce_perf", 8),
        ("mpirun --hostfile /workspace/hostfile -npernode 8 ./alltoall_perf", 8),
        ("mpiexec -n 8 -ppn 4 ./all_reduce_perf", 4),
        # not stated: Slurm lays -N 2 -n 8 out itself; 8 processes on 16 slots fill one host first;
        # hosts of unequal slots; a count that is not a number; a per-host option of another launcher
        ("srun -N 2 -n 8 all_reduce_perf", None),
        ("mpirun -np 8 -H a:8,b:8 ./all_reduce_perf", None),
        ("mpirun -np 12 -H a:8,b:4 ./all_reduce_perf", None),
        ("mpirun -npernode $PPN ./all_reduce_perf", None),
        ("mpirun --ntasks-per-node 4 ./all_reduce_perf", None),
    ],
)
def test_processes_per_host_a_launcher_states(command: str, per_host: int | None) -> None:
    parsed = read_command(command, 1)
    assert parsed is not None and parsed.per_host == per_host
