"""Calibration: nccl-tests measurements in, calibrated machine models out."""

from commsim.calibrate.fit import FITTABLE, Calibration, fit
from commsim.calibrate.parser import (
    COLLECTIVES,
    Device,
    NcclTestsLog,
    NcclTestsRow,
    load_nccl_tests,
    normalise_collective,
    parse_nccl_tests,
)

__all__ = [
    "COLLECTIVES",
    "FITTABLE",
    "Calibration",
    "Device",
    "NcclTestsLog",
    "NcclTestsRow",
    "fit",
    "load_nccl_tests",
    "normalise_collective",
    "parse_nccl_tests",
]
