"""Progress bars (rate and time left) for the long data steps, drawn on stderr so stdout stays for results.

`rich` is imported when a bar is drawn, not with this module: the worker processes of the data steps import
this module for `Advance` and draw nothing (importing rich would cost each of them about 0.2 s of CPU).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

Advance = Callable[[float], None]


def _rate_column(unit: str):
    from rich.progress import ProgressColumn, Task
    from rich.text import Text

    class RateColumn(ProgressColumn):
        def render(self, task: Task) -> Text:
            speed = task.finished_speed or task.speed
            return Text("" if speed is None else f"{speed:,.0f} {unit}/s", style="progress.data.speed")

    return RateColumn()


@contextmanager
def progress_bar(description: str, total: float, unit: str, enabled: bool = True) -> Iterator[Advance]:
    """Yields a function that advances the bar; `unit` "bytes" shows sizes and MB/s, any other unit counts."""
    if not enabled:
        yield lambda amount: None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        MofNCompleteColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    amounts = [DownloadColumn(), TransferSpeedColumn()] if unit == "bytes" else [MofNCompleteColumn(),
                                                                                  _rate_column(unit)]
    columns = [TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(), *amounts,
               TimeElapsedColumn(), TimeRemainingColumn()]
    with Progress(*columns, console=Console(stderr=True)) as bar:
        task = bar.add_task(description, total=total)
        yield lambda amount: bar.advance(task, amount)
