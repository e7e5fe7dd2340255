"""What one node finds before a run, for the pre-flight (bert.launch.preflight): the device and the torch build,
the dataset, the checkpoint (run.init_checkpoint), the results folder, the network interfaces, and what the first
rank would refuse (bert.launch.readiness), gathered as `NodeFacts`; and `judge`, node 0's verdict on every node's
facts: their own problems, and what differs from node 0 (other code, torch or descriptor, another dataset, clocks
further apart than MAX_CLOCK_SKEW_S). What each check saves a run from: docs/running.md, "On a cluster".
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import importlib.util
import ipaddress
import json
import os
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
from bert.launch.plan import launch_env, nearest_folder
from bert.launch.readiness import first_rank_refusals
from bert.mllog import LOG_FREE_BYTES
from bert.system import Descriptor
from bert.typed_config import ranged

MAX_CLOCK_SKEW_S = 1.0  # the hosts' timestamps (their output, the log's file times, Slurm's) must agree with rank 0's
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


def torch_version() -> str:
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
        files = dataset_files(system.dataset_needs(data_dir))
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
    return NodeFacts(node, host, code_fingerprint(), torch_version(), descriptor_fingerprint(system.data),
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
