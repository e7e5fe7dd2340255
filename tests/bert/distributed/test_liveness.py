"""Naming the lost ranks: a rank whose beat stopped without an orderly end is lost; one that ended, or still
beats (blocked in a collective, say), is not. A rank whose store does not answer leaves all the same."""

import threading
import time
from datetime import timedelta

import torch.distributed as dist

from benchmarks.common.ranks import free_port
from bert.distributed.liveness import Heartbeat, beat_seconds, describe_lost


def _store(port: int, master: bool) -> dist.TCPStore:
    return dist.TCPStore("127.0.0.1", port, is_master=master, timeout=timedelta(seconds=10))


def test_a_rank_that_stops_beating_is_lost_and_one_that_ends_is_not():
    port = free_port()
    server = _store(port, True)
    # Rank 2 never beats (killed); rank 1 leaves in order (its error path); rank 3 beats on.
    ranks = {r: Heartbeat(server if r == 0 else _store(port, False), r, 4) for r in (0, 1, 3)}
    ranks[1].end()
    try:
        assert ranks[0].lost_ranks() == [2]
    finally:
        for r in (0, 3):
            ranks[r].end()


def test_the_reason_names_ranks_and_nodes():
    assert describe_lost([2, 3], 2, 3.0).startswith("rank(s) 2, 3 (node(s) 1) lost: no heartbeat for 3 s")
    assert describe_lost([1, 8], 8, 3.0).startswith("rank(s) 1, 8 (node(s) 0, 1) lost")


def test_the_beat_slows_at_scale_so_the_store_serves_at_most_512_beats_a_second():
    assert beat_seconds(2) == beat_seconds(512) == 1.0  # the lost-rank check of small runs waits 3 s
    for world_size in (1024, 4096, 8192):
        assert world_size / beat_seconds(world_size) <= 512
    assert beat_seconds(4096) == 8.0


class _CutOffStore:
    """The rendezvous store as a rank on a node cut off the network sees it: every operation waits (on TCP, which
    has no timeout of its own) until the test ends."""

    def __init__(self):
        self.released = threading.Event()

    def add(self, key: str, value: int) -> int:
        self.released.wait()
        return 0

    def set(self, key: str, value: str) -> None:
        self.released.wait()


def test_a_rank_whose_store_does_not_answer_still_leaves_within_two_beats():
    store = _CutOffStore()
    heartbeat = Heartbeat(store, 1, 2)
    started = time.monotonic()
    heartbeat.end()
    try:
        assert time.monotonic() - started < 2 * heartbeat.beat_s + 0.5
    finally:
        store.released.set()
