"""The lookups of forced settings live beside RunSettings in settings.py (review nit 3).

``p2p_disabled`` and ``shm_disabled`` read one ``NCCL_*`` variable from a log's settings, as
``setting``/``setting_value``/``split_mask`` do; inference (infer_settings, infer_topology) and the
verdict's causes (verdict_causes) import them from there. NCCL's env docs: ``NCCL_P2P_DISABLE=1``
turns the P2P transport off (NVLink and PCIe peer-to-peer), ``NCCL_SHM_DISABLE=1`` the SHM transport.
"""

from __future__ import annotations

import pytest

from commsim.calibrate import infer_settings, settings
from commsim.calibrate.settings import p2p_disabled, read_settings, shm_disabled


@pytest.mark.parametrize(
    ("line", "p2p_off", "shm_off"),
    [
        ("export NCCL_P2P_DISABLE=1", 1, None),
        ("export NCCL_P2P_DISABLE=0", None, None),
        ("mpirun -x NCCL_SHM_DISABLE=1 -x NCCL_P2P_DISABLE=1 ./build/all_reduce_perf", 1, 1),
        ("export NCCL_SHM_DISABLE=1", None, 1),
    ],
)
def test_the_lookups_read_the_forced_setting(line: str, p2p_off: int | None, shm_off: int | None) -> None:
    """Each gives the setting's evidence (at its line) when it is set to 1, else None."""
    found = read_settings([line])
    p2p, shm = p2p_disabled(found), shm_disabled(found)
    assert (p2p and p2p.line, shm and shm.line) == (p2p_off, shm_off)


def test_one_home_for_the_lookups() -> None:
    """settings.py exports them; infer_settings no longer does (it imports them)."""
    assert {"p2p_disabled", "shm_disabled"} <= set(settings.__all__)
    assert not {"p2p_disabled", "shm_disabled"} & set(infer_settings.__all__)
