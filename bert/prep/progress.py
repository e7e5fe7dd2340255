"""Progress bars (rate and time left) for the long data steps, drawn on stderr so stdout stays for results."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)
from rich.text import Text

Advance = Callable[[float], None]


class _RateColumn(ProgressColumn):
    def __init__(self, unit: str):
        super().__init__()
        self.unit = unit

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("" if speed is None else f"{speed:,.0f} {self.unit}/s", style="progress.data.speed")


@contextmanager
def progress_bar(description: str, total: float, unit: str, enabled: bool = True) -> Iterator[Advance]:
    """Yields a function that advances the bar; `unit` "bytes" shows sizes and MB/s, any other unit counts."""
    if not enabled:
        yield lambda amount: None
        return
    amounts = [DownloadColumn(), TransferSpeedColumn()] if unit == "bytes" else [MofNCompleteColumn(),
                                                                                  _RateColumn(unit)]
    columns = [TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(), *amounts,
               TimeElapsedColumn(), TimeRemainingColumn()]
    with Progress(*columns, console=Console(stderr=True)) as bar:
        task = bar.add_task(description, total=total)
        yield lambda amount: bar.advance(task, amount)
