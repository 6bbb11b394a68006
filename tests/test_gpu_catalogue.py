"""The GPU catalogue (commsim.hardware): its data, and the lookup of printed names.

Expected figures come from vendor documents, named in each test's docstring:
NVIDIA datasheets (per-GPU NVLink totals, bidirectional) and architecture
whitepapers (link counts), AMD product pages, and the PCI ID database
``pci.ids`` (https://github.com/pciutils/pciids). A per-direction figure is the
datasheet's bidirectional total halved.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from commsim.errors import UnknownNameError
from commsim.hardware import (
    ARCHS,
    CatalogueError,
    PciIdError,
    catalogue_markdown,
    find_gpu,
    find_gpu_in_text,
    get_gpu,
    gpu_arch,
    gpu_catalogue,
    parse_gpu_catalogue,
    parse_pci_id,
)

LOGS = Path(__file__).parent / "data" / "nccl-tests"
_RANK_LINE = re.compile(r"#\s+Rank\s+\d+ .*? device\s+\d+ \[[^\]]*\] (?P<model>.+?)\s*$")


def _printed_names() -> set[str]:
    names = set()
    for path in LOGS.glob("*.txt"):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            hit = _RANK_LINE.search(line)
            if hit and not line.startswith("##"):
                names.add(hit.group("model"))
    return names


# Every model name printed in the real and synthetic logs, with the entry it is
# (None: a generic name). Sources: the logs' own '## hardware' lines.
LOG_NAMES = {
    "NVIDIA H100 80GB HBM3": "h100_sxm",
    "NVIDIA H100": "h100_sxm_94gb",
    "NVIDIA Graphics Device": None,
    "AMD Instinct MI300X": "mi300x",
    "NVIDIA A10G": "a10g",
    "NVIDIA A10": "a10",
    "NVIDIA A100-SXM4-80GB": "a100_sxm",
    "A100-SXM4-40GB": "a100_sxm_40gb",
    "Tesla V100-SXM2-32GB": "v100_sxm2",
    "Tesla V100-SXM2-16GB": "v100_sxm2_16gb",
    "Tesla V100-PCIE-32GB": "v100_pcie",
    "NVIDIA GeForce RTX 4090": "rtx_4090",
    "NVIDIA GeForce RTX 2080 Ti": "rtx_2080_ti",
    "NVIDIA L40S": "l40s",
    "GeForce GTX 1080 Ti": "gtx_1080_ti",
}


def test_every_entry_loads_and_cites_a_source() -> None:
    catalogue = gpu_catalogue()
    assert len(catalogue) >= 55
    for key, spec in catalogue.items():
        assert spec.key == key
        assert "http" in spec.source or spec.source.startswith("As "), key
        assert spec.arch in ARCHS
        assert spec.names or spec.shared_names


def test_every_entry_is_found_by_its_own_names_and_pci_ids() -> None:
    for spec in gpu_catalogue().values():
        for name in spec.names:
            assert find_gpu(name).spec == spec, name
        for device in spec.pci_ids:
            vendor = {"nvidia": "10de", "amd": "1002"}[spec.vendor]
            assert find_gpu("NVIDIA Graphics Device", f"{vendor}:{device[2:]}").spec == spec


def test_every_name_printed_in_the_logs_is_known() -> None:
    printed = _printed_names()
    assert "NVIDIA H100 80GB HBM3" in printed
    assert printed == set(LOG_NAMES)


@pytest.mark.parametrize(("printed", "key"), sorted(LOG_NAMES.items(), key=lambda item: item[0]))
def test_log_names_resolve(printed: str, key: str | None) -> None:
    match = find_gpu(printed)
    assert (match.spec.key if match.spec else None) == key
    assert match.generic is (key is None)
    assert match.why


def test_nvidia_h100_is_an_sxm_part_with_18_nvlink4_links() -> None:
    """NVIDIA H100 datasheet: H100 SXM NVLink 900 GB/s; Hopper whitepaper: 18 NVLink 4 links.

    Plain 'NVIDIA H100' is what the 64/94 GB SXM5 parts of 4-GPU boards print (Snellius log).
    """
    for printed in ("NVIDIA H100", "NVIDIA H100 80GB HBM3"):
        spec = find_gpu(printed).spec
        assert spec is not None
        assert (spec.form, spec.arch, spec.fabric, spec.fabric_links) == ("sxm", "hopper", "nvlink4", 18)
        assert spec.fabric_Bps == 900e9 / 2
    assert [b.machine_class for b in get_gpu("h100_sxm_94gb").boards] == ["nvlink_mesh4"]


def test_generic_name_without_pci_id() -> None:
    match = find_gpu("NVIDIA Graphics Device")
    assert (match.spec, match.generic, match.candidates) == (None, True, ())
    assert "generic" in match.why


def test_mi300x_has_infinity_fabric_to_seven_peers() -> None:
    """AMD MI300X page: 896 GB/s aggregate Infinity Fabric (bidirectional), 7 links, 8-GPU OAM platform."""
    spec = find_gpu("AMD Instinct MI300X").spec
    assert spec is not None
    assert (spec.fabric, spec.fabric_links, spec.form) == ("xgmi_gpu", 7, "oam")
    assert 2 * spec.fabric_Bps == pytest.approx(896e9)
    assert [(b.machine_class, b.gpus) for b in spec.boards] == [("xgmi8", 8)]
    assert find_gpu("AMD Instinct MI300X VF").spec == spec


def test_v100_sxm2_has_six_nvlink2_links() -> None:
    """Tesla V100 datasheet: NVLink 300 GB/s; Volta whitepaper: 6 NVLink 2.0 links; DGX-1 cube mesh."""
    spec = find_gpu("Tesla V100-SXM2-32GB").spec
    assert spec is not None
    assert (spec.key, spec.fabric, spec.fabric_links, spec.memory_GB) == ("v100_sxm2", "nvlink2", 6, 32)
    assert 2 * spec.fabric_Bps == 300e9
    assert ("dgx1_cube", 8) in [(b.machine_class, b.gpus) for b in spec.boards]


def test_a10g_is_a_pcie_card_without_nvlink() -> None:
    """AWS EC2 G5: A10G, 24 GB; pci.ids 2237 'GA102GL [A10G]'."""
    spec = find_gpu("NVIDIA A10G").spec
    assert spec is not None
    assert (spec.key, spec.form, spec.fabric, spec.bridge, spec.memory_GB) == ("a10g", "pcie", None, None, 24)


def test_geforce_peer_to_peer() -> None:
    """RTX 4090: stock driver shows no P2P (RTX4090-PCIe-noP2P log); RTX 2080 Ti: topo -p2p NS (its logs)."""
    for printed in ("NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 2080 Ti", "NVIDIA GeForce RTX 5090"):
        spec = find_gpu(printed).spec
        assert spec is not None and spec.p2p_default is False, printed
    assert get_gpu("a100_pcie").p2p_default is True


@pytest.mark.parametrize(
    ("printed", "key", "form"),
    [
        ("NVIDIA H100 PCIe", "h100_pcie", "pcie"),
        ("NVIDIA H100 NVL", "h100_nvl", "nvl"),
        ("NVIDIA H100 80GB HBM3", "h100_sxm", "sxm"),
        ("NVIDIA H100", "h100_sxm_94gb", "sxm"),
        ("NVIDIA H20", "h20", "sxm"),
        ("NVIDIA H200", "h200_sxm", "sxm"),
        ("NVIDIA H200 NVL", "h200_nvl", "nvl"),
        ("NVIDIA GH200 480GB", "gh200", "superchip"),
        ("NVIDIA A800-SXM4-80GB", "a800_sxm", "sxm"),
        ("NVIDIA A100-SXM4-80GB", "a100_sxm", "sxm"),
        ("NVIDIA A100 80GB PCIe", "a100_pcie", "pcie"),
        ("NVIDIA B200", "b200", "sxm"),
        ("NVIDIA GB200", "gb200", "superchip"),
        ("NVIDIA GB10", "gb10", "superchip"),
        ("NVIDIA B300 SXM6 AC", "b300", "sxm"),
        ("AMD Instinct MI355X", "mi355x", "oam"),
        # names not listed, decided by the most specific pattern
        ("NVIDIA H100 PCIe 80GB", "h100_pcie", "pcie"),
        ("H100 NVL 94GB", "h100_nvl", "nvl"),
        ("NVIDIA H200 NVL 141GB", "h200_nvl", "nvl"),
        ("Tesla V100-SXM2-16GB-LS", "v100_sxm2_16gb", "sxm"),
    ],
)
def test_the_most_specific_entry_wins(printed: str, key: str, form: str) -> None:
    match = find_gpu(printed)
    assert match.spec is not None, match.why
    assert (match.spec.key, match.spec.form) == (key, form)


@pytest.mark.parametrize(
    ("key", "links", "bidirectional_Bps"),
    [
        # NVIDIA A100 datasheet: 600 GB/s; A800: 400 GB/s (TechPowerUp / NVIDIA China page)
        ("a100_sxm", 12, 600e9),
        ("a800_sxm", 8, 400e9),
        # NVIDIA H100 datasheet 900 GB/s; H800: 400 GB/s; H20: 900 GB/s
        ("h100_sxm", 18, 900e9),
        ("h800_sxm", 8, 400e9),
        ("h20", 18, 900e9),
        ("h200_sxm", 18, 900e9),
        # DGX B200 / GB200 NVL72 pages: 1.8 TB/s per GPU over 18 NVLink 5 links
        ("b200", 18, 1.8e12),
        ("gb200", 18, 1.8e12),
        # Tesla P100 datasheet: 160 GB/s over 4 NVLink links
        ("p100_sxm2", 4, 160e9),
    ],
)
def test_fabric_bandwidth_against_datasheets(key: str, links: int, bidirectional_Bps: float) -> None:
    spec = get_gpu(key)
    assert spec.fabric_links == links
    assert spec.fabric_Bps == pytest.approx(bidirectional_Bps / 2)


def test_a800_is_not_an_a100_and_h20_is_not_an_h200() -> None:
    assert find_gpu("NVIDIA A800-SXM4-80GB").spec != find_gpu("NVIDIA A100-SXM4-80GB").spec
    h20, h200 = find_gpu("NVIDIA H20").spec, find_gpu("NVIDIA H200").spec
    assert h20 is not None and h200 is not None
    assert (h20.key, h200.key, h20.memory_GB, h200.memory_GB) == ("h20", "h200_sxm", 96, 141)


def test_bridges_of_pcie_cards() -> None:
    """A100 PCIe: NVLink bridge 600 GB/s; A40/A6000: 112.5 GB/s (GA102 whitepaper); H200 NVL: 900 GB/s."""
    assert get_gpu("a100_pcie").bridge is not None
    assert 2 * get_gpu("a100_pcie").bridge.Bps == pytest.approx(600e9)  # type: ignore[union-attr]
    assert 2 * get_gpu("rtx_a6000").bridge.Bps == pytest.approx(112.5e9)  # type: ignore[union-attr]
    assert 2 * get_gpu("h200_nvl").bridge.Bps == pytest.approx(900e9)  # type: ignore[union-attr]
    assert get_gpu("h100_sxm").bridge is None


@pytest.mark.parametrize(
    ("printed", "pci_id", "key"),
    [
        ("NVIDIA Graphics Device", "0x2941", "gb200"),  # pci.ids 2941 'HGX GB200'
        ("NVIDIA Graphics Device", "10de:2901", "b200"),  # pci.ids 2901 'B200'
        ("NVIDIA Graphics Device", "0x233010DE", "h100_sxm"),  # nvidia-smi pci.device_id form
        ("Device 2901", None, "b200"),  # lspci without a pci.ids entry
        ("gfx942", "1002:74a1", "mi300x"),  # pci.ids 74a1 'Instinct MI300X'
        ("Some Future GPU", "0x2335", "h200_sxm"),  # unknown name: the ID decides
    ],
)
def test_pci_id_decides_for_generic_names(printed: str, pci_id: str | None, key: str) -> None:
    match = find_gpu(printed, pci_id)
    assert match.spec is not None, match.why
    assert match.spec.key == key
    assert key in match.why


def test_pci_ids_and_their_errors() -> None:
    assert parse_pci_id("0x2330") == (None, "0x2330")
    assert parse_pci_id("10DE:2330") == ("nvidia", "0x2330")
    assert parse_pci_id("0x74a11002") == ("amd", "0x74a1")
    with pytest.raises(PciIdError, match="cannot read PCI device ID"):
        find_gpu("NVIDIA Graphics Device", "H100")
    match = find_gpu("NVIDIA Graphics Device", "0xffff")
    assert (match.spec, match.generic) == (None, True)
    assert "not in the catalogue" in match.why


def test_unknown_and_ambiguous_names() -> None:
    match = find_gpu("Intel(R) Data Center GPU Max 1550")
    assert (match.spec, match.generic, match.candidates) == (None, False, ())
    assert match.why == "name 'Intel(R) Data Center GPU Max 1550' is not in the GPU catalogue"
    assert find_gpu("").generic
    shared = find_gpu("AMD Instinct MI250X/MI250")
    assert shared.spec is None
    assert {spec.key for spec in shared.candidates} == {"mi250x", "mi250"}


def test_case_white_space_and_vendor_prefix_do_not_matter() -> None:
    assert find_gpu("  nvidia   a100-sxm4-40gb ").spec == get_gpu("a100_sxm_40gb")
    assert find_gpu("NVIDIA A100-SXM4-40GB").spec == get_gpu("a100_sxm_40gb")
    assert find_gpu("h100_sxm").spec == get_gpu("h100_sxm")


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("slurm-gb200-207-171", "gb200"),  # the GB200 log's host
        ("bm-h100-01", "h100_sxm"),
        ("gd-8xh100ib-i128", "h100_sxm"),  # CoreWeave node type
        ("mi300x-node-3", "mi300x"),
        ("rtx4090-box", "rtx_4090"),
        ("thanos", None),
        ("compare-a100-h100", None),  # two models: no answer
        ("gh200-07", "gh200"),  # not h200
    ],
)
def test_model_tokens_in_host_names(text: str, key: str | None) -> None:
    spec = find_gpu_in_text(text)
    assert (spec.key if spec else None) == key


def test_gpu_arch_and_get_gpu() -> None:
    assert gpu_arch(get_gpu("b300")) == "blackwell_ultra"
    assert gpu_arch(find_gpu("AMD Instinct MI300X").spec) == "cdna3"
    assert gpu_arch(None) == "unknown"
    with pytest.raises(UnknownNameError, match="h100_sxm"):
        get_gpu("h100")


def test_markdown_lists_every_entry() -> None:
    table = catalogue_markdown()
    rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(rows) == len(gpu_catalogue()) + 1
    assert "| h100_sxm | H100 SXM5 80GB | hopper | sxm | nvlink4 x 18 (450 GB/s) |" in table


def test_board_classes_fit_the_form() -> None:
    for spec in gpu_catalogue().values():
        classes = {board.machine_class for board in spec.boards}
        if classes & {"nvswitch8", "nvswitch16", "dgx1_cube"}:
            assert spec.form == "sxm", spec.key
        if "nvl72" in classes:
            assert spec.form == "superchip", spec.key
        if "bridged_pairs" in classes:
            assert spec.bridge is not None, spec.key


_GOOD = """
gpus:
  - key: good_gpu
    vendor: nvidia
    name: Good
    arch: hopper
    form: sxm
    names: ["Good GPU"]
    fabric: nvlink4
    fabric_links: 18
    fabric_link_Bps: 25.0e+9
    pcie: pcie5_x16
    memory_GB: 80
    boards: [{class: nvswitch8, gpus: 8}]
    source: a datasheet (https://example.org/good.pdf)
"""


def _with(**changes: str) -> str:
    text = _GOOD
    for field, value in changes.items():
        text = re.sub(rf"(\n    {field}: )[^\n]*", lambda hit, v=value: hit.group(1) + v, text)
    return text


def test_a_good_document_parses() -> None:
    catalogue = parse_gpu_catalogue(_GOOD, "good.yaml")
    assert catalogue.gpus["good_gpu"].fabric_Bps == 450e9


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"fabric": "nvlink9"},
            "good.yaml:9:13: gpus.0 (good_gpu).fabric: unknown fabric link kind 'nvlink9'",
        ),
        ({"arch": "maxwell"}, "unknown nvidia arch 'maxwell'"),
        ({"source": "my memory"}, "source must give a URL"),
        ({"pcie": "pcie7_x16"}, "pcie 'pcie7_x16' must be a link kind"),
        ({"fabric_links": "null"}, "give fabric, fabric_links and fabric_link_Bps together"),
        ({"boards": "[{class: dgx2, gpus: 16}]"}, "unknown board class 'dgx2'"),
    ],
)
def test_bad_data_is_reported_with_entry_and_line(changes: dict[str, str], message: str) -> None:
    with pytest.raises(CatalogueError) as info:
        parse_gpu_catalogue(_with(**changes), "good.yaml")
    assert message in str(info.value)
    assert "good_gpu" in str(info.value)


def test_a_name_listed_by_two_entries_is_rejected() -> None:
    second = (
        _GOOD.split("gpus:\n", 1)[1]
        .replace("good_gpu", "other_gpu")
        .replace('"Good GPU"', '"NVIDIA Good GPU"')
    )
    with pytest.raises(
        CatalogueError, match="printed name 'good gpu' of other_gpu is already used by good_gpu"
    ):
        parse_gpu_catalogue(_GOOD + second, "two.yaml")


def test_gb10_is_a_one_gpu_superchip_without_gpu_links() -> None:
    """DGX Spark's GB10 (datasheet: 128 GB LPDDR5x at 273 GB/s, NVLink-C2C to its CPU, ConnectX-7 to a
    second Spark): one GPU per host, no GPU-to-GPU fabric, and a name like 'GB100' is not it."""
    spec = find_gpu("NVIDIA GB10").spec
    assert spec is not None and spec.key == "gb10"
    assert spec.memory_Bps == 273e9 and spec.fabric is None
    assert find_gpu("NVIDIA GB100").spec is None or find_gpu("NVIDIA GB100").spec.key != "gb10"
