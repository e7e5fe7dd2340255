"""Hosts with addresses of their own on this machine, for tests that need a network between nodes.

`host_network(n)` makes n hosts out of Linux network namespaces:
- a switch: a namespace of its own holding a bridge, so that nothing is added to this machine's own network
  (its namespace, its interfaces, its routes and its /etc/hosts stay as they were);
- each host: a namespace joined to the bridge by a veth pair (`eth0` inside the host, up, with the host's
  address in SUBNET; `lo` up), a host name and a hosts file naming every host, with an empty resolv.conf beside
  it so that no name lookup waits for a DNS server the hosts cannot reach (/etc/netns/<ns>/, where `ip netns
  exec` finds them too). tests/cluster/on_host.sh runs a command on a host: in its namespace, under its name,
  with its hosts file laid over /etc/hosts in a mount namespace of its own.

The hosts share this machine's file system, /sys and process table (a shared file system, as on a cluster; a
test sees every process and which host it runs on). Traffic between them stays on the bridge, between their own
addresses. Each network's namespaces and files carry PREFIX and the pid of the process that made them, so that
the networks of concurrent test processes (pytest-xdist workers) never share a name, and the subnet is private
to each network's bridge, so that theirs never meet. Removal ends every process on the hosts, deletes the
namespaces (their veth pairs and the bridge go with them) and the /etc/netns folders: when the network's
context ends, at interpreter exit and on SIGTERM or SIGHUP; what a process killed outright (SIGKILL) leaves is
removed by the next network made on this machine. /etc/netns itself, iproute2's folder, stays.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import ipaddress
import itertools
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bert.ownership import process_gone

PREFIX = "mlpbt-"  # every namespace and /etc/netns folder this module makes starts with it
SUBNET = ipaddress.ip_network("10.213.0.0/24")
INTERFACE = "eth0"  # each host's interface on the bridge
NETNS_CONFIG = Path("/etc/netns")
NETNS_NAMES = Path("/run/netns")  # where `ip netns add` names the namespaces
_IP_TIMEOUT_S = 30
ON_HOST = Path(__file__).resolve().parent / "on_host.sh"  # runs a command on a host (the Slurm script uses it too)


class NamespacesUnavailable(RuntimeError):
    """This machine or this process cannot make network namespaces; the message says why."""


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=_IP_TIMEOUT_S)
    if check and done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done


@dataclass(frozen=True)
class Host:
    name: str  # its host name, which every host of its network resolves to `address`
    address: str
    netns: str

    def command(self, argv: list[str]) -> list[str]:
        """`argv` as run on this host: in its network namespace (with its hosts file) and under its host name."""
        return [str(ON_HOST), self.netns, self.name, *argv]

    def popen(self, argv: list[str], **kwargs) -> subprocess.Popen:
        return subprocess.Popen(self.command(argv), **kwargs)

    def run(self, argv: list[str], **kwargs) -> subprocess.CompletedProcess:
        return subprocess.run(self.command(argv), **kwargs)

    def pids(self) -> list[int]:
        """Every process running on this host."""
        return _pids_in({(NETNS_NAMES / self.netns).stat().st_ino})


@dataclass
class HostNetwork:
    hosts: list[Host]
    switch: str  # the namespace of the bridge
    _removed: bool = False

    def port(self, host: Host) -> str:
        """The switch's end of `host`'s veth pair."""
        return f"p{self.hosts.index(host)}"

    def cut(self, host: Host) -> None:
        """Pulls `host`'s cable at the switch: its packets and those sent to it are dropped, its processes run on."""
        _ip("-n", self.switch, "link", "set", self.port(host), "down")

    def restore(self, host: Host) -> None:
        _ip("-n", self.switch, "link", "set", self.port(host), "up")

    def remove(self) -> None:
        """Ends every process on the hosts and removes everything the network made; safe to repeat."""
        if self._removed:
            return
        self._removed = True
        _remove_namespaces([h.netns for h in self.hosts] + [self.switch])


_serial = itertools.count()
_active: list[HostNetwork] = []
_lock = threading.Lock()
_handlers_installed = False
_previous_handlers: dict[int, object] = {}


def _pid_of(netns: str) -> int | None:
    """The pid of the process that made a namespace of this module's naming (PREFIX<pid>-...)."""
    head = netns.removeprefix(PREFIX).split("-", 1)[0]
    return int(head) if head.isdigit() else None


def _pids_in(inodes: set[int]) -> list[int]:
    """The processes whose network namespace is one of `inodes` (what `ip netns pids` finds, without a name)."""
    found = []
    for link in Path("/proc").glob("[0-9]*/ns/net"):
        try:
            if int(os.readlink(link)[len("net:["):-1]) in inodes:
                found.append(int(link.parent.parent.name))
        except (OSError, ValueError):
            continue  # the process ended
    return found


def _remove_namespaces(names: list[str]) -> None:
    """Deletes the namespaces' names first, so that no process enters them any more (on_host.sh fails), then ends
    every process in them, one that entered as the name went included; the last one out takes the namespace,
    and its veth pair, with it. Each namespace is held open meanwhile: a namespace that ended could give its
    inode number to another process's new one, whose processes must not be taken for these."""
    held: dict[int, int] = {}  # inode -> an open descriptor of the namespace
    try:
        for netns in names:
            with contextlib.suppress(OSError):
                descriptor = os.open(NETNS_NAMES / netns, os.O_RDONLY)
                held[os.fstat(descriptor).st_ino] = descriptor
            _ip("netns", "delete", netns, check=False)
            shutil.rmtree(NETNS_CONFIG / netns, ignore_errors=True)
        quiet_rounds, rounds = 0, 0
        while held and quiet_rounds < 3 and rounds < 500:  # 500: a process that forks faster than it is killed
            rounds += 1
            pids = _pids_in(set(held))
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            quiet_rounds = 0 if pids else quiet_rounds + 1
            time.sleep(0.02)
    finally:
        for descriptor in held.values():
            os.close(descriptor)


def remove_leftovers() -> list[str]:
    """Removes the namespaces and /etc/netns folders of this module's naming whose maker has died; their names."""
    names = {p.name for p in NETNS_NAMES.glob(f"{PREFIX}*")} | {p.name for p in NETNS_CONFIG.glob(f"{PREFIX}*")}
    dead = sorted(n for n in names if (pid := _pid_of(n)) is not None and pid != os.getpid() and process_gone(pid))
    _remove_namespaces(dead)
    return dead


def _remove_all() -> None:
    with _lock:
        networks = list(_active)
        _active.clear()
    for network in networks:
        network.remove()


def _on_signal(signum: int, frame) -> None:
    _remove_all()
    previous = _previous_handlers.get(signum)
    if callable(previous):
        previous(signum, frame)
    else:  # the default action (end the process) or none: end as that signal would have
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)



def _install_handlers() -> None:
    """Removal at interpreter exit and on SIGTERM and SIGHUP (SIGINT is pytest's KeyboardInterrupt, which ends the
    network's context); a handler that was there before runs after the removal."""
    global _handlers_installed
    if _handlers_installed:
        return
    _handlers_installed = True
    atexit.register(_remove_all)
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in (signal.SIGTERM, signal.SIGHUP):
        previous = signal.signal(signum, _on_signal)
        if previous not in (signal.SIG_DFL, signal.SIG_IGN, None):
            _previous_handlers[signum] = previous


def unavailable_reason() -> str | None:
    """Why this process cannot make hosts (None when it can, as far as can be told without trying)."""
    if os.geteuid() != 0:
        return "network namespaces need root (ip netns add); run the tests as root"
    missing = [tool for tool in ("ip", "nsenter", "unshare", "mount") if shutil.which(tool) is None]
    if missing:
        return f"{', '.join(missing)} not installed (iproute2, util-linux)"
    return None


def _hosts_file(hosts: list[Host]) -> str:
    lines = ["127.0.0.1 localhost", "::1 localhost ip6-localhost ip6-loopback"]
    return "\n".join(lines + [f"{h.address} {h.name}" for h in hosts]) + "\n"


def _plan(count: int, names: list[str]) -> HostNetwork:
    base = f"{PREFIX}{os.getpid()}-{next(_serial)}"
    addresses = list(SUBNET.hosts())[:count]
    hosts = [Host(name, str(address), f"{base}-h{i}") for i, (name, address) in enumerate(zip(names, addresses))]
    return HostNetwork(hosts, f"{base}-sw")


def _build(network: HostNetwork) -> None:
    try:
        _ip("netns", "add", network.switch)
    except RuntimeError as e:
        raise NamespacesUnavailable(f"cannot make a network namespace here ({e})") from None
    _ip("-n", network.switch, "link", "add", "br0", "type", "bridge")
    _ip("-n", network.switch, "link", "set", "br0", "up")
    for host in network.hosts:
        _ip("netns", "add", host.netns)
        config = NETNS_CONFIG / host.netns
        config.mkdir(parents=True)
        (config / "hosts").write_text(_hosts_file(network.hosts))
        (config / "resolv.conf").write_text("")
        port = network.port(host)
        _ip("-n", network.switch, "link", "add", port, "type", "veth", "peer", "name", INTERFACE, "netns", host.netns)
        _ip("-n", network.switch, "link", "set", port, "master", "br0")
        _ip("-n", network.switch, "link", "set", port, "up")
        _ip("-n", host.netns, "addr", "add", f"{host.address}/{SUBNET.prefixlen}", "dev", INTERFACE)
        _ip("-n", host.netns, "link", "set", INTERFACE, "up")
        _ip("-n", host.netns, "link", "set", "lo", "up")


@contextlib.contextmanager
def _machine_lock() -> Iterator[None]:
    """One network made at a time on this machine: the first `ip netns add` of a machine makes /run/netns a mount
    point, and two at once can stack two mounts there."""
    NETNS_CONFIG.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(NETNS_CONFIG, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


@contextlib.contextmanager
def host_network(count: int, names: list[str] | None = None) -> Iterator[HostNetwork]:
    """`count` hosts (named host0, host1, ... unless `names` says otherwise) on one bridge, removed with
    everything on them when the context ends. NamespacesUnavailable where this machine cannot make them."""
    reason = unavailable_reason()
    if reason is not None:
        raise NamespacesUnavailable(reason)
    names = names or [f"host{i}" for i in range(count)]
    if len(names) != count or count > SUBNET.num_addresses - 2:
        raise ValueError(f"{count} hosts need {count} names and addresses; got {names}")
    _install_handlers()
    remove_leftovers()
    network = _plan(count, names)
    with _lock:
        _active.append(network)  # registered before anything is made: whatever is made is removed
    try:
        with _machine_lock():
            _build(network)
        yield network
    finally:
        network.remove()
        with _lock:
            if network in _active:
                _active.remove(network)
