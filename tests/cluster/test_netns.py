"""The hosts of tests/cluster/netns.py: they reach each other by name on their own addresses and nothing else,
this machine's own network is left as it was, and everything they are is removed: when the test ends, when it
fails, when its process gets SIGTERM, and, after a SIGKILL, by the next network made."""

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cluster import netns
from tests.helpers.faults import alive
from tests.helpers.repo import REPO


def machine_network() -> tuple[str, str, str]:
    """This machine's own interfaces, addresses and routes, and its hosts file."""
    listing = [subprocess.run(["ip", "-o", *what], capture_output=True, text=True).stdout
               for what in (["link"], ["addr"], ["route"])]
    return listing[0], listing[1] + listing[2], Path("/etc/hosts").read_text()


def namespaces_of(network: netns.HostNetwork) -> set[str]:
    return {h.netns for h in network.hosts} | {network.switch}


def left_over(names: set[str]) -> set[str]:
    return {n for n in names if (netns.NETNS_NAMES / n).exists() or (netns.NETNS_CONFIG / n).exists()}


def test_hosts_reach_each_other_by_name_and_nothing_else(hosts):
    before = machine_network()
    network = hosts(2)
    host0, host1 = network.hosts
    assert machine_network() == before
    server = host0.popen([sys.executable, "-c", "import socket; s = socket.create_server(('', 7000)); "
                          "c, a = s.accept(); print(socket.gethostname(), a[0], flush=True)"],
                         stdout=subprocess.PIPE, text=True)
    client = ("import socket, time\nfor _ in range(100):\n    try: s = socket.create_connection(('host0', 7000)); "
              "break\n    except OSError: time.sleep(0.1)\nprint(socket.gethostname(), s.getsockname()[0])")
    done = host1.run([sys.executable, "-c", client], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["host1", host1.address], done.stderr
    assert server.communicate(timeout=30)[0].split() == ["host0", host1.address]
    routes = host1.run(["ip", "-o", "route"], capture_output=True, text=True).stdout
    assert routes.split()[0] == str(netns.SUBNET) and len(routes.splitlines()) == 1  # no way off the bridge


def running(pid: int, program: str) -> bool:
    """Whether process `pid` runs `program` yet: on_host.sh, which starts it, is a process on the host too, from
    before its mounts (which the removal's first step, deleting /etc/netns/NAME, makes fail) until it execs."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip() == program
    except OSError:
        return False


def test_everything_is_removed_when_the_test_fails(hosts):
    hosts(1)  # skips where namespaces are unavailable
    with pytest.raises(RuntimeError, match="the test failed"):
        with netns.host_network(2) as network:
            sleeper = network.hosts[1].popen(["sleep", "600"])
            deadline = time.monotonic() + 30
            while not running(sleeper.pid, "sleep") and time.monotonic() < deadline:
                time.sleep(0.05)
            assert sleeper.pid in network.hosts[1].pids()
            names = namespaces_of(network)
            raise RuntimeError("the test failed")
    assert sleeper.wait(timeout=10) == -signal.SIGKILL
    assert left_over(names) == set()


def _holder() -> subprocess.Popen:
    """A process that makes 2 hosts, starts a process on the first, prints their namespaces once that process runs
    there, and waits."""
    code = ("from tests.cluster import netns\nfrom tests.cluster.test_netns import running\nimport time\n"
            "with netns.host_network(2) as n:\n    p = n.hosts[0].popen(['sleep', '600'])\n"
            "    deadline = time.monotonic() + 30\n"
            "    while not running(p.pid, 'sleep') and time.monotonic() < deadline:\n        time.sleep(0.05)\n"
            "    print(' '.join([n.switch] + [h.netns for h in n.hosts]), flush=True)\n    time.sleep(600)\n")
    return subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE, text=True)


def _wait_empty(names: set[str]) -> None:
    deadline = time.monotonic() + 10
    while left_over(names) and time.monotonic() < deadline:
        time.sleep(0.1)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_everything_is_removed_when_the_test_process_is_ended(hosts, signum):
    hosts(1)
    holder = _holder()
    switch, host0, host1 = holder.stdout.readline().split()
    names = {switch, host0, host1}
    assert left_over(names) == names
    pids = subprocess.run(["ip", "netns", "pids", host0], capture_output=True, text=True).stdout.split()
    holder.send_signal(signum)
    holder.wait(timeout=30)
    if signum == signal.SIGKILL:  # nothing of it ran: the next network made removes what it left
        assert left_over(names) == names
        assert set(netns.remove_leftovers()) >= names
    _wait_empty(names)
    assert left_over(names) == set()
    assert pids and not alive([int(p) for p in pids])
