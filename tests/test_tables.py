"""Tables fit the console: no line wider than it, no name cut mid-word, user text never markup."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from commsim.api import simulate
from commsim.report import results_table


def render(renderable: object, width: int) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None)
    console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def results() -> list:  # type: ignore[type-arg]
    return [
        simulate("pcie_4gpu_switch", "sharded_parameter_server", size="160 MB", label="[bold]sharded[/]"),
        simulate("pcie_4gpu_switch", "ring", size="1 MB"),
    ]


@pytest.mark.parametrize("width", [40, 80, 120, 200])
def test_every_line_fits_and_names_stay_whole(results: list, width: int) -> None:  # type: ignore[type-arg]
    text = render(results_table(results, title="t"), width)
    assert max(len(line) for line in text.splitlines()) <= width
    words = text.split()
    for name in ("sharded_parameter_server", "gpu0->pcie_switch0", "pcie_switch0->gpu0"):
        assert any(name in word for word in words), (name, width)


def test_wide_consoles_get_a_table_and_narrow_ones_records(results: list) -> None:  # type: ignore[type-arg]
    assert "┃ strategy" in render(results_table(results), 200)
    narrow = render(results_table(results), 60)
    assert "┃" not in narrow and "algorithm: sharded_parameter_server" in narrow


def test_labels_are_shown_as_written(results: list) -> None:  # type: ignore[type-arg]
    """A label from a file is text, not console markup."""
    assert "[bold]sharded[/]" in render(results_table(results), 200)
    assert "[bold]sharded[/]" in render(results_table(results), 60)
