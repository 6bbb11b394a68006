"""A progress bar on stderr for runs over many sizes or algorithms.

Results go to stdout, so the bar goes to stderr (rich's own ``track``
writes to stdout). It stays silent when disabled (``--quiet``), when stderr
is not a terminal (pipes, CI logs, notebooks), and for runs too short to
need one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sized
from typing import TypeVar

from rich.console import Console

__all__ = ["progress_iter"]

T = TypeVar("T")


def progress_iter(
    items: Iterable[T],
    description: str = "simulating",
    enabled: bool = True,
    *,
    total: int | None = None,
    minimum: int = 2,
    console: Console | None = None,
) -> Iterator[T]:
    """Yield ``items`` while a transient progress bar on stderr counts them.

    Parameters
    ----------
    items : iterable
        What to iterate over; its length (or ``total``) sizes the bar.
    description : str
        Text left of the bar.
    enabled : bool
        False (``--quiet``) yields the items without any output.
    total : int, optional
        Number of items, if ``items`` has no length.
    minimum : int
        No bar for fewer items than this (when the count is known).
    console : rich.console.Console, optional
        Where to draw; default ``Console(stderr=True)``. Nothing is drawn
        unless it is a terminal.

    Examples
    --------
    >>> [x * 2 for x in progress_iter(range(3), enabled=False)]
    [0, 2, 4]
    """
    if total is None and isinstance(items, Sized):
        total = len(items)
    console = console or Console(stderr=True)
    if not enabled or not console.is_terminal or (total is not None and total < minimum):
        yield from items
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(description, total=total)
        for item in items:
            yield item
            progress.advance(task)
