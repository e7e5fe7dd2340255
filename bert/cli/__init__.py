"""`mlperf-bert`: the command line. Thin: each command parses, calls one function, prints.

One module per domain (training, data, systems, compliance, checkpoint, simulate, logs); each lists its
top-level commands in COMMANDS."""

from __future__ import annotations

import click

from bert.cli import checkpoint, compliance, data, logs, simulate, systems, training


@click.group()
def main() -> None:
    """MLPerf Training BERT: train, prepare data, check and package submissions."""


for _module in (training, data, systems, compliance, checkpoint, simulate, logs):
    for _command in _module.COMMANDS:
        main.add_command(_command)
