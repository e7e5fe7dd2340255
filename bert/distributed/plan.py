"""The launch plan of a descriptor: the exact commands, the environment and what every rank does.

run_and_time.sh starts the ranks with the command built here (one source of truth), and `--dry-run` prints
the whole plan without starting anything: per node the launcher command, the environment every rank gets,
and per rank its node, local rank, presorting group and the training shards it reads in the first epoch.
Nothing here reads the environment; the caller passes what it found (master address, node rank).
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass
from pathlib import Path

from bert.data.samplers import rank_shards
from bert.distributed.cpu_binding import Topology, describe_binding
from bert.model.size import gradient_buckets, parameter_count
from bert.system import System

LAUNCHERS = ("slurm", "torchrun")


@dataclass(frozen=True)
class TrainArgs:
    """What one run passes to `mlperf-bert train`."""

    seed: int
    log_file: Path
    data_dir: Path
    cache_cleared: bool = False

    def argv(self, system: System) -> list[str]:
        return ["-m", "bert.cli", "train", "--system", str(system.path), "--seed", str(self.seed),
                "--log-file", str(self.log_file), "--data-dir", str(self.data_dir),
                "--cache-cleared" if self.cache_cleared else "--no-cache-cleared"]


@dataclass(frozen=True)
class RankSlot:
    rank: int
    node: int
    local_rank: int
    group: int  # the presorting group: the ranks of one node exchange and redeal their sequences
    device: str  # the device the rank takes, as bert.distributed.launch chooses it
    shards: tuple[int, ...]  # indices (in sorted name order) of the shards read in epoch 0


@dataclass(frozen=True)
class LaunchPlan:
    launcher: str
    commands: list[list[str]]  # srun: one command for the whole job; torchrun: one per node, node rank order
    env: dict[str, str]
    ranks: list[RankSlot]


def launch_command(system: System, args: TrainArgs, launcher: str, node_rank: int = 0,
                   master_addr: str = "localhost", python: str = "python") -> list[str]:
    """The command that starts this node's ranks (srun: every node's)."""
    run = system.run
    if launcher == "slurm":
        return ["srun", f"--nodes={system.nodes}", f"--ntasks-per-node={run.processes_per_node}",
                "--kill-on-bad-exit=1", python, *args.argv(system)]
    if launcher != "torchrun":
        raise ValueError(f"unknown launcher {launcher!r}; choose one of {', '.join(LAUNCHERS)}")
    if system.world_size == 1:  # one process needs no agent: a few seconds less start-up, the trainer's own status
        return [python, *args.argv(system)]
    if system.nodes == 1:
        shape = ["--standalone", "--nnodes=1"]
    else:
        shape = [f"--nnodes={system.nodes}", f"--node_rank={node_rank}", f"--master_addr={master_addr}",
                 f"--master_port={run.launch.master_port}"]
    return [python, "-m", "bert.distributed.torchrun", *shape, f"--nproc_per_node={run.processes_per_node}",
            *args.argv(system)]


def launch_env(system: System, launcher: str, master_addr: str) -> dict[str, str]:
    """The variables every rank gets besides the launcher's own (rank, world size, local rank)."""
    env = dict(system.run.launch.env) | system.run.launch.socket_env()
    if launcher == "slurm":
        env |= {"MASTER_ADDR": master_addr, "MASTER_PORT": str(system.run.launch.master_port)}
    return env


def rank_device(system: System, local_rank: int) -> str:
    """The device of a rank whose node shows it all of system.accelerators_per_node GPUs (where the cluster
    binds one GPU per task, every rank takes cuda:0 instead: see bert.distributed.launch.cuda_device_index)."""
    if system.run.device != "cuda":
        return system.run.device
    from bert.distributed.launch import cuda_device_index

    return f"cuda:{cuda_device_index(local_rank, int(system.description['accelerators_per_node']))}"


def rank_slots(system: System, num_shards: int, seed: int) -> list[RankSlot]:
    """Every rank's place, device and first-epoch shards, as bert.data.samplers deals them."""
    per_node = system.run.processes_per_node
    names = [Path(f"{i}") for i in range(num_shards)]
    slots = []
    for rank in range(system.world_size):
        parts = rank_shards(names, rank, system.world_size, seed, 0) if num_shards else []
        local = rank % per_node
        slots.append(RankSlot(rank, rank // per_node, local, rank // per_node, rank_device(system, local),
                              tuple(p.shard_index for p in parts)))
    return slots


def build_plan(system: System, args: TrainArgs, launcher: str, num_shards: int,
               master_addr: str = "localhost") -> LaunchPlan:
    nodes = range(system.nodes) if launcher == "torchrun" else range(1)
    commands = [launch_command(system, args, launcher, n, master_addr) for n in nodes]
    return LaunchPlan(launcher, commands, launch_env(system, launcher, master_addr),
                      rank_slots(system, num_shards, args.seed))


def _clip_line(system: System) -> str:
    run = system.run
    params = parameter_count(system.model_config())
    buckets = gradient_buckets(params, system.run.bucket_cap_mb)
    if run.clip == "bucketwise_before_allreduce":
        return (f"clip: bucketwise_before_allreduce: DDP communication hook BucketwiseBeforeAllreduce, "
                f"{buckets} bucket(s) of <= {run.bucket_cap_mb:g} MB for {params:,} parameters, each clipped to "
                f"clip_norm/sqrt({buckets}) = {run.clip_norm / math.sqrt(buckets):.4g} before its allreduce")
    where = "the averaged gradient's global norm" if run.clip == "after_allreduce" else "each rank's whole gradient"
    return f"clip: {run.clip}: {where} clipped to {run.clip_norm:g}; {buckets} DDP bucket(s), {params:,} parameters"


def _balance_line(system: System) -> str:
    run, nodes, per_node = system.run, system.nodes, system.run.processes_per_node
    line = f"balance: {run.balance}"
    if run.balance == "stratified+local_presort":
        line += (f": {nodes} node group(s) for presorting, each ranks [k*{per_node}, (k+1)*{per_node}) "
                 f"gathering its sequences every step and dealing them out ({run.presort_deal} deal)")
    elif run.balance == "global_presort":
        line += f": one presorting group of all {system.world_size} ranks ({run.presort_deal} deal)"
    elif run.balance == "packed":
        line += f": the same packed rows on every rank, agreed over all {system.world_size} ranks every step"
    if run.balance.startswith("stratified"):
        line += f"; lookahead {run.balance_lookahead}"
    if run.length_bins:
        line += f"; length bins (upper edges) {run.length_bins}"
    return line


def describe(plan: LaunchPlan, system: System, num_shards: int) -> list[str]:
    """The dry run's report."""
    run = system.run
    lines = [f"system {system.name}: {system.nodes} node(s) x {run.processes_per_node} = {system.world_size} ranks, "
             f"{run.device}, global batch {run.global_batch_size} = {system.per_process_batch} per rank x "
             f"{run.gradient_accumulation_steps} accumulation step(s) x {system.world_size} ranks",
             _balance_line(system), _clip_line(system), f"launcher: {plan.launcher}"]
    for node, command in enumerate(plan.commands):
        where = "every node (one task per process)" if plan.launcher == "slurm" else f"node {node}"
        lines.append(f"command ({where}): {shlex.join(command)}")
    lines += [f"env: {k}={shlex.quote(v)}" for k, v in sorted(plan.env.items())]
    shards = f"{num_shards} training shard(s)" if num_shards else "no training shards found (shards not shown)"
    if run.device == "cuda":
        lines.append(f"devices: each rank takes cuda:<local rank mod the GPUs it sees>; shown for "
                     f"{system.description['accelerators_per_node']} GPU(s) seen per node (a cluster that binds "
                     "one GPU per task gives every rank cuda:0)")
    lines += describe_binding(system, Topology.read())
    lines.append(f"ranks ({shards}; epoch-0 shard indices in sorted name order):")
    for slot in plan.ranks:
        listed = ",".join(map(str, slot.shards)) if slot.shards else "-"
        lines.append(f"  rank {slot.rank} node {slot.node} local {slot.local_rank} group {slot.group} "
                     f"device {slot.device} shards {listed}")
    return lines
