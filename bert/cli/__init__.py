"""`mlperf-bert`: the command line. Thin: each command parses, calls one function, prints.

One module per domain (training, data, systems, compliance, checkpoint, simulate, logs); each lists its
top-level commands in COMMANDS. The convention every command follows (positional targets, --system, -o/--out)
is bert.cli.common's."""

from __future__ import annotations

import click

from bert.cli import checkpoint, compliance, data, logs, simulate, systems, training
from bert.cli.common import Group, version_lines


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        for line in version_lines():
            click.echo(line)
        ctx.exit()


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 120})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Print the package version, the commit of the code and the digest runs log of it, and exit.")
def main() -> None:
    """MLPerf Training BERT: train, prepare data, check and package submissions."""


for _module in (training, data, systems, compliance, checkpoint, simulate, logs):
    for _command in _module.COMMANDS:
        main.add_command(_command)
