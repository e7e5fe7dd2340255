"""What one node finds (bert.launch.node_facts): the GPUs a torch build sees (faked: they are the hardware),
the network interfaces of this host, and node 0's judgement of every node's report: each difference from node 0
and each silent node named with the fix."""

import torch

from bert.launch import node_facts as nf
from bert.system import load_descriptor
from tests.helpers.preflight import node_report as facts


def test_a_cuda_run_needs_a_cuda_build_that_sees_a_gpu_per_process(monkeypatch):
    h100 = load_descriptor("dgxh100_1x8")
    assert nf.device_problems(load_descriptor("cpu_micro"), 1) == []
    if torch.version.cuda is None:  # this machine's build: the line a user gets here
        (line,) = nf.device_problems(h100, 8)
        assert line.startswith(f"dgxh100_1x8 runs on CUDA (run.device) but torch {torch.__version__} here is a "
                               "build without CUDA: ")
    monkeypatch.setattr(torch.version, "cuda", "12.8")
    for visible, needed, problem in [(0, 8, "sees no GPU here"), (2, 8, "2 GPU(s) visible here, but dgxh100_1x8 "
                                     "runs 8 process(es) on each node"), (8, 8, None), (1, 1, None)]:
        monkeypatch.setattr(torch.cuda, "device_count", lambda visible=visible: visible)
        found = nf.device_problems(h100, needed)
        assert (found == []) if problem is None else (len(found) == 1 and problem in found[0]), found


def test_node_0_names_each_difference_with_the_node_and_the_fix():
    reports = {0: facts(0), 1: facts(1, torch="2.12.0", sent_at=1003.5), 2: facts(2, dataset="0ther", sent_at=998.0)}
    problems = nf.judge(reports, dict.fromkeys(reports, 1000.0), 4, 30, "10.0.0.1", 29500)
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
    assert nf.judge(reports, dict.fromkeys(reports, 1000.0), 2, 30, "h0", 1) == [
        "node 0 (host0): 5.0 MiB free for the logs (at least 64 MiB): free space there, or set LOGDIR to another "
        "folder"]
    assert nf.judge({0: facts(0), 1: facts(1)}, {0: 1000.0, 1: 1000.0}, 2, 30, "h0", 1) == []


def test_an_interface_this_host_lacks_or_the_loopback_is_named():
    missing, = nf.interface_problems("nope0", single_host=False)
    assert missing.startswith("network interface 'nope0' (run.launch.socket_ifname) does not exist here (this host has")
    loopback, = nf.interface_problems("lo", single_host=False)
    assert "'lo' (run.launch.socket_ifname) is the loopback, which no other node reaches" in loopback
    assert nf.interface_problems("lo", single_host=True) == []  # every node on this host reaches it
