"""Tests of calibration (commsim.calibrate.fit).

The logs here are synthetic: the NCCL model itself predicts every size with
chosen "true" parameters, a seeded multiplicative noise is applied, and the
fit must find the true parameters again, within its own 3-sigma and within
a few per cent.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from commsim.algorithms.base import Problem
from commsim.calibrate.fit import FITTABLE, NETWORK_KINDS, Calibration, fit
from commsim.calibrate.infer_topology import replace_p2p
from commsim.calibrate.parser import Device as RankDevice
from commsim.calibrate.parser import NcclTestsLog, NcclTestsRow
from commsim.calibrate.validate import Validation, validate_log
from commsim.collectives import busbw_factor, get_collective
from commsim.errors import CalibrationError, UnknownNameError
from commsim.nccl.model import predict
from commsim.nccl.params import NcclParams
from commsim.topology import Device, PhysicalLink, Topology, get_topology, parse_topology

ALL_SIZES = [2**k for k in range(3, 34)]  # 8 B to 8 GiB, as nccl-tests -b 8 -e 8G -f 2
TRUE = NcclParams(
    efficiency={"nvlink3": 0.70, "infiniband": 0.82}, latency_scale=1.3, launch_s=4.0e-6, nvls_efficiency=0.50
)


def synthetic_log(
    topology: Topology,
    params: NcclParams,
    *,
    collective: str = "all_reduce",
    sizes: list[int] = ALL_SIZES,
    gpus_per_thread: int = 1,
    noise: float = 0.02,
    seed: int = 0,
) -> NcclTestsLog:
    """An nccl-tests log of ``topology`` whose times the model predicts with ``params``, times noise."""
    ranks = tuple(topology.gpus)
    coll = get_collective(collective)
    rng = np.random.default_rng(seed)
    rows = []
    for line, nbytes in enumerate(sizes, start=1):
        problem = Problem(topology, ranks, coll, float(nbytes))
        time_s = predict(problem, params, gpus_per_thread).time_s * math.exp(rng.normal(0.0, noise))
        algbw = nbytes / time_s
        busbw = algbw * busbw_factor(coll, len(ranks))
        rows.append(
            NcclTestsRow(
                nbytes,
                nbytes // 4,
                "float",
                "sum",
                -1,
                time_s,
                algbw,
                busbw,
                0,
                time_s,
                algbw,
                busbw,
                0,
                line,
            )
        )
    devices = [
        RankDevice(i, f"host{topology.device(r).box}", i % 8, topology.device(r).model or "GPU")
        for i, r in enumerate(ranks)
    ]
    hosts = list(dict.fromkeys(d.host for d in devices))
    return NcclTestsLog(
        f"synthetic {topology.name} {collective}",
        collective,
        len(ranks),
        devices,
        hosts,
        len(hosts),
        [devices[0].model],
        None,
        None,
        {"nGpus": gpus_per_thread},
        rows,
        None,
        None,
        [],
    )


def synthetic(topology: Topology, params: NcclParams = TRUE, **kwargs: object) -> Validation:
    """:func:`synthetic_log`, validated against ``topology``."""
    return validate_log(synthetic_log(topology, params, **kwargs), "", topology=topology)  # type: ignore[arg-type]


def error(summary: dict[str, dict[str, float | int | None]], which: str = "median_abs_error") -> float:
    """One figure of a before/after summary over all sizes."""
    value = summary["all"][which]
    assert value is not None
    return float(value)


@pytest.fixture(scope="module")
def a100() -> Topology:
    return get_topology("dgx_a100")


@pytest.fixture(scope="module")
def cluster() -> Topology:
    return get_topology("cluster", box="dgx_a100", nodes=2, nic="ib_edr")


@pytest.fixture(scope="module")
def two_machines(a100: Topology, cluster: Topology) -> Calibration:
    """One DGX A100 (``-g 8``: one thread drives 8 GPUs) and two of them on EDR InfiniBand (``-g 1``).

    EDR (100 Gbit/s) is slow enough that NCCL's 2-node tree is network-bound,
    so the fit sees the NICs' efficiency.
    """
    return fit([synthetic(a100, gpus_per_thread=8, seed=1), synthetic(cluster, seed=2)], across_machines=True)


def test_recovers_true_parameters_within_three_sigma(two_machines: Calibration) -> None:
    expected = {  # the EDR NICs' efficiency comes back under their kind: one NIC generation is fitted alone
        "efficiency.nvlink3": 0.70,
        "efficiency.ib_edr": 0.82,
        "latency_scale": 1.3,
        "launch_s": 4.0e-6,
    }
    assert set(two_machines.fitted) == set(expected)
    for name, true in expected.items():
        value, sigma = two_machines.fitted[name]
        assert 0 < sigma < 0.05 * true, name
        assert abs(value - true) < 3 * sigma, (name, value, sigma)
        assert value == pytest.approx(true, rel=0.05), name


def test_efficiencies_are_tight_and_errors_fall_to_the_noise(two_machines: Calibration) -> None:
    for name, true in (("efficiency.nvlink3", 0.70), ("efficiency.ib_edr", 0.82)):
        value, sigma = two_machines.fitted[name]
        assert sigma < 0.01 and value == pytest.approx(true, rel=0.02)
    assert error(two_machines.before) > 0.1
    assert error(two_machines.after) < 0.03  # 2 % noise: median |error| ~ 1.3 %
    assert "pcie" not in two_machines.params.efficiency  # not fitted: the default stays in force


def test_residuals_per_log_and_size(two_machines: Calibration) -> None:
    assert list(two_machines.residuals) == [
        "synthetic dgx_a100 all_reduce",
        "synthetic cluster_2xdgx_a100 all_reduce",
    ]
    for rows in two_machines.residuals.values():
        assert [r.nbytes for r in rows] == ALL_SIZES
        assert all(abs(r.log_residual) < 0.1 for r in rows)
    log_residuals = [r.log_residual for rows in two_machines.residuals.values() for r in rows]
    assert np.std(log_residuals) == pytest.approx(0.02, rel=0.3)


def test_noise_free_fit_is_exact(a100: Topology) -> None:
    calibration = fit(
        [synthetic(a100, gpus_per_thread=8, noise=0.0)],
        fit=["efficiency.nvlink3", "latency_scale"],
        base=NcclParams(launch_s=TRUE.launch_s),
    )
    assert calibration.fitted["efficiency.nvlink3"][0] == pytest.approx(0.70, rel=1e-6)
    assert calibration.fitted["latency_scale"][0] == pytest.approx(1.3, rel=1e-6)
    assert error(calibration.after, "max_abs_error") < 1e-6


def test_same_input_same_output(a100: Topology) -> None:
    logs = [synthetic(a100, gpus_per_thread=8, seed=3)]
    first, second = fit(logs), fit(logs)
    assert first.fitted == second.fitted
    assert first.params == second.params
    assert first.dropped == second.dropped


def test_log_and_raw_text_pairs_are_inferred_like_validate(a100: Topology) -> None:
    log = synthetic_log(a100, TRUE, gpus_per_thread=8, seed=4)
    calibration = fit(
        [(log, "")],
        topology=a100,
        fit=["efficiency.nvlink3"],
        base=TRUE.model_copy(update={"efficiency": {**TRUE.efficiency, "nvlink3": 0.9}}),
    )
    value, sigma = calibration.fitted["efficiency.nvlink3"]
    assert abs(value - 0.70) < 3 * sigma


def test_nvls_is_fitted_on_h100() -> None:
    calibration = fit([synthetic(get_topology("hgx_h100"), seed=5)])
    value, sigma = calibration.fitted["nvls_efficiency"]
    assert abs(value - 0.50) < 3 * sigma and value == pytest.approx(0.50, rel=0.03)
    assert "shm_efficiency" in calibration.dropped


def test_shm_is_fitted_without_peer_to_peer() -> None:
    box = replace_p2p(get_topology("pcie_4gpu_switch"), False)
    truth = NcclParams(shm_efficiency=0.35)
    calibration = fit([synthetic(box, truth, seed=6)])
    value, sigma = calibration.fitted["shm_efficiency"]
    assert abs(value - 0.35) < 3 * sigma and value == pytest.approx(0.35, rel=0.03)
    assert "efficiency.pcie" in calibration.dropped  # host-memory staging replaces the PCIe efficiency


def test_undeterminable_parameters_are_dropped_with_reasons(a100: Topology) -> None:
    calibration = fit([synthetic(a100, gpus_per_thread=8, seed=7)])
    assert calibration.dropped["nvls_efficiency"] == (
        "no log runs where NCCL can use NVLink SHARP (NVLS needs an NVSwitch box with Hopper or newer GPUs)"
    )
    assert calibration.dropped["shm_efficiency"] == (
        "no log uses host-memory (SHM) transport: every machine has GPU peer-to-peer"
    )
    assert calibration.dropped["efficiency.infiniband"] == (
        "no infiniband link limits the bandwidth NCCL reaches in these logs"
    )
    # every parameter is accounted for, except the network kinds the machine has no link of (not tried)
    network_kinds = {name for name in FITTABLE if name.split(".")[-1] in NETWORK_KINDS}
    assert set(calibration.fitted) | set(calibration.dropped) == set(FITTABLE) - network_kinds


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("nvls_efficiency", "cannot fit nvls_efficiency: no log runs where NCCL can use NVLink SHARP"),
        ("shm_efficiency", "cannot fit shm_efficiency: no log uses host-memory (SHM) transport"),
    ],
)
def test_asking_for_an_undeterminable_parameter_raises(a100: Topology, name: str, message: str) -> None:
    with pytest.raises(CalibrationError, match=re.escape(message)):
        fit([synthetic(a100, seed=8)], fit=["efficiency.nvlink3", name])


def test_host_issue_time_is_fitted_only_where_it_sets_the_time(a100: Topology) -> None:
    """The host's issue time (launch_s per GPU a thread drives) overlaps the GPUs' time.

    Below 2 KiB on a DGX A100 the GPUs take 1.3 x NCCL's ring/LL latency (1.3 x 15.0 = 19.5 us),
    plus up to 0.35 us for the one of NCCL's 24 channels such a ring LL call runs on (which NVLink's
    efficiency sets: commsim.nccl.channel_cut). Run as ``-g 1`` the host issues in 4 us, so no time
    depends on launch_s and latency_scale is fitted; run as ``-g 8`` the host takes 8 x 4 = 32 us,
    longer than the GPUs, so launch_s is fitted (to 4 us) and neither latency_scale nor NVLink's
    efficiency is.
    """
    one = fit([synthetic(a100, sizes=ALL_SIZES[:8], seed=9)])
    assert "latency_scale" in one.fitted and "launch_s" not in one.fitted
    assert one.dropped["launch_s"] == "no predicted time depends on it"
    with pytest.raises(CalibrationError, match="cannot fit launch_s: no predicted time depends on it"):
        fit([synthetic(a100, sizes=ALL_SIZES[:8], seed=9)], fit=["latency_scale", "launch_s"])
    eight = fit([synthetic(a100, sizes=ALL_SIZES[:8], gpus_per_thread=8, seed=9)])
    assert set(eight.fitted) == {"launch_s"}
    assert eight.dropped["efficiency.nvlink3"].startswith("no nvlink3 link limits")
    assert eight.fitted["launch_s"][0] == pytest.approx(4.0e-6, rel=0.03)
    assert eight.dropped["latency_scale"] == "no predicted time depends on it"


def test_collinear_columns_are_refused() -> None:
    """Two parameters whose effects on every log row are proportional cannot both be fitted:
    the second is dropped, naming the first (condition number of the two unit columns is infinite)."""
    import numpy as np

    from commsim.calibrate.fit_select import select as _select

    J = np.array([[1.0, 2.0, 0.0], [2.0, 4.0, 1.0], [3.0, 6.0, 0.5]])
    kept, dropped = _select(J, ["latency_scale", "launch_s", "efficiency.pcie"], [])
    assert kept == [0, 2]
    assert dropped["launch_s"].startswith("indistinguishable from latency_scale in these logs")


def test_poorly_determined_parameter_is_dropped_after_the_fit(a100: Topology) -> None:
    """From 512 MiB on, NCCL's latency is under 1 % of the time: 10 % noise hides it."""
    large = [synthetic(a100, sizes=ALL_SIZES[26:], noise=0.1, seed=12)]
    calibration = fit(large)
    assert calibration.dropped["latency_scale"].startswith("not determined by these logs: the fit gives ")
    assert list(calibration.fitted) == ["efficiency.nvlink3"]
    with pytest.raises(CalibrationError, match="cannot fit latency_scale: not determined by these logs"):
        fit(large, fit=["efficiency.nvlink3", "latency_scale"])


def two_socket_box() -> Topology:
    """Four PCIe GPUs on two sockets joined by UPI, without peer-to-peer (SHM through host memory)."""
    devices = [Device("cpu0", "cpu"), Device("cpu1", "cpu")]
    devices += [Device(f"gpu{i}", "gpu", 0, "GeForce RTX 4090") for i in range(4)]
    links = [PhysicalLink(f"gpu{i}", f"cpu{i // 2}", "pcie4_x16") for i in range(4)]
    return Topology("two_socket", devices, [*links, PhysicalLink("cpu0", "cpu1", "upi2")], peer_to_peer=False)


def test_parameter_pushed_past_its_bottleneck_is_only_a_bound() -> None:
    """The data want more than the UPI link gives at its default efficiency: SHM stops limiting."""
    truth = NcclParams(shm_efficiency=0.95, efficiency={**NcclParams().efficiency, "inter_socket": 1.0})
    calibration = fit([synthetic(two_socket_box(), truth, seed=13)])
    value, sigma = calibration.fitted["shm_efficiency"]
    assert math.isinf(sigma) and 0.49 < value < 0.95
    assert calibration.notes == [
        f"shm_efficiency: past {value:.4g} it changes no predicted time (efficiency.inter_socket limits "
        "instead), so these logs only say it is at least that"
    ]


def test_fewer_sizes_than_parameters(a100: Topology) -> None:
    two = [synthetic(a100, sizes=[2**20, 2**30], seed=10)]
    with pytest.raises(CalibrationError, match=r"^2 measured sizes cannot determine 3 parameters"):
        fit(two, fit=["efficiency.nvlink3", "latency_scale", "launch_s"])


def test_unknown_parameter_and_no_logs(a100: Topology) -> None:
    with pytest.raises(UnknownNameError, match=re.escape("unknown fittable parameter 'efficiency.nvlnk'")):
        fit([synthetic(a100)], fit=["efficiency.nvlnk"])
    with pytest.raises(CalibrationError, match="no logs to fit"):
        fit([])


def test_saved_topology_holds_the_fitted_values(
    two_machines: Calibration, cluster: Topology, tmp_path: Path
) -> None:
    path = tmp_path / "calibrated.yaml"
    two_machines.save(path, cluster)
    text = path.read_text(encoding="utf-8")
    assert text == two_machines.to_topology_yaml(cluster)
    assert text.startswith("# calibrated by commsim.calibrate.fit on synthetic dgx_a100 all_reduce")
    data = yaml.safe_load(text)
    assert data["name"] == cluster.name and len(data["devices"]) == len(cluster.devices)
    fitted = {name: value for name, (value, _) in two_machines.fitted.items()}
    assert data["nccl"]["efficiency"]["nvlink3"] == pytest.approx(fitted["efficiency.nvlink3"], rel=1e-12)
    edr = fitted["efficiency.ib_edr"]
    assert data["nccl"]["efficiency"]["ib_edr"] == pytest.approx(edr, rel=1e-12)
    assert data["nccl"]["launch_s"] == pytest.approx(fitted["launch_s"], rel=1e-12)
    assert NcclParams.model_validate(data["nccl"]) == two_machines.params


def test_saved_topology_loads_back() -> None:
    """Needs ``nccl:`` in the topology schema (TopologySpec.nccl, Topology.nccl)."""
    box = get_topology("pcie_4gpu_switch")
    calibration = fit([synthetic(box, seed=11)], fit=["efficiency.pcie"])
    loaded = parse_topology(calibration.to_topology_yaml(box))
    assert NcclParams.model_validate(dict(loaded.nccl or {})) == calibration.params
    assert loaded.physical_links == box.physical_links


def test_runs_of_one_file_are_named_by_their_run(tmp_path: Path) -> None:
    """Two datatype series of one table are two runs of one file: a calibration names them 'x.txt'
    and 'x.txt run 2' (where it said 'x.txt #2', which reads like the same file given twice); the same
    file given twice is still told apart by '#2'."""
    from commsim.calibrate.parser import load_nccl_tests_runs

    data = Path(__file__).parent / "data" / "nccl-tests"
    lines = (data / "H100-SXM-HGX_reduce_scatter_8gpu_1.txt").read_text().splitlines()
    rows = [l for l in lines if l.split()[:1] and l.split()[0].isdigit() and " float " in l]
    last = max(i for i, l in enumerate(lines) if l in rows)
    path = tmp_path / "rs.txt"
    path.write_text("\n".join(lines[: last + 1] + [r.replace(" float ", "  half ") for r in rows]) + "\n")
    runs = load_nccl_tests_runs(path)
    assert [r.run_index for r in runs] == [1, 2]
    raw = path.read_text()
    both = fit([(r, raw) for r in runs])
    assert set(both.residuals) == {str(path), f"{path} run 2"}
    twice = fit([(runs[0], raw), (runs[0], raw)])
    assert set(twice.residuals) == {str(path), f"{path} #2"}
