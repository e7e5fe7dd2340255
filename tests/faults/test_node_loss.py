"""A node lost mid-run, two ways. Node 1's wrapper and torchrun agent of a two-node torchrun launch
(tests/cluster/nodes.py) are killed outright, and its ranks end with them; or node 1, on a host of its own
(tests/cluster/netns.py), is cut off the network while its processes run on. Node 0 ends within
run.dist_timeout_s plus NODE_LOSS_BOUND_S, with an aborted run_stop that names the lost ranks and their node, and
a non-zero exit; an earlier result stays as it was. A node cut off ends too, no process is left on any host, and
the link back brings back nothing of the run."""

import os
import signal
import subprocess
import time
from pathlib import Path

from tests.cluster.netns import INTERFACE
from tests.cluster.nodes import kill_node, micro_system, start_node, start_on_hosts, wait_nodes
from tests.helpers.faults import DIST_TIMEOUT_S, alive, assert_log_aborted, descendants, finish, wait_for_training

# After the failure: the lost-rank check (bert.distributed.liveness.LOST_AFTER_BEATS of 1 s), torchrun ending the
# node's ranks, sealing and publishing the log, with room for a loaded 2-core machine.
NODE_LOSS_BOUND_S = 20


def agent_of(node: subprocess.Popen) -> int:
    """The torchrun agent that a node's wrapper started (its ranks are the agent's children)."""
    (agent,) = [pid for pid in descendants(node.pid)
                if "bert.launch.torchrun" in Path(f"/proc/{pid}/cmdline").read_text(errors="replace")]
    return agent


def test_a_lost_node_ends_the_run_naming_its_ranks(tmp_path, fault_data, cpu_env):
    # torchrun's own grace (30 s) for the ranks left after one failed: rank 0 needs 3 s of it.
    env = dict(cpu_env, PYTHONUNBUFFERED="1")
    system = micro_system(tmp_path, "micro_2x2_long", nodes=2, per_node=2, dist_timeout_s=DIST_TIMEOUT_S,
                          max_samples=10**7, print_interval_steps=2, **{"eval.target_accuracy": 0.99})
    results = tmp_path / "node0" / system.name
    results.mkdir(parents=True)
    earlier = results / "result_0.txt"
    earlier.write_text("an earlier result\n")
    node0, node1 = (start_node(system, n, tmp_path / f"node{n}", fault_data, env, tmp_path / f"node{n}.out")
                    for n in (0, 1))
    try:
        wait_for_training((results, "result_1.txt.partial"), node0)
        node0_processes, node1_ranks = descendants(node0.pid), descendants(agent_of(node1))
        # Node 1's wrapper and torchrun agent killed outright: its ranks, in sessions of their own, used to live
        # on (and node 0 to wait for them); now they end with their agent and are named lost.
        for pid in (agent_of(node1), node1.pid):
            os.kill(pid, signal.SIGKILL)
        lost_at = time.monotonic()
        code, _, _ = finish(node0, timeout=DIST_TIMEOUT_S + NODE_LOSS_BOUND_S)
        took = time.monotonic() - lost_at
    finally:
        for node in (node0, node1):
            kill_node(node)
    output = (tmp_path / "node0.out").read_text()
    assert code == 1, output[-3000:]
    assert took < DIST_TIMEOUT_S + NODE_LOSS_BOUND_S
    assert not alive(node0_processes) and not alive(node1_ranks)
    assert "run 1 FAILED" in output
    assert_log_aborted(results / "result_1.txt", "rank(s) 2, 3 (node(s) 1) lost: no heartbeat")
    assert earlier.read_text() == "an earlier result\n"
    assert sorted(p.name for p in results.iterdir()) == ["result_0.txt", "result_1.txt"]


def test_a_node_cut_off_mid_run_ends_every_node_and_the_link_back_resurrects_nothing(tmp_path, fault_data, cpu_env,
                                                                                    hosts):
    network = hosts(2)
    system = micro_system(tmp_path, "micro_2x1_long", nodes=2, per_node=1, dist_timeout_s=DIST_TIMEOUT_S,
                          max_samples=10**7, print_interval_steps=2,
                          **{"eval.target_accuracy": 0.99, "launch.socket_ifname": INTERFACE})
    results = tmp_path / "logs" / system.name
    results.mkdir(parents=True)
    earlier = results / "result_0.txt"
    earlier.write_text("an earlier result\n")
    node0, node1 = start_on_hosts(network, system, tmp_path / "logs", fault_data, cpu_env, tmp_path)
    try:
        wait_for_training((results, "result_1.txt.partial"), node0)
        network.cut(network.hosts[1])
        cut_at = time.monotonic()
        (code0,) = wait_nodes([node0], DIST_TIMEOUT_S + NODE_LOSS_BOUND_S, tmp_path)
        took = time.monotonic() - cut_at
        network.restore(network.hosts[1])  # node 1 may still be on its way out
        (code1,) = wait_nodes([node1], DIST_TIMEOUT_S + NODE_LOSS_BOUND_S, tmp_path)
    finally:
        for node in (node0, node1):
            kill_node(node)
    output = (tmp_path / "node0.out").read_text()
    assert (code0, code1) == (1, 1), output[-3000:]
    assert took < DIST_TIMEOUT_S + NODE_LOSS_BOUND_S
    assert "run 1 FAILED" in output and "run 1 FAILED on node 1" in (tmp_path / "node1.out").read_text()
    assert [host.pids() for host in network.hosts] == [[], []]
    log = results / "result_1.txt"
    assert_log_aborted(log, "rank(s) 1 (node(s) 1) lost: no heartbeat")
    assert earlier.read_text() == "an earlier result\n"
    finished = log.read_text()
    time.sleep(2)  # the link is back: nothing of the run may come back with it
    assert sorted(p.name for p in results.iterdir()) == ["result_0.txt", "result_1.txt"]
    assert log.read_text() == finished
