"""Each rank's CPU cores, NUMA node and OpenMP threads, as the descriptor's run.launch.cpu_binding says.

`rank_binding(spec, topology, local_rank, local_world)` returns the `Binding` (CPUs, NUMA node, threads) of one
local rank on a host's `Topology` (`Topology.read()`: /sys/devices/system); `apply` makes it this process's;
`bind_rank` does both for the running rank (bert.train, before the model and the loader exist), and
`describe_binding` gives the dry run's lines. Modes: "none" (default: nothing bound; OMP_NUM_THREADS is
`omp_num_threads` where given), "node" (every core of the rank's NUMA node), "exclusive" (the rank's own share of
its node's physical cores, each with its hyperthread siblings, as NVIDIA's bind.sh --cpu=exclusive deals them).
A rank's node is `numa_nodes[local rank]`, or without that list the local ranks dealt over the nodes in order.
Why NVIDIA binds so, and how memory follows the cores: docs/running.md, "On a cluster".
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from bert.distributed.launch_settings import CpuBindingSpec

SYSFS = Path("/sys/devices/system")


class BindingError(ValueError):
    """The descriptor's binding does not fit this host; the message names the field and the fix."""


def parse_cpu_list(text: str) -> list[int]:
    """"0-3,8,10-11" -> [0, 1, 2, 3, 8, 10, 11] (the kernel's list format)."""
    cpus = []
    for part in filter(None, text.strip().split(",")):
        low, _, high = part.partition("-")
        cpus += range(int(low), int(high or low) + 1)
    return cpus


def format_cpu_list(cpus: tuple[int, ...]) -> str:
    """The kernel's list format, ranges joined: (0, 1, 2, 8) -> "0-2,8"."""
    runs: list[list[int]] = []
    for cpu in sorted(cpus):
        if runs and cpu == runs[-1][1] + 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join(f"{a}-{b}" if b > a else f"{a}" for a, b in runs)


@dataclass(frozen=True)
class Topology:
    """The host's NUMA nodes, each as its physical cores, each core as its CPUs (hyperthread siblings)."""

    nodes: tuple[tuple[tuple[int, ...], ...], ...]

    @staticmethod
    def read(root: Path = SYSFS) -> Topology:
        """This host's topology; one node of the CPUs this process may use where sysfs lists no nodes."""
        node_dirs = sorted((root / "node").glob("node[0-9]*"), key=lambda p: int(p.name[4:]))
        lists = [parse_cpu_list((d / "cpulist").read_text()) for d in node_dirs if (d / "cpulist").is_file()]
        if not lists:
            lists = [sorted(os.sched_getaffinity(0))]
        return Topology(tuple(_cores(cpus, root) for cpus in lists))

    def describe(self) -> str:
        cores = sum(len(node) for node in self.nodes)
        cpus = sum(len(core) for node in self.nodes for core in node)
        return f"{len(self.nodes)} NUMA node(s), {cores} cores, {cpus} CPUs"


def _cores(cpus: list[int], root: Path) -> tuple[tuple[int, ...], ...]:
    """`cpus` grouped into physical cores by their siblings lists, each core once, in CPU order."""
    cores: dict[tuple[int, ...], None] = {}
    for cpu in cpus:
        siblings = root / "cpu" / f"cpu{cpu}" / "topology" / "thread_siblings_list"
        group = parse_cpu_list(siblings.read_text()) if siblings.is_file() else [cpu]
        cores[tuple(c for c in group if c in cpus) or (cpu,)] = None
    return tuple(sorted(cores, key=min))


@dataclass(frozen=True)
class Binding:
    cpus: tuple[int, ...] | None  # None: not bound
    numa_node: int | None
    threads: int | None  # OMP_NUM_THREADS; None: left as the environment has it

    def describe(self) -> str:
        threads = f"OMP_NUM_THREADS={self.threads}" if self.threads else "OMP_NUM_THREADS as set"
        if self.cpus is None:
            return f"not bound, {threads}"
        return f"CPUs {format_cpu_list(self.cpus)} (NUMA node {self.numa_node}), {threads}"


def rank_binding(spec: CpuBindingSpec, topology: Topology, local_rank: int, local_world: int) -> Binding:
    """The binding of local rank `local_rank` of `local_world` on a host of `topology`."""
    if spec.mode == "none":
        return Binding(None, None, spec.omp_num_threads)
    field = "run.launch.cpu_binding"

    def node_of(rank: int) -> int:
        return spec.numa_nodes[rank] if spec.numa_nodes else rank * len(topology.nodes) // local_world

    node = node_of(local_rank)
    if node >= len(topology.nodes):
        raise BindingError(f"{field}.numa_nodes: local rank {local_rank}'s node {node} is not one of this host's "
                           f"{len(topology.nodes)} NUMA node(s) ({topology.describe()}); list the GPUs' nodes "
                           "as `nvidia-smi topo -m` shows them, or set mode \"none\"")
    cores = topology.nodes[node]
    if spec.mode == "exclusive":
        peers = [r for r in range(local_world) if node_of(r) == node]
        if len(cores) < len(peers):
            raise BindingError(f"{field}.mode: \"exclusive\" needs a core per rank, and NUMA node {node} has "
                               f"{len(cores)} core(s) for {len(peers)} ranks; use mode \"node\"")
        share, position = len(cores) // len(peers), peers.index(local_rank)
        cores = cores[position * share:(position + 1) * share]
    return Binding(tuple(sorted(c for core in cores for c in core)), node, spec.omp_num_threads or len(cores))


def apply(binding: Binding) -> None:
    """Binds this process (and the threads it starts from now on) and sets its OpenMP threads."""
    import torch

    if binding.cpus is not None:
        os.sched_setaffinity(0, binding.cpus)
    if binding.threads:
        os.environ["OMP_NUM_THREADS"] = str(binding.threads)  # for the processes it starts
        torch.set_num_threads(binding.threads)


def bind_rank(spec: CpuBindingSpec, local_rank: int, local_world: int) -> Binding:
    """Applies the binding of this process, local rank `local_rank` of `local_world`; returns it."""
    binding = rank_binding(spec, Topology.read(), local_rank, local_world)
    apply(binding)
    return binding


def describe_binding(spec: CpuBindingSpec, per_node: int, topology: Topology) -> list[str]:
    """The dry run's lines: the mode and, per local rank (the same on every node), its binding on `topology`."""
    lines = [f"cpu binding (run.launch.cpu_binding): {spec.mode}, shown on this host ({topology.describe()})"]
    try:
        lines += [f"  local rank {r}: {rank_binding(spec, topology, r, per_node).describe()}" for r in range(per_node)]
    except BindingError as e:
        lines.append(f"  does not fit this host: {e}")
    return lines
