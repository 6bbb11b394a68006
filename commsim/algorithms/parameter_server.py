"""Parameter servers: every worker pushes to the server(s), which send the sum back.

SEED_FACTS.md sections 1 and 3 (the textbook's "aggregate on one GPU / on
the CPU / sharded over the GPUs" strategies and the book's parameter-server
cost model t = N g / (M BW) + N W / (M BW)).
"""

from __future__ import annotations

from pydantic import Field

from commsim.algorithms.base import Algorithm, Params, Problem
from commsim.algorithms.common import phase_time, resolve_device
from commsim.algorithms.registry import register
from commsim.collectives import Collective
from commsim.errors import AlgorithmError
from commsim.schedule import Schedule, ScheduleBuilder

__all__ = ["ParameterServer", "ShardedParameterServer"]


class ServerParams(Params):
    """Where the single server lives."""

    server: str | int = Field("cpu", description="'cpu' (the first CPU), a rank index, or a device name")


class ShardedParams(Params):
    """Where the shards live: explicit devices, or the first ``shards`` ranks."""

    servers: list[str | int] | None = Field(
        None, description="devices holding one shard each: rank indices, 'cpu', or device names"
    )
    shards: int | None = Field(None, ge=1, description="use the first M ranks as servers (default: all)")


def _plan_servers(problem: Problem, servers: list[str]) -> Schedule:
    """Shard ``s`` of the data goes to ``servers[s]``, is summed there, and sent back.

    Every push is issued before every pull: a rank's connection to a server
    that is also a rank carries its push first, then that server's pull.
    """
    builder = ScheduleBuilder(problem.collective, problem.nbytes, problem.ranks)
    chunks = builder.split(problem.nbytes, len(servers))
    pushes = {
        chunk: [
            builder.send(rank, server, chunk, reduce=True, step=0) for rank in problem.ranks if rank != server
        ]
        for chunk, server in zip(chunks, servers)
    }
    for chunk, server in zip(chunks, servers):
        for rank in problem.ranks:
            if rank != server:
                builder.send(server, rank, chunk, deps=pushes[chunk], step=1)
    return builder.build()


def _servers_time(problem: Problem, servers: list[str]) -> float:
    shard = problem.nbytes / len(servers)
    pairs = [(rank, server) for server in servers for rank in problem.ranks if rank != server]
    push = phase_time(problem.topology, ((r, s, shard) for r, s in pairs))
    pull = phase_time(problem.topology, ((s, r, shard) for r, s in pairs))
    return push + pull


@register
class ParameterServer(Algorithm):
    """All workers push their whole gradient to one server, which sends the sum back.

    References
    ----------
    SEED_FACTS.md section 1 ("aggregate on one GPU": 60 ms; "on the CPU":
    80 ms) and section 3 (single parameter server).
    """

    name = "parameter_server"
    summary = "every rank pushes to one server (the CPU or a GPU), which sends the sum back"
    reference = "SEED_FACTS.md sections 1 and 3 (textbook parameter server)"
    collectives = frozenset({Collective.ALL_REDUCE})
    Params = ServerParams

    def _server(self, problem: Problem) -> str:
        assert isinstance(self.params, ServerParams)
        return resolve_device(problem, self.params.server, "server")

    def plan(self, problem: Problem) -> Schedule:
        self.check(problem)
        return _plan_servers(problem, [self._server(problem)])

    def analytic_time(self, problem: Problem) -> float | None:
        """Push phase plus pull phase, each limited by the server's busiest link."""
        return _servers_time(problem, [self._server(problem)])


@register
class ShardedParameterServer(Algorithm):
    """The data is cut into M shards, each summed on its own server.

    With every GPU a server (the default) this is the textbook's "sharded
    over the 4 GPUs" strategy: 15 ms on the 4-GPU box.

    References
    ----------
    SEED_FACTS.md section 1 (sharded: 15 ms) and section 3 (M shards:
    t = N g / (M BW) + N W / (M BW)).
    """

    name = "sharded_parameter_server"
    summary = "the data is cut into M shards, each pushed to and pulled from its own server"
    reference = "SEED_FACTS.md sections 1 and 3 (sharded parameter servers)"
    collectives = frozenset({Collective.ALL_REDUCE})
    Params = ShardedParams

    def _servers(self, problem: Problem) -> list[str]:
        assert isinstance(self.params, ShardedParams)
        if self.params.servers is not None and self.params.shards is not None:
            raise AlgorithmError("give either 'servers' or 'shards' to sharded_parameter_server, not both")
        if self.params.servers is not None:
            servers = [resolve_device(problem, s, "server") for s in self.params.servers]
        else:
            count = self.params.shards or problem.n
            if count > problem.n:
                raise AlgorithmError(
                    f"shards={count} but only {problem.n} ranks; give 'servers' to use other devices"
                )
            servers = list(problem.ranks[:count])
        if len(set(servers)) != len(servers):
            raise AlgorithmError(f"sharded_parameter_server: a server is listed twice in {servers}")
        return servers

    def plan(self, problem: Problem) -> Schedule:
        self.check(problem)
        return _plan_servers(problem, self._servers(problem))

    def analytic_time(self, problem: Problem) -> float | None:
        """Push and pull phases, each limited by the busiest link (the book's N g/(M BW))."""
        return _servers_time(problem, self._servers(problem))
