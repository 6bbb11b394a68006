"""Tests of the settings read from nccl-tests logs (commsim.calibrate.settings).

Expected values are written by hand from the quoted lines (real lines from
tests/data and from public NCCL issue threads), not from the code's output.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from commsim.calibrate import load_nccl_tests
from commsim.calibrate.settings import RunSettings, read_json_settings, read_settings

DATA = Path(__file__).parent / "data"


def values(settings: RunSettings) -> dict[str, object]:
    facts = ("library", "version", "network", "nics", "gdr", "collnet", "nvls")
    found = {name: getattr(settings, name).value for name in facts if getattr(settings, name) is not None}
    return {**found, **{name: e.value for name, e in settings.env.items()}}


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("node:1:1 [0] NCCL INFO NCCL_ALGO set by environment to Ring", {"NCCL_ALGO": "Ring"}),
        (
            "ip-172-31-41-105:3801:3862 [0] NCCL INFO NCCL_TREE_THRESHOLD set by environment to 0.",
            {"NCCL_TREE_THRESHOLD": "0"},
        ),
        ("host:2:2 [0] NCCL INFO NCCL_IB_HCA set to rocep", {"NCCL_IB_HCA": "rocep"}),
        ("mpirun -np 16 -x NCCL_PROTO=LL128 -x NCCL_DEBUG ./all_reduce_perf -g 1", {"NCCL_PROTO": "LL128"}),
        ("export NCCL_NVLS_ENABLE=0", {"NCCL_NVLS_ENABLE": "0"}),
        (
            "NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 ./build/all_reduce_perf -g 2",
            {"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1"},
        ),
        (
            "srun --export=ALL,NCCL_IB_DISABLE=1,NCCL_NET=Socket ./all_reduce_perf",
            {"NCCL_IB_DISABLE": "1", "NCCL_NET": "Socket"},
        ),
        ("mpiexec -genv NCCL_MIN_NCHANNELS 16 -n 8 ./all_reduce_perf", {"NCCL_MIN_NCHANNELS": "16"}),
        ('mpirun -x NCCL_NET="AWS Libfabric" ./all_reduce_perf', {"NCCL_NET": "AWS Libfabric"}),
        ("host:1:1 [0] Test NCCL failure common.cu:1279 (run with NCCL_DEBUG=INFO for details)", {}),
    ],
)
def test_forced_settings_from_each_source(line: str, expected: dict[str, str]) -> None:
    assert {name: e.value for name, e in read_settings([line]).env.items()} == expected


def test_continued_mpirun_line_is_read_whole() -> None:
    """The Dell XE9680 command (lines 7-15): seven -x settings over backslash-continued lines, each
    with the line it stands on (8 to 14), not the command's first line."""
    log = load_nccl_tests(
        DATA / "nccl-tests" / "H100-SXM-DellXE9680_all_reduce_16gpu_2node-IB-NDR400x8_1.txt"
    )
    env = {name: (e.value, e.source, e.line) for name, e in log.settings.env.items()}
    assert env == {
        "NCCL_DEBUG": ("VERSION", "mpirun -x", 8),
        "NCCL_SOCKET_IFNAME": ("enp27s0f0", "mpirun -x", 9),
        "NCCL_NET_GDR_LEVEL": ("1", "mpirun -x", 10),
        "NCCL_P2P_LEVEL": ("NVL", "mpirun -x", 11),
        "NCCL_IB_DISABLE": ("0", "mpirun -x", 12),
        "NCCL_IB_HCA": (
            "mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1",
            "mpirun -x",
            13,
        ),
        "NCCL_IB_GID_INDEX": ("0", "mpirun -x", 14),
    }
    assert (log.settings.version.value, log.settings.library.value) == ("2.26.2", "NCCL")  # line 47


@pytest.mark.parametrize(
    ("line", "network", "nics"),
    [
        (
            "n:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ib0:192.168.11.1<0>",
            "ib",
            2,
        ),
        (
            "n:1:1 [0] NCCL INFO NET/IB : Using [0]rocep161s0_dma:1/RoCE [1]rocep162s0_dma:1/RoCE [RO]",
            "roce",
            2,
        ),
        ("n:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:192.0.2.2<0>", "socket", 1),
        ("n:1:1 [0] NCCL INFO NET/OFI Selected Provider is efa", "efa", None),
        ("n:1:1 [0] NCCL INFO NET/OFI Selected Provider is cxi", "slingshot", None),
        ("n:1:1 [0] NCCL INFO Using network AWS Libfabric", "ofi", None),  # EFA or Slingshot
        ("n:1:1 [0] NCCL INFO Using network Socket", "socket", None),
        ("n:1:1 [0] NCCL INFO Using network IB", "ib", None),
        ("n:1:1 [0] NCCL INFO NET/GPUDirectTCPX ver. 3.1.8.", "tcpx", None),
        ("n:1:1 [0] NCCL INFO NET/FasTrak plugin initialized", "tcpxo", None),
        (
            "n:1:1 [0] NCCL INFO NET/FastSocket : Using [0]enp0s12:10.0.0.6<0> [1]enp6s0f0:10.0.1.4<0>",
            None,
            2,
        ),
    ],
)
def test_network_and_nics(line: str, network: str | None, nics: int | None) -> None:
    settings = read_settings([line])
    assert (settings.network.value if settings.network else None) == network
    assert (settings.nics.value if settings.nics else None) == nics


def test_generic_network_is_refined_without_a_conflict() -> None:
    """'Using network IB' and a device list of RoCE ports agree: RoCE is IB verbs over Ethernet."""
    settings = read_settings(
        [
            "n:1:1 [0] NCCL INFO NET/IB : Using [0]rocep161s0_dma:1/RoCE [RO]; OOB eth0:10.0.0.1<0>",
            "n:1:1 [0] NCCL INFO Using network IB",
        ]
    )
    assert (settings.network.value, settings.network.line, settings.warnings) == ("roce", 1, ())


@pytest.mark.parametrize(
    ("line", "fact", "value"),
    [
        ("n:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [receive] via NET/IB/0/GDRDMA", "gdr", True),
        ("vm:1174:1174 [0] NCCL INFO NET/Socket : GPU Direct RDMA Disabled for HCA 0 'eth0'", "gdr", False),
        (
            "l40s-box:400123:400141 [1] NCCL INFO NVLS multicast support is not available on dev 1",
            "nvls",
            False,
        ),
        (
            "vm:1174:1174 [0] NCCL INFO 64 coll channels, 64 collnet channels, 0 nvls channels, 64 p2p",
            "nvls",
            False,
        ),
        (
            "n:1:1 [0] NCCL INFO 32 coll channels, 0 collnet channels, 16 nvls channels, 32 p2p channels",
            "nvls",
            True,
        ),
        (
            "ip-172-31-70-88:1:1 [0] NCCL INFO NET/Plugin: Failed to find ncclCollNetPlugin_v3 symbol.",
            "collnet",
            False,
        ),
        ("n:1:1 [0] NCCL INFO rank 0 Connected CollNet", "collnet", True),
    ],
)
def test_gdr_nvls_collnet(line: str, fact: str, value: bool) -> None:
    found = getattr(read_settings([line]), fact)
    assert (found.value, found.line, found.text) == (value, 1, line)


@pytest.mark.parametrize(
    ("lines", "library", "version"),
    [
        (["NCCL version 2.26.2+cuda12.8"], "NCCL", "2.26.2"),
        (["n:1:1 [0] NCCL INFO RCCL version 2.18.3+hip6.1 HEAD:abc"], "RCCL", "2.18.3"),
        (["# nccl-tests version 2.17.9 nccl-headers=22602 nccl-library=22602"], "NCCL", "2.26.2"),
        (["rccl-tests: Version develop:a7809b3"], "RCCL", None),
    ],
)
def test_library_and_version(lines: list[str], library: str, version: str | None) -> None:
    settings = read_settings(lines)
    assert settings.library is not None and settings.library.value == library
    assert (settings.version.value if settings.version else None) == version


def test_json_env_and_version() -> None:
    """h100-1gpu JSON: nccl_version 22809; NCCL_VERSION=2.28.3-1 in env is the container's, not a setting."""
    document = {
        "nccl_version": 22809,
        "env": ["NCCL_VERSION=2.28.3-1", "NCCL_PROTO=Simple", "CUDA_VERSION=13.0.2"],
    }
    settings = read_json_settings(document, 1)
    assert values(settings) == {"library": "NCCL", "version": "2.28.9", "NCCL_PROTO": "Simple"}
    log = load_nccl_tests(DATA / "h100-1gpu" / "all_reduce_1gpu.json")
    assert (log.settings.version.value, log.settings.env) == ("2.28.9", {})


def test_container_version_variable_on_a_command_line_is_not_a_setting() -> None:
    """NVIDIA containers export NCCL_VERSION=<packaged version>; NCCL never reads it. A script's
    ``export NCCL_VERSION=2.18.3`` or ``mpirun -x NCCL_VERSION=...`` is no setting either (as in
    INFO lines and the JSON env), while the NCCL_ALGO beside it is."""
    lines = [
        "export NCCL_VERSION=2.18.3-1",
        "mpirun -np 2 -x NCCL_VERSION=2.18.3-1 -x NCCL_ALGO=Ring ./build/all_reduce_perf -g 1",
    ]
    settings = read_settings(lines)
    assert {name: e.value for name, e in settings.env.items()} == {"NCCL_ALGO": "Ring"}


def test_env_and_info_line_in_conflict_are_both_kept() -> None:
    """The user asked for Ring on the command line; NCCL reports it was given Tree."""
    lines = [
        "mpirun -np 8 -x NCCL_ALGO=Ring ./build/all_reduce_perf -g 1",
        "node:7:7 [0] NCCL INFO NCCL_ALGO set by environment to Tree",
    ]
    settings = read_settings(lines, first_line=10)
    assert (settings.env["NCCL_ALGO"].value, settings.env["NCCL_ALGO"].line) == ("Tree", 11)
    assert [(e.value, e.source, e.line) for e in settings.evidence["NCCL_ALGO"]] == [
        ("Tree", "NCCL INFO line", 11),
        ("Ring", "mpirun -x", 10),
    ]
    assert settings.warnings == (
        "NCCL_ALGO: mpirun -x (line 10) says 'Ring' but NCCL INFO line (line 11) says 'Tree'; using 'Tree'",
    )


def test_real_logs_settings() -> None:
    """p4d (lines 28-31): EFA, AWS Libfabric, NCCL 2.7.8; p3dn: NCCL_TREE_THRESHOLD=0 (line 52).

    The p3dn log's "NET/OFI Forcing AWS OFI ndev 4" counts the plugin's virtual devices on the
    instance's ONE 100 Gb/s EFA NIC (AWS p3dn.24xlarge page), so it gives no NIC count.
    """
    p4d = load_nccl_tests(DATA / "nccl-tests" / "A100-SXM4-p4d_all_reduce_16gpu_2node-EFA400_1.txt").settings
    assert (p4d.network.value, p4d.version.value, p4d.collnet.value) == ("efa", "2.7.8", False)
    p3dn = load_nccl_tests(
        DATA / "nccl-tests" / "V100-SXM2-p3dn_all_reduce_16gpu_2node-EFA100_1.txt"
    ).settings
    assert (p3dn.env["NCCL_TREE_THRESHOLD"].value, p3dn.env["NCCL_TREE_THRESHOLD"].line) == ("0", 52)
    assert (p3dn.network.value, p3dn.nics, p3dn.version.value) == ("efa", None, "2.4.8")
    a10g = load_nccl_tests(DATA / "nccl-tests" / "A10G-AWS-g5.2xlarge_all_reduce_2gpu_2node-TCP-socket_1.txt")
    assert {k: e.value for k, e in a10g.settings.env.items()} == {
        "NCCL_DEBUG": "INFO",
        "NCCL_SOCKET_IFNAME": "eth0",
    }
    amd = load_nccl_tests(DATA / "nccl-tests" / "AMD-MI300X-8GPU_all_reduce_8gpu_1.txt").settings
    assert (amd.library.value, amd.library.line, amd.version) == ("RCCL", 10, None)
    info = load_nccl_tests(DATA / "h100-1gpu" / "nccl_info_all_reduce_1gpu.txt").settings
    assert (info.network.value, info.nics.value, info.gdr.value, info.nvls.value) == (
        "socket",
        1,
        False,
        False,
    )
