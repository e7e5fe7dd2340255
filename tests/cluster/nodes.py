"""Several nodes on this machine: descriptors of the micro model on several nodes, run_and_time.sh started once
per node (torchrun, NODE_RANK and MASTER_ADDR), on this host or each on a host of its own (tests/cluster/netns.py),
and the check that every rank was placed and read its shards as the launch plan said."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from benchmarks.common.ranks import free_port
from bert.system import Descriptor, load_descriptor
from tests.cluster.netns import Host, HostNetwork
from tests.helpers.faults import descendants, wait_bounded
from tests.helpers.repo import REPO

MICRO = REPO / "systems" / "cpu_micro.json"

_PLAN_RANK = re.compile(r"\s+rank (\d+) node (\d+) local (\d+) group (\d+) device \S+ shards (\S+)")
_RANK_REPORT = re.compile(r"rank (\d+) of (\d+): node (\d+), local rank (\d+) of (\d+), presort group (\S+); "
                          r"training shards read \(indices in sorted name order\): (.*)")


def micro_system(folder: Path, name: str, nodes: int, per_node: int, **run: object) -> Descriptor:
    """cpu_micro on `nodes` x `per_node` gloo ranks, presorting within each node, its rendezvous on a free port
    (tests run side by side on this host), written to folder/<name>.json. Its target, 0.04 (above the 0.036 of
    always guessing the most frequent piece), takes about 3,000 samples, half of cpu_micro's, so that runs of
    several ranks on a 2-core CI machine stay short."""
    values = {"processes_per_node": per_node, "balance": "stratified+local_presort",
              "launch.master_port": free_port(), "eval.target_accuracy": 0.04, **run}
    return load_descriptor(MICRO).variant(values, name=name, description={"number_of_nodes": str(nodes)}).write(folder)


def start_node(system: Descriptor, node: int, logdir: Path, data: Path, env: dict, out: Path, seed: int = 5,
               host: Host | None = None, master_addr: str = "127.0.0.1", dry_run: bool = False,
               repo: Path = REPO) -> subprocess.Popen:
    """`repo`/run_and_time.sh as one host of a torchrun launch runs it (on `host`, else on this one); stdout and
    stderr to `out`."""
    node_env = {**env, "NODE_RANK": str(node), "MASTER_ADDR": master_addr, "NEXP": "1", "SEED": str(seed),
                "LOGDIR": str(logdir), "DATADIR": str(data), "PYTHONUNBUFFERED": "1"}
    argv = [str(repo / "run_and_time.sh"), *(["--dry-run"] if dry_run else []), str(system.path)]
    with open(out, "w") as sink:
        return subprocess.Popen(host.command(argv) if host else argv, env=node_env, stdout=sink,
                                stderr=subprocess.STDOUT, start_new_session=True)


def start_on_hosts(network: HostNetwork, system: Descriptor, logdir: Path, data: Path, env: dict,
                   outs: Path, node_env: list[dict] | None = None) -> list[subprocess.Popen]:
    """run_and_time.sh on every host of `network`, host k as node k (with node_env[k] laid over `env`), MASTER_ADDR
    the first host's address; node k's output to outs/node<k>.out."""
    return [start_node(system, k, logdir, data, {**env, **(node_env[k] if node_env else {})}, outs / f"node{k}.out",
                       host=host, master_addr=network.hosts[0].address)
            for k, host in enumerate(network.hosts)]


def wait_nodes(nodes: list[subprocess.Popen], timeout: float, outs: Path) -> list[int]:
    """The nodes' exit codes; kills every node and fails the test when one runs past `timeout`."""
    return wait_bounded(nodes, timeout, kill_node, lambda: (outs / "node0.out").read_text()[-3000:])


def kill_node(node: subprocess.Popen) -> None:
    """SIGKILL to every process of a node: run_and_time.sh, torchrun and the ranks (which torchrun starts in
    sessions of their own, out of reach of a kill of the launcher's process group)."""
    for pid in [node.pid, *descendants(node.pid)]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    node.wait()


@dataclass(frozen=True)
class RankPlace:
    node: int
    local_rank: int
    group: tuple[int, ...]  # the ranks this one presorts with
    epoch0_shards: tuple[int, ...]


def planned_places(system: Descriptor, seed: int, data: Path) -> dict[int, RankPlace]:
    """Every rank's place as `mlperf-bert system plan` prints it."""
    done = subprocess.run([sys.executable, "-m", "bert.cli", "system", "plan", str(system.path),
                           "--seed", str(seed), "--data-dir", str(data), "--launcher", "torchrun"],
                          capture_output=True, text=True, timeout=120, check=True)
    rows = [m.groups() for m in map(_PLAN_RANK.fullmatch, done.stdout.splitlines()) if m]
    groups: dict[int, list[int]] = {}
    for rank, _, _, group, _ in rows:
        groups.setdefault(int(group), []).append(int(rank))
    return {int(rank): RankPlace(int(node), int(local), tuple(groups[int(group)]),
                                 tuple(int(s) for s in shards.split(",")))
            for rank, node, local, group, shards in rows}


def reported_places(output: str) -> dict[int, RankPlace]:
    """Every rank's place and epoch-0 shards as the ranks themselves reported them when their run ended."""
    places = {}
    for match in map(_RANK_REPORT.fullmatch, output.splitlines()):
        if match is None:
            continue
        rank, _, node, local, _, group, reads = match.groups()
        epochs = dict(part.split(": ") for part in reads.split("; ")) if reads != "-" else {}
        members = (int(rank),) if group == "-" else tuple(int(r) for r in group.split(","))  # "-": alone
        places[int(rank)] = RankPlace(int(node), int(local), members,
                                      tuple(int(s) for s in epochs.get("epoch 0", "").split(",") if s))
    return places


def assert_ranks_follow_the_plan(output: str, system: Descriptor, seed: int, data: Path) -> None:
    reported = reported_places(output)
    assert sorted(reported) == list(range(system.world_size)), output[-3000:]
    assert reported == planned_places(system, seed, data)
