"""The launch plan of a descriptor: the exact commands, the environment and what every rank does.

run_and_time.sh starts the ranks, the pre-flight and the cache clearing with the commands built here (one source
of truth), and `--dry-run` prints the whole plan without starting anything: per node the launcher command (under
Slurm with the container it starts in), the pre-flight, the cache clearing, the environment every rank gets,
and per rank its node, local rank, presorting group and the training shards it reads in the first epoch.
Nothing here reads the environment; the caller passes what it found (master address, node rank, CONT, MOUNTS).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from bert.data.samplers import rank_shards
from bert.descriptor_files import descriptor_files
from bert.distributed.clip_settings import ClipSpec
from bert.distributed.cpu_binding import Topology, describe_binding
from bert.distributed.launch_settings import LaunchSpec
from bert.model.size import gradient_buckets, parameter_count
from bert.system import Descriptor

LAUNCHERS = ("slurm", "torchrun")
HARNESS_ROOT = Path(__file__).resolve().parents[2]  # where run_and_time.sh runs, and the container starts
# Drops this host's page cache (as root, else through sudo without a password) and says so in one line, which
# run_and_time.sh counts: the log may claim cache_clear only when every node said "cleared".
DROP_CACHES = ('sync; if sysctl -q -w vm.drop_caches=3 2>/dev/null || sudo -n sysctl -q -w vm.drop_caches=3 '
               '2>/dev/null; then echo "page cache cleared on $(hostname)"; else echo "page cache NOT cleared on '
               '$(hostname) (needs root, or sudo without a password)"; fi')


@dataclass(frozen=True)
class TrainArgs:
    """What one run passes to `mlperf-bert train`."""

    seed: int
    log_file: Path
    data_dir: Path
    cache_cleared: bool = False
    checkpoint_dir: Path | None = None  # CHECKPOINTDIR: the folder that holds run.init_checkpoint's file

    def argv(self, descriptor: Path) -> list[str]:
        """`mlperf-bert train`'s arguments for the descriptor at `descriptor`."""
        checkpoint = ["--checkpoint-dir", str(self.checkpoint_dir)] if self.checkpoint_dir is not None else []
        return ["-m", "bert.cli", "train", "--system", str(descriptor), "--seed", str(self.seed),
                "--log-file", str(self.log_file), "--data-dir", str(self.data_dir), *checkpoint,
                "--cache-cleared" if self.cache_cleared else "--no-cache-cleared"]


@dataclass(frozen=True)
class Container:
    """The container every step of a Slurm run starts in, through pyxis (NVIDIA's Slurm plug-in for enroot):
    the image (CONT) and what it sees of the hosts (MOUNTS, pyxis's SRC:DST[:FLAGS] list, then the folders the
    run reads and writes at their own paths: see run_mounts)."""

    image: str
    mounts: tuple[str, ...] = ()

    def srun_options(self, env: dict[str, str]) -> list[str]:
        """srun's options; the variables the ranks get are passed over the image's own (pyxis keeps the image's
        value of a variable the image sets, unless --container-env names it)."""
        options = [f"--container-image={self.image}"]
        if self.mounts:
            options.append(f"--container-mounts={','.join(self.mounts)}")
        options.append(f"--container-workdir={HARNESS_ROOT}")
        if env:
            options.append(f"--container-env={','.join(sorted(env))}")
        return options


def nearest_folder(path: Path) -> Path:
    """`path` if it is a folder, else the nearest folder above it that exists."""
    while not path.is_dir() and path != path.parent:
        path = path.parent
    return path


def _mount_point(path: Path) -> Path:
    """The folder to mount for `path`: its nearest existing folder (a results folder not made yet), but not the
    root of the file system (a path that is not on this host at all: the pre-flight names it)."""
    nearest = nearest_folder(path)
    return path if nearest == Path(nearest.anchor) else nearest


def run_mounts(descriptor: Path, checkpoint: Path | None, args: TrainArgs, user_mounts: str = "") -> tuple[str, ...]:
    """MOUNTS, then the folders the run reads and writes, each at its own path, so that the paths of the plan mean
    the same inside the container: this harness, the files of the descriptor at `descriptor`, the dataset, the
    checkpoint to start from (Descriptor.init_checkpoint_path) and the results. A folder not made yet is mounted
    through the nearest one that exists; one inside another is not mounted twice. Every source must exist where
    srun starts the container (missing_mounts)."""
    user = tuple(m for m in user_mounts.split(",") if m)
    wanted = [HARNESS_ROOT, args.data_dir, args.log_file.parent]
    if descriptor.is_file():
        wanted += [p.resolve().parent for p in descriptor_files(descriptor)]
    if checkpoint is not None:
        wanted.append(checkpoint.parent)
    folders: list[Path] = []
    for folder in sorted({_mount_point(Path(p).absolute()) for p in wanted}, key=lambda p: len(p.parts)):
        if not any(folder == kept or kept in folder.parents for kept in folders):
            folders.append(folder)
    return user + tuple(f"{folder}:{folder}" for folder in folders)


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
    preflight: list[list[str]]  # as commands: srun's for every node, torchrun's one per node
    cache_clear: list[str] | None  # None: not asked for (DROP_CACHES)
    container: Container | None


def missing_mounts(container: Container) -> list[str]:
    """The sources of the container's mounts that do not exist on this host (srun would fail to start it)."""
    return [source for source in (m.split(":")[0] for m in container.mounts) if not Path(source).exists()]


def launch_command(system: Descriptor, args: TrainArgs, launcher: str, node_rank: int = 0,
                   master_addr: str = "localhost", python: str = "python", container: Container | None = None
                   ) -> list[str]:
    """The command that starts this node's ranks (srun: every node's, in the container when there is one)."""
    run = system.run
    if launcher == "slurm":
        return ["srun", f"--nodes={system.nodes}", f"--ntasks-per-node={run.processes_per_node}",
                "--kill-on-bad-exit=1", *_in_container(container, run.launch, master_addr), python,
                *args.argv(system.path)]
    if container is not None:
        raise ValueError("a container (CONT) is started by Slurm's srun (pyxis); without Slurm run run_and_time.sh "
                         "inside the container itself")
    if launcher != "torchrun":
        raise ValueError(f"unknown launcher {launcher!r}; choose one of {', '.join(LAUNCHERS)}")
    if system.world_size == 1:  # one process needs no agent: a few seconds less start-up, the trainer's own status
        return [python, *args.argv(system.path)]
    if system.nodes == 1:
        shape = ["--standalone", "--nnodes=1"]
    else:
        shape = [f"--nnodes={system.nodes}", f"--node_rank={node_rank}", f"--master_addr={master_addr}",
                 f"--master_port={run.launch.master_port}"]
    return [python, "-m", "bert.launch.torchrun", *shape, f"--nproc_per_node={run.processes_per_node}",
            *args.argv(system.path)]


def _in_container(container: Container | None, launch: LaunchSpec, master_addr: str) -> list[str]:
    return container.srun_options(launch_env(launch, "slurm", master_addr)) if container else []


def _per_node(nodes: int) -> list[str]:
    """srun's options for one task on every node of the run."""
    return ["srun", f"--nodes={nodes}", f"--ntasks={nodes}", "--ntasks-per-node=1"]


def preflight_command(system: Descriptor, args: TrainArgs, launcher: str, log_dir: Path, node_rank: int = 0,
                      master_addr: str = "localhost", container: Container | None = None,
                      python: str = "python") -> list[str]:
    """The pre-flight (bert.launch.preflight) of this node, or under Slurm of every node (one task each, in
    the run's container: it checks what the ranks will find)."""
    argv = [python, "-m", "bert.cli", "system", "preflight", "--system", str(system.path),
            "--data-dir", str(args.data_dir), "--log-dir", str(log_dir), "--master-addr", master_addr]
    if args.checkpoint_dir is not None:
        argv += ["--checkpoint-dir", str(args.checkpoint_dir)]
    if launcher == "slurm":
        return [*_per_node(system.nodes), *_in_container(container, system.run.launch, master_addr), *argv]
    return [*argv, "--node-rank", str(node_rank)]


def cache_clear_command(nodes: int, launcher: str) -> list[str]:
    """Drops the page cache before a run: under Slurm on every node (one task each, outside the container, whose
    /proc/sys is not the host's to write), else on this host (each node's run_and_time.sh runs it on its own)."""
    here = ["bash", "-c", DROP_CACHES]
    return [*_per_node(nodes), *here] if launcher == "slurm" else here


def launch_env(launch: LaunchSpec, launcher: str, master_addr: str) -> dict[str, str]:
    """The variables every rank gets besides the launcher's own (rank, world size, local rank)."""
    env = dict(launch.env) | launch.socket_env()
    if launcher == "slurm":
        env |= {"MASTER_ADDR": master_addr, "MASTER_PORT": str(launch.master_port)}
    return env


def rank_device(device: str, gpus_per_node: int, local_rank: int) -> str:
    """The device of a rank of `device` ("cpu", "cuda") whose node shows it all its `gpus_per_node` GPUs
    (system.accelerators_per_node; where the cluster binds one GPU per task, every rank takes cuda:0 instead:
    see bert.distributed.launch.cuda_device_index)."""
    if device != "cuda":
        return device
    from bert.distributed.launch import cuda_device_index

    return f"cuda:{cuda_device_index(local_rank, gpus_per_node)}"


def rank_slots(system: Descriptor, num_shards: int, seed: int) -> list[RankSlot]:
    """Every rank's place, device and first-epoch shards, as bert.data.samplers deals them."""
    per_node, gpus = system.run.processes_per_node, int(system.description["accelerators_per_node"])
    names = [Path(f"{i}") for i in range(num_shards)]
    slots = []
    for rank in range(system.world_size):
        parts = rank_shards(names, rank, system.world_size, seed, 0) if num_shards else []
        local = rank % per_node
        slots.append(RankSlot(rank, rank // per_node, local, rank // per_node,
                              rank_device(system.run.device, gpus, local), tuple(p.shard_index for p in parts)))
    return slots


def build_plan(system: Descriptor, args: TrainArgs, launcher: str, num_shards: int, master_addr: str = "localhost",
               container: Container | None = None, drop_caches: bool = False) -> LaunchPlan:
    nodes = range(system.nodes) if launcher == "torchrun" else range(1)
    commands = [launch_command(system, args, launcher, n, master_addr, container=container) for n in nodes]
    preflight = [preflight_command(system, args, launcher, args.log_file.parent, n, master_addr, container)
                 for n in nodes]
    return LaunchPlan(launcher, commands, launch_env(system.run.launch, launcher, master_addr),
                      rank_slots(system, num_shards, args.seed), preflight,
                      cache_clear_command(system.nodes, launcher) if drop_caches else None, container)


def _clip_line(clip: ClipSpec, params: int) -> str:
    return f"clip: {clip.clip}: {clip.clip_kind.plan(clip, params, gradient_buckets(params, clip.bucket_cap_mb))}"


def _balance_line(system: Descriptor) -> str:
    run, strategy, world = system.run, system.balance, system.world_size
    group = strategy.presort_group(world, run.processes_per_node)
    line = f"balance: {strategy.name}"
    if strategy.presorts and group < world:
        line += (f": {world // group} node group(s) for presorting, each ranks [k*{group}, (k+1)*{group}) "
                 f"gathering its sequences every step and dealing them out ({run.presort_deal} deal)")
    elif strategy.presorts:
        line += f": one presorting group of all {world} ranks ({run.presort_deal} deal)"
    elif strategy.packed:
        line += f": the same packed rows on every rank, agreed over all {world} ranks every step"
    if strategy.stratified:
        line += f"; lookahead {run.balance_lookahead}"
    if run.length_bins:
        line += f"; length bins (upper edges) {run.length_bins}"
    return line


def _container_lines(plan: LaunchPlan) -> list[str]:
    if plan.container is None:
        return ["container: none (CONT names an image for srun's --container-image, under Slurm with pyxis)"]
    return [f"container: {plan.container.image}; the ranks and the pre-flight start in it, the cache clearing on "
            "the host", *(f"  mount: {mount}" for mount in plan.container.mounts)]


def _cache_clear_line(plan: LaunchPlan, nodes: int) -> str:
    if plan.cache_clear is None:
        return "cache clear: not asked for (DROP_CACHES=1 asks): cache_clear is logged false"
    if plan.launcher == "slurm":
        where = f"on each of the {nodes} node(s), one task each, outside the container"
        rule = f"logged true only when all {nodes} say cleared, else false with a line naming the others"
    else:
        where = "by each node's run_and_time.sh on its own host"
        rule = (f"every rank passes on its node's answer and rank 0 logs true only when all {nodes} node(s) "
                "cleared, else false with a line naming the others")
    return f"cache clear (before each run, {where}): {shlex.join(plan.cache_clear)}; cache_clear {rule}"


def describe(plan: LaunchPlan, system: Descriptor, num_shards: int) -> list[str]:
    """The dry run's report."""
    run = system.run
    lines = [f"system {system.name}: {system.nodes} node(s) x {run.processes_per_node} = {system.world_size} ranks, "
             f"{run.device}, global batch {run.global_batch_size} = {system.per_process_batch} per rank x "
             f"{run.gradient_accumulation_steps} accumulation step(s) x {system.world_size} ranks",
             _balance_line(system), _clip_line(run, parameter_count(system.model_config())),
             f"launcher: {plan.launcher}"]
    for node, command in enumerate(plan.commands):
        where = "every node (one task per process)" if plan.launcher == "slurm" else f"node {node}"
        lines.append(f"command ({where}): {shlex.join(command)}")
    lines += _container_lines(plan)
    for node, command in enumerate(plan.preflight):
        where = "every node (one task each)" if plan.launcher == "slurm" else f"node {node}"
        lines.append(f"pre-flight ({where}, before the first run): {shlex.join(command)}")
    lines.append(_cache_clear_line(plan, system.nodes))
    lines += [f"env: {k}={shlex.quote(v)}" for k, v in sorted(plan.env.items())]
    shards = f"{num_shards} training shard(s)" if num_shards else "no training shards found (shards not shown)"
    if run.device == "cuda":
        lines.append(f"devices: each rank takes cuda:<local rank mod the GPUs it sees>; shown for "
                     f"{system.description['accelerators_per_node']} GPU(s) seen per node (a cluster that binds "
                     "one GPU per task gives every rank cuda:0)")
    lines += describe_binding(run.launch.cpu_binding, run.processes_per_node, Topology.read())
    lines.append(f"ranks ({shards}; epoch-0 shard indices in sorted name order):")
    for slot in plan.ranks:
        listed = ",".join(map(str, slot.shards)) if slot.shards else "-"
        lines.append(f"  rank {slot.rank} node {slot.node} local {slot.local_rank} group {slot.group} "
                     f"device {slot.device} shards {listed}")
    return lines
