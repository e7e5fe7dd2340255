"""The launch's settings: a descriptor's run.launch block (the environment, port and network interfaces of the
ranks, the pre-flight's patience, each rank's CPU binding), read by bert.launch.plan, preflight and
cpu_binding."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from bert.typed_config import checked, ranged

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# The variables through which gloo and NCCL are told the network interface between the nodes.
SOCKET_IFNAME_VARS = ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME")
_INTERFACE_NAME = re.compile(r"[^\s/:,]{1,15}")  # Linux: at most 15 bytes, no '/', ':' or white space


def env_names_problem(env: dict[str, str]) -> str | None:
    """What is wrong with the names of an environment block: each must be a shell identifier, so that no name
    can be read as an option or an assignment of the command that exports it."""
    bad = [name for name in env if not ENV_NAME.fullmatch(name)]
    if not bad:
        return None
    return (f"{bad[0]!r} is not an environment variable name; use letters, digits and '_', not starting with a "
            "digit (e.g. NCCL_SOCKET_IFNAME)")


def interface_names_problem(value: str) -> str | None:
    """What is wrong with run.launch.socket_ifname: comma-separated network interface names, which gloo and NCCL
    both read (gloo takes exact names, so NCCL's '^' and '=' forms are refused)."""
    bad = [name for name in value.split(",") if not _INTERFACE_NAME.fullmatch(name) or name[0] in "^="]
    if not bad:
        return None
    return (f"{bad[0]!r} is not a network interface name; give one or more names separated by commas, each of "
            "at most 15 characters without '/', ':' or spaces (e.g. \"eth0\" or \"ib0,ib1\")")


def numa_nodes_problem(nodes: list[int]) -> str | None:
    bad = [n for n in nodes if n < 0]
    return f"{bad[0]} is not a NUMA node number (0 or more)" if bad else None


@dataclass(frozen=True, kw_only=True)
class CpuBindingSpec:
    """Each rank's CPU cores and OpenMP threads (bert.distributed.cpu_binding): not bound, bound to every core of
    its NUMA node, or to its own share of them (NVIDIA's exclusive binding)."""

    mode: Literal["none", "node", "exclusive"] = "none"
    """"none" (nothing bound), "node" (each rank to every core of its NUMA node) or "exclusive" (each rank to its
    own share of its node's physical cores, as NVIDIA's bind.sh --cpu=exclusive)."""
    numa_nodes: list[int] | None = checked(numa_nodes_problem, default=None)
    """The NUMA node of each local rank (its GPU's, as `nvidia-smi topo -m` shows it); null: the local ranks
    dealt over the host's nodes in order."""
    omp_num_threads: int | None = ranged(1, 1024, default=None, note="or null: a bound rank's physical cores; more "
                                        "than any host has, 100000 crashed a rank")
    """OpenMP (and torch) threads of each rank; null: a bound rank's physical cores, an unbound one's default."""


@dataclass(frozen=True, kw_only=True)
class LaunchSpec:
    """How run_and_time.sh starts the ranks (srun under Slurm, torchrun elsewhere); see bert.launch.plan."""

    env: dict[str, str] = checked(env_names_problem, default_factory=dict)
    """Variables exported to every rank, e.g. NCCL_* settings."""
    master_port: int = ranged(1, 65535, default=29500)
    """The TCP port of the rendezvous on node 0 (MASTER_PORT), and of the multi-node pre-flight."""
    socket_ifname: str | None = checked(interface_names_problem, default=None)
    """The network interface(s) between the nodes, comma-separated: every rank's GLOO_SOCKET_IFNAME and
    NCCL_SOCKET_IFNAME; null: gloo binds to the address of the host's name, NCCL picks an interface of its own."""
    preflight_timeout_s: float = ranged(1, 600, default=30.0)
    """Seconds the multi-node pre-flight (bert.launch.preflight) waits: node 0 for every node's report,
    each node for node 0."""
    cpu_binding: CpuBindingSpec = field(default_factory=CpuBindingSpec)
    """Each rank's CPU cores and OpenMP threads."""

    def socket_env(self) -> dict[str, str]:
        return dict.fromkeys(SOCKET_IFNAME_VARS, self.socket_ifname) if self.socket_ifname else {}

    def problems(self) -> list[tuple[str, str]]:
        both = sorted(set(SOCKET_IFNAME_VARS) & set(self.env))
        if self.socket_ifname and both:
            return [("env", f"sets {' or '.join(both)} beside run.launch.socket_ifname, which sets both: remove it "
                            "from run.launch.env")]
        return []
