"""Which ranks were lost when a distributed run failed.

A collective that fails because a peer died says only "connection closed by peer <address>" (gloo) or that it
timed out; neither names the rank, let alone the node. So every rank beats: a background thread adds 1 to
its own counter in the rendezvous store every beat (a second; slower past MAX_BEATS_PER_S ranks, so that the
one store, node 0's, serves at most that many beats a second at any scale), and a rank that leaves through
its ordinary end (its error path included) marks itself ended. After a failure, rank 0 reads the counters
twice, LOST_AFTER_BEATS beats apart: a rank whose counter did not move and that did not end is lost (killed,
its node down, or stopped). The counters are independent of the clocks of the hosts, and a rank blocked in
a collective still beats.
"""

from __future__ import annotations

import threading
import time

import torch.distributed as dist

BEAT_S = 1.0
MAX_BEATS_PER_S = 512
LOST_AFTER_BEATS = 3  # a beat thread may be late by a beat or two on a loaded host
_PREFIX = "mlperf_bert/liveness"


def beat_seconds(world_size: int) -> float:
    """The beat of each rank of a run of `world_size` ranks: BEAT_S, or longer when the ranks would beat the
    store more than MAX_BEATS_PER_S times a second."""
    return max(BEAT_S, world_size / MAX_BEATS_PER_S)


class Heartbeat:
    """One rank's beat, started at init and ended when the rank leaves."""

    def __init__(self, store: dist.Store, rank: int, world_size: int):
        self.store, self.rank, self.world_size = store, rank, world_size
        self.beat_s = beat_seconds(world_size)
        self.lost_after_s = LOST_AFTER_BEATS * self.beat_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"heartbeat-{rank}", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.is_set():
            try:
                self.store.add(f"{_PREFIX}/beat/{self.rank}", 1)
            except Exception:  # the store is gone (node 0 ended or died): nobody is left to read the beat
                return
            self._stop.wait(self.beat_s)
        try:
            self.store.set(f"{_PREFIX}/ended/{self.rank}", "1")
        except Exception:
            pass  # the store is gone: rank 0, the only reader, has ended too

    def end(self) -> None:
        """This rank leaves in order (success or its error path): it must not be reported lost. The beat thread
        says so; a store that does not answer (its node's link cut: a store operation then waits on TCP, with no
        timeout of its own) keeps that thread, not the rank, which leaves after 2 beats."""
        self._stop.set()
        self._thread.join(timeout=2 * self.beat_s)

    def _counts(self, ranks: list[int]) -> list[int]:
        return [self.store.add(f"{_PREFIX}/beat/{r}", 0) for r in ranks]

    def lost_ranks(self) -> list[int] | None:
        """The other ranks that stopped beating without ending; waits lost_after_s. None when the store cannot
        be read (then nothing can be said)."""
        others = [r for r in range(self.world_size) if r != self.rank]
        try:
            before = self._counts(others)
            time.sleep(self.lost_after_s)
            after = self._counts(others)
            ended = [self.store.check([f"{_PREFIX}/ended/{r}"]) for r in others]
        except Exception:
            return None
        return [r for r, b, a, e in zip(others, before, after, ended) if a == b and not e]


def describe_lost(lost: list[int], ranks_per_node: int, waited_s: float) -> str:
    """'rank(s) 2, 3 (node 1) lost: ...' for a run_stop reason, after `waited_s` without a beat from them."""
    nodes = sorted({r // ranks_per_node for r in lost})
    return (f"rank(s) {', '.join(map(str, lost))} (node(s) {', '.join(map(str, nodes))}) lost: no heartbeat for "
            f"{waited_s:.0f} s and no orderly end (killed, their node down, or stopped)")
