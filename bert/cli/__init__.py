"""`mlperf-bert`: the command line. Thin: each command parses, calls one function, prints.

One module per domain (training, data, systems, logs); each lists its top-level commands in COMMANDS."""

from __future__ import annotations

import click

from bert.cli import data, logs, systems, training


@click.group()
def main() -> None:
    """MLPerf Training BERT: train, prepare data, check and package submissions."""


for _module in (training, data, systems, logs):
    for _command in _module.COMMANDS:
        main.add_command(_command)
