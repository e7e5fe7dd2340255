"""The pre-flight (bert.launch.preflight): what one node lacks for the run (the dataset, the checkpoint, room for
the results), one line each without a node to name, and what it found when nothing is missing; several nodes on
this host, each in a thread, and what node 0 and the others print (its runs across hosts:
tests/faults/test_preflight.py)."""

import re
import socket
import threading

import pytest

from benchmarks.common.ranks import free_port
from bert.launch import preflight as pf
from bert.launch.node_facts import code_fingerprint, torch_version
from bert.system import load_descriptor
from tests.helpers.preflight import connect_when_listening


@pytest.fixture
def micro(tmp_path, small_dataset):
    return load_descriptor("cpu_micro").variant({"dataset.dir": str(small_dataset), "dataset.synthetic": None},
                                            name="micro").write(tmp_path / "systems")


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
    assert re.fullmatch(rf"ready: torch {re.escape(torch_version())} \(cpu\), dataset 4 training shard\(s\), "
                        rf"[0-9.]+ MB, results in {re.escape(str(tmp_path / 'logs' / 'micro'))}", outcome.ready)


def _preflight_in_thread(system, node: int, results: dict, key: object, log_dir) -> threading.Thread:
    """preflight() of `node` on this host (MASTER_ADDR 127.0.0.1) in a thread; its Outcome in results[key]."""
    def go():
        results[key] = pf.preflight(system, node, "127.0.0.1", None, log_dir)

    thread = threading.Thread(target=go)
    thread.start()
    return thread


def test_two_hosts_as_one_node_a_stray_and_a_silent_node_are_named(tmp_path, small_dataset):
    """Three nodes on this host: node 1 started twice, a program that is no pre-flight on the port, no node 2."""
    system = load_descriptor("cpu_micro").variant(
        {"launch.master_port": free_port(), "launch.preflight_timeout_s": 3, "dataset.dir": str(small_dataset),
         "global_batch_size": 48},
        name="micro_3x1", description={"number_of_nodes": "3"})
    results = {}
    threads = [_preflight_in_thread(system, 0, results, 0, tmp_path)]
    threads += [_preflight_in_thread(system, 1, results, f"1{copy}", tmp_path) for copy in "ab"]
    with connect_when_listening(system.run.launch.master_port) as stray:
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
    assert results[0].ready.startswith(f"2 node(s) ready: code {code_fingerprint()}, torch ")
    port = system.run.launch.master_port
    assert results[1].ready == f"node 1 ({socket.gethostname()}): node 0 at 127.0.0.1:{port} accepts the start"
