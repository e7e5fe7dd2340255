"""The pre-flight's exchange between the nodes, on the rendezvous port (run.launch.master_port) before the
rendezvous binds it: every other node sends its `NodeFacts` to node 0 as one JSON line (`report`); node 0 takes
the reports (`collect`), judges them all (bert.launch.node_facts.judge: also two hosts started as one node, a
stray that sends no report) and sends every node the verdict. Each side waits at most the timeout it is given
(run.launch.preflight_timeout_s), and no peer, however slowly it sends, holds the other past it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import select
import socket
import time

from bert.launch.node_facts import NodeFacts, judge
from bert.typed_config import from_dict

PROTOCOL = "mlperf-bert-preflight/1"
_CONNECT_ATTEMPT_S = 2.0
_RETRY_S = 0.25
_READ_S = 5.0  # a connected node sends its report at once; node 0 waits no longer for its whole line
_MAX_LINE = 2**20


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


def collect(own: NodeFacts, nodes: int, master_addr: str, port: int, timeout_s: float
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


def report(facts: NodeFacts, master_addr: str, port: int, timeout_s: float) -> list[str]:
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
