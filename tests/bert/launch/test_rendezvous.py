"""The exchange of reports on the rendezvous port (bert.launch.rendezvous), on this host: no peer holds the other
past its deadline however slowly it sends, and every malformed report is one line of node 0's verdict."""

import dataclasses
import json
import socket
import threading
import time

from benchmarks.common.ranks import free_port
from bert.launch import rendezvous
from tests.helpers.preflight import connect_when_listening
from tests.helpers.preflight import node_report as facts


def _drip(port: int, stop: threading.Event, first: bytes = b"{") -> None:
    """A peer that sends one byte at a time, each well within a read's timeout, until stopped (8 s at most)."""
    with connect_when_listening(port) as peer:
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
    monkeypatch.setattr(rendezvous, "_READ_S", 1.0)
    port = free_port()
    own = facts(0)
    stop = threading.Event()
    dripper = threading.Thread(target=_drip, args=(port, stop))
    dripper.start()
    started = time.monotonic()
    try:
        problems, _ = rendezvous.collect(own, 2, "127.0.0.1", port, timeout_s=1.5)
    finally:
        stop.set()
        dripper.join(timeout=10)
    assert time.monotonic() - started < 1.5 + 1.0 + 1.0
    assert len(problems) == 2, problems
    assert problems[0].startswith("a process at 127.0.0.1 connected to the rendezvous port but sent no pre-flight "
                                  "report (TimeoutError: ")
    assert problems[1].startswith("node 1 did not report within 2 s")


def test_a_node_0_dripping_its_verdict_does_not_hold_a_node_past_its_deadline(monkeypatch):
    monkeypatch.setattr(rendezvous, "_READ_S", 0.5)
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
        (problem,) = rendezvous.report(facts(1), "127.0.0.1", port, timeout_s=1)
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
    lines = [json.dumps({"protocol": rendezvous.PROTOCOL, "facts": value}).encode() + b"\n"
             for value in malformed.values()]
    lines += [b"42\n", b"[" * 100_000 + b"\n"]  # no object at all; nested past any parser
    port = free_port()

    def send_all():
        for line in lines:
            with connect_when_listening(port) as peer:
                peer.sendall(line)
                peer.recv(1)  # node 0 closes it

    sender = threading.Thread(target=send_all)
    sender.start()
    problems, _ = rendezvous.collect(facts(0), 2, "127.0.0.1", port, timeout_s=1.5)
    sender.join(timeout=10)
    refused = [p for p in problems if p.startswith("a process at 127.0.0.1 connected to the rendezvous port but sent "
                                                   "no pre-flight report (")]
    assert len(refused) == len(lines) and len(problems) == len(lines) + 1, problems
    assert "ConfigError: its report: facts.node: expected an integer, got '1' (string)" in refused[0]
    assert "facts.sent_at: must be a finite number, got nan" in refused[1], refused[1]
    assert "facts.problems: expected a list of a string" in refused[2], refused[2]
    assert "facts.host: missing" in refused[3], refused[3]
    assert "(RecursionError: maximum recursion depth exceeded" in refused[-1], refused[-1]
