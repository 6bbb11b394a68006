"""Multi-machine parameter servers: the textbook's seven steps and key-value push/pull.

SEED_FACTS.md section 3 (t = N g / (M BW) + N W / (M BW), O(m/n)) and
section 5 (the seven steps; key-value push/pull).
"""

from __future__ import annotations

import pytest

from commsim.algorithms import Problem, make_algorithm
from commsim.algorithms.multi_machine_ps import box_cpus, textbook_ps_time
from commsim.api import simulate
from commsim.collectives import Collective
from commsim.errors import AlgorithmError
from commsim.topology import Device, PhysicalLink, Topology, get_topology
from commsim.topology.cluster import cluster

MB = 1e6
G = 160 * MB
NET_Bps = 12.5e9  # eth_100g, per direction


def one_gpu_box() -> Topology:
    """A machine with one GPU on its CPU's PCIe (the book's 'worker' with one link)."""
    return Topology(
        "gpu_box", [Device("gpu0", "gpu"), Device("cpu0", "cpu")], [PhysicalLink("gpu0", "cpu0", "pcie3_x16")]
    )


def worker_cluster(boxes: int) -> Topology:
    """``boxes`` one-GPU machines, one 100 GbE NIC each, one switch; zero latency."""
    return cluster(one_gpu_box(), nodes=boxes, nic="eth_100g", nic_per="box").scaled({}, latency_s=0.0)


def _time(
    topology: Topology,
    algorithm: str,
    params: dict[str, object],
    nbytes: float,
    ranks: list[str] | None = None,
) -> float:
    return simulate(topology, algorithm, size=nbytes, params=params, ranks=ranks, verify=True).time_s


# -- the seven steps -------------------------------------------------------------------------


def test_seven_steps_on_the_textbook_box() -> None:
    """SEED_FACTS.md sections 1 and 5 on the 4-GPU PCIe box (16 GB/s links, zero latency).

    (2) three GPUs send 160 MB to GPU 0 over its one link: 30 ms; (3) GPU 0 to
    the CPU: 10 ms; (4, 5) the CPU is the server: nothing crosses a network;
    (6) CPU to GPU 0: 10 ms; (7) GPU 0 to the other three: 30 ms. 80 ms.
    """
    result = simulate("pcie_4gpu_switch", "seven_step_ps", size=G, verify=True)
    assert result.time_s == pytest.approx(0.080, rel=1e-12)


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"shards": 2},
        {"shards": 4},
        {"shards": 3, "local": "sharded"},
        {"servers": ["n1_cpu1", "n3_cpu0"]},
    ],
)
def test_seven_steps_verify_on_a_cluster(params: dict[str, object]) -> None:
    """Every rank ends with the sum, for one or several servers and both local modes."""
    topology = cluster("dgx_a100", nodes=4, nic="ib_hdr")
    problem = Problem(topology, tuple(topology.gpus), Collective.ALL_REDUCE, 64 * MB)
    make_algorithm("seven_step_ps", params).plan(problem).verify(check_races=True)


def test_seven_steps_walk_through_the_cpus() -> None:
    """Steps 3-6 cross each box's CPU; with one server only box 0's CPU hears from the network."""
    topology = cluster("dgx_a100", nodes=2, nic="ib_hdr")
    result = simulate(topology, "seven_step_ps", size=64 * MB, verify=True)
    used = {load.link for load in result.links}
    assert any(link.endswith("->n0_cpu0") for link in used)
    assert any(link.startswith("n1_cpu0->") for link in used)
    # in box 0 the pull to box 1 (step 5) and the CPU -> GPU copy (step 6) share n0_cpu0's PCIe link
    assert "n0_cpu0->n0_pcie_switch0" in {load.link for load in result.bottleneck}


def test_sharding_the_seven_steps_helps() -> None:
    """More servers and local sharding both shorten the step on a 4-box cluster."""
    topology = cluster("dgx_a100", nodes=4, nic="ib_hdr")
    one = _time(topology, "seven_step_ps", {}, 64 * MB)
    four = _time(topology, "seven_step_ps", {"shards": 4}, 64 * MB)
    sharded = _time(topology, "seven_step_ps", {"shards": 4, "local": "sharded"}, 64 * MB)
    assert one > four > sharded


# -- key-value push / pull: the book's closed form -------------------------------------------


@pytest.mark.parametrize(("workers", "servers"), [(2, 1), (4, 1), (4, 2), (8, 2), (8, 4), (8, 8)])
def test_kv_matches_the_books_closed_form(workers: int, servers: int) -> None:
    """SEED_FACTS.md section 3: t = N g / (M BW) + N W / (M BW) with dedicated server machines.

    N one-GPU workers and M server machines on one switch; every server's
    100 GbE link carries N g / M each way and is the bottleneck.
    """
    topology = worker_cluster(workers + servers)
    names = [f"n{workers + j}_cpu0" for j in range(servers)]
    ranks = topology.gpus[:workers]
    result = simulate(
        topology, "kv_parameter_server", size=G, params={"servers": names}, ranks=ranks, verify=True
    )
    expected = textbook_ps_time(workers, servers, G, NET_Bps)
    assert result.time_s == pytest.approx(expected, rel=1e-9)
    assert result.analytic_time_s == pytest.approx(expected, rel=1e-9)
    server_links = {f"switch0->n{workers + j}_nic0" for j in range(servers)}
    server_links |= {f"n{workers + j}_nic0->switch0" for j in range(servers)}
    assert server_links <= {b.link for b in result.bottleneck}  # with m = n the workers' links tie


def test_kv_time_is_order_m_over_n() -> None:
    """For fixed m the time falls as n grows; for fixed n it grows with m (section 3: O(m/n))."""
    workers_list, servers_list = [2, 4, 8], [1, 2, 4]
    times = {}
    for m in workers_list:
        for n in servers_list:
            topology = worker_cluster(m + n)
            names = [f"n{m + j}_cpu0" for j in range(n)]
            times[m, n] = _time(topology, "kv_parameter_server", {"servers": names}, G, topology.gpus[:m])
    for m in workers_list:
        assert [times[m, n] for n in servers_list] == sorted(
            (times[m, n] for n in servers_list), reverse=True
        )
    for n in servers_list:
        assert [times[m, n] for m in workers_list] == sorted(times[m, n] for m in workers_list)
    assert times[8, 4] == pytest.approx(times[4, 2], rel=1e-9) == pytest.approx(times[2, 1], rel=1e-9)


def test_kv_against_hierarchical_on_a_dgx_a100_cluster() -> None:
    """Servers on box CPUs: more shards help, but hierarchical all-reduce stays far ahead."""
    topology = cluster("dgx_a100", nodes=4, nic="ib_hdr")
    kv = [_time(topology, "kv_parameter_server", {"shards": n}, 64 * MB) for n in (1, 2, 4)]
    hierarchical = _time(topology, "hierarchical", {}, 64 * MB)
    assert kv == sorted(kv, reverse=True)
    assert kv[0] / kv[2] > 3  # four shards: about 4x less through each server's links
    assert hierarchical < kv[-1] / 10


def test_kv_keys_spread_round_robin() -> None:
    """Keys i live on server i mod n; uneven spreads still verify but have no closed form."""
    topology = cluster("dgx_a100", nodes=2, nic="ib_hdr")
    even = simulate(
        topology, "kv_parameter_server", size=64 * MB, params={"shards": 2, "keys": 4}, verify=True
    )
    uneven = simulate(
        topology, "kv_parameter_server", size=64 * MB, params={"shards": 2, "keys": 3}, verify=True
    )
    assert even.analytic_time_s is not None
    assert uneven.analytic_time_s is None
    assert uneven.time_s > even.time_s  # server 0 holds 2 of the 3 keys


def test_box_cpus_are_the_first_cpu_of_each_box() -> None:
    """Box k's first CPU is n{k}_cpu0 in a cluster."""
    assert box_cpus(cluster("dgx_a100", nodes=3, nic="ib_hdr")) == {0: "n0_cpu0", 1: "n1_cpu0", 2: "n2_cpu0"}
    assert box_cpus(get_topology("dgx1_v100")) == {0: "cpu0"}


# -- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "topology", "params", "message"),
    [
        (
            "seven_step_ps",
            "pcie_4gpu_switch",
            {"servers": [1]},
            "seven_step_ps servers must not be ranks; 'gpu1' is one (use CPUs, e.g. shards=n or "
            "servers: [n0_cpu0, n1_cpu0])",
        ),
        (
            "kv_parameter_server",
            "pcie_4gpu_switch",
            {"servers": ["cpu"], "shards": 1},
            "give either 'servers' or 'shards' to kv_parameter_server, not both",
        ),
        (
            "kv_parameter_server",
            "pcie_4gpu_switch",
            {"shards": 2},
            "kv_parameter_server: shards=2 but topology 'pcie_4gpu_switch' has 1 box(es) with a CPU; "
            "give fewer shards or name the 'servers'",
        ),
        (
            "seven_step_ps",
            "fully_connected_4",
            {},
            "seven_step_ps: topology 'fully_connected_4' has no CPU to hold a server shard; "
            "name the 'servers' (rank indices or device names)",
        ),
        (
            "kv_parameter_server",
            "pcie_4gpu_switch",
            {"servers": ["cpu", "cpu0"]},
            "kv_parameter_server: a server is listed twice in ['cpu0', 'cpu0']",
        ),
    ],
)
def test_errors_say_what_is_wrong(name: str, topology: str, params: dict[str, object], message: str) -> None:
    """Bad server choices are AlgorithmErrors with one clear sentence."""
    with pytest.raises(AlgorithmError) as info:
        simulate(topology, name, size=G, params=params)
    assert str(info.value) == message


def test_unknown_local_mode_lists_the_valid_ones() -> None:
    """``local`` is 'one_gpu' or 'sharded'."""
    with pytest.raises(AlgorithmError, match="local") as info:
        make_algorithm("seven_step_ps", {"local": "everywhere"})
    assert "one_gpu" in str(info.value) and "sharded" in str(info.value)
