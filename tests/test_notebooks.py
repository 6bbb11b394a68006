"""Every notebook runs top to bottom in a fresh kernel, and prints the numbers it should.

The kernel is this interpreter (a kernel spec written to a temporary
``JUPYTER_PATH`` at the start of the session), so the notebooks import the
commsim under test whatever other kernels the machine has installed.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
KERNEL = "commsim-tests"
CELL_TIMEOUT_S = 120


@pytest.fixture(scope="session")
def kernel_name(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A kernel spec running ``sys.executable -m ipykernel_launcher``, on a temporary JUPYTER_PATH."""
    data = tmp_path_factory.mktemp("jupyter")
    spec = data / "kernels" / KERNEL
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "commsim tests", "language": "python"})
    )
    previous = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = os.pathsep.join([str(data), *([previous] if previous else [])])
    yield KERNEL
    if previous is None:
        del os.environ["JUPYTER_PATH"]
    else:
        os.environ["JUPYTER_PATH"] = previous


def notebook_paths() -> list[Path]:
    return sorted(NOTEBOOKS.glob("*.ipynb"))


def run(path: Path, kernel: str) -> Any:
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        kernel_name=kernel,
        timeout=CELL_TIMEOUT_S,
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    client.execute()  # raises CellExecutionError if a cell fails
    return notebook


def printed(notebook: Any) -> str:
    return "".join(
        output.get("text", "")
        for cell in notebook.cells
        for output in cell.get("outputs", [])
        if output.output_type == "stream" and output.name == "stdout"
    )


def images(notebook: Any) -> int:
    return sum(
        "image/png" in output.get("data", {}) for cell in notebook.cells for output in cell.get("outputs", [])
    )


def test_the_teaching_notebooks_exist() -> None:
    assert {"calibrate_from_nccl_tests", "rings_trees_hybrid", "sync_strategies"} <= {
        p.stem for p in notebook_paths()
    }


@pytest.mark.parametrize("path", notebook_paths(), ids=lambda p: p.stem)
def test_notebooks_are_stored_without_outputs(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.source[:60]
    assert 'matplotlib.use("Agg")' in notebook.cells[1].source


@pytest.fixture(scope="module")
def executed(kernel_name: str) -> Callable[[str], Any]:
    """``executed(stem)``: the notebook run once in a fresh kernel (cached for the module)."""
    done: dict[str, Any] = {}

    def get(stem: str) -> Any:
        if stem not in done:
            before = sorted(p.name for p in NOTEBOOKS.iterdir())
            done[stem] = run(NOTEBOOKS / f"{stem}.ipynb", kernel_name)
            assert sorted(p.name for p in NOTEBOOKS.iterdir()) == before  # no files left behind
        return done[stem]

    return get


@pytest.mark.parametrize("path", notebook_paths(), ids=lambda p: p.stem)
def test_notebook_runs_top_to_bottom(path: Path, executed: Callable[[str], Any]) -> None:
    notebook = executed(path.stem)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert all(cell.execution_count is not None for cell in code)


def test_sync_strategies_prints_15_60_80_ms(executed: Callable[[str], Any]) -> None:
    """SEED_FACTS.md section 1: 60 ms (one GPU), 80 ms (CPU), 15 ms (sharded, ring)."""
    notebook = executed("sync_strategies")
    text = printed(notebook)
    assert "aggregate on one GPU: 60.0 ms" in text
    assert "aggregate on the CPU: 80.0 ms" in text
    assert "sharded over the 4 GPUs: 15.0 ms" in text
    assert "chunked ring: 15.0 ms" in text
    assert "bottleneck: pcie_switch0->cpu0 50% (40 ms)" in text
    assert "PCIe at 16 GB/s: ring beats one-GPU aggregation from 32 KiB" in text
    assert images(notebook) == 5


def test_rings_trees_hybrid_prints_the_four_gpu_figures(executed: Callable[[str], Any]) -> None:
    """SEED_FACTS.md section 4: two rings 6.67 ms; packed trees towards 2.96 ms."""
    notebook = executed("rings_trees_hybrid")
    text = printed(notebook)
    assert "two rings: 6.67 ms" in text
    assert "three trees, 64 chunks: 3.06 ms" in text
    assert "1 GiB: hybrid" in text
    assert images(notebook) == 5


def test_calibration_notebook_validates_and_fits(executed: Callable[[str], Any]) -> None:
    notebook = executed("calibrate_from_nccl_tests")
    text = printed(notebook)
    assert "all_reduce on 8 x NVIDIA A100-SXM4-80GB, 30 sizes from 8 B to 4 GiB" in text
    assert "board: nvswitch8" in text
    assert "verdict: as expected for this machine" in text
    assert "efficiency.nvlink3 = " in text
    assert images(notebook) == 2
