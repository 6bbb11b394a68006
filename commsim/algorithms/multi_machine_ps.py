"""Multi-machine parameter servers: the textbook's seven steps, and key-value push/pull.

``seven_step_ps`` is SEED_FACTS.md section 5 as one all-reduce schedule on
a cluster (boxes from :func:`commsim.topology.cluster`): inside every box
the GPUs' gradients are summed on one GPU (or sharded over all of them),
that GPU hands them to the box's CPU, the CPUs push to the (possibly
sharded) parameter servers, the servers sum and send the result back to
every CPU, and each CPU hands it to its GPU(s), which spread it over the
box.

``kv_parameter_server`` is the key-value view (SEED_FACTS.md sections 3 and
5): every GPU is a worker; the gradient is cut into keys, each key lives on
one server shard; *push* accumulates a worker's gradient under its key on
that server, *pull* fetches the key's aggregate once every worker has
pushed it. With servers' links as the bottleneck this costs the book's
t = N g / (M BW) + N W / (M BW): O(m/n) for m workers and n shards
(:func:`textbook_ps_time`).

Servers are named by ``servers`` (devices: rank indices, ``"cpu"``, or
device names such as ``n3_cpu0``) or by ``shards: n``, the first CPU of
each of the first n boxes (default one shard: box 0's CPU).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import Field

from commsim.algorithms.base import Algorithm, NotApplicableError, Params, Problem
from commsim.algorithms.common import phase_time, resolve_device
from commsim.algorithms.registry import register
from commsim.collectives import Collective
from commsim.errors import AlgorithmError
from commsim.schedule import Schedule, ScheduleBuilder
from commsim.topology.model import Topology

__all__ = ["KeyValueParameterServer", "SevenStepParameterServer", "box_cpus", "textbook_ps_time"]

IntArray = NDArray[np.int64]


def textbook_ps_time(
    workers: int, servers: int, nbytes: float, bandwidth_Bps: float, weights_nbytes: float | None = None
) -> float:
    """The book's parameter-server time t = N g / (M BW) + N W / (M BW) (SEED_FACTS.md section 3).

    Parameters
    ----------
    workers : int
        N, the workers pushing ``nbytes`` each.
    servers : int
        M, the server shards (M <= N), each behind one link of ``bandwidth_Bps``.
    nbytes : float
        g, gradient bytes per worker.
    bandwidth_Bps : float
        BW, the per-direction bandwidth of a server's link.
    weights_nbytes : float, optional
        W, the bytes pulled back (default ``nbytes``).
    """
    weights = nbytes if weights_nbytes is None else weights_nbytes
    return workers * (nbytes + weights) / (servers * bandwidth_Bps)


def box_cpus(topology: Topology) -> dict[int, str]:
    """The first CPU of every box that has one, by box index (ascending)."""
    cpus: dict[int, str] = {}
    for device in topology.devices:
        if device.kind == "cpu" and device.box not in cpus:
            cpus[device.box] = device.name
    return dict(sorted(cpus.items()))


class ServerParams(Params):
    """Where the server shards live."""

    servers: list[str | int] | None = Field(
        None, description="devices holding one shard each: rank indices, 'cpu', or device names"
    )
    shards: int | None = Field(None, ge=1, description="the CPUs of the first n boxes (default 1)")


def _servers(name: str, params: ServerParams, problem: Problem) -> list[str]:
    if params.servers is not None and params.shards is not None:
        raise AlgorithmError(f"give either 'servers' or 'shards' to {name}, not both")
    if params.servers is not None:
        servers = [resolve_device(problem, s, "server") for s in params.servers]
        if not servers:
            raise AlgorithmError(f"{name}: 'servers' is empty; name at least one device")
    else:
        cpus = list(box_cpus(problem.topology).values())
        count = params.shards or 1
        if not cpus:
            raise AlgorithmError(
                f"{name}: topology {problem.topology.name!r} has no CPU to hold a server shard; "
                "name the 'servers' (rank indices or device names)"
            )
        if count > len(cpus):
            raise AlgorithmError(
                f"{name}: shards={count} but topology {problem.topology.name!r} has {len(cpus)} box(es) "
                "with a CPU; give fewer shards or name the 'servers'"
            )
        servers = cpus[:count]
    if len(set(servers)) != len(servers):
        raise AlgorithmError(f"{name}: a server is listed twice in {servers}")
    return servers


# -- seven steps -----------------------------------------------------------------------------


class SevenStepParams(ServerParams):
    """Servers, and how each box aggregates locally."""

    local: Literal["one_gpu", "sharded"] = Field(
        "one_gpu", description="sum a box's gradients on its first GPU, or shard them over all its GPUs"
    )


class _SevenSteps:
    """Builds the schedule box by box: one vectorised add of sends per box and step."""

    def __init__(self, problem: Problem, servers: list[str], local: str) -> None:
        self.problem = problem
        self.servers = servers
        self.boxes = _boxes(problem)
        cpus = box_cpus(problem.topology)
        missing = [k for k in self.boxes if k not in cpus]
        if missing:
            raise NotApplicableError(
                f"seven_step_ps needs a CPU in every box; box {missing[0]} of topology "
                f"{problem.topology.name!r} has none"
            )
        self.cpu = {k: cpus[k] for k in self.boxes}
        sizes = {len(r) for r in self.boxes.values()}
        if local == "sharded" and len(sizes) != 1:
            raise NotApplicableError(
                "seven_step_ps with local='sharded' needs the same number of ranks per box"
            )
        self.parts = sizes.pop() if local == "sharded" else 1
        self.builder = ScheduleBuilder(problem.collective, problem.nbytes, problem.ranks)
        atom = problem.nbytes / (len(servers) * self.parts)
        self.atoms = np.array(
            [[self.builder.chunk(atom) for _ in range(self.parts)] for _ in servers], dtype=np.int64
        )  # [server, part]

    def _send(
        self, src: list[str], dst: list[str], chunk: IntArray, reduce: bool, deps: IntArray | None, step: int
    ) -> IntArray:
        if not src:
            return np.empty(0, np.int64)
        # every atom is a stream of its own (a channel per chunk): atoms between the same two
        # devices move side by side, not one after another
        return self.builder.sends(src, dst, chunk, reduce=reduce, deps=deps, step=step, channel=chunk)

    def _owner(self, ranks: list[str], part: int) -> str:
        return ranks[part if self.parts > 1 else 0]

    def gather_up(self) -> dict[int, IntArray]:
        """Steps 2 and 3: local sum on the owning GPU, then to the box's CPU; ops per [server, part]."""
        S, P = self.atoms.shape
        up = {}
        for k, ranks in self.boxes.items():
            src, dst, chunk = [], [], []
            for s in range(S):
                for p in range(P):
                    owner = self._owner(ranks, p)
                    others = [r for r in ranks if r != owner]
                    src += others
                    dst += [owner] * len(others)
                    chunk += [self.atoms[s, p]] * len(others)
            local = self._send(src, dst, np.array(chunk, np.int64), True, None, 0)
            deps = local.reshape(S * P, len(ranks) - 1) if local.size else None
            owners = [self._owner(ranks, p) for _ in range(S) for p in range(P)]
            up[k] = self._send(owners, [self.cpu[k]] * (S * P), self.atoms.reshape(-1), True, deps, 1)
        return up

    def push(self, up: dict[int, IntArray]) -> IntArray:
        """Step 4: every CPU that is not the shard's server pushes to it; arrivals per [server, part, box]."""
        S, P = self.atoms.shape
        arrivals = np.full((S, P, len(self.boxes)), -1, np.int64)
        for b, k in enumerate(self.boxes):
            cells = [(s, p) for s in range(S) for p in range(P)]
            remote = [(s, p) for s, p in cells if self.servers[s] != self.cpu[k]]
            for s, p in cells:
                if self.servers[s] == self.cpu[k]:
                    arrivals[s, p, b] = up[k][s * P + p]
            ops = self._send(
                [self.cpu[k]] * len(remote),
                [self.servers[s] for s, _ in remote],
                np.array([self.atoms[s, p] for s, p in remote], np.int64),
                True,
                np.array([[up[k][s * P + p]] for s, p in remote], np.int64).reshape(-1, 1),
                2,
            )
            for (s, p), op in zip(remote, ops.tolist()):
                arrivals[s, p, b] = op
        return arrivals

    def scatter_down(self, arrivals: IntArray) -> None:
        """Steps 5, 6 and 7: server to CPUs, CPU to the owning GPU, owner to the box's other GPUs."""
        S, P = self.atoms.shape
        for k, ranks in self.boxes.items():
            cells = [(s, p) for s in range(S) for p in range(P)]
            remote = [(s, p) for s, p in cells if self.servers[s] != self.cpu[k]]
            pulled = self._send(
                [self.servers[s] for s, _ in remote],
                [self.cpu[k]] * len(remote),
                np.array([self.atoms[s, p] for s, p in remote], np.int64),
                False,
                np.array([arrivals[s, p] for s, p in remote], np.int64).reshape(
                    len(remote), arrivals.shape[2]
                ),
                3,
            )
            # the CPU holds the sum once its pull arrived, or (if it is the server) once all pushes did
            ready = arrivals.reshape(S * P, -1).copy()
            for (s, p), op in zip(remote, pulled.tolist()):
                ready[s * P + p] = -1
                ready[s * P + p, 0] = op
            owners = [self._owner(ranks, p) for _ in range(S) for p in range(P)]
            down = self._send([self.cpu[k]] * (S * P), owners, self.atoms.reshape(-1), False, ready, 4)
            src, dst, chunk, deps = [], [], [], []
            for i, owner in enumerate(owners):
                others = [r for r in ranks if r != owner]
                src += [owner] * len(others)
                dst += others
                chunk += [self.atoms.reshape(-1)[i]] * len(others)
                deps += [down[i]] * len(others)
            self._send(src, dst, np.array(chunk, np.int64), False, np.array(deps, np.int64).reshape(-1, 1), 5)


def _boxes(problem: Problem) -> dict[int, list[str]]:
    boxes: dict[int, list[str]] = {}
    for rank in problem.ranks:
        boxes.setdefault(problem.topology.device(rank).box, []).append(rank)
    return dict(sorted(boxes.items()))


@register
class SevenStepParameterServer(Algorithm):
    """The textbook's multi-machine synchronous step as one all-reduce.

    Steps 2-7 of SEED_FACTS.md section 5: (2) each box sums its GPUs'
    gradients on its first GPU (``local="one_gpu"``) or shards them over
    its GPUs (``local="sharded"``, GPU j owns part j); (3) the owning GPU(s)
    send the sum to the box's first CPU; (4) the CPUs push shard s to
    server s (a box CPU that is itself the server keeps its share); (5) the
    servers sum and send the result to every box's CPU; (6) the CPU sends
    it to the owning GPU(s); (7) they broadcast it inside the box. Servers
    must not be ranks (a GPU would both send and receive the same buffer).
    No closed form: in the servers' boxes the way back (steps 5 and 6)
    shares the CPU's links, so phases do not simply add up.

    References
    ----------
    SEED_FACTS.md section 5 (the textbook's seven steps); section 3 (the
    parameter-server cost model).
    """

    name = "seven_step_ps"
    summary = "box-local sum, GPU -> CPU, CPUs push to (sharded) servers, back to CPU, GPU, box"
    reference = "SEED_FACTS.md section 5 (the textbook's seven steps of multi-machine training)"
    collectives = frozenset({Collective.ALL_REDUCE})
    Params = SevenStepParams

    def _plan(self, problem: Problem) -> _SevenSteps:
        self.check(problem)
        assert isinstance(self.params, SevenStepParams)
        servers = _servers(self.name, self.params, problem)
        ranks_as_servers = [s for s in servers if s in problem.ranks]
        if ranks_as_servers:
            raise AlgorithmError(
                f"seven_step_ps servers must not be ranks; {ranks_as_servers[0]!r} is one "
                "(use CPUs, e.g. shards=n or servers: [n0_cpu0, n1_cpu0])"
            )
        return _SevenSteps(problem, servers, self.params.local)

    def plan(self, problem: Problem) -> Schedule:
        steps = self._plan(problem)
        steps.scatter_down(steps.push(steps.gather_up()))
        return steps.builder.build()


# -- key-value push / pull -------------------------------------------------------------------


class KeyValueParams(ServerParams):
    """Servers and the number of keys the gradient is cut into."""

    keys: int | None = Field(
        None, ge=1, le=4096, description="keys (default one per server), key i on server i mod n"
    )


@register
class KeyValueParameterServer(Algorithm):
    """Workers push every key to its server shard, then pull each key's aggregate.

    Every rank is a worker. The gradient is cut into ``keys`` equal keys;
    key i lives on server ``i mod n``. *Push*: each worker adds its part
    of key i into the server's copy (a server that is itself a rank keeps
    its own part). *Pull*: once all workers have pushed key i, every
    worker fetches it. Pushes and pulls of different keys are independent.

    References
    ----------
    SEED_FACTS.md section 3 (t = N g / (M BW) + N W / (M BW); O(m/n) for m
    workers and n servers) and section 5 (key-value push/pull); Li et al.,
    "Scaling Distributed Machine Learning with the Parameter Server",
    OSDI 2014.
    """

    name = "kv_parameter_server"
    summary = "workers push keys to n server shards (accumulate) and pull the aggregates: O(m/n)"
    reference = "SEED_FACTS.md sections 3 and 5 (key-value parameter server, push/pull)"
    collectives = frozenset({Collective.ALL_REDUCE})
    Params = KeyValueParams

    def _keys(self, problem: Problem) -> list[str]:
        """The server of every key."""
        self.check(problem)
        assert isinstance(self.params, KeyValueParams)
        servers = _servers(self.name, self.params, problem)
        count = self.params.keys or len(servers)
        return [servers[i % len(servers)] for i in range(count)]

    def plan(self, problem: Problem) -> Schedule:
        homes = self._keys(problem)
        builder = ScheduleBuilder(problem.collective, problem.nbytes, problem.ranks)
        keys = builder.split(problem.nbytes, len(homes))
        for key, server in zip(keys, homes):  # a channel per key: keys move side by side
            workers = [r for r in problem.ranks if r != server]
            pushes = builder.sends(workers, [server] * len(workers), key, reduce=True, step=0, channel=key)
            deps = np.broadcast_to(pushes, (len(workers), pushes.size))
            builder.sends([server] * len(workers), workers, key, deps=deps, step=1, channel=key)
        return builder.build()

    def analytic_time(self, problem: Problem) -> float | None:
        """Push phase then pull phase, each :func:`phase_time` (the busiest link's load).

        With the servers' links the bottleneck this is section 3's
        N g / (M BW) + N W / (M BW). None when the keys do not spread evenly
        over the servers (pulls of lightly loaded servers then overlap the
        pushes to the others).
        """
        homes = self._keys(problem)
        servers = sorted(set(homes))
        if len(homes) % len(servers):
            return None
        key_nbytes = problem.nbytes / len(homes)
        pushes = [(r, s, key_nbytes) for s in homes for r in problem.ranks if r != s]
        push = phase_time(problem.topology, pushes, problem.kinds)
        pull = phase_time(problem.topology, ((s, r, b) for r, s, b in pushes), problem.kinds)
        return push + pull
