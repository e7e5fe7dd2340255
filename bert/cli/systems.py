"""`mlperf-bert system ...`: validate descriptors and print their launch shape."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import click

from bert.cli.common import Group, descriptor_for_command, seed_option, system_option
from bert.data.settings import MAX_SEED
from bert.system import DEFAULT_SYSTEM, Descriptor, load_descriptor
from bert.typed_config import ConfigError


@click.group(name="system", cls=Group)
def system_group() -> None:
    """System descriptors: list, check and show them, and plan their launch."""


@system_group.command(name="check")
@system_option("A descriptor to check", required=True, positional_alias=True, multiple=True)
def system_check(system: tuple[str, ...]) -> None:
    """Validate descriptors; prints one line per descriptor, or for a closed one one line per reason it cannot make
    an accepted closed run (not the benchmark, a sample cap that aborts converging runs), exit status 1."""
    from bert.closed_division import descriptor_problems
    from bert.search_space import check_search_space

    refused = 0
    for name in system:
        s = descriptor_for_command(name)
        try:
            check_search_space(s)
        except ConfigError as e:
            raise click.ClickException(str(e)) from None
        problems = descriptor_problems(s)
        for field, problem in problems:  # what a closed run may not be, one line each
            click.echo(f"{s.path}: {field}: {problem}", err=True)
        refused += bool(problems)
        if not problems:
            click.echo(f"{s.path}: ok ({s.nodes} node(s) x {s.run.processes_per_node} process(es), "
                       f"global batch {s.run.global_batch_size}, model {s.run.model}, {s.division} division)")
        _notes_hint(s.path)
    if refused:
        sys.exit(1)


def _notes_hint(descriptor: Path) -> None:
    """A line when the notes of the descriptor at `descriptor` describe another system: topics a site's descriptor
    takes from a published base (they say what that system is and where its figures come from)."""
    from bert.descriptor_files import notes_from_elsewhere

    inherited = notes_from_elsewhere(descriptor)
    if inherited:
        bases = ", ".join(sorted({p.name for p in inherited.values()}))
        click.echo(f"{descriptor}: note: run.notes topics {', '.join(sorted(inherited))} come from {bases} in "
                   "another folder and describe that system: state them for this one, or drop each with null",
                   err=True)


@system_group.command(name="show")
@system_option("The descriptor to show", required=True, positional_alias=True)
@click.option("--origins", is_flag=True, help="Instead of the JSON, one line per value: its path, the value and "
              "where it comes from (the file of the base chain that states it, or the reference convergence point).")
def system_show(system: str, origins: bool) -> None:
    """Print a descriptor as the trainer reads it: its bases merged in, the reference's hyperparameters it asks for
    filled in, every value stated; stderr says which files (or RCP) the values come from."""
    from collections import Counter

    from bert.reference_hyperparameters import shown_descriptor, value_at

    s = descriptor_for_command(system)
    data, where = shown_descriptor(s.path)
    if origins:
        width = max(map(len, where))
        for path, origin in where.items():
            value = value_at(data, path)
            shown = value if isinstance(value, str) and len(value) <= 60 else json.dumps(value)
            click.echo(f"{path:<{width}}  {shown if len(str(shown)) <= 60 else str(shown)[:57] + '...'}  <- {origin}")
    else:
        click.echo(json.dumps(data, indent=2))
        counts = ", ".join(f"{origin} ({n})" for origin, n in Counter(where.values()).items())
        click.echo(f"{s.path}: values from {counts}; `--origins` names each", err=True)
    _notes_hint(s.path)


@system_group.command(name="env")
@system_option("The descriptor", default=DEFAULT_SYSTEM, positional_alias=True)
def system_env(system: str) -> None:
    """Print the launch shape as shell assignments. run_and_time.sh and run_and_time.sbatch evaluate them; every
    value is quoted."""
    from bert.launch.slurm import sbatch_options

    s = descriptor_for_command(system)
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


def _master_addr(nodes: int, launcher: str, given: str | None) -> str:
    if given:
        return given
    if launcher == "slurm":
        return "<first host of $SLURM_JOB_NODELIST>"
    return os.environ.get("MASTER_ADDR", "localhost" if nodes == 1 else "<address of node 0>")


def _time_limit(sbatch_args: list[str] | None) -> tuple[str, str]:
    """The job's time limit and where it comes from: --time among the sbatch options, else the running job's,
    else SBATCH_TIMELIMIT (which sbatch reads), else run_and_time.sbatch's own #SBATCH --time."""
    from bert.launch.plan import HARNESS_ROOT
    from bert.launch.slurm import job_time_limit, script_time_limit, time_option

    given = time_option(sbatch_args or [])
    if given:
        return given, "--time given to sbatch"
    job = os.environ.get("SLURM_JOB_ID")
    running = job_time_limit(job) if job and sbatch_args is None else None
    if running:
        return running, f"job {job}'s TimeLimit"
    if os.environ.get("SBATCH_TIMELIMIT"):
        return os.environ["SBATCH_TIMELIMIT"], "SBATCH_TIMELIMIT"
    script = HARNESS_ROOT / "run_and_time.sbatch"
    return script_time_limit(script.read_text()) or "UNLIMITED", f"{script.name}'s #SBATCH --time"


def _time_line(system: Descriptor, runs: int, sbatch_args: list[str] | None = None) -> str:
    from bert.cli.simulate import predicted_job_seconds
    from bert.launch.slurm import time_check_line

    limit, source = _time_limit(sbatch_args)
    seconds, why_none, counted = predicted_job_seconds(system)
    try:
        return time_check_line(runs, seconds, limit, source, why_none, counted)
    except ValueError as e:
        raise click.ClickException(f"the job's time limit ({source}): {e}") from None


def _step_argv(step: str, s: Descriptor, args, launcher: str, node_rank: int, addr: str, container) -> list[str]:
    """The command of one step of the plan, as run_and_time.sh runs it."""
    from bert.launch.plan import (
        cache_clear_command,
        launch_command,
        launch_env,
        missing_mounts,
        preflight_command,
    )

    missing = missing_mounts(container) if container else []
    if missing:  # srun would not start the container, and say so in words of its own
        raise click.ClickException(f"CONT={container.image} cannot mount {', '.join(missing)}: not on this host "
                                   "(DATADIR, CHECKPOINTDIR, LOGDIR, the descriptor's folders, MOUNTS); give "
                                   "folders that every node has")
    if step == "preflight":
        return preflight_command(s, args, launcher, args.log_file.parent, node_rank, addr, container)
    if step == "cache-clear":
        return cache_clear_command(s.nodes, launcher)
    env = [f"{k}={v}" for k, v in sorted(launch_env(s.run.launch, launcher, addr).items())]
    return ["env", *env, *launch_command(s, args, launcher, node_rank, addr, container=container)]


@system_group.command(name="plan")
@system_option("The descriptor to plan the launch of", required=True, positional_alias=True)
@seed_option("run.seed, else drawn at random")
@click.option("--log-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="The run's result file [default: logs/<system>/result_0.txt].")
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Dataset directory (DATADIR) [default: run.dataset.dir]; its shards are dealt out to the ranks.")
@click.option("--checkpoint-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="The folder that holds run.init_checkpoint's file (CHECKPOINTDIR) [default: the descriptor's "
                   "path].")
@click.option("--launcher", type=click.Choice(["auto", "slurm", "torchrun"]), default="auto", show_default=True,
              help="auto: slurm when SLURM_JOB_ID is set, else torchrun.")
@click.option("--master-addr", default=None, help="Rendezvous host [default: Slurm's first host, $MASTER_ADDR or "
              "localhost].")
@click.option("--node-rank", type=int, default=0, show_default=True, help="This host's node (torchrun).")
@click.option("--cache-cleared/--no-cache-cleared", default=False, help="What the run logs as cache_clear.")
@click.option("--drop-caches", is_flag=True, help="The page cache is dropped before each run (DROP_CACHES=1).")
@click.option("--container-image", default=None, help="Slurm: the image the ranks start in (CONT; pyxis).")
@click.option("--container-mounts", default="", help="Slurm: more pyxis mounts, SRC:DST[:FLAGS],... (MOUNTS).")
@click.option("--runs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Slurm: the runs of the job (NEXP), whose predicted length is compared with its time limit.")
@click.option("--command", "command_only", type=click.Choice(["train", "preflight", "cache-clear"]), default=None,
              is_flag=False, flag_value="train",
              help="Print only this node's command of that step (train: the ranks' launch, env assignments first), "
                   "NUL-separated, for run_and_time.sh.")
def system_plan(system: str, seed: int | None, log_file: Path | None, data_dir: Path | None,
                checkpoint_dir: Path | None, launcher: str, master_addr: str | None, node_rank: int,
                cache_cleared: bool, drop_caches: bool, container_image: str | None, container_mounts: str,
                runs: int, command_only: str | None) -> None:
    """Print the launch plan and start nothing. The exact commands (the ranks', the pre-flight's, the cache
    clearing's), the environment and the per-rank shard assignment, and under Slurm the time check."""
    from bert.launch.plan import Container, TrainArgs, build_plan, describe, run_mounts

    s = descriptor_for_command(system)
    args = TrainArgs(s.run_seed(seed), log_file or Path("logs", s.name, "result_0.txt"), s.dataset_dir(data_dir),
                     cache_cleared, checkpoint_dir)
    launcher = _launcher(launcher)
    if container_image and launcher != "slurm":
        raise click.ClickException(f"CONT={container_image}: a container is started by srun (Slurm with pyxis); "
                                   "without Slurm, start run_and_time.sh inside the container itself")
    mounts = run_mounts(s.path, s.init_checkpoint_path(checkpoint_dir), args, container_mounts)
    container = Container(container_image, mounts) if container_image else None
    addr = _master_addr(s.nodes, launcher, master_addr)
    if command_only:
        sys.stdout.write("\0".join(_step_argv(command_only, s, args, launcher, node_rank, addr, container)) + "\0")
        return
    data = args.data_dir
    shards = len(sorted(data.glob(s.run.dataset.train_glob))) if data.is_dir() else 0
    for line in describe(build_plan(s, args, launcher, shards, addr, container, drop_caches), s, shards):
        click.echo(line)
    if launcher == "slurm":
        click.echo(_time_line(s, runs))


@system_group.command(name="time-check", context_settings={"ignore_unknown_options": True})
@system_option("The descriptor of the job's runs")
@click.option("--runs", type=click.IntRange(min=1), default=1, show_default=True, help="The job's runs (NEXP).")
@click.argument("sbatch_args", nargs=-1, type=click.UNPROCESSED)
def system_time_check(system: str | None, runs: int, sbatch_args: tuple[str, ...]) -> None:
    """Check that a job's runs fit its time limit (run_and_time.sbatch, before it submits). NEXP x the predicted
    run length against the time limit the job will get (SBATCH_ARGS: the options given to sbatch). One line;
    exit status 1 when the runs do not fit."""
    if system is None:  # the descriptor given first, as scripts gave it before --system
        if not sbatch_args:
            raise click.MissingParameter(param_hint="'--system'", param_type="option")
        system, *rest = sbatch_args
        sbatch_args = tuple(rest)
    line = _time_line(descriptor_for_command(system), runs, list(sbatch_args))
    click.echo(line, err=" MORE than " in line)
    sys.exit(1 if " MORE than " in line else 0)


@system_group.command(name="list")
def system_list() -> None:
    """List every descriptor a name reaches. The site folders of MLPERF_BERT_SYSTEMS first, then the published
    systems/; one line each (a published one that a site file of the same name hides is marked)."""
    from bert.descriptor_files import PUBLISHED_SYSTEMS, available_descriptors, descriptors_read_once, search_path

    try:
        found = available_descriptors()  # MLPERF_BERT_SYSTEMS naming no folder is one line
    except ConfigError as e:
        raise click.ClickException(str(e)) from None
    hidden = [p.stem for p in sorted(PUBLISHED_SYSTEMS.glob("*.json")) if found[p.stem] != p]
    click.echo(f"descriptors in {', then '.join(str(f) for f in search_path())}:")
    with descriptors_read_once():  # a base shared by many is read once, not once for each
        for name, path in found.items():
            click.echo(f"  {name:<24} {_listed(path, name in hidden)}")


def _listed(path: Path, hides: bool) -> str:
    """What `system list` says of the descriptor at `path`."""
    from bert.descriptor_files import PUBLISHED_SYSTEMS

    try:
        s = load_descriptor(path)
    except ConfigError as e:
        return f"INVALID: {e.problem} ({e.field or path})"
    where = "published" if path.parent == PUBLISHED_SYSTEMS else str(path.parent)
    return (f"{s.nodes} node(s) x {s.run.processes_per_node} {s.run.device}, {s.division}, global batch "
            f"{s.run.global_batch_size}, {where}" + (" (hides the published one)" if hides else ""))


@system_group.command(name="allocation")
@system_option("The descriptor to run", required=True, positional_alias=True)
def system_allocation(system: str) -> None:
    """Check a Slurm job's allocation against a descriptor, inside the job. Refuse an allocation that cannot run
    SYSTEM (one line), else print the rendezvous host, the address of the allocation's first node (nothing when
    the job names no nodes)."""
    from bert.launch.slurm import Allocation, allocation_problem, first_node_address

    s = descriptor_for_command(system)
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
@system_option("The descriptor to run", required=True, positional_alias=True)
@click.option("--master-addr", default=None,
              help="Node 0's address (MASTER_ADDR), where every node reports; needed for several nodes.")
@click.option("--node-rank", type=int, default=None,
              help="This host's node [default: $SLURM_NODEID inside a Slurm job step, else 0].")
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Dataset directory (DATADIR) [default: run.dataset.dir].")
@click.option("--checkpoint-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="The folder that holds run.init_checkpoint's file (CHECKPOINTDIR) [default: the descriptor's "
                   "path].")
@click.option("--log-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("logs"), show_default=True,
              help="Where node 0 writes the result logs (its free space is checked).")
def system_preflight(system: str, master_addr: str | None, node_rank: int | None, data_dir: Path | None,
                     checkpoint_dir: Path | None, log_dir: Path) -> None:
    """Check what a run needs before anything starts. This node's device and torch build, dataset, checkpoint and
    results folder; with several nodes (run on every node) each reports to node 0, which refuses the start in
    one line per problem. Exit status 0: the start goes on; 2: refused (the lines say why)."""
    from bert.launch.preflight import preflight

    s = descriptor_for_command(system)
    slurm_node = os.environ.get("SLURM_NODEID", "")
    if node_rank is None:
        if s.nodes > 1 and not slurm_node.isdigit():
            raise click.UsageError("give --node-rank (outside a Slurm job step, which sets SLURM_NODEID)")
        node_rank = int(slurm_node) if slurm_node.isdigit() else 0
    if not 0 <= node_rank < s.nodes:
        raise click.UsageError(f"--node-rank {node_rank}: {s.name} has nodes 0..{s.nodes - 1}")
    if master_addr is None and s.nodes > 1:
        raise click.UsageError(f"give --master-addr: {s.name} has {s.nodes} nodes, which report to node 0")
    # Under Slurm a cluster may bind one GPU to each task; torchrun's ranks all see the node's GPUs.
    gpus = 1 if os.environ.get("SLURM_JOB_ID") else s.run.processes_per_node
    outcome = preflight(s, node_rank, master_addr or "localhost", data_dir, log_dir, checkpoint_dir, gpus)
    for problem in outcome.problems:
        click.echo(f"pre-flight: {problem}", err=True)
    if outcome.problems:
        sys.exit(2)
    click.echo(f"pre-flight: {outcome.ready}")


COMMANDS = [system_group]
