"""The pre-flight (bert.distributed.preflight): what one node lacks for the run (the GPUs, the dataset, the
checkpoint, room for the results), one line each without a node to name, and what it found when nothing is
missing; node 0's judgement of every node's report and the exchange of reports on this host (its runs across
hosts: tests/faults/test_preflight.py). The GPUs a torch build sees are the hardware here: they are faked, the
rest is this host's own."""

import dataclasses
import json
import re
import socket
import threading
import time

import pytest
import torch

from benchmarks.common.ranks import free_port
from bert.distributed import preflight as pf
from bert.system import load_descriptor


@pytest.fixture
def micro(tmp_path, small_dataset):
    return load_descriptor("cpu_micro").variant({"dataset.dir": str(small_dataset), "dataset.synthetic": None},
                                            name="micro").write(tmp_path / "systems")


def test_a_cuda_run_needs_a_cuda_build_that_sees_a_gpu_per_process(monkeypatch):
    h100 = load_descriptor("dgxh100_1x8")
    assert pf.device_problems(load_descriptor("cpu_micro"), 1) == []
    if torch.version.cuda is None:  # this machine's build: the line a user gets here
        (line,) = pf.device_problems(h100, 8)
        assert line.startswith(f"dgxh100_1x8 runs on CUDA (run.device) but torch {torch.__version__} here is a "
                               "build without CUDA: ")
    monkeypatch.setattr(torch.version, "cuda", "12.8")
    for visible, needed, problem in [(0, 8, "sees no GPU here"), (2, 8, "2 GPU(s) visible here, but dgxh100_1x8 "
                                     "runs 8 process(es) on each node"), (8, 8, None), (1, 1, None)]:
        monkeypatch.setattr(torch.cuda, "device_count", lambda visible=visible: visible)
        found = pf.device_problems(h100, needed)
        assert (found == []) if problem is None else (len(found) == 1 and problem in found[0]), found


def test_one_node_names_each_missing_input_without_a_node(tmp_path, micro, small_dataset):
    with_checkpoint = micro.variant({"init_checkpoint": "phase1/model.pt"})
    outcome = pf.preflight(with_checkpoint, 0, "localhost", tmp_path / "nothing", tmp_path / "logs",
                           checkpoint_dir=tmp_path)
    assert outcome.problems == [
        f"the dataset folder {tmp_path / 'nothing'} does not exist here (DATADIR, else run.dataset.dir): put the "
        "dataset there, or set DATADIR to the folder that holds it",
        f"the checkpoint to start from: CHECKPOINTDIR={tmp_path} holds no model.pt: convert the MLPerf phase-1 "
        f"checkpoint there (`mlperf-bert checkpoint convert model.ckpt-28252 {tmp_path / 'model.pt'}`), or set "
        "CHECKPOINTDIR to the folder that holds model.pt"]
    taken = tmp_path / "a_file"
    taken.write_text("")
    assert pf.preflight(micro, 0, "localhost", None, taken).problems == [
        f"the results folder {taken} is not a folder: set LOGDIR to a folder"]
    under = taken / "logs" / "micro"  # passed (its nearest folder, tmp_path, is writable) and failed at mkdir
    assert pf.preflight(micro, 0, "localhost", None, under).problems == [
        f"the results folder {under} cannot be made: {taken} is not a folder: set LOGDIR to a folder"]


def test_one_node_ready_says_what_it_found(tmp_path, micro):
    outcome = pf.preflight(micro, 0, "localhost", None, tmp_path / "logs" / "micro")
    assert outcome.problems == []
    assert re.fullmatch(rf"ready: torch {re.escape(pf._torch_version())} \(cpu\), dataset 4 training shard\(s\), "
                        rf"[0-9.]+ MB, results in {re.escape(str(tmp_path / 'logs' / 'micro'))}", outcome.ready)


def facts(node: int, **changes) -> pf.NodeFacts:
    base = pf.NodeFacts(node=node, host=f"host{node}", code="c0de", torch="2.13.0", descriptor="d35c",
                        descriptor_path="/s/micro.json", dataset_dir="/data", dataset="da7a",
                        dataset_summary="4 shards",
                        log_free_bytes=2**30 if node == 0 else None, problems=[], sent_at=1000.0)
    return dataclasses.replace(base, **changes)


def test_node_0_names_each_difference_with_the_node_and_the_fix():
    reports = {0: facts(0), 1: facts(1, torch="2.12.0", sent_at=1003.5), 2: facts(2, dataset="0ther", sent_at=998.0)}
    problems = pf.judge(reports, dict.fromkeys(reports, 1000.0), 4, 30, "10.0.0.1", 29500)
    assert problems == [
        "node 1 (host1): runs torch 2.12.0, node 0 torch 2.13.0: install the same torch on every node",
        "node 1 (host1): its clock is 3.5 s ahead of node 0's (at most 1 s): synchronise the clocks (chrony, ntpd)",
        "node 2 (host2): the dataset in /data (4 shards) differs from node 0's in /data (4 shards): give every node "
        "the same dataset",
        "node 2 (host2): its clock is 2.0 s behind node 0's (at most 1 s): synchronise the clocks (chrony, ntpd)",
        "node 3 did not report within 30 s: start it (NODE_RANK=3, MASTER_ADDR=10.0.0.1), or check that it reaches "
        "10.0.0.1:29500",
    ]


def test_too_little_disk_for_the_logs_on_node_0_is_refused():
    reports = {0: facts(0, log_free_bytes=5 * 2**20), 1: facts(1)}
    assert pf.judge(reports, dict.fromkeys(reports, 1000.0), 2, 30, "h0", 1) == [
        "node 0 (host0): 5.0 MiB free for the logs (at least 64 MiB): free space there, or set LOGDIR to another "
        "folder"]
    assert pf.judge({0: facts(0), 1: facts(1)}, {0: 1000.0, 1: 1000.0}, 2, 30, "h0", 1) == []


def test_an_interface_this_host_lacks_or_the_loopback_is_named():
    missing, = pf.interface_problems("nope0", single_host=False)
    assert missing.startswith("network interface 'nope0' (run.launch.socket_ifname) does not exist here (this host has")
    loopback, = pf.interface_problems("lo", single_host=False)
    assert "'lo' (run.launch.socket_ifname) is the loopback, which no other node reaches" in loopback
    assert pf.interface_problems("lo", single_host=True) == []  # every node on this host reaches it


def _preflight_in_thread(system, node: int, results: dict, key: object, log_dir) -> threading.Thread:
    """preflight() of `node` on this host (MASTER_ADDR 127.0.0.1) in a thread; its Outcome in results[key]."""
    def go():
        results[key] = pf.preflight(system, node, "127.0.0.1", None, log_dir)

    thread = threading.Thread(target=go)
    thread.start()
    return thread


def _connect_when_listening(port: int) -> socket.socket:
    deadline = time.monotonic() + 10
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=1)
        except ConnectionRefusedError:
            assert time.monotonic() < deadline, f"nothing listens on port {port}"
            time.sleep(0.05)


def test_two_hosts_as_one_node_a_stray_and_a_silent_node_are_named(tmp_path, small_dataset):
    """Three nodes on this host: node 1 started twice, a program that is no pre-flight on the port, no node 2."""
    system = load_descriptor("cpu_micro").variant(
        {"launch.master_port": free_port(), "launch.preflight_timeout_s": 3, "dataset.dir": str(small_dataset),
         "global_batch_size": 48},
        name="micro_3x1", description={"number_of_nodes": "3"})
    results = {}
    threads = [_preflight_in_thread(system, 0, results, 0, tmp_path)]
    threads += [_preflight_in_thread(system, 1, results, f"1{copy}", tmp_path) for copy in "ab"]
    with _connect_when_listening(system.run.launch.master_port) as stray:
        stray.sendall(b"GET / HTTP/1.0\r\n\r\n")
        stray.shutdown(socket.SHUT_WR)
        for thread in threads:
            thread.join(timeout=30)
    host = socket.gethostname()
    problems = results[0].problems
    assert len(problems) == 3, problems
    assert any(p.startswith("a process at 127.0.0.1 connected to the rendezvous port but sent no pre-flight report")
               for p in problems)
    assert f"node 1 ({host}, 127.0.0.1): another host, {host}, reports as node 1 too: give each host its own " \
           "NODE_RANK" in problems
    assert "node 2 did not report within 3 s: start it (NODE_RANK=2, MASTER_ADDR=127.0.0.1), or check that it " \
           f"reaches 127.0.0.1:{system.run.launch.master_port}" in problems
    # each node 1 prints the line that names it
    assert sorted(len(results[k].problems) for k in ("1a", "1b")) == [1, 1]


def test_a_ready_start_says_what_the_nodes_agree_on(tmp_path, small_dataset):
    system = load_descriptor("cpu_micro").variant(
        {"launch.master_port": free_port(), "launch.preflight_timeout_s": 10, "dataset.dir": str(small_dataset)},
        name="micro_2x1", description={"number_of_nodes": "2"})
    results = {}
    threads = [_preflight_in_thread(system, node, results, node, tmp_path / "logs") for node in (0, 1)]
    for thread in threads:
        thread.join(timeout=30)
    assert results[0].problems == results[1].problems == []
    assert results[0].ready.startswith(f"2 node(s) ready: code {pf.code_fingerprint()}, torch ")
    port = system.run.launch.master_port
    assert results[1].ready == f"node 1 ({socket.gethostname()}): node 0 at 127.0.0.1:{port} accepts the start"


def _drip(port: int, stop: threading.Event, first: bytes = b"{") -> None:
    """A peer that sends one byte at a time, each well within a read's timeout, until stopped (8 s at most)."""
    with _connect_when_listening(port) as peer:
        peer.sendall(first)
        for _ in range(40):
            if stop.wait(0.2):
                return
            try:
                peer.sendall(b" ")
            except OSError:
                return


def test_a_peer_dripping_bytes_does_not_hold_node_0_past_its_deadline(tmp_path, monkeypatch):
    """Each byte used to restart the read's timeout: node 0 was still blocked at 130 s of an 8 s pre-flight."""
    monkeypatch.setattr(pf, "_READ_S", 1.0)
    port = free_port()
    own = facts(0)
    stop = threading.Event()
    dripper = threading.Thread(target=_drip, args=(port, stop))
    dripper.start()
    started = time.monotonic()
    try:
        problems, _ = pf._collect(own, 2, "127.0.0.1", port, timeout_s=1.5)
    finally:
        stop.set()
        dripper.join(timeout=10)
    assert time.monotonic() - started < 1.5 + 1.0 + 1.0
    assert len(problems) == 2, problems
    assert problems[0].startswith("a process at 127.0.0.1 connected to the rendezvous port but sent no pre-flight "
                                  "report (TimeoutError: ")
    assert problems[1].startswith("node 1 did not report within 2 s")


def test_a_node_0_dripping_its_verdict_does_not_hold_a_node_past_its_deadline(monkeypatch):
    monkeypatch.setattr(pf, "_READ_S", 0.5)
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    stop = threading.Event()

    def fake_node_0():
        connection, _ = server.accept()
        with connection:
            connection.recv(65536)
            for _ in range(40):  # 8 s at most
                if stop.wait(0.2):
                    return
                connection.sendall(b" ")

    thread = threading.Thread(target=fake_node_0)
    thread.start()
    started = time.monotonic()
    try:
        (problem,) = pf._report(facts(1), "127.0.0.1", port, timeout_s=1)
    finally:
        stop.set()
        thread.join(timeout=10)
        server.close()
    assert time.monotonic() - started < 1 + 0.5 + 1.0
    assert problem.startswith(f"node 1 (host1): node 0 at 127.0.0.1:{port} took no report or gave no verdict "
                              "(TimeoutError: ")


def test_malformed_reports_are_named_one_line_each_and_never_stop_node_0():
    good = dataclasses.asdict(facts(1))
    malformed = {
        "a node number in quotes": {**good, "node": "1"},
        "a clock of NaN": {**good, "sent_at": float("nan")},
        "problems as one string": {**good, "problems": "all fine"},
        "a field missing": {k: v for k, v in good.items() if k != "host"},
        "facts that are a list": [1, 2],
    }
    lines = [json.dumps({"protocol": pf.PROTOCOL, "facts": value}).encode() + b"\n" for value in malformed.values()]
    lines += [b"42\n", b"[" * 100_000 + b"\n"]  # no object at all; nested past any parser
    port = free_port()

    def send_all():
        for line in lines:
            with _connect_when_listening(port) as peer:
                peer.sendall(line)
                peer.recv(1)  # node 0 closes it

    sender = threading.Thread(target=send_all)
    sender.start()
    problems, _ = pf._collect(facts(0), 2, "127.0.0.1", port, timeout_s=1.5)
    sender.join(timeout=10)
    refused = [p for p in problems if p.startswith("a process at 127.0.0.1 connected to the rendezvous port but sent "
                                                   "no pre-flight report (")]
    assert len(refused) == len(lines) and len(problems) == len(lines) + 1, problems
    assert "ConfigError: its report: facts.node: expected an integer, got '1' (string)" in refused[0]
    assert "facts.sent_at: must be a finite number, got nan" in refused[1], refused[1]
    assert "facts.problems: expected a list of a string" in refused[2], refused[2]
    assert "facts.host: missing" in refused[3], refused[3]
    assert "(RecursionError: maximum recursion depth exceeded" in refused[-1], refused[-1]
