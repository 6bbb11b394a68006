"""Device lines without a host: the GPU is read from them, the hosts are not.

Edited logs drop ``on HOST`` from nccl-tests' ``#  Rank  0 Group  0 Pid N on
HOST device  0 [bus] MODEL`` lines; some note the node after the model
instead. The excerpts are from a GKE A4 (B200) README: one process drives
eight GPUs (``-g 8``, one Pid), and a two-node run annotated ``(node 1)``.
"""

from __future__ import annotations

from pathlib import Path

from commsim.calibrate.parser import parse_nccl_tests

_ROWS = [
    "#       size         count      type   redop    root     time   algbw   busbw",
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)",
    "     8388608       2097152     float     sum      -1    80.32  104.44  182.77",
    "    16777216       4194304     float     sum      -1    110.5  151.81  265.67",
]
_BUS = ["8f", "90", "96", "97", "c4", "c5", "cb", "cc"]
ONE_PROCESS = [
    "# nThread 1 nGpus 8 minBytes 8388608 maxBytes 17179869184 step: 2(factor)",
    "#",
    "# Using devices",
    *[f"#  Rank  {r} Group  0 Pid 221599 device  {r} [0000:{b}:00] NVIDIA B200" for r, b in enumerate(_BUS)],
    "#",
    *_ROWS,
]


def test_device_lines_without_a_host_name_the_gpu_and_no_host() -> None:
    """Lines 4-11 list ranks 0-7: model, device index, Pid and bus are read; the host is ''."""
    log = parse_nccl_tests("\n".join(ONE_PROCESS) + "\n", "75.txt")
    assert log.gpu_model == "NVIDIA B200"
    assert [(d.rank, d.device, d.host, d.pid, d.line) for d in log.devices[:2]] == [
        (0, 0, "", 221599, 4),
        (1, 1, "", 221599, 5),
    ]
    assert log.devices[7].bus_id == "0000:cc:00"
    assert (log.n_ranks, log.hosts, log.nodes, log.devices_complete) == (8, [], 0, False)
    assert log.gpus_per_node is None
    assert (
        "lines 4-11: the '# Rank .. device ..' lines name no host (no 'on HOST'): the GPU is read from "
        "them, the number of hosts and ranks per host are not"
    ) in log.warnings


def test_a_node_noted_after_the_model_is_the_host() -> None:
    """'(node 1)' after the model names the node; the model keeps only 'NVIDIA B200'."""
    lines = [
        "# Using devices (across 2 nodes)",
        "#  Rank  0 Group  0 device  0 [0000:8f:00] NVIDIA B200 (node 0)",
        "#  Rank  1 Group  0 device  0 [0000:8f:00] NVIDIA B200 (node 1)",
        "#",
        *_ROWS,
    ]
    log = parse_nccl_tests("\n".join(lines) + "\n", "76.txt")
    assert [(d.rank, d.host, d.model, d.pid) for d in log.devices] == [
        (0, "node 0", "NVIDIA B200", None),
        (1, "node 1", "NVIDIA B200", None),
    ]
    assert log.hosts == ["node 0", "node 1"]
    assert not any("name no host" in w for w in log.warnings)


def test_a_hostless_device_list_does_not_make_the_hosts_known(tmp_path: Path) -> None:
    """validate: the GPU is B200 from rank 0's line (line 4); nodes are not 'distinct host names'."""
    from commsim.calibrate.validate import validate_file

    path = tmp_path / "run.txt"
    path.write_text("\n".join(ONE_PROCESS) + "\n")
    facts = validate_file(path).inference.facts
    assert (facts["gpu"].value, facts["gpu"].evidence[0].line) == ("B200", 4)
    assert all(e.source != "device list: distinct host names" for e in facts["nodes"].evidence)
