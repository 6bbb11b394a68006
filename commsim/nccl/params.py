"""The NCCL model's parameters: few, physical, fitted by calibration.

Defaults and where they come from:

- ``efficiency``: fraction of a link family's nominal bandwidth that NCCL's
  Simple protocol reaches. NVLink 0.78: NCCL itself caps an A100 ring at
  235 GB/s of the 300 GB/s NVLink ports (tuning.cc, ``compCap80``). PCIe 0.80:
  a PCIe 3.0 x16 slot moves about 12-13 GB/s of its 15.75 GB/s after packet
  overheads. InfiniBand 0.90 and Ethernet 0.70: RDMA reaches ~99 % of line
  rate in ``ib_send_bw`` but NCCL's proxy and chunking lose ~10 %; Ethernet
  transports (TCP sockets, AWS EFA) lose more. Inter-socket links 0.80.
- ``shm_efficiency``: without GPU peer-to-peer, NCCL copies through pinned
  host memory: the GPU writes over PCIe into DRAM, the peer reads it back;
  the effective PCIe rate is about half of nominal (the GPU copy engines and
  the root complex handle both the data and the flags).
- ``nvls_efficiency``: NVLink SHARP (in-switch reduction) reaches about
  57 % of an H100's 450 GB/s NVLink ports as algorithm bandwidth
  (~480 GB/s bus bandwidth for 8 GPUs).
- ``launch_s``: host cost per GPU that one thread drives: nccl-tests
  ``-g N`` launches N kernels from one thread, about 3 us each.
- ``latency_scale``: multiplies NCCL's own per-call and per-step latencies
  (``baseLat``, ``hwLat``); 1.0 by default.
- ``one_rank_s`` and ``local_copy_efficiency``: a one-rank call copies the
  send buffer into the receive buffer on the GPU. Measured on one H100 SXM
  (NCCL 2.28.9, nccl-tests 2.19.6, tests/data/h100-1gpu): 5.0 +- 0.3 us
  below 1 MiB (median of the 8 B - 512 KiB out-of-place rows, all collectives)
  and 1505 GB/s at 1 GiB, which is 0.449 of the H100 SXM's 3.35 TB/s HBM3
  (each byte is read once and written once). One machine only: the
  efficiency is assumed to carry over to other GPUs' memory bandwidth.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["DEFAULT_EFFICIENCY", "NcclParams"]

DEFAULT_EFFICIENCY: dict[str, float] = {
    "nvlink": 0.78,
    "pcie": 0.80,
    "infiniband": 0.90,
    "ethernet": 0.70,
    "inter_socket": 0.80,
    "host_memory": 1.0,
}
"""Fraction of nominal bandwidth NCCL reaches, per link family."""


class NcclParams(BaseModel):
    """Physical parameters of the NCCL model (see the module docstring for sources)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    efficiency: dict[str, float] = Field(default_factory=lambda: dict(DEFAULT_EFFICIENCY))
    shm_efficiency: float = Field(0.49, gt=0, le=1)
    nvls_efficiency: float = Field(0.57, gt=0, le=1)
    launch_s: float = Field(3.1e-6, ge=0)
    latency_scale: float = Field(1.0, gt=0)
    one_rank_s: float = Field(5.0e-6, ge=0)
    local_copy_efficiency: float = Field(0.449, gt=0, le=1)

    @classmethod
    def of(cls, topology: Any) -> NcclParams:
        """The calibrated parameters a topology carries (its ``nccl:`` mapping), else the defaults."""
        nccl = getattr(topology, "nccl", None)
        return cls.model_validate(dict(nccl)) if nccl else cls()

    def family_efficiency(self, family: str) -> float:
        """Efficiency of one family (1.0 for families without an entry)."""
        return self.efficiency.get(family, DEFAULT_EFFICIENCY.get(family, 1.0))
