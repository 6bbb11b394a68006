# ruff: noqa: E501  (the logs are quoted as nccl-tests prints them)
"""GPUs that public logs of out-of-sample probes 3, 6, 9 and 10 name and the catalogue lacked.

Each log below was refused as "GPU '...' is not in the catalogue" (or, for 102, its GPU could not be
named with --gpu). The figures asserted are the ones the entries cite in ``gpus.yaml``; each test
restates them and their source. The logs are quoted inline (the parts that name the GPU).
"""

from __future__ import annotations

from commsim.calibrate.inference import RunOptions, infer_run
from commsim.calibrate.parser import parse_nccl_tests
from commsim.hardware import find_gpu

# 187: gist kwen2501/89c28b6d12045b45ccf7e33816af2713, NCCL 2.18.5 on Meta's host devgpu009: 4 x
# "NVIDIA PG509-210", one process of 4 threads, one size (the stored copy lost its column alignment).
PG509 = """\
# nThread 4 nGpus 1 minBytes 4218900 maxBytes 4218900 step: 1048576(bytes) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
# Rank 0 Group 0 Pid 348055 on devgpu009 device 0 [0x11] NVIDIA PG509-210
# Rank 1 Group 0 Pid 348055 on devgpu009 device 1 [0x12] NVIDIA PG509-210
# Rank 2 Group 0 Pid 348055 on devgpu009 device 2 [0x48] NVIDIA PG509-210
# Rank 3 Group 0 Pid 348055 on devgpu009 device 3 [0x49] NVIDIA PG509-210
NCCL version 2.18.5+cuda12.0
#
# out-of-place in-place
# size count type redop root time algbw busbw #wrong time algbw busbw #wrong
# (B) (elements) (us) (GB/s) (GB/s) (us) (GB/s) (GB/s)
4218900 1054725 float sum -1 1011.4 4.17 6.26 0 993.6 4.25 6.37 0
# Out of bounds values : 0 OK
# Avg bus bandwidth : 6.31306
#
"""

# 193: an rccl-tests README for MI300A nodes (index id 59136671922), "CPX Affinity: INTER_SOCKET":
# two CPX partitions of two MI300A packages of host ppac-pl1-s25-40, condensed by its author.
MI300A = """\
#  Rank  0 Group  0 on ppac-pl1-s25-40 device  0 [0001:01:00] AMD Instinct MI300A
#  Rank  1 Group  0 on ppac-pl1-s25-40 device  1 [0002:01:00] AMD Instinct MI300A
#       size         count    type   redop      time   algbw   busbw  #wrong
           4             1   float     sum      9.79    0.00    0.00       0
     1048576        262144   float     sum     28.06   37.36   37.36       0
  1073741824     268435456   float     sum  12838.20   83.64   83.64       0
# Avg bus bandwidth    : 26.22 GB/s
"""

# 160: NVIDIA/nccl-tests PR 345, comment by jasl 2025-09-17: one rank on a Jetson AGX Thor.
THOR = """\
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 1 minBytes 33554432 maxBytes 33554432 step: 1048576(bytes) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid     72 on  jasl-thor device  0 [0000:01:00] NVIDIA Thor
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
    33554432       8388608     float     sum      -1    297.1  112.93    0.00      0     0.25  135710.54    0.00      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 0
#
# Collective test concluded: all_reduce_perf
"""


def _gpu_fact(text: str, name: str) -> str:
    log = parse_nccl_tests(text, name)
    return str(infer_run(log, text, RunOptions()).facts["gpu"].value)


def test_pg509_210_is_the_a100_sxm4_80gb_it_is_the_board_number_of() -> None:
    """187: 'NVIDIA PG509-210' was 'not in the catalogue'. NVIDIA's open GPU kernel modules README
    (560.31.02, 'Compatible GPUs') lists 'NVIDIA PG509-210 | 20B2 10DE 1625': device 20b2, the A100 SXM4
    80GB, on NVIDIA's subsystem 1625. So the A100 SXM4 80GB's figures: 12 NVLink 3 links of 25 GB/s per
    direction (GA100 whitepaper), 2.039 TB/s of HBM2e (A100 datasheet)."""
    spec = find_gpu("NVIDIA PG509-210").spec
    assert spec is not None
    assert (spec.key, spec.fabric, spec.fabric_links, spec.fabric_link_Bps, spec.memory_Bps) == (
        "a100_sxm",
        "nvlink3",
        12,
        25e9,
        2.039e12,
    )
    assert "0x20b2" in spec.pci_ids
    assert find_gpu("PG509-210").spec == spec  # older drivers print no vendor word
    assert _gpu_fact(PG509, "187.txt") == "A100 SXM4 80GB"


def test_mi300a_has_the_apus_hbm3_and_six_infinity_fabric_links() -> None:
    """193: 'AMD Instinct MI300A' was 'not in the catalogue'. AMD's MI300A page: 128 GB HBM3 at 5.3 TB/s.
    LLNL's El Capitan hardware overview: 4 APUs per node, each 'fully connected to its peers using two
    AMD Infinity Fabric links with 256GB/s of bandwidth': 2 links x 3 peers = 6 links, 256 GB/s per
    pair both ways / 2 links / 2 directions = 64 GB/s per link per direction. CPU in the package: no
    PCIe host link; no board (the 4-APU xGMI mesh is no board class); pci.ids 74a0."""
    spec = find_gpu("AMD Instinct MI300A").spec
    assert spec is not None
    assert (spec.key, spec.arch, spec.form, spec.pcie, spec.boards) == (
        "mi300a",
        "cdna3",
        "superchip",
        None,
        (),
    )
    assert (spec.memory_GB, spec.memory_Bps) == (128, 5.3e12)
    assert (spec.fabric, spec.fabric_links, spec.fabric_link_Bps) == ("xgmi_gpu", 6, 64e9)
    assert 2 * spec.fabric_link_Bps * 2 == 256e9  # LLNL's per-pair figure, both directions
    assert find_gpu("AMD Instinct MI300X").spec.key == "mi300x"  # type: ignore[union-attr]
    assert _gpu_fact(MI300A, "193.txt") == "Instinct MI300A (APU)"


def test_jetson_thor_is_one_integrated_blackwell_gpu_on_273_gbps_lpddr5x() -> None:
    """160: 'NVIDIA Thor' was 'not in the catalogue'. NVIDIA's Jetson Thor page: Blackwell GPU, 128 GB of
    256-bit LPDDR5X at 273 GB/s shared with the CPU; one GPU per host, no PCIe to its CPU."""
    spec = find_gpu("NVIDIA Thor").spec
    assert spec is not None
    assert (spec.key, spec.arch, spec.pcie, spec.fabric, spec.memory_GB, spec.memory_Bps) == (
        "thor",
        "blackwell",
        None,
        None,
        128,
        273e9,
    )
    assert [(b.machine_class, b.gpus) for b in spec.boards] == [("nvl_superchip", 1)]
    assert _gpu_fact(THOR, "160.txt") == "Jetson Thor (T5000 module GPU)"


def test_rtx_6000d_is_a_pcie_gen5_card_of_84_gb() -> None:
    """60: 'NVIDIA RTX 6000D' was 'not in the catalogue'. No NVIDIA datasheet: press on its teardown
    (Weekly Post) and Geekbench entry (Overclockers.ru) give 84 GB = 28 x 3 GB GDDR7 on 448 bits, the
    RTX PRO 6000 Blackwell Server Edition's board; PCIe Gen5 x16 as that card. The bandwidth is not
    published, so none is recorded."""
    spec = find_gpu("NVIDIA RTX 6000D").spec
    assert spec is not None
    assert (spec.key, spec.arch, spec.pcie, spec.fabric, spec.bridge) == (
        "rtx_6000d",
        "blackwell",
        "pcie5_x16",
        None,
        None,
    )
    assert spec.memory_GB == 28 * 3
    assert spec.memory_Bps is None
    pro = find_gpu("NVIDIA RTX PRO 6000 Blackwell Server Edition").spec
    assert pro is not None and pro.key == "rtx_pro_6000_blackwell"


def test_strix_halo_by_name_and_by_its_pci_id() -> None:
    """102 (rccl PR 2075, Strix Halo gfx1151) names no GPU and '--gpu "Radeon 8060S"' was 'not in the GPU
    catalogue'. AMD's Ryzen AI Max+ 395 page: Radeon 8060S, LPDDR5X-8000 on 256 bits = 8000e6 x 32 B =
    256 GB/s, up to 128 GB shared. ROCm's generic 'AMD Radeon Graphics' is settled by pci.ids 1586
    'Strix Halo [Radeon Graphics / Radeon 8050S Graphics / Radeon 8060S Graphics]'."""
    spec = find_gpu("Radeon 8060S").spec
    assert spec is not None
    assert (spec.key, spec.pcie, spec.memory_GB, spec.memory_Bps) == ("strix_halo", None, 128, 8000e6 * 32)
    generic = find_gpu("AMD Radeon Graphics", pci_id="0x1586")
    assert generic.generic and generic.spec == spec
    assert find_gpu("AMD Radeon Graphics").spec is None  # without the ID it stays unknown
