"""The multi-node pre-flight on hosts of their own (tests/cluster/netns.py): a node that cannot reach the
rendezvous gives up within run.launch.preflight_timeout_s, and node 0 names it; a node on other code, with
another descriptor, without the dataset and with an interface it does not have is refused, one line per
problem, each naming the node and the fix. Nothing starts and no result file is claimed."""

import shutil
import time

from tests.cluster.netns import INTERFACE
from tests.cluster.nodes import micro_system, start_node, start_on_hosts, wait_nodes
from tests.helpers.repo import REPO, this_python_env

PREFLIGHT_S = 4
# Past the pre-flight's wait: the wrapper's start (the descriptor read, the dataset found) and one connect
# attempt, on a loaded 2-core machine.
START_BOUND_S = 25


def preflight_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("pre-flight: ")]


def test_a_node_cut_off_from_the_rendezvous_gives_up_in_time_and_node_0_names_it(tmp_path, small_dataset, cpu_env,
                                                                                    hosts):
    network = hosts(2)
    system = micro_system(tmp_path, "micro_2x1", nodes=2, per_node=1, **{"launch.preflight_timeout_s": PREFLIGHT_S})
    network.cut(network.hosts[1])
    started = time.monotonic()
    nodes = start_on_hosts(network, system, tmp_path / "logs", small_dataset, cpu_env, tmp_path)
    codes = wait_nodes(nodes, PREFLIGHT_S + START_BOUND_S, tmp_path)
    took = time.monotonic() - started
    node0, node1 = ((tmp_path / f"node{k}.out").read_text() for k in (0, 1))
    assert codes == [2, 2], node0 + node1
    assert took < PREFLIGHT_S + START_BOUND_S
    address, port = network.hosts[0].address, system.run.launch.master_port
    (gave_up,) = preflight_lines(node1)
    assert gave_up.startswith(f"pre-flight: node 1 (host1): cannot reach the rendezvous {address}:{port} within "
                              f"{PREFLIGHT_S} s (")
    assert gave_up.endswith("this node gives up: check that node 0 is started, that MASTER_ADDR names it, and that "
                            f"port {port} (run.launch.master_port) is open between the nodes")
    assert preflight_lines(node0) == [
        f"pre-flight: node 1 did not report within {PREFLIGHT_S} s: start it (NODE_RANK=1, MASTER_ADDR={address}), "
        f"or check that it reaches {address}:{port}"]
    assert not (tmp_path / "logs").exists()  # no run claimed a result file, nor made the folder of one


def harness_copy(folder) -> tuple:
    """This harness's code as another checkout of another version would hold it (one file changed), and the
    environment that runs its run_and_time.sh with this test's Python packages."""
    shutil.copytree(REPO / "bert", folder / "bert", ignore=shutil.ignore_patterns("__pycache__"))
    for name in (*[script.name for script in REPO.glob("*.sh")], "setup.cfg", "pyproject.toml"):  # and what it sources
        shutil.copy2(REPO / name, folder / name)
    with open(folder / "bert" / "mllog.py", "a") as changed:
        changed.write("# a later version\n")
    return folder, {"PYTHONPATH": str(folder), **this_python_env()}


def test_a_node_that_differs_from_node_0_is_refused_one_line_per_problem(tmp_path, small_dataset, cpu_env, hosts):
    """--dry-run runs the pre-flight alone. Node 1 runs other code, its descriptor (same name, another folder) names
    an interface that no host has, and its DATADIR does not exist."""
    network = hosts(2)
    system = micro_system(tmp_path / "node0", "micro_2x1", nodes=2, per_node=1,
                          **{"launch.preflight_timeout_s": PREFLIGHT_S, "launch.socket_ifname": INTERFACE})
    other = system.variant({"launch.socket_ifname": "eth9"}).write(tmp_path / "node1")
    code, code_env = harness_copy(tmp_path / "checkout")
    missing = tmp_path / "no_data"
    address = network.hosts[0].address
    nodes = [start_node(system, 0, tmp_path / "logs", small_dataset, cpu_env, tmp_path / "node0.out",
                        host=network.hosts[0], master_addr=address, dry_run=True),
             start_node(other, 1, tmp_path / "logs", missing, {**cpu_env, **code_env}, tmp_path / "node1.out",
                        host=network.hosts[1], master_addr=address, dry_run=True, repo=code)]
    codes = wait_nodes(nodes, PREFLIGHT_S + START_BOUND_S, tmp_path)
    node0, node1 = ((tmp_path / f"node{k}.out").read_text() for k in (0, 1))
    assert codes == [2, 2], node0 + node1
    who = "pre-flight: node 1 (host1): "
    expected = [
        f"{who}the dataset folder {missing} does not exist here (DATADIR, else run.dataset.dir): put the dataset "
        "there on every node, or mount the shared file system that holds it",
        f"{who}network interface 'eth9' (run.launch.socket_ifname) does not exist here (this host has "
        f"{INTERFACE} {network.hosts[1].address}): name the interface on the network between the nodes",
        f"{who}runs other harness code than node 0 (code ",
        f"{who}its descriptor {other.path} differs from node 0's {system.path} (sha256 ",
    ]
    for lines in (preflight_lines(node0), preflight_lines(node1)):
        assert len(lines) == len(expected), lines
        for line, start in zip(lines, expected):
            assert line.startswith(start), (line, start)
    assert preflight_lines(node0)[2].endswith("install the same version (the same commit of this repository) on "
                                              "every node")
    assert not (tmp_path / "logs").exists()  # a dry run claims nothing
