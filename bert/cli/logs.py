"""`mlperf-bert log ...`: result logs after the run."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from bert.cli.common import Group, system_option
from bert.mlperf_rules import DEFAULT_RULESET, RULESETS


@click.group(name="log", cls=Group)
def log_group() -> None:
    """Result logs: finish a cut-off log, summarise finished runs."""


# `log seal` exit status for a log that is not a finished log and cannot be made one (0 and 1: see seal).
NOT_FINISHED = 3


@log_group.command(name="seal")
@click.argument("log", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--reason", required=True, help="Why the run ended without its own run_stop (the launcher's view).")
def seal(log: Path, reason: str) -> None:
    """Make LOG a finished log. One cut off by a crash (no run_stop: rank 0 was killed) gets an aborted run_stop
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


@log_group.command(name="summary")
@click.argument("logs", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@system_option("The descriptor the runs ran, as the next command should name it", required=True)
@click.option("--ruleset", type=click.Choice(RULESETS), default=DEFAULT_RULESET, show_default=True,
              help="The ruleset of the official compliance checker.")
def summary(logs: tuple[Path, ...], system: str, ruleset: str) -> None:
    """Summarise finished runs and name the next command. Per log: its outcome, its time from run_start to
    run_stop (what MLPerf scores) and the official compliance checker's verdict on it; then the command to run
    next: check, or package once the folder holds a submission's runs. run_and_time.sh prints it last."""
    from compliance.run_summary import summary_lines

    for line in summary_lines(list(logs), system, ruleset):
        click.echo(line)


COMMANDS = [log_group]
