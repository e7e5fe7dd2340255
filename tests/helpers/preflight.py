"""What the pre-flight's tests build: a node's report (NodeFacts) and a connection to a port once it listens."""

from __future__ import annotations

import dataclasses
import socket
import time

from bert.launch.node_facts import NodeFacts


def node_report(node: int, **changes) -> NodeFacts:
    """A report of `node` on host<node> with every fact agreeing with the others', then `changes`."""
    base = NodeFacts(node=node, host=f"host{node}", code="c0de", torch="2.13.0", descriptor="d35c",
                     descriptor_path="/s/micro.json", dataset_dir="/data", dataset="da7a", dataset_summary="4 shards",
                     log_free_bytes=2**30 if node == 0 else None, problems=[], sent_at=1000.0)
    return dataclasses.replace(base, **changes)


def connect_when_listening(port: int) -> socket.socket:
    deadline = time.monotonic() + 10
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=1)
        except ConnectionRefusedError:
            assert time.monotonic() < deadline, f"nothing listens on port {port}"
            time.sleep(0.05)
