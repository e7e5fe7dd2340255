"""`mlperf-bert log ...`: result logs after the run."""

from __future__ import annotations

import sys
from pathlib import Path

import click


@click.group(name="log")
def log_group() -> None:
    """Result logs."""


# `log seal` exit status for a log that is not a finished log and cannot be made one (0 and 1: see seal).
NOT_FINISHED = 3


@log_group.command(name="seal")
@click.argument("log", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--reason", required=True, help="Why the run ended without its own run_stop (the launcher's view).")
def seal(log: Path, reason: str) -> None:
    """Make LOG a finished log: one cut off by a crash (no run_stop: rank 0 was killed) gets an aborted run_stop
    with the reason; one that ends with run_stop is left as it is. Exit status: 0 when LOG ends with a
    successful run_stop, 1 with an aborted one, 3 when it is not a finished log and cannot be made one (it holds
    no line, or the line cannot be written: a full disk), said in one line. run_and_time.sh publishes a log as
    result_<i>.txt only on 0 or 1."""
    from bert.mllog import SUCCESS, SealError, seal_log

    try:
        status, sealed = seal_log(log, reason)
    except SealError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(NOT_FINISHED)
    if sealed:
        click.echo(f"{log}: ended without run_stop; sealed with an aborted run_stop ({reason})")
    sys.exit(0 if status == SUCCESS else 1)


COMMANDS = [log_group]
