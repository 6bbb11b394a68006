"""Plots (matplotlib, imported lazily so the CLI starts fast)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["plot_validation"]


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_validation(report: Any, path: str | Path) -> Path:
    """Measured and predicted bus bandwidth against size (log x), nccl-tests style.

    Parameters
    ----------
    report : commsim.calibrate.validate.Validation
    path : str or Path
        Output file; the suffix picks the format (``.png``, ``.svg``, ``.pdf``).
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    sizes = [r.nbytes for r in report.rows]
    ax.plot(sizes, [r.measured_busbw_Bps / 1e9 for r in report.rows], "o-", label="measured (nccl-tests)")
    ax.plot(
        sizes,
        [r.predicted_busbw_Bps / 1e9 for r in report.rows],
        "s--",
        label="predicted (commsim NCCL model)",
    )
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.set_title(f"{report.collective}: {Path(str(report.source)).name}", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out)
    plt.close(fig)
    return out
