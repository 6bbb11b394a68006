"""One data-parallel training iteration: compute, gradient buckets, their collectives.

The model of a step (SEED_FACTS.md section 1, overlap note; PyTorch DDP,
Horovod):

1. forward over the layers in order, then backward in reverse order; a
   layer's gradient is ready when its backward ends;
2. gradients are packed into buckets (:mod:`commsim.training.buckets`);
3. every bucket is all-reduced by the sync algorithm on the topology. The
   collectives run on **one communication stream** (as NCCL runs DDP's
   all-reduces on one stream): a bucket's collective starts when the
   bucket is ready *and* the previous bucket's collective has finished, so
   buckets run one after another in order and never share links with each
   other at the same time. Its duration is :func:`commsim.api.simulate`'s
   time for the bucket's bytes. With ``overlap=False`` no collective
   starts before the backward pass has ended;
4. the optimizer (a stated time, default 0) runs after the last collective
   and the backward; the step ends when it does.

Compute on the GPU is not slowed by communication (separate engines);
the next iteration's forward is not overlapped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from commsim.results import LinkLoad
from commsim.topology.model import Topology
from commsim.training.buckets import DEFAULT_BUCKET_BYTES, Bucket, backward_ends, pack_buckets
from commsim.training.collective import CollectiveCost, CollectiveTimer
from commsim.training.errors import TrainingError
from commsim.training.workload import Workload
from commsim.units import format_size, format_time, parse_size, parse_time

__all__ = ["BucketTiming", "Span", "StepResult", "simulate_step"]


@dataclass(frozen=True)
class BucketTiming:
    """When one bucket's collective ran.

    Attributes
    ----------
    bucket : Bucket
    start_s, end_s : float
        Start and end of its collective, seconds from the start of the step.
    cost : CollectiveCost
    """

    bucket: Bucket
    start_s: float
    end_s: float
    cost: CollectiveCost

    @property
    def wait_s(self) -> float:
        """Time between ready and start (waiting for the stream or the backward)."""
        return self.start_s - self.bucket.ready_s


@dataclass(frozen=True)
class Span:
    """One slice of a step's timeline, for traces and plots.

    Attributes
    ----------
    track : str
        ``"compute"``, ``"communication"`` or ``"optimizer"``.
    name : str
    start_s, end_s : float
    args : dict
        Extra facts (bytes, layers, ...).
    """

    track: str
    name: str
    start_s: float
    end_s: float
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class StepResult:
    """One simulated training iteration.

    Attributes
    ----------
    label, algorithm : str
        The sync strategy's label and algorithm name.
    workload : Workload
    topology : str
    ranks : int
        Data-parallel GPUs.
    bucket_bytes : float
        The bucket cap.
    overlap : bool
    optimizer_s : float
    iteration_s : float
        The step time.
    buckets : tuple of BucketTiming
    links : list of LinkLoad
        Every used link over the step, busiest first; ``utilisation`` is
        busy time (bytes / capacity, summed over the buckets) over the step time.
    nodes : int or None
        Boxes of the cluster, for scaling runs.
    """

    label: str
    algorithm: str
    workload: Workload
    topology: str
    ranks: int
    bucket_bytes: float
    overlap: bool
    optimizer_s: float
    iteration_s: float
    buckets: tuple[BucketTiming, ...]
    links: list[LinkLoad]
    nodes: int | None = None

    @property
    def compute_s(self) -> float:
        """Forward + backward + optimizer: the step without communication."""
        return self.workload.compute_s + self.optimizer_s

    @property
    def exposed_comm_s(self) -> float:
        """Communication not hidden behind compute: step time - compute time."""
        return self.iteration_s - self.compute_s

    @property
    def comm_s(self) -> float:
        """Total time of the bucket collectives."""
        return sum(b.cost.time_s for b in self.buckets)

    @property
    def single_gpu_s(self) -> float:
        """The same per-GPU batch on one GPU: compute alone, nothing to synchronise."""
        return self.compute_s

    @property
    def scaling_efficiency(self) -> float:
        """Single-GPU step time / step time (data parallel, fixed per-GPU batch)."""
        return self.single_gpu_s / self.iteration_s if self.iteration_s > 0 else 1.0

    @property
    def samples_per_s(self) -> float | None:
        """Training throughput of all ranks, if the workload states its batch."""
        if self.workload.batch is None or self.iteration_s <= 0:
            return None
        return self.ranks * self.workload.batch / self.iteration_s

    @property
    def bottleneck(self) -> LinkLoad | None:
        """The link busiest over the step (None without communication)."""
        return self.links[0] if self.links else None

    def timeline(self) -> list[Span]:
        """Compute (forward and backward per layer), collectives per bucket, optimizer."""
        return _timeline(self)

    def describe(self) -> str:
        """One line, e.g. ``resnet50, ring, 25 MB buckets, overlap: 52.3 ms (96.1%)``."""
        mode = "overlap" if self.overlap else "no overlap"
        return (
            f"{self.workload.name}, {self.label}, {format_size(self.bucket_bytes)} buckets, {mode}: "
            f"{format_time(self.iteration_s)} ({self.scaling_efficiency:.1%} of one GPU)"
        )

    def to_record(self) -> dict[str, Any]:
        """A flat JSON-ready record."""
        bottleneck = self.bottleneck
        return {
            "label": self.label,
            "algorithm": self.algorithm,
            "workload": self.workload.name,
            "topology": self.topology,
            "nodes": self.nodes,
            "ranks": self.ranks,
            "bucket_bytes": self.bucket_bytes,
            "buckets": len(self.buckets),
            "overlap": self.overlap,
            "iteration_s": self.iteration_s,
            "compute_s": self.compute_s,
            "comm_s": self.comm_s,
            "exposed_comm_s": self.exposed_comm_s,
            "scaling_efficiency": self.scaling_efficiency,
            "samples_per_s": self.samples_per_s,
            "bottleneck": None
            if bottleneck is None
            else {"link": bottleneck.link, "kind": bottleneck.kind, "utilisation": bottleneck.utilisation},
            "timeline": [
                {
                    "bucket": b.bucket.index,
                    "nbytes": b.bucket.nbytes,
                    "ready_s": b.bucket.ready_s,
                    "start_s": b.start_s,
                    "end_s": b.end_s,
                }
                for b in self.buckets
            ],
        }


def simulate_step(
    workload: Workload,
    topology: Topology | CollectiveTimer,
    algorithm: str = "ring",
    *,
    params: Mapping[str, Any] | None = None,
    ranks: int | Sequence[str] | None = None,
    bucket_bytes: float | str = DEFAULT_BUCKET_BYTES,
    overlap: bool = True,
    optimizer: float | str = 0.0,
    label: str | None = None,
    nodes: int | None = None,
) -> StepResult:
    """Simulate one data-parallel training iteration of ``workload``.

    Parameters
    ----------
    workload : Workload
        The model (:mod:`commsim.training.models` or your own layers).
    topology : Topology or CollectiveTimer
        The machine; or a timer (which fixes machine, algorithm, params
        and ranks) to share cached collective times between steps.
    algorithm : str
        Any registered all-reduce algorithm; ignored when a timer is given.
    params : mapping, optional
        The algorithm's parameters.
    ranks : int or list of str, optional
        Data-parallel GPUs (default all).
    bucket_bytes : float or str
        Bucket cap, e.g. ``"25 MiB"`` (PyTorch DDP's default ``bucket_cap_mb=25``
        is 25 x 2**20 B, not 25 MB). A cap of at least the model's gradients
        gives one bucket.
    overlap : bool
        Start each bucket's collective as soon as it is ready (True) or
        only after the backward pass (False).
    optimizer : float or str
        Optimizer time after the last collective, e.g. ``"2 ms"``.
    label : str, optional
        Name of the sync strategy in reports (default the algorithm).
    nodes : int, optional
        Number of boxes, recorded for scaling reports.

    Returns
    -------
    StepResult

    Raises
    ------
    TrainingError
        If the bucket is larger than the model's gradients, or overlap is
        requested for a workload with zero backward compute time.

    Examples
    --------
    >>> from commsim.topology import get_topology
    >>> from commsim.training import resnet50
    >>> step = simulate_step(resnet50(64), get_topology("dgx1_v100"), "multi_ring")
    >>> step.scaling_efficiency > 0.9
    True
    """
    from commsim.errors import check_argument

    check_argument(workload, Workload, "workload", "a Workload (e.g. commsim.resnet50(64))")
    expected = "a Topology (commsim.get_topology(name) makes one) or a CollectiveTimer"
    check_argument(topology, (Topology, CollectiveTimer), "topology", expected)
    check_argument(overlap, bool, "overlap", "True or False")  # 'no' was true, so overlapped
    check_argument(label, (str, type(None)), "label", "None or the strategy's name")
    check_argument(nodes, (int, type(None)), "nodes", "None or a whole number of boxes")
    timer = (
        topology
        if isinstance(topology, CollectiveTimer)
        else CollectiveTimer(topology, algorithm, params, ranks)
    )
    cap = parse_size(bucket_bytes)
    optimizer_s = parse_time(optimizer)
    if overlap and workload.backward_s == 0:
        raise TrainingError(
            f"workload {workload.name!r} has zero backward compute time, so there is no backward pass "
            "for communication to overlap with; use overlap=False (the step is then the sum of the "
            "bucket collectives)"
        )
    buckets = pack_buckets(workload, cap)
    timings = _run_stream(buckets, timer, workload.compute_s, overlap)
    last = max(timings[-1].end_s, workload.compute_s)
    iteration_s = last + optimizer_s
    return StepResult(
        label=label or timer.algorithm,
        algorithm=timer.algorithm,
        workload=workload,
        topology=timer.topology.name,
        ranks=timer.n_ranks,
        bucket_bytes=cap,
        overlap=overlap,
        optimizer_s=optimizer_s,
        iteration_s=iteration_s,
        buckets=tuple(timings),
        links=_step_links(timings, iteration_s),
        nodes=nodes,
    )


def _run_stream(
    buckets: list[Bucket], timer: CollectiveTimer, backward_end_s: float, overlap: bool
) -> list[BucketTiming]:
    """Buckets on one stream, in order: start = max(ready, previous end[, backward end])."""
    timings = []
    free_s = 0.0 if overlap else backward_end_s
    for bucket in buckets:
        cost = timer(bucket.nbytes)
        start_s = max(bucket.ready_s, free_s)
        free_s = start_s + cost.time_s
        timings.append(BucketTiming(bucket, start_s, free_s, cost))
    return timings


def _step_links(timings: list[BucketTiming], iteration_s: float) -> list[LinkLoad]:
    """Per link, bytes and busy time summed over the buckets; utilisation over the step."""
    uses: dict[int, list[Any]] = {}  # equal sizes share one cached cost: add each once, times its count
    for timing in timings:
        uses.setdefault(id(timing.cost), [timing.cost, 0])[1] += 1
    totals: dict[str, list[Any]] = {}
    for cost, count in uses.values():
        for load in cost.links:
            entry = totals.setdefault(load.link, [load.kind, 0.0, 0.0, 0.0])
            entry[1] += count * load.nbytes
            entry[2] += count * load.busy_s
            entry[3] += count * load.active_s
    loads = [
        LinkLoad(
            link=name,
            kind=kind,
            nbytes=nbytes,
            busy_s=busy_s,
            active_s=active_s,
            utilisation=busy_s / iteration_s if iteration_s > 0 else 0.0,
        )
        for name, (kind, nbytes, busy_s, active_s) in totals.items()
    ]
    loads.sort(key=lambda load: (-load.busy_s, load.link))
    return loads


def _timeline(step: StepResult) -> list[Span]:
    workload = step.workload
    spans = []
    clock = 0.0
    for layer in workload.layers:
        spans.append(Span("compute", f"forward {layer.name}", clock, clock + layer.forward_s))
        clock += layer.forward_s
    ends = backward_ends(workload)
    for i in range(len(workload.layers) - 1, -1, -1):
        layer = workload.layers[i]
        spans.append(Span("compute", f"backward {layer.name}", ends[i] - layer.backward_s, ends[i]))
    for timing in step.buckets:
        bucket = timing.bucket
        spans.append(
            Span(
                "communication",
                f"bucket {bucket.index} ({format_size(bucket.nbytes)})",
                timing.start_s,
                timing.end_s,
                {"nbytes": bucket.nbytes, "ready_s": bucket.ready_s, "layers": list(bucket.layers)},
            )
        )
    if step.optimizer_s > 0:
        spans.append(Span("optimizer", "optimizer", step.iteration_s - step.optimizer_s, step.iteration_s))
    return spans
