"""`mlperf-bert system ...`: validate descriptors and print their launch shape."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import click

from bert.cli.common import load_descriptor, seed_option
from bert.system import DEFAULT_SYSTEM, MAX_SEED
from bert.typed_config import ConfigError


@click.group(name="system")
def system_group() -> None:
    """System descriptors."""


@system_group.command(name="check")
@click.argument("systems", nargs=-1, required=True)
def system_check(systems: tuple[str, ...]) -> None:
    """Validate descriptors; prints one line per descriptor."""
    from bert.search_space import check_search_space

    for name in systems:
        s = load_descriptor(name)
        try:
            check_search_space(s)
        except ConfigError as e:
            raise click.ClickException(str(e)) from None
        click.echo(f"{s.path}: ok ({s.nodes} node(s) x {s.run.processes_per_node} process(es), "
                   f"global batch {s.run.global_batch_size}, model {s.run.model})")


@system_group.command(name="show")
@click.argument("system")
def system_show(system: str) -> None:
    """Print a descriptor as the trainer reads it: its bases merged in, every value stated."""
    s = load_descriptor(system)
    click.echo(json.dumps(s.data, indent=2))


@system_group.command(name="env")
@click.argument("system", default=DEFAULT_SYSTEM)
def system_env(system: str) -> None:
    """Print the launch shape as shell assignments (used by run_and_time.sh and run_and_time.sbatch, which
    evaluate them; every value is quoted)."""
    from bert.distributed.slurm import sbatch_options

    s = load_descriptor(system)
    values = {
        "SYSTEM_NAME": s.name, "SYSTEM_PATH": str(s.path), "NODES": s.nodes,
        "PROCS_PER_NODE": s.run.processes_per_node, "DEVICE": s.run.device,
        "DATASET_DIR": str(s.dataset_dir()), "SYNTHETIC": int(s.run.dataset.synthetic is not None),
        "RUN_SEED": s.run_seed(), "MAX_SEED": MAX_SEED, "SBATCH_OPTIONS": " ".join(sbatch_options(s)),
    }
    for key, value in values.items():
        click.echo(f"{key}={shlex.quote(str(value))}")


def _launcher(choice: str) -> str:
    if choice != "auto":
        return choice
    return "slurm" if os.environ.get("SLURM_JOB_ID") else "torchrun"


def _master_addr(launcher: str, given: str | None) -> str:
    if given:
        return given
    if launcher == "slurm":
        return "<first host of $SLURM_JOB_NODELIST>"
    return os.environ.get("MASTER_ADDR", "localhost")


@system_group.command(name="plan")
@click.argument("system")
@seed_option("run.seed, else drawn at random")
@click.option("--log-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="The run's result file [default: logs/<system>/result_0.txt].")
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Dataset directory [default: run.dataset.dir]; its shards are dealt out to the ranks.")
@click.option("--launcher", type=click.Choice(["auto", "slurm", "torchrun"]), default="auto", show_default=True,
              help="auto: slurm when SLURM_JOB_ID is set, else torchrun.")
@click.option("--master-addr", default=None, help="Rendezvous host [default: Slurm's first host, $MASTER_ADDR or "
              "localhost].")
@click.option("--node-rank", type=int, default=0, show_default=True, help="This host's node (torchrun).")
@click.option("--cache-cleared/--no-cache-cleared", default=False)
@click.option("--command", "command_only", is_flag=True,
              help="Print only this node's launch command (env assignments first), NUL-separated, for "
                   "run_and_time.sh.")
def system_plan(system: str, seed: int | None, log_file: Path | None, data_dir: Path | None, launcher: str,
                master_addr: str | None, node_rank: int, cache_cleared: bool, command_only: bool) -> None:
    """The launch plan: exact commands, environment and per-rank shard assignment; starts nothing."""
    from bert.distributed.plan import TrainArgs, build_plan, describe, launch_command, launch_env

    s = load_descriptor(system)
    data = s.dataset_dir(data_dir)
    args = TrainArgs(s.run_seed(seed), log_file or Path("logs", s.name, "result_0.txt"), data, cache_cleared)
    launcher = _launcher(launcher)
    addr = _master_addr(launcher, master_addr)
    if command_only:
        env = [f"{k}={v}" for k, v in sorted(launch_env(s, launcher, addr).items())]
        argv = ["env", *env, *launch_command(s, args, launcher, node_rank, addr, "python")]
        sys.stdout.write("\0".join(argv) + "\0")
        return
    shards = len(sorted(data.glob(s.run.dataset.train_glob))) if data.is_dir() else 0
    for line in describe(build_plan(s, args, launcher, shards, addr), s, shards):
        click.echo(line)


@system_group.command(name="allocation")
@click.argument("system")
def system_allocation(system: str) -> None:
    """Inside a Slurm job: refuse an allocation that cannot run SYSTEM (one line), else print the rendezvous
    host, the address of the allocation's first node (nothing when the job names no nodes)."""
    from bert.distributed.slurm import Allocation, allocation_problem, first_node_address

    s = load_descriptor(system)
    try:
        allocation = Allocation.from_env(os.environ)
    except ValueError as e:
        raise click.ClickException(f"this Slurm job's environment: {e}") from None
    problem = allocation_problem(s, allocation, label=system)
    if problem is not None:
        raise click.ClickException(problem)
    if allocation.nodelist:
        try:
            click.echo(first_node_address(allocation.nodelist))
        except (OSError, subprocess.CalledProcessError) as e:
            raise click.ClickException(f"cannot find the first node of {allocation.nodelist} with scontrol: "
                                       f"{(getattr(e, 'stderr', None) or str(e)).strip()}") from None


@system_group.command(name="preflight")
@click.argument("system")
@click.option("--master-addr", required=True, help="Node 0's address (MASTER_ADDR), where every node reports.")
@click.option("--node-rank", type=int, default=None,
              help="This host's node [default: $SLURM_NODEID inside a Slurm job step].")
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Dataset directory [default: run.dataset.dir].")
@click.option("--log-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("logs"), show_default=True,
              help="Where node 0 writes the result logs (its free space is checked).")
def system_preflight(system: str, master_addr: str, node_rank: int | None, data_dir: Path | None,
                     log_dir: Path) -> None:
    """Multi-node pre-flight (run on every node): each node reports to node 0, which refuses the start in one
    line per problem. Exit status 0: the start goes on; 2: refused (the lines say why)."""
    from bert.distributed.preflight import preflight

    s = load_descriptor(system)
    if node_rank is None:
        if not os.environ.get("SLURM_NODEID", "").isdigit():
            raise click.UsageError("give --node-rank (outside a Slurm job step, which sets SLURM_NODEID)")
        node_rank = int(os.environ["SLURM_NODEID"])
    if not 0 <= node_rank < s.nodes:
        raise click.UsageError(f"--node-rank {node_rank}: {s.name} has nodes 0..{s.nodes - 1}")
    outcome = preflight(s, node_rank, master_addr, data_dir, log_dir)
    for problem in outcome.problems:
        click.echo(f"pre-flight: {problem}", err=True)
    if outcome.problems:
        sys.exit(2)
    click.echo(f"pre-flight: {outcome.ready}")


COMMANDS = [system_group]
