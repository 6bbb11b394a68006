"""``--net-protocol sendrecv|rdma`` gives aws-ofi-nccl's EFA protocol when the log does not show it.

A run over AWS EFA costs ~36 us more per network step with the plugin's SENDRECV protocol than with
RDMA (v1.7.0-aws on, the default on p5 and p6). A log without the plugin's INFO lines leaves the
protocol assumed, and a verdict drawn only from small sizes (which the protocol sets) is withheld: it
must name the option that settles it, as every other assumed fact does.

tests/data/outside/97 (dstackai/dstack PR #3961): 2 AWS p6-b200 hosts, all_reduce 8 B to 256 B, no
INFO lines; measured 50.6-57.1 us.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from commsim.calibrate.evidence import Fact
from commsim.calibrate.infer_ofi import efa_protocol
from commsim.calibrate.inference import InferenceError, RunOptions
from commsim.calibrate.settings import read_settings
from commsim.calibrate.validate import validate_file
from commsim.hardware import get_gpu
from tests.test_bad_inputs import run_cli

P6 = Path(__file__).parent / "data" / "outside" / "97_B200-AWS-p6-2node-EFA-allreduce-small.txt"
P6_FACTS = [
    "--gpu",
    "B200",
    "--nodes",
    "2",
    "--gpus-per-node",
    "8",
    "--nic",
    "efa_v4",
    "--nics-per-node",
    "8",
]
A100_ONE_HOST = (
    Path(__file__).parent / "data" / "nccl-tests" / "A100-SXM4-80GB-HGX-NVSwitch_all_reduce_8gpu_1.txt"
)
PROTOCOL_LINE = "node-0:25:66 [0] NCCL INFO NET/OFI Using transport protocol RDMA"


def test_an_assumed_protocol_names_the_option_in_the_withheld_verdict(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Without the option, 97's protocol is assumed (RDMA, Blackwell's instances' default) and the
    verdict, drawn from sizes below 64 KiB only, is withheld naming ``--net-protocol``."""
    code, out, _ = run_cli(["validate", str(P6), *P6_FACTS, "--collective", "all_reduce"], capsys)
    assert code == 0
    assert "assumed net_protocol = rdma" in out
    assert "cannot judge: the machine is partly assumed (net_protocol (--net-protocol))" in " ".join(
        out.split()
    )


def test_the_option_makes_the_protocol_known_and_judges(capsys: pytest.CaptureFixture[str]) -> None:
    """With ``--net-protocol rdma`` the fact is known (from the option) and the verdict is given;
    with ``sendrecv`` the model adds ~38 us per network step and the run's 51-57 us are called
    lower than modelled (the same log, two different stated machines)."""
    args = ["validate", str(P6), *P6_FACTS, "--collective", "all_reduce"]
    code, out, _ = run_cli([*args, "--net-protocol", "rdma"], capsys)
    folded = " ".join(out.split())
    assert code == 0 and "known net_protocol = rdma (option --net-protocol)" in folded
    assert "verdict: cannot judge" not in folded
    code, out, _ = run_cli([*args, "--net-protocol", "sendrecv"], capsys)
    folded = " ".join(out.split())
    assert code == 0 and "known net_protocol = sendrecv (option --net-protocol)" in folded
    assert "verdict: latency" in folded and "lower than modelled" in folded


def test_other_words_are_refused_with_the_valid_ones(capsys: pytest.CaptureFixture[str]) -> None:
    """A protocol aws-ofi-nccl does not have exits 2 naming the two it has; the Python API refuses
    it with a typed error too."""
    code, out, err = run_cli(["validate", str(P6), *P6_FACTS, "--net-protocol", "verbs"], capsys)
    assert code == 2 and out == "" and "--net-protocol 'verbs': valid: sendrecv, rdma" in err
    assert "Traceback" not in err
    with pytest.raises(InferenceError, match="valid: sendrecv, rdma"):
        validate_file(
            P6, options=RunOptions(gpu="B200", nodes=2, gpus_per_node=8, nic="efa_v4", net_protocol="RDMA!")
        )


def test_a_run_without_efa_says_the_option_is_unused(capsys: pytest.CaptureFixture[str]) -> None:
    """One host crosses no network: the option changes nothing, and the report says so."""
    code, out, err = run_cli(["validate", str(A100_ONE_HOST), "--net-protocol", "rdma"], capsys)
    assert code == 0
    assert "--net-protocol rdma is not used: the run crosses no network" in " ".join((out + err).split())


def test_the_option_wins_over_the_log_and_the_disagreement_is_warned() -> None:
    """The plugin printing RDMA and the user saying sendrecv: the option is used, with a warning that
    names the log's line."""
    lines = [PROTOCOL_LINE]
    warnings: list[str] = []
    fact = efa_protocol(
        "efa_v2",
        read_settings(lines),
        "\n".join(lines),
        Fact("nccl_version", "2.22.3"),
        get_gpu("h100_sxm"),
        "sendrecv",
        warnings,
    )
    assert fact is not None and (fact.value, fact.assumed, fact.option) == (
        "sendrecv",
        False,
        "--net-protocol",
    )
    assert len(warnings) == 1 and warnings[0].startswith(
        "--net-protocol sendrecv disagrees with the log's rdma"
    )


def test_a_network_that_is_not_efa_points_at_the_nic_option() -> None:
    """On an InfiniBand network (here assumed) the option is unused, and the warning says which
    option names an EFA network, in case the assumption is what is wrong (review: log 74, a p5 run
    whose network was assumed ib_ndr)."""
    warnings: list[str] = []
    fact = efa_protocol("ib_ndr", read_settings([]), "", None, get_gpu("h100_sxm"), "sendrecv", warnings)
    assert fact is None
    assert warnings == [
        "--net-protocol sendrecv is not used: its network (ib_ndr) is not AWS EFA "
        "(--nic efa_v1..efa_v4 names an EFA network)"
    ]


def test_rdma_on_first_generation_efa_is_refused() -> None:
    """efa_v1 (p3dn, g4dn) has no device RDMA, which aws-ofi-nccl's RDMA protocol needs: given, it is
    refused naming the valid value, not used with a warning."""
    with pytest.raises(
        InferenceError, match=r"--net-protocol rdma on efa_v1: first-generation EFA .* valid there: sendrecv"
    ):
        efa_protocol("efa_v1", read_settings([]), "", None, get_gpu("v100_sxm2"), "rdma", [])
