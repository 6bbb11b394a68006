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


def test_srun_tasks_per_node_beside_ntasks_is_only_a_maximum(tmp_path: Path) -> None:
    """287's srun gives '-n 8 --ntasks-per-node=4' and no '-N'. srun(1): with --ntasks, "the
    --ntasks option will take precedence and the --ntasks-per-node will be treated as a maximum
    count of tasks per node", so inside an allocation of 4 nodes it runs 2 per node. The layout
    was first read as known 2 x 4 (review); it stays assumed, naming the options (the page's
    topology, 4 GH200 per node, is given as --nodes 2 --gpus-per-node 4 in the validation table)."""
    path = tmp_path / "slingshot.txt"
    path.write_text(SLINGSHOT_PROMPT)
    facts = validate_file(path, options=RunOptions(gpu="GH200")).inference.facts
    assert facts["gpus_per_node"].assumed and facts["nodes"].assumed
    given = RunOptions(gpu="GH200", nodes=2, gpus_per_node=4)
    facts = validate_file(path, options=given).inference.facts
    assert (facts["nodes"].value, facts["gpus_per_node"].value) == (2, 4)


@pytest.mark.parametrize(
    ("command", "per_host"),
    [
        ("srun -N 2 -n 8 --ntasks-per-node=4 ./build/all_reduce_perf", 4),
        ("srun --nodes=4 --ntasks-per-node 8 all_reduce_perf", 8),
        ("mpirun -np 16 -H gpu-53:8,gpu-56:8 --mca pml ucx ./all_reduce_perf -g 1", 8),  # 280's
        ("mpirun -np 2 -H 192.168.100.101:1,192.168.100.102:1 ./all_gather_perf", 1),
        ("mpirun -np 512 --map-by ppr:8:node -hostfile h ./all_reduce_perf", 8),
        ("mpirun --hostfile /workspace/hostfile -npernode 8 ./alltoall_perf", 8),
        ("mpiexec -n 8 -ppn 4 ./all_reduce_perf", 4),
        ("mpirun -np 8 -N 4 ./all_reduce_perf", 4),  # Open MPI's -N: processes per node
        # a host list the count does not fill says nothing, so it does not veto a stated -ppn/-npernode
        ("mpirun -n 8 -ppn 4 -hosts node1,node2 ./all_reduce_perf", 4),
        ("mpirun -np 8 -npernode 4 -H a:8,b:8 ./all_reduce_perf", 4),
        # not stated: Slurm lays -N 2 -n 8 out itself, and with -n, --ntasks-per-node is a maximum
        # (srun(1)) unless -N times it is -n; a host list the count does not fill; hosts of unequal
        # slots; a count that is not a number (nor a non-ASCII digit); another launcher's option
        ("srun -N 2 -n 8 all_reduce_perf", None),
        ("srun -n 8 --ntasks-per-node=4 ./build/all_reduce_perf", None),
        ("srun -N 2 -n 8 --ntasks-per-node=8 ./build/all_reduce_perf", None),
        ("mpirun -np 8 -npernode \u00b2 ./all_reduce_perf", None),
        ("mpirun -np \u00b2 ./all_reduce_perf", None),
        ("mpirun -np 8 -H a:8,b:8 ./all_reduce_perf", None),
        ("mpirun -np 12 -H a:8,b:4 ./all_reduce_perf", None),
        ("mpirun -npernode $PPN ./all_reduce_perf", None),
        ("mpirun --ntasks-per-node 4 ./all_reduce_perf", None),
    ],
)
def test_processes_per_host_a_launcher_states(command: str, per_host: int | None) -> None:
    parsed = read_command(command, 1)
    assert parsed is not None and parsed.per_host == per_host
