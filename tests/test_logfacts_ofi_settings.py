"""Settings aws-ofi-nccl forces on NCCL, read from its ``NET/OFI`` lines.

The plugin prints ``NET/OFI Setting NCCL_PROTO to "simple"`` when it sets
``NCCL_PROTO=simple`` because LL/LL128 are not safe on the EFA endpoint
(aws-ofi-nccl ``src/nccl_ofi_net.c`` and later ``src/platform-aws.c``,
``configure_nccl_proto``: ``NCCL_OFI_INFO(NCCL_INIT, "Setting NCCL_PROTO to
\\"simple\\"")``), ``NET/OFI Setting NCCL_NVLSTREE_MAX_CHUNKSIZE to 512KiB``
(1.8-1.9) and ``NET/OFI Disabling NVLS support due to NCCL version 21803``
(``configure_nvls_option``: it sets ``NCCL_NVLS_ENABLE=0`` before 2.18.5).
The quoted lines are from a T4 g4dn EKS run (aws-ofi-nccl 1.5.0aws, NCCL
2.12.7) and an optcast README.
"""

from __future__ import annotations

from commsim.calibrate.infer_settings import forced_choices
from commsim.calibrate.settings import read_settings

_INFO = "[1,0]<stdout>:test-nccl-efa-worker-0:21:21 [0] NCCL INFO "
PROTO = _INFO + 'NET/OFI Setting NCCL_PROTO to "simple"'
FORK = _INFO + "NET/OFI Setting FI_EFA_FORK_SAFE environment variable to 1"
CHUNK = "[platform_init:439] NET/OFI Setting NCCL_NVLSTREE_MAX_CHUNKSIZE to 512KiB"
NVLS = _INFO + "NET/OFI Disabling NVLS support due to NCCL version 21803"


def test_the_plugin_forcing_simple_is_a_forced_protocol_cited_by_line() -> None:
    settings = read_settings([FORK, PROTO], 15)
    proto = settings.env["NCCL_PROTO"]
    assert (proto.value, proto.source, proto.line) == ("simple", "NET/OFI plugin", 16)
    facts, algorithms, protocols, _ = forced_choices(settings, None, None)
    assert protocols == ("Simple",)
    assert algorithms is None
    assert facts["protocols"].evidence[0].line == 16


def test_other_variables_the_plugin_sets_are_kept_as_printed() -> None:
    """The chunk size is kept with its unit (the model does not use it); FI_* variables are not NCCL's."""
    settings = read_settings([CHUNK, FORK])
    assert {name: e.value for name, e in settings.env.items()} == {"NCCL_NVLSTREE_MAX_CHUNKSIZE": "512KiB"}


def test_the_plugin_disabling_nvls_removes_the_nvls_algorithms() -> None:
    settings = read_settings([NVLS], 40)
    nvls = settings.env["NCCL_NVLS_ENABLE"]
    assert (nvls.value, nvls.line) == ("0", 40)
    _, algorithms, _, _ = forced_choices(settings, None, None)
    assert algorithms is not None and "nvls" not in algorithms and "nvls_tree" not in algorithms
    assert "ring" in algorithms


def test_a_user_setting_of_the_same_name_is_kept_beside_the_plugin_line() -> None:
    """The plugin sets NCCL_PROTO only when unset: an export of Simple agrees and raises no conflict."""
    settings = read_settings(["export NCCL_PROTO=Simple", PROTO])
    assert settings.env["NCCL_PROTO"].source == "NET/OFI plugin"
    assert settings.warnings == ()
