"""Nodes on hosts of their own (tests/cluster/netns.py: network namespaces, each with its own address and host
name): run_and_time.sh started on every host with NODE_RANK and MASTER_ADDR the first host's address, not the
loopback. Two nodes of 2 gloo ranks presorting within each node, over the interface the descriptor names
(run.launch.socket_ifname), and four nodes of one rank, whose gloo finds its address by the host's name. Each
start passes the pre-flight, the run reaches its target, its log passes the official checker, every rank sat
and read the shards where the launch plan said, and no process is left on any host."""

from compliance.checkers import compliance_check
from tests.cluster.netns import INTERFACE
from tests.cluster.nodes import assert_ranks_follow_the_plan, micro_system, start_on_hosts, wait_nodes
from tests.helpers.faults import page_cache_tools

RUN_TIMEOUT_S = 240


def run_on_hosts(network, system, tmp_path, data, env, node_env=None) -> list[str]:
    """The nodes to their end; each node's output. Every one ended with status 0 and left no process behind."""
    nodes = start_on_hosts(network, system, tmp_path / "logs", data, env, tmp_path, node_env)
    codes = wait_nodes(nodes, RUN_TIMEOUT_S, tmp_path)
    outputs = [(tmp_path / f"node{k}.out").read_text() for k in range(len(nodes))]
    assert codes == [0] * len(nodes), "".join(outputs)[-4000:]
    assert [host.pids() for host in network.hosts] == [[]] * len(nodes)
    return outputs


def assert_one_compliant_result(tmp_path, system, outputs: list[str]) -> None:
    log = tmp_path / "logs" / system.name / "result_0.txt"
    # One results folder, as on a shared file system: no other node's wrapper leaves anything there.
    assert sorted(p.name for p in log.parent.iterdir()) == ["result_0.txt"]
    assert compliance_check(log).passed
    assert '"key": "run_stop"' in log.read_text().splitlines()[-1] and '"status": "success"' in log.read_text()
    assert f"pre-flight: {system.nodes} node(s) ready: " in outputs[0]
    for node, output in enumerate(outputs[1:], start=1):
        assert f"pre-flight: node {node} (host{node}): node 0 at " in output
        assert f"node {node}: node 0 keeps the log" in output and "RESULT,bert" not in output


def test_two_nodes_on_their_own_hosts_reach_the_target_over_the_named_interface(tmp_path, small_dataset, cpu_env,
                                                                                 hosts):
    """DROP_CACHES=1 on both, but only node 0 may drop its page cache: the log says false, and node 0 names node 1."""
    network = hosts(2)
    system = micro_system(tmp_path, "micro_2x2", nodes=2, per_node=2, **{"launch.socket_ifname": INTERFACE})
    node_env = [page_cache_tools(tmp_path / f"bin{k}", drops=k == 0) for k in range(2)]
    outputs = run_on_hosts(network, system, tmp_path, small_dataset, dict(cpu_env, DROP_CACHES="1"), node_env)
    assert_one_compliant_result(tmp_path, system, outputs)
    assert_ranks_follow_the_plan("".join(outputs), system, 5, small_dataset)
    log = (tmp_path / "logs" / system.name / "result_0.txt").read_text()
    assert '"key": "cache_clear", "value": false' in log
    assert "cache_clear is logged false: node(s) 1 did not drop the page cache" in outputs[0]
    assert "run_and_time: cache_clear is logged as false: the page cache was not dropped on host1 " in outputs[1]


def test_four_nodes_find_each_other_by_host_name(tmp_path, small_dataset, cpu_env, hosts):
    network = hosts(4)
    system = micro_system(tmp_path, "micro_4x1", nodes=4, per_node=1)
    outputs = run_on_hosts(network, system, tmp_path, small_dataset, cpu_env)
    assert_one_compliant_result(tmp_path, system, outputs)
    assert_ranks_follow_the_plan("".join(outputs), system, 5, small_dataset)
