"""The transport NCCL_IB_* settings ask for, --nic's NICs per host, and NCCL versions printed as codes.

Semantics from NCCL's environment-variable docs (docs.nvidia.com/deeplearning/nccl/user-guide/docs/
env.html): NCCL_IB_HCA "specifies which RDMA interfaces to use", NCCL_IB_GID_INDEX "defines the Global
ID index used in RoCE mode", NCCL_IB_ROCE_VERSION_NUM the RoCE version of the GID NCCL selects.
Per-host defaults of the transports are infer_settings' documented ones (Slingshot 4, TCPXO 8, TCPX 4,
TCP sockets 1, EFA 32 on Hopper / 4 on Ampere); ib_ndr and roce_400g are the Hopper defaults, ib_ndr
the Ada one, roce_200g the Ampere one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from commsim.calibrate.infer_network import infer_network
from commsim.calibrate.infer_nics import infer_nics
from commsim.calibrate.infer_settings import infer_version
from commsim.calibrate.inference import RunOptions
from commsim.calibrate.parser import parse_nccl_tests
from commsim.calibrate.settings import read_settings
from commsim.calibrate.settings_lines import version_in_code_line
from commsim.calibrate.validate import validate_file

DATA = Path(__file__).parent / "data" / "nccl-tests"
MPIRUN = "mpirun -np 16 -x NCCL_DEBUG=INFO {} ./build/all_reduce_perf -b 8 -e 1G -f 2 -g 1"


def network(lines: list[str], arch: str = "hopper", nvlink_board: bool = True) -> tuple[str, str, bool]:
    """(link kind, first evidence's source, assumed) inferred from ``lines``."""
    fact, _ = infer_network(read_settings(lines), None, arch, nvlink_board)
    return str(fact.value), fact.evidence[0].source if fact.evidence else "", fact.assumed


def test_ib_hca_asks_for_the_ib_transport_on_a_pcie_box() -> None:
    """Public log 02 (2 x 2 L40S): without the setting a PCIe box gets TCP; NCCL_IB_HCA asks for IB verbs,
    whose Ada default is ib_ndr. Still assumed (no line proves it was used; the speed is unknown)."""
    assert network([MPIRUN.format("")], "ada", nvlink_board=False)[0] == "tcp_100g"
    kind, source, assumed = network([MPIRUN.format("-x NCCL_IB_HCA=mlx5_2,mlx5_8")], "ada", False)
    assert (kind, assumed) == ("ib_ndr", True)
    assert source == "NCCL_IB_HCA=mlx5_2,mlx5_8 (mpirun -x) asks for NCCL's IB verbs transport"


@pytest.mark.parametrize(
    ("options", "arch", "expected"),
    [
        ("-x NCCL_IB_GID_INDEX=3 -x NCCL_IB_TC=96", "hopper", "roce_400g"),  # public log 04
        ("-x NCCL_IB_GID_INDEX=3", "ampere", "roce_200g"),
        ("-x NCCL_IB_ROCE_VERSION_NUM=2", "hopper", "roce_400g"),
        ("-x NCCL_IB_HCA=mlx5_0:1 -x NCCL_IB_GID_INDEX=0", "hopper", "ib_ndr"),  # Dell XE9680, IB NDR
        ("-x NCCL_IB_TC=106", "hopper", "ib_ndr"),
        ("-x NCCL_IB_DISABLE=1 -x NCCL_IB_GID_INDEX=3", "hopper", "tcp_100g"),
        ("-x NCCL_NET=Socket -x NCCL_IB_HCA=mlx5_0", "hopper", "tcp_100g"),
    ],
)
def test_settings_choose_the_transport(options: str, arch: str, expected: str) -> None:
    assert network([MPIRUN.format(options)], arch)[0] == expected


@pytest.mark.parametrize(
    ("net", "expected"),
    [
        ('"AWS Libfabric"', "efa_v2"),  # 'libfabric' holds 'ib': it was read as IB verbs
        ("GPUDirectTCPX", "tcpx_200g"),
        ("FasTrak", "tcpxo_200g"),
        ("IB", "ib_ndr"),
    ],
)
def test_nccl_net_names_the_network_as_nccls_own_line_does(net: str, expected: str) -> None:
    """NCCL_NET takes the name NCCL prints in 'Using network X' (AWS Libfabric, GPUDirectTCPX, FasTrak,
    IB): it means the same transport there, whole names compared (Hopper defaults: efa_v2, tcpx_200g,
    tcpxo_200g, ib_ndr), and cites the setting."""
    kind, source, _ = network([MPIRUN.format(f"-x NCCL_NET={net}")])
    assert kind == expected and source.startswith(f"NCCL_NET={net.strip(chr(34))}")


def test_an_exclusion_list_asks_for_nothing() -> None:
    """'^mlx5_1' only removes a device: a PCIe box keeps its TCP default."""
    assert network([MPIRUN.format("-x NCCL_IB_HCA=^mlx5_1")], "ada", nvlink_board=False)[0] == "tcp_100g"


def test_nccl_info_lines_win_over_a_request() -> None:
    """NCCL's own device list (proof) beats what a setting asks for: sockets are sockets, /IB ports IB."""
    socket = [
        "host:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>",
        MPIRUN.format("-x NCCL_IB_HCA=mlx5"),
    ]
    assert network(socket)[:2] == ("tcp_100g", "NET/Socket device list")
    ib = [
        "host:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0",
        MPIRUN.format("-x NCCL_IB_GID_INDEX=3"),
    ]
    assert network(ib)[:2] == ("ib_ndr", "NET/IB device list")


def test_a_roce_setting_refines_using_network_ib() -> None:
    """'Using network IB' covers RoCE too: NCCL_IB_GID_INDEX=3 (line 2) makes it RoCE; both are kept."""
    lines = ["host:1:1 [0] NCCL INFO Using network IB", MPIRUN.format("-x NCCL_IB_GID_INDEX=3")]
    fact, _ = infer_network(read_settings(lines), None, "hopper", True)
    assert fact.value == "roce_400g"
    assert [(e.value, e.line) for e in fact.evidence] == [("roce", 2), ("ib", 1)]


@pytest.mark.parametrize(
    ("nic", "arch", "per_host"),
    [
        ("slingshot_200g", "cdna2", 4),
        ("tcpxo_200g", "hopper", 8),
        ("tcpx_200g", "hopper", 4),
        ("tcp_25g", "ampere", 1),
        ("efa_v2", "hopper", 32),
        ("efa_v2", "ampere", 4),
        ("efa_v1", "hopper", None),
        ("ib_ndr", "hopper", None),
        ("roce_400g", "hopper", None),
    ],
)
def test_nic_option_takes_the_kinds_per_host_default(nic: str, arch: str, per_host: int | None) -> None:
    """The same NICs per host as when the transport is read from the log (None: one per GPU)."""
    fact, found = infer_network(read_settings([]), nic, arch, True)
    assert (fact.value, fact.assumed, found) == (nic, False, per_host)
    assert infer_nics(read_settings([]), None, found, 8).value == (per_host or 8)


def test_nic_slingshot_on_a_two_node_log_models_four_nics_per_host() -> None:
    """Dell XE9680 (2 x 8 H100): one NIC per GPU (8) for IB; 4 per host with --nic slingshot_200g,
    unless --nics-per-node says otherwise."""
    path = DATA / "H100-SXM-DellXE9680_all_reduce_16gpu_2node-IB-NDR400x8_1.txt"
    nics = validate_file(path, options=RunOptions(nic="slingshot_200g")).inference.facts["nics_per_node"]
    assert (nics.value, nics.assumed) == (4, True)
    given = validate_file(path, options=RunOptions(nic="slingshot_200g", nics_per_node=2))
    assert given.inference.facts["nics_per_node"].value == 2


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "[gdr116] tid:21762, main(), common.cu:699, NCCL version: 22602, CUDA Runtime Version: 12.0",
            "2.26.2",
        ),
        ("NCCL version 2408", "2.4.8"),
        ("RCCL version: 22005", "2.20.5"),
        ("NCCL version: 20241101", None),  # a date, not a version code
        ("NCCL version: 12345", None),  # no NCCL release has this code
        ("libnccl version: 22602", None),
    ],
)
def test_version_codes(line: str, expected: str | None) -> None:
    found = version_in_code_line(line)
    assert (found[1] if found else None) == expected


def test_a_modified_builds_version_code_is_the_runs_version() -> None:
    """Public log 15 prints 'NCCL version: 22602' (line 2): NCCL 2.26.2, known from that line."""
    text = (
        "./build/all_reduce_perf -b 8 -e 128 -f 4 -g 2\n"
        "[gdr116] tid:21762, main(), common.cu:699, NCCL version: 22602, CUDA Runtime Version: 12.0\n"
        "# nThread 1 nGpus 2 minBytes 8 maxBytes 128 step: 4(factor) warmup iters: 5 iters: 20\n"
        "#  size  count  type  redop  root  time  algbw  busbw #wrong  time  algbw  busbw #wrong\n"
        "     8      2  float  sum  -1  11.65  0.00  0.00  0  11.37  0.00  0.00  0\n"
    )
    log = parse_nccl_tests(text)
    assert log.nccl_version == "2.26.2"
    settings = read_settings(text.splitlines())
    assert settings.library is not None and settings.library.value == "NCCL"
    fact = infer_version(settings, None, log.nccl_version)
    assert (fact.value, fact.assumed, fact.evidence[0].line) == ("2.26.2", False, 2)


def test_a_version_line_with_a_colon_is_read() -> None:
    """'NCCL version: 2.21.5' states the version as plainly as 'NCCL version 2.21.5'."""
    settings = read_settings(["NCCL version: 2.21.5+cuda12.4"])
    assert settings.version is not None and settings.version.value == "2.21.5"
