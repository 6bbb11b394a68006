"""Kepler (K80) and CDNA1 (MI100), added to the catalogue for outside logs 131 and 135/136, get an
assumed network of their own era, not the newest one.

The default NIC per transport and GPU generation fell back to the newest (ib_ndr, roce_400g, 32 EFA
v2 per host) for generations missing from the tables (review): a two-host K80 or MI100 run would
be priced on 400 Gb/s InfiniBand.
"""

from __future__ import annotations

import pytest

from commsim.calibrate.infer_network import _kind_for


@pytest.mark.parametrize(
    ("transport", "arch", "kind"),
    [
        ("ib", "kepler", "ib_edr"),
        ("ib", "cdna1", "ib_hdr"),
        ("roce", "kepler", "roce_40g"),
        ("roce", "cdna1", "roce_100g"),
        ("efa", "kepler", "efa_v1"),
    ],
)
def test_old_generations_get_their_eras_network(transport: str, arch: str, kind: str) -> None:
    assert _kind_for(transport, arch)[0] == kind


def test_an_unknown_generation_still_gets_the_newest() -> None:
    """The fallback stays for generations nobody listed (an assumption the verdict withholds on)."""
    assert _kind_for("ib", "maxwell")[0] == "ib_ndr"
