"""Tests of the verdict (commsim.calibrate.verdict): every branch, every cause, from small logs.

The logs are written here as nccl-tests prints them (modern format, one
rank per GPU), with NCCL INFO lines where a test needs them. Their bus
bandwidths are chosen far from what the machines reach, from datasheets and
the development logs, never from the model's output:

* 8x A100 SXM4 on NVSwitch: 12 NVLink3 links of 25 GB/s = 300 GB/s per
  direction per GPU; real runs reach ~230 GB/s busbw (README of the
  development data). 60 GB/s is 4x below, 500 GB/s above what NVLink3 can
  carry (only a model that is too low would not call it so).
* 2 hosts x 8x H100 SXM, 8 NDR NICs of 400 Gb/s per host (50 GB/s each,
  400 GB/s per host): a normal run reaches ~470 GB/s busbw (nccl-tests issue
  #309); 100 GB/s is far below.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from commsim.calibrate.inference import RunOptions
from commsim.calibrate.parser import parse_nccl_tests
from commsim.calibrate.validate import Validation, validate_log
from commsim.calibrate.verdict import (
    ABOVE,
    BELOW,
    IN_PLACE_LIMIT,
    NON_MONOTONE_LIMIT,
    Verdict,
    band,
    judge,
)
from commsim.calibrate.verdict_evidence import (
    coll_channels,
    far_nic_gpus,
    gdr_refused,
    nic_speeds,
    speed_guessed,
    tool_lines,
    transports,
)
from commsim.topology import get_topology

SIZES = [2**k for k in range(20, 31)]  # 1 MiB to 1 GiB
A100 = "NVIDIA A100-SXM4-80GB"
H100 = "NVIDIA H100 80GB HBM3"
KNOWN_NETWORK = RunOptions(nic="ib_ndr", nics_per_node=8)


def _time_text(us: float) -> str:
    return f"{us:.2f}" if us < 1e4 else f"{us:.0f}"


def _row(nbytes: int, oop_us: float, ip_us: float, ranks: int) -> str:
    factor = 2 * (ranks - 1) / ranks  # all-reduce busbw / algbw
    cells = []
    for us in (oop_us, ip_us):
        shown = _time_text(us)
        algbw = nbytes / float(shown) / 1e3
        cells.append(f"{shown:>8} {algbw:7.2f} {algbw * factor:7.2f}      0")
    return f"{nbytes:>12} {nbytes // 4:>13}     float     sum      -1 " + " ".join(cells)


def nccl_log(
    *,
    gpu: str = A100,
    hosts: int = 1,
    per_host: int = 8,
    busbw_GBps: float = 230.0,
    info: tuple[str, ...] = (),
    slower: dict[int, float] | None = None,
    in_place: float = 1.0,
    prelude: tuple[str, ...] = ("$ mpirun -np 8 ./build/all_reduce_perf -b 1M -e 1G -f 2 -g 1",),
) -> str:
    """An all_reduce_perf log: time = 20 us + size x 2(n-1)/n / busbw; ``slower`` multiplies rows."""
    ranks = hosts * per_host
    lines = [*prelude, "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1073741824 step: 2(factor) "]
    lines[-1] += "warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0"
    lines += ["#", "# Using devices"]
    for rank in range(ranks):
        host, device = divmod(rank, per_host)
        lines.append(
            f"#  Rank {rank:2d} Group  0 Pid {1000 + rank:5d} on node{host + 1} "
            f"device {device:2d} [0x{device:02x}] {gpu}"
        )
    lines += [f"node1:1000:1000 [0] NCCL INFO {text}" if "NCCL INFO" not in text else text for text in info]
    lines += [
        "#",
        "#                           out-of-place                 in-place",
        "#  size  count  type  redop  root  time  algbw  busbw  #wrong  time  algbw  busbw  #wrong",
        "#   (B)  (elements)             (us)  (GB/s)  (GB/s)          (us)  (GB/s)  (GB/s)",
    ]
    factor = 2 * (ranks - 1) / ranks
    for nbytes in SIZES:
        us = (20e-6 + nbytes * factor / (busbw_GBps * 1e9)) * 1e6 * (slower or {}).get(nbytes, 1.0)
        lines.append(_row(nbytes, us, us * in_place, ranks))
    lines += ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 100.0 ", "#"]
    return "\n".join(lines) + "\n"


def validated(text: str, options: RunOptions | None = None) -> Validation:
    return validate_log(parse_nccl_tests(text, "test.log"), text, options=options)


def verdict_of(text: str, options: RunOptions | None = None) -> Verdict:
    return judge(validated(text, options), text)


# ------------------------------------------------------------ the branches


def test_a_normal_run_on_a_known_machine_is_as_expected() -> None:
    verdict = verdict_of(nccl_log(busbw_GBps=230.0))
    assert verdict.kind == "expected" and verdict.text.startswith("as expected for this machine")
    assert verdict.causes == verdict.doubts == ()


def test_faster_than_nvlink3_allows_is_above() -> None:
    verdict = verdict_of(nccl_log(busbw_GBps=500.0))
    assert verdict.kind == "above" and verdict.ratio > ABOVE
    assert verdict.text.startswith(f"{verdict.ratio:.1f}x faster than the model expects at large sizes")


def test_below_without_info_lines_says_how_to_see_a_cause() -> None:
    verdict = verdict_of(nccl_log(busbw_GBps=60.0))
    assert verdict.kind == "below" and verdict.ratio < BELOW and verdict.causes == ()
    assert verdict.text.startswith(f"{1 / verdict.ratio:.1f}x below what this machine should reach")
    assert "run it again with NCCL_DEBUG=INFO and include nvidia-smi topo -m" in verdict.text


def test_below_with_a_given_topology_does_not_ask_for_the_matrix_again() -> None:
    """The user gave the machine (--topology): the verdict asks only for NCCL_DEBUG=INFO, not for
    the nvidia-smi topo -m it already has."""
    verdict = verdict_of(nccl_log(busbw_GBps=60.0), RunOptions(topology=get_topology("dgx_a100")))
    assert verdict.kind == "below"
    assert "the log shows no cause: run it again with NCCL_DEBUG=INFO to see one" in verdict.text
    assert "topo -m" not in verdict.text


def test_below_with_info_lines_but_no_cause_says_so() -> None:
    info = (
        "Channel 00/0 : 0[0] -> 1[1] via P2P/IPC",
        "24 coll channels, 24 collnet channels, 0 nvls channels",
    )
    verdict = verdict_of(nccl_log(busbw_GBps=60.0, info=info))
    assert verdict.kind == "below" and verdict.causes == ()
    assert "the log shows none of the usual causes" in verdict.text


def test_assumed_network_withholds_the_verdict_even_when_far_below() -> None:
    verdict = verdict_of(nccl_log(gpu=H100, hosts=2, busbw_GBps=100.0))
    assert verdict.kind == "cannot_judge"
    assert verdict.text.startswith("cannot judge: the machine is partly assumed (network (--nic)")


# ------------------------------------------------------------ causes of "below"


def test_peer_to_peer_off_seen_in_shm_channels() -> None:
    """NVLink box, yet NCCL connects ranks through host memory (line 13 of the log). Read from the log,
    p2p is known off and the model prices the host-memory path (about 15 GB/s bus bandwidth here), so
    20 GB/s measured is as expected; when the user says peer-to-peer is on (--p2p), the model prices
    NVLink and the channel line is the cause of running 11x below it."""
    info = ("Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct",)
    log = nccl_log(busbw_GBps=20.0, info=info)
    assert verdict_of(log).kind == "expected"
    verdict = verdict_of(log, RunOptions(p2p=True))
    assert verdict.kind == "below"
    assert verdict.causes == (
        "peer-to-peer off: NCCL connects ranks 0 and 1 of one host via SHM (line 13), through host "
        "memory, where the model assumed GPU peer-to-peer",
    )


def test_peer_to_peer_off_seen_in_net_channels_inside_a_host() -> None:
    info = ("Channel 01/0 : 2[2] -> 3[3] [send] via NET/IB/0",)
    verdict = verdict_of(nccl_log(busbw_GBps=20.0, info=info))
    assert verdict.causes[0].startswith("peer-to-peer off: NCCL connects ranks 2 and 3 of one host via NET")


def test_net_between_hosts_is_no_sign_of_p2p_off() -> None:
    info = ("Channel 00/0 : 7[7] -> 8[0] [send] via NET/IB/0/GDRDMA",)
    verdict = verdict_of(nccl_log(gpu=H100, hosts=2, busbw_GBps=100.0, info=info), KNOWN_NETWORK)
    assert verdict.kind == "below" and not any("peer-to-peer" in c for c in verdict.causes)


def test_forced_channel_cap_is_a_cause() -> None:
    info = ("NCCL_MAX_NCHANNELS set by environment to 2.",)
    verdict = verdict_of(nccl_log(busbw_GBps=60.0, info=info))
    assert verdict.causes == (
        "fewer channels than usual: NCCL_MAX_NCHANNELS=2 (NCCL INFO line (line 13)) caps NCCL's "
        "channels; the model assumes NCCL's own count",
    )


def test_fewer_channels_than_nics_is_a_cause() -> None:
    info = ("2 coll channels, 2 collnet channels, 0 nvls channels, 2 p2p channels, 2 p2p channels per peer",)
    verdict = verdict_of(nccl_log(gpu=H100, hosts=2, busbw_GBps=100.0, info=info), KNOWN_NETWORK)
    assert verdict.causes == (
        "fewer channels than usual: NCCL built 2 coll channel(s) (line 21), fewer than the 8 NICs of a "
        "host, so some NICs idle",
    )


def test_a_nic_slower_than_stated_is_a_cause() -> None:
    """Seven NDR ports at 400 Gb/s and one at 100 Gb/s (a degraded port): the slow one is named."""
    info = tuple(
        f"NET/IB : Made virtual device [{i}] name=mlx5_{i} speed={100000 if i == 3 else 400000} ndevs=1"
        for i in range(8)
    )
    verdict = verdict_of(nccl_log(gpu=H100, hosts=2, busbw_GBps=100.0, info=info), KNOWN_NETWORK)
    assert verdict.causes == (
        "a NIC slower than stated: NCCL reports mlx5_3 at 100 Gb/s (line 24) where the machine has "
        "ib_ndr at 400 Gb/s",
    )


def test_gdr_refused_for_distance_names_the_far_nic() -> None:
    info = ("GPU Direct RDMA Disabled for GPU 0 / HCA 0 (distance 7 > 5)",)
    verdict = verdict_of(nccl_log(gpu=H100, hosts=2, busbw_GBps=100.0, info=info), KNOWN_NETWORK)
    assert verdict.causes == (
        "NCCL refused GPUDirect RDMA because the NIC is too far from the GPU (distance 7 > 5, line 21): "
        "network traffic is staged through host memory",
    )


def test_slow_bandwidth_bound_row_is_a_cause() -> None:
    """The 256 MiB row takes 3x its time: about 1.5x the 512 MiB row's (2x the bytes)."""
    verdict = verdict_of(nccl_log(busbw_GBps=60.0, slower={2**28: 3.0}))
    assert len(verdict.causes) == 1
    assert verdict.causes[0].startswith("the 256 MiB row (line ")
    assert (
        "out-of-place) is 1.5x slower than the larger 512 MiB one: a disturbed measurement"
        in verdict.causes[0]
    )


def test_a_slow_small_row_is_a_note_on_an_expected_run() -> None:
    verdict = verdict_of(nccl_log(busbw_GBps=230.0, slower={2**20: 4.0}))
    assert verdict.kind == "expected" and len(verdict.notes) == 1
    assert (
        verdict.notes[0].startswith("the 1 MiB row (line ")
        and "slower than the larger 2 MiB one" in verdict.notes[0]
    )
    assert verdict.text.startswith("as expected for this machine; note: the 1 MiB row")


# ------------------------------------------------------------ doubtful runs


def test_faster_than_the_printed_nics_can_carry_is_doubtful() -> None:
    """One 100 Gb/s NIC per host carries 12.5 GB/s; 230 GB/s busbw is algbw 123 GB/s, 9.8x that."""
    info = ("NET/IB : Made virtual device [0] name=mlx5_0 speed=100000 ndevs=1",)
    verdict = verdict_of(nccl_log(gpu=H100, hosts=2, busbw_GBps=230.0, info=info))
    assert verdict.kind == "doubtful"
    assert verdict.text.startswith("doubtful run: the log contradicts itself: the 1 GiB row (line ")
    assert (
        "moves 9.8x what the NICs of a host can carry in that time (1 NIC(s), 100 Gb/s in all" in verdict.text
    )


def test_faster_than_the_stated_network_is_doubtful() -> None:
    """8 NDR NICs carry 400 GB/s per host; busbw 1,500 GB/s is algbw 800 GB/s: 2.0x at 1 GiB."""
    verdict = verdict_of(nccl_log(gpu=H100, hosts=2, busbw_GBps=1500.0), KNOWN_NETWORK)
    assert verdict.kind == "doubtful" and "8 x ib_ndr (3200 Gb/s in all)" in verdict.text


def test_in_place_and_out_of_place_disagreeing_is_doubtful() -> None:
    verdict = verdict_of(nccl_log(busbw_GBps=230.0, in_place=3.0))
    assert verdict.kind == "doubtful"
    assert verdict.doubts[0].startswith(
        "in-place and out-of-place times differ by a median 3.0x at large sizes"
    )


def test_a_small_in_place_difference_is_normal() -> None:
    assert verdict_of(nccl_log(busbw_GBps=230.0, in_place=1.1)).kind == "expected"
    assert IN_PLACE_LIMIT > 1.18 and NON_MONOTONE_LIMIT > 1.43  # the development logs' worst normal figures


def test_validation_verdict_delegates_and_reads_its_own_file(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "shm.log"
    text = nccl_log(busbw_GBps=20.0, info=("Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct",))
    path.write_text(text, encoding="utf-8")
    from commsim.calibrate.validate import validate_file

    verdict = validate_file(path, options=RunOptions(p2p=True)).verdict()
    assert "peer-to-peer off: NCCL connects ranks 0 and 1" in verdict


# ------------------------------------------------------------ evidence readers


NDR_MATRIX = """\
        GPU0    GPU1    GPU2    GPU3    NIC0    NIC1    CPU Affinity    NUMA Affinity   GPU NUMA ID
GPU0     X      NV18    NV18    NV18    PIX     SYS     0-47    0               N/A
GPU1    NV18     X      NV18    NV18    SYS     SYS     0-47    0               N/A
GPU2    NV18    NV18     X      NV18    SYS     PIX     48-95   1               N/A
GPU3    NV18    NV18    NV18     X      SYS     SYS     48-95   1               N/A
NIC0    PIX     SYS     SYS     SYS      X      SYS
NIC1    SYS     SYS     PIX     SYS     SYS      X
"""


def test_far_nic_gpus_reads_the_matrix() -> None:
    """GPU1 and GPU3 have no NIC on their side of the socket link (nccl/issues/1357's layout)."""
    assert far_nic_gpus(NDR_MATRIX) == ["GPU1", "GPU3"]
    assert far_nic_gpus(NDR_MATRIX, [0, 1]) == ["GPU1"]
    assert far_nic_gpus(NDR_MATRIX.replace("NIC0", "XXX0").split("NIC1")[0]) == far_nic_gpus(None) == []


def test_readers_take_line_numbers_and_skip_commentary() -> None:
    text = "\n".join(
        [
            "## speed=1 commentary NET/IB : Made virtual device [0] name=fake speed=1 ndevs=1",
            "h:1:1 [0] NCCL INFO NET/IB : Made virtual device [0] name=mlx5_0 speed=200000 ndevs=1",
            'h:1:1 [0] NCCL INFO       <net name="mlx5_1" dev="1" speed="400000" port="1" gdr="1"/>',
            "h:1:1 [0] NCCL INFO                 + NET[1.2] - NET/0-0 (0/0/0/1.250000)",
            "h:1:1 [0] NCCL INFO 8 coll channels, 8 collnet channels, 0 nvls channels, 8 p2p channels",
            "h:1:1 [1] NCCL INFO 4 coll channels, 4 collnet channels, 0 nvls channels, 4 p2p channels",
            "h:1:1 [0] NCCL INFO Ring 00 : 0[0] -> 1[1] via P2P/IPC",
            "h:1:1 [0] NCCL INFO Could not get speed from /sys/class/net/eth0/speed. Defaulting to 10 Gbps.",
            "h:1:1 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for GPU 1a000 / HCA 0 (distance 7 >= 5)",
        ]
    )
    lines = tool_lines(text)
    assert lines[0][0] == 2
    speeds = nic_speeds(lines)
    assert {name: e.value for name, e in speeds.items()} == {"mlx5_0": 25e9, "mlx5_1": 50e9, "NET/0-0": 1.2e9}
    assert speeds["mlx5_0"].line == 2
    channels = coll_channels(lines)
    assert channels is not None and (channels.value, channels.line) == (4, 6)
    assert [(t.src_rank, t.dst_rank, t.transport, t.line) for t in transports(lines)] == [(0, 1, "P2P", 7)]
    guessed = speed_guessed(lines)
    assert guessed is not None and (guessed.value, guessed.line) == (10.0, 8)
    refused = gdr_refused(lines)
    assert refused is not None and (refused.value, refused.line) == ((7, 5), 9)
    assert tool_lines(text, last_line=3)[-1][0] == 3


def test_a_guessed_nic_speed_is_no_evidence() -> None:
    """NCCL could not read the speed and assumed 10 Gb/s: measuring more is no contradiction."""
    info = (
        "Could not get speed from /sys/class/net/eth0/speed. Defaulting to 10 Gbps.",
        "NET/IB : Made virtual device [0] name=mlx5_0 speed=10000 ndevs=1",
    )
    verdict = verdict_of(nccl_log(gpu=H100, hosts=2, busbw_GBps=100.0, info=info), KNOWN_NETWORK)
    assert verdict.kind == "below" and not any("NIC" in c for c in verdict.causes)


@pytest.mark.parametrize(
    ("ratios", "expected"), [([0.711, 0.95, 1.436], (0.7, 1.43)), ([0.8, 1.0], (0.8, 1.25))]
)
def test_band_from_ratios(ratios: list[float], expected: tuple[float, float]) -> None:
    """Lowest normal ratio rounded down to 0.05, and its reciprocal: 1/0.7 = 1.4286, 1/0.8 = 1.25."""
    assert band(ratios) == expected
    assert band([0.711, 1.436]) == (BELOW, ABOVE)


def test_gpu_and_nic_on_different_sockets_from_the_matrix() -> None:
    """Two hosts like NDR_MATRIX's: GPU1 and GPU3 of each reach a NIC only across sockets."""
    prelude = (
        "$ nvidia-smi topo -m",
        *NDR_MATRIX.splitlines(),
        "$ mpirun -np 8 ./build/all_reduce_perf -b 1M",
    )
    text = nccl_log(gpu=H100, hosts=2, per_host=4, busbw_GBps=20.0, prelude=prelude)
    verdict = verdict_of(text, RunOptions(nic="ib_ndr", nics_per_node=2, p2p=True))
    assert verdict.kind == "below"
    assert verdict.causes == (
        "GPU and NIC on different sockets: GPU1, GPU3 reach every NIC only across the inter-socket link "
        "(SYS in the nvidia-smi topo -m matrix; nccl-tests issue #293)",
    )
    one = nccl_log(gpu=H100, hosts=2, per_host=2, busbw_GBps=20.0, prelude=prelude)
    alone = verdict_of(one, RunOptions(nic="ib_ndr", nics_per_node=2, p2p=True)).causes
    assert alone == (  # ranks on GPU0 and GPU1 of each host: one far GPU, 'reaches' (was 'reach')
        "GPU and NIC on different sockets: GPU1 reaches every NIC only across the inter-socket link "
        "(SYS in the nvidia-smi topo -m matrix; nccl-tests issue #293)",
    )


def test_json_carries_the_judgement_for_scripts() -> None:
    """``--json`` gives the verdict's kind, ratio, causes and doubts, not only its sentence: a run at a
    quarter of an A100 box's bandwidth with NCCL_MAX_NCHANNELS=2 is "below", naming the channel cap."""
    text = nccl_log(busbw_GBps=60.0, info=("NCCL_MAX_NCHANNELS set by environment to 2.",))
    data = validated(text).to_json()
    judgement = data["judgement"]
    assert judgement["kind"] == "below" and judgement["measured_over_model_busbw"] < BELOW
    assert any("NCCL_MAX_NCHANNELS" in cause for cause in judgement["causes"])
    assert data["verdict"].startswith(f"{1 / judgement['measured_over_model_busbw']:.1f}x below")


def test_peer_to_peer_does_not_withhold_a_verdict_when_each_host_runs_one_rank() -> None:
    """Peer-to-peer joins GPUs of one host; with one rank per host (2 x A10G over TCP) it cannot change
    the prediction, so an assumed p2p no longer withholds the verdict, while with 8 ranks per host
    (the RTX 4090 box, p2p assumed off) it still does."""
    from pathlib import Path

    from commsim.calibrate.validate import validate_file

    data = Path(__file__).parent / "data" / "nccl-tests"
    alone = validate_file(
        data / "A10G-AWS-g5.2xlarge_all_reduce_2gpu_2node-TCP-socket_1.txt",
        options=RunOptions(nic="tcp_10g", nics_per_node=1),
    )
    assert "p2p" not in alone.inference.facts  # one GPU per host: an assumed p2p is not even listed
    assert int(alone.inference.facts["gpus_per_node"].value) == 1
    assert "p2p" not in [f.name for f in alone.inference.assumed]
    shared = validate_file(data / "RTX4090-PCIe-noP2P-8NUMA_all_reduce_8gpu_1.txt")
    assert shared.inference.facts["p2p"].assumed
    assert "p2p" in [f.name for f in shared.inference.assumed]
    assert shared.verdict().startswith("cannot judge")


FAR_NIC_MATRIX = """        GPU0    GPU1    NIC0    CPU Affinity    NUMA Affinity   GPU NUMA ID
GPU0     X      SYS     SYS     24-47     1               N/A
GPU1    SYS      X      SYS     0-23      0               N/A
NIC0    SYS     SYS      X

NIC Legend:

  NIC0: mlx5_0
"""


def test_far_nic_in_a_given_machine_is_a_cause(tmp_path: Path) -> None:
    """Two hosts of one A100 each over InfiniBand, the machine given as a topo -m matrix (--topology)
    in which GPU0 reaches its only NIC across the inter-socket link (SYS): a run far below the model
    is told that cause, as it is when the matrix is printed in the log (nccl-tests issue #293)."""
    from commsim.topology.nvsmi import load_topo_matrix

    matrix = tmp_path / "far_topo.txt"
    matrix.write_text(FAR_NIC_MATRIX)
    topo = load_topo_matrix(matrix, gpu_model="A100 40GB PCIe")
    options = RunOptions(topology=topo, nic="ib_hdr", nics_per_node=1, gpus_per_node=1)
    verdict = verdict_of(nccl_log(gpu="NVIDIA A100-PCIE-40GB", hosts=2, per_host=1, busbw_GBps=4.0), options)
    assert verdict.kind == "below"
    assert any(
        c.startswith("GPU and NIC on different sockets:") and "in the machine given" in c
        for c in verdict.causes
    )


def test_below_with_peer_to_peer_known_off_does_not_list_it_as_a_cause_to_look_for() -> None:
    """NCCL's channel line says it joined the GPUs through host memory (SHM): p2p is known off and the
    machine modelled stages through host memory too, so a run far below that model is not explained
    by it; the verdict says so rather than listing peer-to-peer off among the causes not seen."""
    info = ("Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct",)
    verdict = verdict_of(nccl_log(busbw_GBps=0.5, info=info))
    assert verdict.kind == "below" and verdict.causes == ()
    usual = "none of the usual causes (few channels); peer-to-peer is off, and so is the machine modelled"
    assert usual in verdict.text


def test_a_one_host_run_below_names_no_nic_or_network_to_look_for() -> None:
    """Eight A100 on one host use no NIC (NCCL's P2P transport over NVLink): a run far below the
    model is not told to rule out a NIC on the other socket, a slow NIC or a shared network, as
    outside/53 (2 RTX 4090 of one host) was."""
    info = (
        "Channel 00/0 : 0[0] -> 1[1] via P2P/IPC",
        "24 coll channels, 24 collnet channels, 0 nvls channels",
    )
    verdict = verdict_of(nccl_log(busbw_GBps=60.0, info=info))
    assert verdict.kind == "below" and verdict.causes == ()
    tail = "none of the usual causes (peer-to-peer off, few channels): look for a busy GPU or a degraded link"
    assert tail in verdict.text and "NIC" not in verdict.text and "network" not in verdict.text


def test_one_gpu_per_host_names_no_peer_to_peer_to_look_for() -> None:
    """Two hosts of one GPU each join no GPUs of a host, so peer-to-peer off cannot slow them (as
    outside/70, 2 x T4 over EFA, was told); the NIC causes remain (NICs per host given: known)."""
    info = ("Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA",)  # GPUDirect in use (not a cause)
    options = RunOptions(nic="ib_hdr", nics_per_node=1)
    verdict = verdict_of(nccl_log(hosts=2, per_host=1, busbw_GBps=1.0, info=info), options)
    assert verdict.kind == "below" and verdict.causes == ()
    usual = (
        "none of the usual causes (GPU and NIC on different sockets, a slow NIC, few channels): look for "
        "a busy GPU, a degraded link or a shared network"
    )
    assert usual in verdict.text


def test_a_run_below_the_slower_assumption_is_judged_anyway() -> None:
    """Four GeForce RTX 4090 with peer-to-peer assumed off (a stock driver): the model's machine is the
    slower one (host memory), so a run far below it would be below with peer-to-peer on too: the
    verdict says "below" instead of withholding; a run near the model still cannot be judged."""
    gpu = "NVIDIA GeForce RTX 4090"
    slow = validated(nccl_log(gpu=gpu, per_host=4, busbw_GBps=0.5), None)
    p2p = slow.inference.facts["p2p"]
    assert p2p.assumed and p2p.value is False
    assert judge(slow).kind == "below"
    normal = validated(nccl_log(gpu=gpu, per_host=4, busbw_GBps=12.0), None)
    assert judge(normal).kind == "cannot_judge"
