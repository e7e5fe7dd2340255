"""The pre-flight's judgement and its exchange on this host (its runs across hosts: tests/faults/test_preflight.py),
and the descriptor's interface setting that reaches gloo and NCCL."""

import dataclasses
import json
import socket
import threading
import time

import pytest

from benchmarks.common.ranks import free_port
from bert.distributed import preflight as pf
from bert.distributed.plan import launch_env
from bert.system import load_descriptor
from bert.typed_config import ConfigError
from tests.helpers.systems import unchecked_descriptor, write_unchecked


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


def test_the_interface_setting_reaches_gloo_and_nccl_and_is_checked(tmp_path):
    system = load_descriptor("cpu_micro").variant({"launch.socket_ifname": "ib0,ib1"})
    assert launch_env(system.run.launch, "torchrun", "h0") == {"GLOO_SOCKET_IFNAME": "ib0,ib1",
                                                                "NCCL_SOCKET_IFNAME": "ib0,ib1"}
    bad = write_unchecked(tmp_path, "bad", unchecked_descriptor({"launch.socket_ifname": "^docker"}))
    with pytest.raises(ConfigError, match=r"run.launch.socket_ifname: '\^docker' is not a network interface name"):
        load_descriptor(bad)
    twice = write_unchecked(tmp_path, "twice", unchecked_descriptor(
        {"launch.socket_ifname": "eth0", "launch.env": {"NCCL_SOCKET_IFNAME": "eth1"}}))
    with pytest.raises(ConfigError, match="run.launch.env: sets NCCL_SOCKET_IFNAME beside run.launch.socket_ifname"):
        load_descriptor(twice)


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
