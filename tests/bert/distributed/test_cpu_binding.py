"""Each rank's CPU binding (bert.distributed.cpu_binding) from the descriptor's run.launch.cpu_binding, on a host
topology read from a sysfs tree (a two-socket machine with hyperthreads, made in a folder), applied to a real
process, and printed by the dry run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bert.distributed.cpu_binding import BindingError, Topology, describe_binding, parse_cpu_list, rank_binding
from bert.distributed.launch_settings import CpuBindingSpec
from bert.system import load_descriptor
from bert.typed_config import ConfigError
from tests.helpers.repo import REPO


def _sysfs(root: Path, nodes: list[str], cores: int) -> Path:
    """Nodes of the given CPU lists; CPU c and c + `cores` are hyperthread siblings (as Linux numbers them)."""
    for n, cpulist in enumerate(nodes):
        (root / "node" / f"node{n}").mkdir(parents=True)
        (root / "node" / f"node{n}" / "cpulist").write_text(cpulist + "\n")
        for cpu in parse_cpu_list(cpulist):
            topology = root / "cpu" / f"cpu{cpu}" / "topology"
            topology.mkdir(parents=True)
            core = cpu % cores
            topology.joinpath("thread_siblings_list").write_text(f"{core},{core + cores}\n")
    return root


@pytest.fixture
def two_sockets(tmp_path) -> Topology:
    """8 cores, 16 CPUs: node 0 has cores 0-3 (CPUs 0-3, 8-11), node 1 cores 4-7 (CPUs 4-7, 12-15)."""
    return Topology.read(_sysfs(tmp_path, ["0-3,8-11", "4-7,12-15"], cores=8))


def _bindings(spec: CpuBindingSpec, topology: Topology, ranks: int) -> list[str]:
    return [rank_binding(spec, topology, r, ranks).describe() for r in range(ranks)]


def test_the_topology_groups_hyperthreads_into_cores(two_sockets):
    assert two_sockets.nodes[0] == ((0, 8), (1, 9), (2, 10), (3, 11))
    assert two_sockets.describe() == "2 NUMA node(s), 8 cores, 16 CPUs"


def test_exclusive_deals_each_nodes_cores_among_its_ranks_with_their_siblings(two_sockets):
    assert _bindings(CpuBindingSpec(mode="exclusive"), two_sockets, 4) == [
        "CPUs 0-1,8-9 (NUMA node 0), OMP_NUM_THREADS=2", "CPUs 2-3,10-11 (NUMA node 0), OMP_NUM_THREADS=2",
        "CPUs 4-5,12-13 (NUMA node 1), OMP_NUM_THREADS=2", "CPUs 6-7,14-15 (NUMA node 1), OMP_NUM_THREADS=2"]


def test_node_mode_follows_the_gpus_numa_nodes_and_the_thread_count_given(two_sockets):
    spec = CpuBindingSpec(mode="node", numa_nodes=[1, 0], omp_num_threads=3)
    assert _bindings(spec, two_sockets, 2) == ["CPUs 4-7,12-15 (NUMA node 1), OMP_NUM_THREADS=3",
                                               "CPUs 0-3,8-11 (NUMA node 0), OMP_NUM_THREADS=3"]
    assert _bindings(CpuBindingSpec(omp_num_threads=4), two_sockets, 2) == ["not bound, OMP_NUM_THREADS=4"] * 2


def test_a_binding_that_does_not_fit_the_host_is_one_line_naming_the_field(two_sockets):
    with pytest.raises(BindingError, match=r"run.launch.cpu_binding.numa_nodes: local rank 1's node 2 is not one "
                                           r"of this host's 2 NUMA node\(s\)"):
        rank_binding(CpuBindingSpec(mode="node", numa_nodes=[0, 2]), two_sockets, 1, 2)
    with pytest.raises(BindingError, match=r'needs a core per rank, and NUMA node 0 has 4 core\(s\) for 5 ranks'):
        rank_binding(CpuBindingSpec(mode="exclusive", numa_nodes=[0] * 5), two_sockets, 0, 5)


def test_the_descriptor_checks_the_binding_beside_its_fields():
    base = load_descriptor("dgxa100_1x8")
    with pytest.raises(ConfigError, match=r"run.launch.cpu_binding.numa_nodes: lists 2 node\(s\) for 8 process"):
        base.variant({"launch.cpu_binding.numa_nodes": [0, 1]})
    with pytest.raises(ConfigError, match=r"run.launch.cpu_binding.mode: expected one of"):
        base.variant({"launch.cpu_binding.mode": "socket"})
    with pytest.raises(ConfigError, match=r"run.launch.cpu_binding.omp_num_threads: must be at least 1"):
        base.variant({"launch.cpu_binding.omp_num_threads": 0})


def test_a_rank_binds_itself_and_its_threads_at_start(tmp_path, cpu_env):
    # bert.train applies the binding before the model and the loader exist; here a process binds itself to its
    # node of this host with one thread, and reports both.
    system = load_descriptor("cpu_micro").variant({"launch.cpu_binding": {"mode": "node", "numa_nodes": [0],
                                                                      "omp_num_threads": 1}}, name="bound")
    code = ("import os, sys, torch; from bert.distributed.cpu_binding import bind_rank; "
            "from bert.system import load_descriptor; "
            "b = bind_rank(load_descriptor(sys.argv[1]).run.launch.cpu_binding, 0, 1); "
            "print(sorted(os.sched_getaffinity(0)) == list(b.cpus), torch.get_num_threads(), "
            "os.environ['OMP_NUM_THREADS'], b.describe())")
    proc = subprocess.run([sys.executable, "-c", code, str(system.write(tmp_path).path)], capture_output=True,
                          text=True, env=dict(cpu_env, OMP_NUM_THREADS="2"), timeout=120)
    assert proc.returncode == 0, proc.stderr
    bound, threads, omp, described = proc.stdout.strip().split(" ", 3)
    assert (bound, threads, omp) == ("True", "1", "1") and "(NUMA node 0), OMP_NUM_THREADS=1" in described
    assert set(parse_cpu_list(described.split()[1])) <= os.sched_getaffinity(0)


def test_the_dry_run_prints_each_local_ranks_binding(tmp_path, cpu_env):
    system = load_descriptor("cpu_micro").variant({"processes_per_node": 2, "launch.cpu_binding.mode": "exclusive"},
                                              name="bound2").write(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "bert.cli", "system", "plan", str(system.path)], capture_output=True,
                          text=True, env=cpu_env, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    expected = describe_binding(system.run.launch.cpu_binding, 2, Topology.read())  # this host's own topology
    assert expected[0].startswith("cpu binding (run.launch.cpu_binding): exclusive, shown on this host (")
    assert [line.split(":")[0] for line in expected[1:]] == ["  local rank 0", "  local rank 1"] or \
        "does not fit this host" in expected[1]  # a one-core host has no core for the second rank
    head = lines.index(expected[0])
    assert lines[head:head + len(expected)] == expected
    assert json.loads(system.path.read_text())["run"]["launch"]["cpu_binding"]["mode"] == "exclusive"
