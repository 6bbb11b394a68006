"""NCCL_IB_HCA's plain list of HCA names gives the NICs per host (probe 7, log 116).

Syntax from NCCL's env docs (NCCL_IB_HCA): comma-separated, a port after ``:``, a leading ``^``
excludes, a ``=`` makes the tokens exact names, otherwise each token is a prefix. The 116 line is the
OCI tutorial's command (2 x BM.GPU4.8, RoCE "100 Gbps x 16"), quoted as printed.
"""

from __future__ import annotations

import pytest

from commsim.calibrate.infer_nics import infer_nics
from commsim.calibrate.settings import read_settings

OCI_116 = (
    "$ cd ~/nccl-tests && mpirun --allow-run-as-root -n 16 -H inst-gpu-master:8,inst-gpu-slave:8 -mca "
    'plm_rsh_args "-p 22222" -x NCCL_IB_QPS_PER_CONNECTION=4 -x NCCL_IB_GID_INDEX=3 -x '
    'UCX_NET_DEVICES=eth0 -x NCCL_IB_HCA="mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_6,mlx5_7,mlx5_8,mlx5_9,'
    'mlx5_10,mlx5_11,mlx5_12,mlx5_13,mlx5_14,mlx5_15,mlx5_16,mlx5_17" ./build/all_reduce_perf -b 10G '
    "-e 10G -t 1 -g 1"
)
NET_IB_2 = (
    "vm-host40:34002:34044 [1] NCCL INFO NET/IB : Using [0]mlx5_bond_6:1/RoCE [1]mlx5_bond_7:1/RoCE "
    "[RO]; OOB bond0:30.159.184.22<0>"
)


def test_a_plain_hca_list_counts_the_nics() -> None:
    """The 16 names (mlx5_0-3, mlx5_6-17) are 16 NICs per host, known and cited at line 1, where
    the transport's default (one per GPU: 8) used to be assumed."""
    fact = infer_nics(read_settings([OCI_116]), None, None, 8, "roce_100g")
    assert (fact.value, fact.assumed) == (16, False)
    assert fact.evidence[0].line == 1 and "NCCL_IB_HCA" in fact.evidence[0].source


@pytest.mark.parametrize(
    ("value", "count"),
    [
        ("=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1", 4),  # exact names with ports
        ("mlx5_0:1,mlx5_0:2", 2),  # two ports of one card: two NET/IB devices
        ("=mlx5_0:1,mlx5_3:1,mlx5_3:2", 3),  # exact names, ports by (device, port)
        ("mlx5_0,mlx5_0:1,mlx5_3:2", 2),  # mlx5_0's port 1 twice over: once
        ("ionic_0,ionic_2,ionic_4,ionic_6", 4),  # outside/68's AMD Pollara list
        (r"mlx5_2\,mlx5_3\,mlx5_0\,mlx5_1\,mlx5_6\,mlx5_7\,mlx5_4\,mlx5_5", 8),  # outside/60, shell-escaped
        ("^mlx5_1", None),  # an exclusion list says nothing of the NICs used
        ("^=mlx5_3:1", None),
        ("=^mlx5_3", None),  # NCCL reads '^' only first: '^mlx5_3' as an exact name matches no device
        ('"=bnxt_re_benic1b,bnxt_re_benic2b"', 2),  # outside/331: udev-renamed devices, listed exactly
        ("bnxt_re_benic1b,bnxt_re_benic2b", None),  # the same names as prefixes: not whole by their shape
        ("=mlx5", None),  # an exact 'mlx5' names no device
        ("=bnxt_re", None),  # nor does an exact family name
        ("mlx5_0:0", None),  # NCCL numbers ports from 1
        ("mlx5", None),  # a family prefix: every mlx5 card
        ("mlx5_", None),  # outside/04's prefix
        ("mlx5_0,2,3,4,5,7,8,9", None),  # not names
    ],
)
def test_hca_list_syntax(value: str, count: int | None) -> None:
    """Only a list of whole device names counts; exclusions and prefixes leave the default (8)."""
    fact = infer_nics(read_settings([f"export NCCL_IB_HCA={value}"]), None, None, 8, "ib_ndr")
    assert (fact.value, fact.assumed) == ((count, False) if count is not None else (8, True))


def test_nccl_device_list_wins_over_the_hca_list() -> None:
    """NCCL's own 'NET/IB : Using [0]mlx5_bond_6 [1]mlx5_bond_7' (2 NICs) beats a 16-name list."""
    fact = infer_nics(read_settings([OCI_116, NET_IB_2]), None, None, 8, "roce_100g")
    assert fact.value == 2 and fact.evidence[0].line == 2


def test_the_list_is_not_read_for_another_transport() -> None:
    """With the network on sockets (NCCL_IB_DISABLE=1 or --nic tcp_100g) the HCA list is not the NICs."""
    fact = infer_nics(read_settings([OCI_116]), None, None, 8, "tcp_100g")
    assert fact.assumed


TWO_PORTS = "NCCL_IB_HCA=mlx5_0:1,mlx5_0:2"
NET_IB_TWO_PORTS = "host:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_0:2/IB ; OOB ib0:10.0.0.1<0>"


def test_two_ports_of_one_hca_are_two_nics() -> None:
    """NCCL's ncclIbInit opens one net device per active (device, port) NCCL_IB_HCA matches: with
    ``mlx5_0:1,mlx5_0:2`` it prints ``NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_0:2/IB``, two devices. The
    list alone gives the same 2, known (both ports named), as the device list does; it used to give 1."""
    alone = infer_nics(read_settings([f"export {TWO_PORTS}"]), None, None, 8, "ib_ndr")
    listed = infer_nics(read_settings([f"export {TWO_PORTS}", NET_IB_TWO_PORTS]), None, None, 8, "ib_ndr")
    assert (alone.value, alone.assumed, listed.value) == (2, False, 2)
    assert "assumed" not in alone.evidence[0].source


def test_a_name_without_a_port_says_one_port_is_assumed() -> None:
    """A bare name takes all the device's active ports, which a log without NCCL's device list does
    not tell: the 16 names of OCI_116 count 16, each assumed to have one active port (mlx5 gives each
    port its own device), and the source says so."""
    source = infer_nics(read_settings([OCI_116]), None, None, 8, "roce_100g").evidence[0].source
    assert "names 16 HCA(s), one active port each assumed" in source


@pytest.mark.parametrize(
    ("value", "prefix_noted"),
    [
        ("mlx5_0,mlx5_1,mlx5_4,mlx5_5", True),  # outside/93's list: mlx5_1 also takes mlx5_10-19
        ("=mlx5_0,mlx5_1,mlx5_4,mlx5_5", False),  # '=': exact names
        ("mlx5_1,mlx5_10,mlx5_11", False),  # mlx5_1's longer names are listed anyway
    ],
)
def test_a_prefix_name_says_what_it_assumes(value: str, prefix_noted: bool) -> None:
    """Without '=' NCCL matches each name as a prefix (``strncmp`` over the name's length), so
    ``mlx5_1`` would also take an ``mlx5_10`` the host has: the count assumes none and says so."""
    fact = infer_nics(read_settings([f"export NCCL_IB_HCA={value}"]), None, None, 8, "ib_ndr")
    assumption = "NCCL reads mlx5_1 as a prefix (no '='): no mlx5_10-mlx5_19 on the host assumed"
    assert (assumption in fact.evidence[0].source) == prefix_noted
