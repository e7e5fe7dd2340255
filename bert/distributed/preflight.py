"""The pre-flight: before any run starts (and before a result file is claimed), this node checks what the run
needs: the device and the torch build, the dataset, the checkpoint (run.init_checkpoint) and the results folder.

`preflight(descriptor, node, master_addr, data_dir, log_dir, checkpoint_dir, gpus_needed)` returns an `Outcome`:
the problems this node prints, one line each naming the node and the fix, or the line that the start goes on.
On one node it checks this node alone. On several, every node gathers its `NodeFacts` and reports them to node 0
as one JSON line on the rendezvous port (run.launch.master_port); node 0 judges them all (`judge`: also other
code, torch or descriptor, another dataset, a missing interface, clocks further apart than MAX_CLOCK_SKEW_S, two
hosts started as one node) and sends back the verdict. Each side waits at most run.launch.preflight_timeout_s.
What each check saves a run from: docs/running.md, "On a cluster".
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import importlib.metadata
import importlib.util
import ipaddress
import json
import os
import select
import shutil
import socket
import struct
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bert.closed_division import preflight_problems as closed_division_problems
from bert.data.dataset import dataset_files
from bert.data.shards import ShardError
from bert.distributed.plan import launch_env, nearest_folder
from bert.distributed.readiness import first_rank_refusals
from bert.mllog import LOG_FREE_BYTES
from bert.system import Descriptor
from bert.typed_config import from_dict, ranged

PROTOCOL = "mlperf-bert-preflight/1"
MAX_CLOCK_SKEW_S = 1.0  # the hosts' timestamps (their output, the log's file times, Slurm's) must agree with rank 0's
_CONNECT_ATTEMPT_S = 2.0
_RETRY_S = 0.25
_READ_S = 5.0  # a connected node sends its report at once; node 0 waits no longer for its whole line
_MAX_LINE = 2**20
_WRAPPER_SCRIPTS = ("run_and_time.sh", "run_and_time.sbatch", "bootstrap.sh")
_SIOCGIFADDR = 0x8915


@dataclass(frozen=True)
class NodeFacts:
    """What one node reports; `problems` are what it found wrong by itself, each naming it. Read from the wire
    with typed_config.from_dict, so that a report of the wrong shape is one problem, not a traceback."""

    node: int = ranged(0)
    host: str
    code: str
    torch: str
    descriptor: str
    descriptor_path: str
    dataset_dir: str
    dataset: str  # a fingerprint of the dataset's file names and sizes; "" when the node has none
    dataset_summary: str
    log_free_bytes: int | None = ranged(0)  # node 0's, where it writes the logs
    problems: list[str]
    sent_at: float = ranged()  # the node's clock (time.time()) when it sent this


def code_fingerprint() -> str:
    """A hash of this harness's code: the bert package and the wrapper scripts beside it."""
    package = Path(__file__).resolve().parents[1]
    root = package.parent
    files = sorted(package.rglob("*.py")) + [root / name for name in _WRAPPER_SCRIPTS if (root / name).is_file()]
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def _torch_version() -> str:
    """The installed torch's version, without the seconds that importing it takes."""
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:  # a build without package metadata
        import torch

        return torch.__version__


def descriptor_fingerprint(data: dict) -> str:
    """Of a descriptor's resolved JSON (Descriptor.data): equal on every node that resolves the same values."""
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:12]


def _dataset(system: Descriptor, data_dir: Path | None) -> tuple[str, str, list[str]]:
    """(fingerprint, summary, problems) of the dataset this node would read."""
    root = system.dataset_dir(data_dir)
    where = "there on every node, or mount the shared file system that holds it" if system.nodes > 1 else \
        "there, or set DATADIR to the folder that holds it"
    if not root.is_dir():
        return "", "none", [f"the dataset folder {root} does not exist here (DATADIR, else run.dataset.dir): put "
                            f"the dataset {where}"]
    try:
        files = dataset_files(system, data_dir)
    except ShardError as e:
        return "", "none", [str(e)]
    paths = [*files.train_shards, files.eval_file, files.vocab_file]
    missing = [p for p in paths if not p.is_file()]
    if missing:
        return "", "incomplete", [f"{missing[0]} does not exist here: put the whole dataset in {root}"
                                  + (" on every node" if system.nodes > 1 else "")]
    sizes = [(str(p.relative_to(root)), p.stat().st_size) for p in paths]
    summary = f"{len(files.train_shards)} training shard(s), {sum(size for _, size in sizes) / 1e6:.1f} MB"
    return hashlib.sha256(json.dumps(sizes).encode()).hexdigest()[:12], summary, []


def device_problems(system: Descriptor, gpus_needed: int) -> list[str]:
    """What keeps this host from running the descriptor's device: a CUDA run needs a CUDA build of torch that
    sees `gpus_needed` GPUs (one per process of the node, or one where the cluster binds one to each task)."""
    missing = [f"torch is not installed in this Python ({sys.executable}): install it (bootstrap.sh does), or run "
               "in the container that has it (CONT)"]
    if system.run.device != "cuda":  # importing torch takes seconds: only a CUDA run needs more than its presence
        return [] if importlib.util.find_spec("torch") else missing
    try:
        import torch
    except ImportError:
        return missing
    build = f"torch {torch.__version__}"
    fix = "run in a CUDA container (CONT=<image>) or an environment with a CUDA build of torch, or use a CPU descriptor"
    if torch.version.cuda is None:
        return [f"{system.name} runs on CUDA (run.device) but {build} here is a build without CUDA: {fix}"]
    visible = torch.cuda.device_count()
    if visible == 0:
        return [f"{system.name} runs on CUDA (run.device) but {build} (CUDA {torch.version.cuda}) sees no GPU here "
                f"(the driver, CUDA_VISIBLE_DEVICES or the scheduler's binding hides them): {fix}"]
    if visible < gpus_needed:
        return [f"{visible} GPU(s) visible here, but {system.name} runs {system.run.processes_per_node} process(es) "
                "on each node, one GPU each: use a node with that many GPUs, or a descriptor of fewer processes"]
    return []


def checkpoint_problems(path: Path | None, checkpoint_dir: Path | None) -> list[str]:
    """Whether the checkpoint the run starts from, `path` (run.init_checkpoint, in CHECKPOINTDIR `checkpoint_dir`
    when given: Descriptor.init_checkpoint_path), is here."""
    if path is None or path.exists():
        return []
    named = f"CHECKPOINTDIR={checkpoint_dir} holds no {path.name}" if checkpoint_dir else \
        f"{path} (run.init_checkpoint) does not exist here"
    return [f"the checkpoint to start from: {named}: convert the MLPerf phase-1 checkpoint there (`mlperf-bert "
            f"checkpoint convert model.ckpt-28252 {path}`), or set CHECKPOINTDIR to the folder that holds {path.name}"]


def results_folder_problems(log_dir: Path) -> list[str]:
    """Whether the results folder can be made and written here."""
    nearest = next(p for p in [log_dir, *log_dir.parents] if os.path.lexists(p))
    if not nearest.is_dir():  # a file (or a dangling link) at the folder or above it, where mkdir would fail
        where = "" if nearest == log_dir else f"cannot be made: {nearest} "
        return [f"the results folder {log_dir} {where}is not a folder: set LOGDIR to a folder"]
    if not os.access(nearest, os.W_OK | os.X_OK):
        return [f"the results folder {log_dir} cannot be written here ({nearest} is not writable): set LOGDIR to a "
                "folder you can write"]
    return []


def interface_addresses() -> dict[str, str | None]:
    """This host's network interfaces and their IPv4 addresses (None: the interface has none)."""
    found: dict[str, str | None] = {}
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        for _, name in socket.if_nameindex():
            try:
                request = struct.pack("256s", name.encode()[:15])
                found[name] = socket.inet_ntoa(fcntl.ioctl(probe.fileno(), _SIOCGIFADDR, request)[20:24])
            except OSError:
                found[name] = None
    return found


def _loopback(address: str) -> bool:
    return ipaddress.ip_address(address.split("%")[0]).is_loopback


def _resolve(name: str) -> list[str]:
    """The addresses `name` resolves to here (none when it does not)."""
    try:
        return [info[4][0] for info in socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)]
    except OSError:
        return []


def interface_problems(socket_ifname: str | None, single_host: bool) -> list[str]:
    """What keeps the other nodes from reaching this node's gloo and NCCL sockets. On one host (a loopback
    MASTER_ADDR) every node reaches the loopback."""
    here = interface_addresses()
    listing = ", ".join(f"{n} {a}" for n, a in here.items() if a and not _loopback(a)) or "only the loopback"
    if socket_ifname:
        problems = []
        for name in socket_ifname.split(","):
            if name not in here:
                problems.append(f"network interface {name!r} (run.launch.socket_ifname) does not exist here (this "
                                f"host has {listing}): name the interface on the network between the nodes")
            elif here[name] is None:
                problems.append(f"network interface {name!r} (run.launch.socket_ifname) has no IPv4 address here "
                                f"(this host has {listing}): name the interface on the network between the nodes")
            elif _loopback(here[name]) and not single_host:
                problems.append(f"network interface {name!r} (run.launch.socket_ifname) is the loopback, which no "
                                f"other node reaches (this host has {listing}): name the interface on the network "
                                "between the nodes")
        return problems
    name = socket.gethostname()
    addresses = _resolve(name)
    if single_host or (addresses and not _loopback(addresses[0])):
        return []
    found = f"resolves to the loopback {addresses[0]}" if addresses else "does not resolve (gloo takes the loopback)"
    return [f"without run.launch.socket_ifname gloo binds to the address of this host's name {name!r}, which {found} "
            f"that no other node reaches: set run.launch.socket_ifname to the interface on the network between the "
            f"nodes (this host has {listing}), or make {name!r} resolve to its address there"]


def node_facts(system: Descriptor, node: int, master_addr: str, data_dir: Path | None, log_dir: Path,
               checkpoint_dir: Path | None = None, gpus_needed: int = 1) -> NodeFacts:
    """This node's report (node 0's also says whether MASTER_ADDR is its own address and checks the results
    folder); one node reports only what it finds on itself."""
    host = socket.gethostname()
    fingerprint, summary, problems = _dataset(system, data_dir)
    checkpoint = checkpoint_problems(system.init_checkpoint_path(checkpoint_dir), checkpoint_dir)
    problems += first_rank_refusals(system, data_dir, checkpoint_dir, not problems, not checkpoint)
    problems = device_problems(system, gpus_needed) + problems + checkpoint
    problems += closed_division_problems(system, node, data_dir, checkpoint_dir)
    if system.nodes > 1:
        single_host = any(_loopback(a) for a in _resolve(master_addr))
        interface = launch_env(system.run.launch, "torchrun", master_addr).get("GLOO_SOCKET_IFNAME")
        problems += interface_problems(interface, single_host)
    free = None
    if node == 0:
        if system.nodes > 1:
            problems += _master_addr_problems(master_addr)
        problems += results_folder_problems(log_dir)
        free = shutil.disk_usage(nearest_folder(log_dir)).free
    return NodeFacts(node, host, code_fingerprint(), _torch_version(), descriptor_fingerprint(system.data),
                     str(system.path), str(system.dataset_dir(data_dir)), fingerprint, summary, free,
                     [_who(system.nodes, node, host) + p for p in problems], time.time())


def _who(nodes: int, node: int, host: str) -> str:
    """The start of a problem's line: the node it concerns, where there are several."""
    return f"node {node} ({host}): " if nodes > 1 else ""


def _master_addr_problems(master_addr: str) -> list[str]:
    addresses = _resolve(master_addr)
    if not addresses:
        return [f"MASTER_ADDR={master_addr} does not resolve here: set it to node 0's address on every node"]
    for address in addresses:
        try:
            with socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET) as probe:
                probe.bind((address, 0))
            return []
        except OSError:
            continue
    resolved = f" ({addresses[0]})" if addresses[0] != master_addr else ""
    return [f"MASTER_ADDR={master_addr}{resolved} is not an address of this host, so the other nodes would "
            "look for the rendezvous elsewhere: set MASTER_ADDR to node 0's address on every node"]


def judge(reports: dict[int, NodeFacts], received_at: dict[int, float], nodes: int, waited_s: float,
          master_addr: str, port: int) -> list[str]:
    """Every problem of the start, one line each, node by node: what the nodes found themselves, what differs
    from node 0, and the nodes that did not report."""
    base = reports[0]
    problems = []
    for node in range(nodes):
        if node not in reports:
            problems.append(f"node {node} did not report within {waited_s:.0f} s: start it (NODE_RANK={node}, "
                            f"MASTER_ADDR={master_addr}), or check that it reaches {master_addr}:{port}")
            continue
        facts = reports[node]
        who = f"node {node} ({facts.host})"
        problems += facts.problems
        if facts.code != base.code:
            problems.append(f"{who}: runs other harness code than node 0 (code {facts.code}, node 0 {base.code}): "
                            "install the same version (the same commit of this repository) on every node")
        if facts.torch != base.torch:
            problems.append(f"{who}: runs torch {facts.torch}, node 0 torch {base.torch}: install the same torch on "
                            "every node")
        if facts.descriptor != base.descriptor:
            problems.append(f"{who}: its descriptor {facts.descriptor_path} differs from node 0's "
                            f"{base.descriptor_path} (sha256 {facts.descriptor} vs {base.descriptor}): give every "
                            "node the same descriptor file")
        if facts.dataset and base.dataset and facts.dataset != base.dataset:
            problems.append(f"{who}: the dataset in {facts.dataset_dir} ({facts.dataset_summary}) differs from node "
                            f"0's in {base.dataset_dir} ({base.dataset_summary}): give every node the same dataset")
        skew = facts.sent_at - received_at[node]
        if abs(skew) > MAX_CLOCK_SKEW_S:
            problems.append(f"{who}: its clock is {abs(skew):.1f} s {'ahead of' if skew > 0 else 'behind'} node "
                            f"0's (at most {MAX_CLOCK_SKEW_S:g} s): synchronise the clocks (chrony, ntpd)")
    if base.log_free_bytes is not None and base.log_free_bytes < LOG_FREE_BYTES:
        who = f"node 0 ({base.host}): " if nodes > 1 else ""
        problems.append(f"{who}{base.log_free_bytes / 2**20:.1f} MiB free for the logs (at least "
                        f"{LOG_FREE_BYTES // 2**20} MiB): free space there, or set LOGDIR to another folder")
    return problems


@dataclass(frozen=True)
class Outcome:
    """What this node prints: the problems it must show (node 0: all of them; another node: those naming it, or
    one line saying that node 0 refused the start), or, when there are none, one line that the start goes on."""

    problems: list[str]
    ready: str


class _Collection:
    """Node 0's side: the reports of the nodes that reached it, and the open connections the verdict goes back on.
    Every read is bounded: a connection has _READ_S (and no more than the pre-flight's own deadline) to deliver
    its whole report, however slowly it sends, and the connections are read side by side."""

    def __init__(self, own: NodeFacts, nodes: int):
        self.nodes = nodes
        self.reports = {0: own}
        self.received_at = {0: own.sent_at}
        self.problems: list[str] = []
        self.connections: list[socket.socket] = []
        self.pending: dict[socket.socket, tuple[str, float, bytearray]] = {}  # peer, read deadline, bytes so far

    def accept(self, server: socket.socket, deadline: float) -> None:
        connection, peer = server.accept()
        connection.setblocking(False)
        self.pending[connection] = (peer[0].removeprefix("::ffff:"), min(time.monotonic() + _READ_S, deadline),
                                    bytearray())

    def next_read_deadline(self, deadline: float) -> float:
        return min([deadline, *(until for _, until, _ in self.pending.values())])

    def read(self, connection: socket.socket) -> None:
        peer, _, data = self.pending[connection]
        try:
            chunk = connection.recv(65536)
        except BlockingIOError:
            return
        except OSError as e:
            chunk, error = b"", e
        else:
            error = None if chunk else ValueError("the connection closed before a whole line")
        data += chunk
        if len(data) > _MAX_LINE:
            error = ValueError(f"a line of more than {_MAX_LINE} bytes")
        if error is not None or data.endswith(b"\n"):
            del self.pending[connection]
            if error is None:
                self._take(connection, peer, bytes(data))
            else:
                self._refuse(connection, peer, error)

    def expire(self, now: float) -> None:
        """Refuses every connection whose whole report did not come by its deadline (or now, when the exchange
        ends)."""
        for connection, (peer, until, data) in list(self.pending.items()):
            if until <= now:
                del self.pending[connection]
                self._refuse(connection, peer, TimeoutError(f"{len(data)} byte(s) and no whole line within "
                                                            f"{_READ_S:g} s"))

    def _refuse(self, connection: socket.socket, peer: str, error: Exception) -> None:
        self.problems.append(f"a process at {peer} connected to the rendezvous port but sent no pre-flight "
                             f"report ({type(error).__name__}: {error}): a node on an older harness, or another "
                             "program using the port")
        connection.close()

    def _take(self, connection: socket.socket, peer: str, line: bytes) -> None:
        try:
            message = json.loads(line)
            if not isinstance(message, dict):
                raise ValueError(f"a JSON {type(message).__name__}, not a report")
            if message.get("protocol") != PROTOCOL:
                raise ValueError(f"protocol {message.get('protocol')!r}")
            facts = from_dict(NodeFacts, message.get("facts"), "its report", "facts")
        except (ValueError, RecursionError) as e:
            return self._refuse(connection, peer, e)
        received = time.time()
        self.connections.append(connection)
        if not 0 < facts.node < self.nodes:
            self.problems.append(f"node {facts.node} ({facts.host}, {peer}): node 0's descriptor has nodes "
                                 f"0..{self.nodes - 1}: set this host's NODE_RANK")
        elif facts.node in self.reports:
            self.problems.append(f"node {facts.node} ({facts.host}, {peer}): another host, "
                                 f"{self.reports[facts.node].host}, reports as node {facts.node} too: give each "
                                 "host its own NODE_RANK")
        else:
            self.reports[facts.node] = facts
            self.received_at[facts.node] = received

    def answer(self, problems: list[str]) -> None:
        """The verdict to every node that reported; each closes first, so that no connection of the rendezvous
        port lingers on node 0 (in TIME_WAIT) when the rendezvous binds it. All of it within _READ_S."""
        deadline = time.monotonic() + _READ_S
        for connection in self.connections:
            try:
                connection.settimeout(_READ_S)
                connection.sendall((json.dumps({"problems": problems}) + "\n").encode())
            except OSError:
                pass
        for connection in self.connections:
            try:
                while (left := deadline - time.monotonic()) > 0:
                    connection.settimeout(left)
                    if not connection.recv(4096):
                        break
            except OSError:
                pass
            connection.close()


def _read_line(connection: socket.socket, deadline: float) -> bytes:
    """One line, whole by `deadline` (time.monotonic()) however slowly it comes: TimeoutError otherwise."""
    data = b""
    while not data.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no whole line in time ({len(data)} byte(s))")
        connection.settimeout(left)
        chunk = connection.recv(65536)
        if not chunk:
            raise ValueError("the connection closed before a whole line")
        data += chunk
        if len(data) > _MAX_LINE:
            raise ValueError(f"a line of more than {_MAX_LINE} bytes")
    return data


def _listen(port: int) -> socket.socket:
    if socket.has_dualstack_ipv6():
        return socket.create_server(("", port), family=socket.AF_INET6, dualstack_ipv6=True)
    return socket.create_server(("", port))


def _collect(own: NodeFacts, nodes: int, master_addr: str, port: int, timeout_s: float
             ) -> tuple[list[str], list[str]]:
    """Node 0: (every problem, the facts that every node agrees on) after every node reported or timeout_s."""
    who = f"node 0 ({own.host})"
    try:
        server = _listen(port)
    except OSError as e:
        return [f"{who}: the rendezvous port {port} (run.launch.master_port) is taken on this host "
                f"({os.strerror(e.errno) if e.errno else e}): "
                "end the run that holds it, or set run.launch.master_port to a free port"], []
    collection = _Collection(own, nodes)
    deadline = time.monotonic() + timeout_s
    with server:
        while len(collection.reports) < nodes and (now := time.monotonic()) < deadline:
            ready = select.select([server, *collection.pending], [], [],
                                  max(collection.next_read_deadline(deadline) - now, 0))[0]
            for sock in ready:
                if sock is server:
                    collection.accept(server, deadline)
                else:
                    collection.read(sock)
            collection.expire(time.monotonic())
        collection.expire(float("inf"))  # the exchange is over: a report still arriving is too late
        problems = collection.problems + judge(collection.reports, collection.received_at, nodes, timeout_s,
                                               master_addr, port)
        collection.answer(problems)
    skews = [abs(collection.reports[n].sent_at - collection.received_at[n]) for n in collection.reports]
    agreed = [f"code {own.code}", f"torch {own.torch}", f"descriptor {own.descriptor}",
              f"dataset {own.dataset_summary}", f"clocks within {max(skews):.2f} s"]
    return problems, agreed


def _describe_error(error: OSError) -> str:
    if isinstance(error, socket.gaierror):
        return f"the name does not resolve: {error.strerror}"
    if isinstance(error, TimeoutError):
        return "no answer"
    return error.strerror or str(error)


def _report(facts: NodeFacts, master_addr: str, port: int, timeout_s: float) -> list[str]:
    """Every other node: sends its facts to node 0 and returns node 0's verdict; a problem of its own when node 0
    cannot be reached or gives none, each within timeout_s."""
    who, rendezvous = f"node {facts.node} ({facts.host})", f"{master_addr}:{port}"
    deadline, error = time.monotonic() + timeout_s, None
    while (left := deadline - time.monotonic()) > 0:
        try:
            connection = socket.create_connection((master_addr, port), timeout=min(_CONNECT_ATTEMPT_S, left))
            break
        except OSError as e:
            error = e
            time.sleep(min(_RETRY_S, max(deadline - time.monotonic(), 0)))
    else:
        return [f"{who}: cannot reach the rendezvous {rendezvous} within {timeout_s:.0f} s "
                f"({_describe_error(error) if error else 'no attempt'}); this node gives up: check that node 0 is "
                f"started, that MASTER_ADDR names it, and that port {port} (run.launch.master_port) is open "
                "between the nodes"]
    with connection:
        try:
            message = {"protocol": PROTOCOL, "facts": dataclasses.asdict(dataclasses.replace(facts,
                                                                                              sent_at=time.time()))}
            connection.sendall((json.dumps(message) + "\n").encode())
            # Node 0 answers once every node reported or its own timeout passed (and a late report's read ended).
            verdict = json.loads(_read_line(connection, time.monotonic() + timeout_s + _READ_S))
            problems = verdict.get("problems") if isinstance(verdict, dict) else None
            if not isinstance(problems, list) or not all(isinstance(p, str) for p in problems):
                raise ValueError("its answer is no list of problems")
            return problems
        except (OSError, ValueError, RecursionError) as e:
            return [f"{who}: node 0 at {rendezvous} took no report or gave no verdict ({type(e).__name__}: {e}): "
                    "see node 0's output (what listens on that port may be no pre-flight)"]


def preflight(system: Descriptor, node: int, master_addr: str, data_dir: Path | None, log_dir: Path,
              checkpoint_dir: Path | None = None, gpus_needed: int | None = None) -> Outcome:
    """The pre-flight of `node` (see the module's description). `gpus_needed`: the GPUs a CUDA run needs to see
    on this node (default: one per process of the node)."""
    launch = system.run.launch
    gpus = system.run.processes_per_node if gpus_needed is None else gpus_needed
    facts = node_facts(system, node, master_addr, data_dir, log_dir, checkpoint_dir, gpus)
    if system.nodes == 1:
        problems = judge({0: facts}, {0: facts.sent_at}, 1, 0, master_addr, launch.master_port)
        checkpoint = system.init_checkpoint_path(checkpoint_dir)
        return Outcome(problems, f"ready: torch {facts.torch} ({system.run.device}), dataset {facts.dataset_summary}"
                                 + (f", checkpoint {checkpoint}" if checkpoint else "") + f", results in {log_dir}")
    if node == 0:
        problems, agreed = _collect(facts, system.nodes, master_addr, launch.master_port, launch.preflight_timeout_s)
        interface = launch_env(system.run.launch, "torchrun", master_addr).get("GLOO_SOCKET_IFNAME")
        agreed.append(f"interface {interface}" if interface else "gloo on the address of each host's name")
        return Outcome(problems, f"{system.nodes} node(s) ready: {', '.join(agreed)}")
    problems = _report(facts, master_addr, launch.master_port, launch.preflight_timeout_s)
    mine = [p for p in problems if p.startswith(f"node {node} ")]
    if problems and not mine:
        mine = [f"node {node} ({facts.host}): node 0 refused the start for {len(problems)} problem(s) of other "
                "nodes, which node 0's output names"]
    return Outcome(mine, f"node {node} ({facts.host}): node 0 at {master_addr}:{launch.master_port} accepts the start")
