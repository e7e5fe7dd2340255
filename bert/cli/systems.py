"""`mlperf-bert system ...`: validate descriptors and print their launch shape."""

from __future__ import annotations

import shlex

import click

from bert.cli.common import load_descriptor


@click.group(name="system")
def system_group() -> None:
    """System descriptors."""


@system_group.command(name="check")
@click.argument("systems", nargs=-1, required=True)
def system_check(systems: tuple[str, ...]) -> None:
    """Validate descriptors; prints one line per descriptor."""
    for name in systems:
        s = load_descriptor(name)
        click.echo(f"{s.path}: ok ({s.nodes} node(s) x {s.run.processes_per_node} process(es), "
                   f"global batch {s.run.global_batch_size}, model {s.run.model})")


@system_group.command(name="env")
@click.argument("system")
def system_env(system: str) -> None:
    """Print the launch shape as shell assignments (used by run_and_time.sh)."""
    s = load_descriptor(system)
    values = {
        "SYSTEM_NAME": s.name, "SYSTEM_PATH": str(s.path), "NODES": s.nodes,
        "PROCS_PER_NODE": s.run.processes_per_node, "DEVICE": s.run.device,
        "DATASET_DIR": str(s.dataset_dir()), "SYNTHETIC": int(s.run.dataset.synthetic is not None),
        "RUN_SEED": "" if s.run.seed is None else s.run.seed,
    }
    for key, value in values.items():
        click.echo(f"{key}={shlex.quote(str(value))}")



COMMANDS = [system_group]
