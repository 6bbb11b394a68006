"""A model of NCCL: its channels on the real topology, its protocols, and its size-based choice."""

from commsim.nccl.machine import NcclMachine, analyse, gpu_arch
from commsim.nccl.model import Candidate, NcclPrediction, predict
from commsim.nccl.params import DEFAULT_EFFICIENCY, NcclParams

__all__ = [
    "DEFAULT_EFFICIENCY",
    "Candidate",
    "NcclMachine",
    "NcclParams",
    "NcclPrediction",
    "analyse",
    "gpu_arch",
    "predict",
]
