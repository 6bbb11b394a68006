"""Catalogue entries for common NVIDIA and AMD desktop, workstation and older data-centre GPUs that logs name.

Users bring nccl-tests logs from GeForce, RTX workstation and Tesla cards the catalogue lacked; such a
log was refused ("GPU 'GeForce GTX 1080' is not in the catalogue"). For each entry added, the name a
log's device list prints must resolve to it and not to a sibling whose name contains it (RTX 3080 /
3080 Ti, 4070 Ti / 4070 Ti SUPER, 1660 / 1660 SUPER / 1660 Ti, RTX 4000 Ada / Quadro RTX 4000), and
one figure is checked against the page the entry cites. The page is named in each row (its address is
in the entry's ``source``, which the test checks); device IDs are from ``pci.ids`` (pciutils/pciids at
the commit ``gpus.yaml`` names).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from commsim.hardware import find_gpu, find_gpu_in_text, get_gpu
from tests.test_bad_inputs import run_cli

OUTSIDE = Path(__file__).parent / "data" / "outside"

# (printed name, entry, field, value, a fragment of the cited page's address)
FIGURES = [
    # Fudzilla on the GTX 1080 launch: 8 GB GDDR5X, 256 bits at 10 GHz, 320 GB/s
    ("GeForce GTX 1080", "gtx_1080", "memory_Bps", 320e9, "fudzilla.net/news/graphics/40701"),
    # Ocaholic, NVIDIA's official GTX 1070 figures: 8 GB GDDR5, 256 bits at 8 GHz, 256 GB/s
    ("NVIDIA GeForce GTX 1070", "gtx_1070", "memory_Bps", 256e9, "ocaholic.ch"),
    # TechPowerUp's TITAN Xp page (547.6 GB/s); Tom's Hardware: 12 GB GDDR5X at 11.4 Gb/s
    ("NVIDIA TITAN Xp", "titan_xp", "memory_Bps", 547.6e9, "techpowerup.com/gpu-specs/titan-xp"),
    # NVIDIA's Tesla P40 figures as a reseller lists them: 24 GB GDDR5, 346 GB/s, PCIe 3.0 x16
    ("Tesla P40", "tesla_p40", "memory_Bps", 346e9, "omegaco.ae"),
    # cpu-gpu.alldbin: Tesla P4, 8 GB GDDR5, 256 bits at 6 Gbps, PCIe 3.0 x16
    ("Tesla P4", "tesla_p4", "pcie", "pcie3_x16", "Tesla-P4-and-Tesla-P40-comparison"),
    # NewsNow on the TITAN V: 12 GB HBM2 on 3072 bits at 1.70 Gbps, 652.8 GB/s
    ("NVIDIA TITAN V", "titan_v", "memory_Bps", 652.8e9, "newsnowgr.com"),
    # Guru3D's TU116 table: GTX 1660 SUPER 14 Gbps on 192 bits = 336 GB/s
    ("NVIDIA GeForce GTX 1660 SUPER", "gtx_1660_super", "memory_Bps", 336e9, "guru3d.com/review/gigabyte"),
    # Hardcore Games: GTX 1660 Ti 6 GB GDDR6, 192 bits, 288 GB/s
    ("NVIDIA GeForce GTX 1660 Ti", "gtx_1660_ti", "memory_Bps", 288e9, "hardcoregames.biz"),
    # cputronic's GTX 1660 page: bus interface PCIe 3.0 x16
    ("NVIDIA GeForce GTX 1660", "gtx_1660", "pcie", "pcie3_x16", "nvidia-geforce-gtx-1660"),
    # cpu-gpu.alldbin: RTX 2080, 256 bits at 14 Gbps, 448.0 GB/s, PCIe 3.0 x16
    ("NVIDIA GeForce RTX 2080", "rtx_2080", "memory_Bps", 448e9, "GeForce-RTX-2080-and-Extreme-Graphics"),
    # TweakTown: 'GeForce RTX 2080 SUPER ... 496GB/sec'
    ("NVIDIA GeForce RTX 2080 SUPER", "rtx_2080_super", "memory_Bps", 496e9, "tweaktown.com/news/74545"),
    # Guru3D on the RTX 20 announcement: RTX 2070, 8 GB GDDR6 on 256 bits, 448 GB/s
    ("NVIDIA GeForce RTX 2070", "rtx_2070", "memory_Bps", 448e9, "guru3d.com/story/nvidia-announces"),
    # cpu-gpu.alldbin: RTX 3060 12 GB, 192 bits at 15 Gbps, 360.0 GB/s, PCIe 4.0 x16
    ("NVIDIA GeForce RTX 3060", "rtx_3060", "memory_Bps", 360e9, "GeForce-RTX-3060-12-GB"),
    # Tom's Hardware's RTX 30 table: RTX 3070 448 GBps
    ("NVIDIA GeForce RTX 3070", "rtx_3070", "memory_Bps", 448e9, "tomshardware.com/uk/news/nvidia-driver"),
    # Tom's Hardware's RTX 30 table and HotHardware: RTX 3080 10 GB at 19 Gbps on 320 bits, 760 GB/s
    ("NVIDIA GeForce RTX 3080", "rtx_3080", "memory_Bps", 760e9, "hothardware.com/news/nvidia"),
    # SvětHardware: RTX 3080 Ti 12 GB on 384 bits at 19 GT/s, 912 GB/s
    ("NVIDIA GeForce RTX 3080 Ti", "rtx_3080_ti", "memory_Bps", 912e9, "svethardware.cz/geforce-rtx-3080-ti"),
    # NVIDIA's RTX A4000 datasheet figures (reseller copy): 448 GB/s, PCIe 4.0 x16
    ("NVIDIA RTX A4000", "rtx_a4000", "memory_Bps", 448e9, "ecer.com"),
    # cputronic's RTX A4500 page: 20 GB GDDR6 on 320 bits, 640.0 GB/s, PCIe 4.0 x16
    ("NVIDIA RTX A4500", "rtx_a4500", "memory_Bps", 640e9, "cputronic.com/fr/gpu/nvidia-rtx-a4500"),
    # SvětHardware's RTX 40 / 40 SUPER table: 504, 672, 717 (22.4 Gbps x 256 bits), 736 GB/s
    ("NVIDIA GeForce RTX 4070 Ti", "rtx_4070_ti", "memory_Bps", 504e9, "svethardware.cz/nvidia"),
    ("NVIDIA GeForce RTX 4070 Ti SUPER", "rtx_4070_ti_super", "memory_Bps", 672e9, "svethardware.cz/nvidia"),
    ("NVIDIA GeForce RTX 4080", "rtx_4080", "memory_Bps", 716.8e9, "svethardware.cz/nvidia"),
    ("NVIDIA GeForce RTX 4080 SUPER", "rtx_4080_super", "memory_Bps", 736e9, "svethardware.cz/nvidia"),
    # TopCPU (TechPowerUp-style data): RTX 4000 Ada 360 GB/s, RTX 5000 Ada 576 GB/s, both PCIe 4.0 x16
    ("NVIDIA RTX 4000 Ada Generation", "rtx_4000_ada", "memory_Bps", 360e9, "topcpu.net"),
    ("NVIDIA RTX 5000 Ada Generation", "rtx_5000_ada", "pcie", "pcie4_x16", "topcpu.net"),
    # BigGo on the RTX 5080 launch: 16 GB GDDR7 at 30 Gbps, 960 GB/s
    ("NVIDIA GeForce RTX 5080", "rtx_5080", "memory_Bps", 960e9, "biggo.com"),
    # NVIDIA's Quadro RTX 8000 figures (Leadtek reseller): 48 GB, 672 GB/s, PCI Express 3.0 x16
    ("Quadro RTX 8000", "quadro_rtx_8000", "memory_Bps", 672e9, "maychudoanhnghiep.vn"),
    # Chip.pl: Quadro RTX 6000, 24 GB GDDR6 on 384 bits, PCIe 3.0 x16
    ("Quadro RTX 6000", "quadro_rtx_6000", "pcie", "pcie3_x16", "chip.pl/2018/10"),
    # Tom's Hardware France: desktop RTX A2000, 6 GB on 192 bits, 288 GB/s, PCIe 4.0 x16
    ("NVIDIA RTX A2000", "rtx_a2000", "memory_Bps", 288e9, "tomshardware.fr"),
    # NVIDIA's A16 figures (reseller): 4 x 16 GB GDDR6, 4 x 200 GB/s, PCIe Gen4 x16
    ("NVIDIA A16", "a16", "memory_Bps", 200e9, "panchaea.com"),
    # Tom's Hardware on the China-market cards: L20 48 GB 864 GB/s, L2 24 GB 300 GB/s
    ("NVIDIA L20", "l20", "memory_Bps", 864e9, "tomshardware.com/pc-components/gpus/new-nvidia"),
    ("NVIDIA L2", "l2", "memory_Bps", 300e9, "tomshardware.com/pc-components/gpus/new-nvidia"),
    # Sezonuyakala's RX 7900 table: 20 GB at 20 Gbps on 320 bits, 800 GB/s
    ("AMD Radeon RX 7900 XT", "rx_7900_xt", "memory_Bps", 800e9, "sezonuyakala.com"),
    # Multiplayer.it: RX 9070 XT and 9070, 16 GB at 20 Gbps on 256 bits, 640 GB/s, PCIe 5.0 x16
    ("AMD Radeon RX 9070 XT", "rx_9070_xt", "pcie", "pcie5_x16", "multiplayer.it"),
    ("AMD Radeon RX 9070", "rx_9070_xt", "memory_Bps", 640e9, "multiplayer.it"),
]


@pytest.mark.parametrize(("printed", "key", "field", "value", "page"), FIGURES, ids=[r[1] for r in FIGURES])
def test_printed_name_resolves_and_one_figure_is_the_cited_pages(
    printed: str, key: str, field: str, value: float | str, page: str
) -> None:
    match = find_gpu(printed)
    assert match.spec is not None, match.why
    assert match.spec.key == key
    assert getattr(match.spec, field) == (pytest.approx(value) if isinstance(value, float) else value)
    assert page in match.spec.source
    # older drivers print the name without the vendor word, newer ones with it
    vendor = "AMD " if match.spec.vendor == "amd" else "NVIDIA "
    bare = printed.removeprefix(vendor)
    assert find_gpu(bare).spec == match.spec
    assert find_gpu(vendor + bare).spec == match.spec


@pytest.mark.parametrize(
    ("printed", "key"),
    [
        # names that contain a sibling's: each resolves to its own entry (None: not catalogued)
        ("NVIDIA GeForce GTX 1080 Ti", "gtx_1080_ti"),
        ("NVIDIA GeForce GTX 1070 Ti", None),
        ("NVIDIA GeForce GTX 1080 with Max-Q Design", None),
        ("NVIDIA GeForce GTX 1660 Ti with Max-Q Design", None),
        ("NVIDIA GeForce RTX 2080 Ti", "rtx_2080_ti"),
        ("NVIDIA GeForce RTX 2070 SUPER", None),
        ("NVIDIA GeForce RTX 3060 Ti", None),
        ("NVIDIA GeForce RTX 3060 Laptop GPU", None),
        ("NVIDIA GeForce RTX 3070 Ti", None),
        ("NVIDIA GeForce RTX 3080 Ti Laptop GPU", None),
        ("NVIDIA GeForce RTX 4070", None),
        ("NVIDIA GeForce RTX 4080 Laptop GPU", None),
        ("NVIDIA GeForce RTX 4090", "rtx_4090"),
        ("NVIDIA GeForce RTX 5090", "rtx_5090"),
        ("Quadro RTX 4000", None),
        ("Quadro RTX 5000", None),
        ("NVIDIA RTX 4000 SFF Ada Generation", None),
        ("NVIDIA RTX 6000 Ada Generation", "rtx_6000_ada"),
        ("NVIDIA RTX A5000", "rtx_a5000"),
        ("TITAN X (Pascal)", None),
        ("TITAN RTX", "titan_rtx"),
        ("Tesla P100-PCIE-16GB", "p100_pcie"),
        ("Tesla T4", "t4"),
        ("NVIDIA A2", None),
        ("NVIDIA L4", "l4"),
        ("NVIDIA L40", "l40"),
        ("NVIDIA RTX 6000D", "rtx_6000d"),
        ("AMD Radeon RX 7900 XTX", "rx_7900_xtx"),
        ("AMD Radeon RX 9070 GRE", None),
        ("NVIDIA RTX A2000 Laptop GPU", None),
        # names not listed: the most specific pattern decides
        ("GeForce RTX 3080 12GB", "rtx_3080"),
        ("NVIDIA GeForce RTX 4070 Ti SUPER 16GB", "rtx_4070_ti_super"),
        ("NVIDIA GeForce RTX 4080 SUPER 16GB", "rtx_4080_super"),
    ],
)
def test_siblings_are_told_apart(printed: str, key: str | None) -> None:
    match = find_gpu(printed)
    assert (match.spec.key if match.spec else None) == key, match.why


@pytest.mark.parametrize(
    ("host", "key"),
    [
        # a host name's model token is weak evidence; a sibling's longer token wins
        ("gtx1080-node", "gtx_1080"),
        ("gtx1080ti-node", "gtx_1080_ti"),
        ("rtx2080super-01", "rtx_2080_super"),
        ("rtx2080ti-01", "rtx_2080_ti"),
        ("gpu-3080-7", "rtx_3080"),
        ("rtx3080ti", "rtx_3080_ti"),
        ("rtx4070ti-box", "rtx_4070_ti"),
        ("rtx4070tisuper-box", "rtx_4070_ti_super"),
        ("rtx4080super", "rtx_4080_super"),
        ("gtx1660super-wsl", "gtx_1660_super"),
        ("gtx1660ti-wsl", "gtx_1660_ti"),
        ("rtx6000ada-01", None),  # as before: 6000ada needs no letter before it
    ],
)
def test_host_tokens_of_siblings(host: str, key: str | None) -> None:
    spec = find_gpu_in_text(host)
    assert (spec.key if spec else None) == key


def test_pci_ids_decide_for_a_generic_name() -> None:
    """pci.ids: 1b80 'GP104 [GeForce GTX 1080]', 21c4 'TU116 [GeForce GTX 1660 SUPER]', 2705 'AD103 [GeForce
    RTX 4070 Ti SUPER]', 2c02 'GB203 [GeForce RTX 5080]'."""
    pairs = [("10de:1b80", "gtx_1080"), ("0x21c4", "gtx_1660_super"), ("0x2705", "rtx_4070_ti_super")]
    for device, key in pairs:
        assert find_gpu("NVIDIA Graphics Device", device).spec == get_gpu(key)
    assert find_gpu("Device 2c02").spec == get_gpu("rtx_5080")
    # pci.ids 7550 'Navi 48 [Radeon RX 9070/9070 XT/9070 GRE]'; 744c stays the RX 7900 XTX entry's
    assert find_gpu("AMD Radeon Graphics", "1002:7550").spec == get_gpu("rx_9070_xt")
    assert find_gpu("AMD Radeon Graphics", "1002:744c").spec == get_gpu("rx_7900_xtx")
    # IDs shared by two products are claimed by neither: Quadro RTX 6000/8000 (1e30), A2/A16 (25b6)
    assert find_gpu("NVIDIA Graphics Device", "0x1e30").spec is None
    assert find_gpu("NVIDIA Graphics Device", "0x25b6").spec is None


def test_bridges_of_the_new_cards() -> None:
    """TechPowerUp's and Tom's Hardware's Turing articles: TU104 (RTX 2080) has one x8 NVLink link, 25 GB/s
    per direction (50 GB/s between two cards); TU106 (RTX 2070) has none. The RTX A4500's bridge is the
    A5000's (GA102 whitepaper: 112.5 GB/s between two GPUs; marked UNCERTAIN in the entry)."""
    rtx_2080 = get_gpu("rtx_2080")
    assert rtx_2080.bridge is not None and 2 * rtx_2080.bridge.Bps == pytest.approx(50e9)
    assert rtx_2080.bridge.fabric == "nvlink2"
    assert get_gpu("rtx_2070").bridge is None
    # Leadtek's Quadro RTX 8000 sheet: 'NVLink Interconnect 100 GB/s' (TU102: two x8 links)
    quadro = get_gpu("quadro_rtx_8000").bridge
    assert quadro is not None and (quadro.links, 2 * quadro.Bps) == (2, pytest.approx(100e9))
    a4500 = get_gpu("rtx_a4500")
    assert a4500.bridge is not None and 2 * a4500.bridge.Bps == pytest.approx(112.5e9)
    assert "UNCERTAIN bridge" in a4500.notes
    for key in ("gtx_1080", "rtx_3080", "rtx_4080", "rtx_5080", "titan_v", "tesla_p40"):
        assert get_gpu(key).bridge is None and get_gpu(key).fabric is None, key


def test_geforce_peer_to_peer_follows_its_generation() -> None:
    """Pascal GeForce as gtx_1080_ti (on); Turing, Ampere, Ada and Blackwell GeForce and the TITAN V as
    rtx_2080_ti / rtx_3090 / rtx_4090 / rtx_5090 (off); workstation and Tesla cards on. All marked
    UNCERTAIN in the entries (no vendor statement)."""
    assert get_gpu("gtx_1080").p2p_default is get_gpu("gtx_1080_ti").p2p_default is True
    for key in ("gtx_1660_super", "rtx_2080", "rtx_3080", "rtx_4070_ti_super", "rtx_5080", "titan_v"):
        assert get_gpu(key).p2p_default is False, key
    for key in ("rtx_a4000", "rtx_4000_ada", "tesla_p40"):
        assert get_gpu(key).p2p_default is True, key


@pytest.mark.parametrize(
    ("name", "gpu"),
    [
        # 2 x 'GeForce GTX 1080', one process -g 2, NCCL 2.5.7 ported to macOS (README of llv23's port)
        (
            "208_GTX1080-2gpu-g2-macOS-NCCL257port-reducescatter-oldformat-busbw-eq-algbw.txt",
            "GeForce GTX 1080",
        ),
        # one 'NVIDIA GeForce GTX 1660 SUPER' under WSL, one rank (a Chinese notes page)
        (
            "242_GTX1660SUPER-WSL-1gpu-1rank-NCCL2234-TRACE-allreduce-inplace-0.15us.txt",
            "GeForce GTX 1660 SUPER",
        ),
    ],
)
def test_the_outside_logs_refused_for_these_gpus_now_validate(
    name: str, gpu: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both were refused as "GPU '...' is not in the catalogue"; they validate without options now."""
    code, out, err = run_cli(["validate", str(OUTSIDE / name)], capsys)
    assert code == 0, err
    assert "not in the catalogue" not in out + err
    assert gpu in out
    assert "verdict:" in out


@pytest.mark.parametrize("printed", ["NVIDIA TITAN V JHH Special Edition", "NVIDIA TITAN V CEO Edition"])
def test_the_32_gb_titan_v_editions_are_not_the_12_gb_titan_v(printed: str) -> None:
    """The TITAN V 'JHH Special Edition' / 'CEO Edition' is another card (32 GB HBM2, pci.ids 1dba,
    not 1d81): the pattern ``\\bTITAN V\\b`` took it as the 12 GB, 652.8 GB/s TITAN V (review). It is
    not in the catalogue, so it matches nothing, while the plain name still does."""
    assert find_gpu(printed).spec is None
    assert find_gpu("NVIDIA TITAN V").spec is not None
