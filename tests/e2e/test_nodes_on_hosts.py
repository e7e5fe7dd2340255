"""Two nodes over loopback: run_and_time.sh started twice on this host, as on two hosts (torchrun, NODE_RANK
0 and 1, MASTER_ADDR=127.0.0.1), 2 gloo ranks each presorting within their node. The run reaches its target,
its log passes the official checker, and every rank sat and read the shards where the launch plan said."""

import subprocess

import pytest

from compliance.checkers import compliance_check
from tests.cluster.nodes import assert_ranks_follow_the_plan, kill_node, micro_system, start_node

RUN_TIMEOUT_S = 180


def test_two_nodes_reach_the_target_and_read_the_planned_shards(tmp_path, small_dataset, cpu_env):
    system = micro_system(tmp_path, "micro_2x2", nodes=2, per_node=2)
    outs = [tmp_path / f"node{n}.out" for n in (0, 1)]
    # One results folder, as on a shared file system: node 1's wrapper must leave nothing there.
    nodes = [start_node(system, n, tmp_path / "logs", small_dataset, cpu_env, outs[n]) for n in (0, 1)]
    try:
        codes = [node.wait(timeout=RUN_TIMEOUT_S) for node in nodes]
    except subprocess.TimeoutExpired:
        for node in nodes:
            kill_node(node)
        pytest.fail(f"the nodes still ran after {RUN_TIMEOUT_S} s:\n{outs[0].read_text()[-3000:]}")
    output = outs[0].read_text() + outs[1].read_text()
    assert codes == [0, 0], output[-4000:]
    log = tmp_path / "logs" / "micro_2x2" / "result_0.txt"
    assert sorted(p.name for p in log.parent.iterdir()) == ["result_0.txt"]
    assert "node 1: node 0 keeps the log" in outs[1].read_text() and "RESULT,bert" not in outs[1].read_text()
    assert compliance_check(log).passed
    assert '"key": "run_stop"' in log.read_text().splitlines()[-1] and '"status": "success"' in log.read_text()
    assert_ranks_follow_the_plan(output, system, 5, small_dataset)
