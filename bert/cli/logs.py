"""`mlperf-bert log ...`: result logs after the run."""

from __future__ import annotations

from pathlib import Path

import click


@click.group(name="log")
def log_group() -> None:
    """Result logs."""


@log_group.command(name="seal")
@click.argument("log", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--reason", required=True, help="Why the run ended without its own run_stop (the launcher's view).")
def seal(log: Path, reason: str) -> None:
    """End a log cut off by a crash (no run_stop: rank 0 was killed) with an aborted run_stop and the reason.
    A log that ends with run_stop is left as it is. Used by run_and_time.sh after a failed run."""
    from bert.mllog import seal_log

    if seal_log(log, reason):
        click.echo(f"{log}: ended without run_stop; sealed with an aborted run_stop ({reason})")


COMMANDS = [log_group]
