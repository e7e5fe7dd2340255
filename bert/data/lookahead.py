"""Lookahead: every rank steers its stratified batch toward one cost target that all ranks share.

`steer(costs, waited, window, target)`: given the costs of a batch's window (`Window`: for each length bin, the
next (1 + lookahead) x count samples, oldest first) and how often each was passed over, the samples the batch
takes: `count` per bin, those that bring the batch's cost (bert.data.balance_plans.sequence_cost) nearest
`target`, a sample passed over MAX_WAIT times always among them. Numpy on [..., window] arrays: the simulator
steers all ranks of a step at once, the loader one rank. Why a shared target balances the nodes without moving a
sample, and why MLPerf's rules still hold: docs/performance.md, "Load balance".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MAX_WAIT = 4  # a sample passed over this many times is taken at the next step
SWAP_PASSES = 8  # single swaps tried per batch: more passes no longer improve the simulated balance


@dataclass(frozen=True)
class Window:
    """The window of one batch: bin k's candidates are columns starts[k] .. starts[k] + sizes[k] - 1, oldest
    first, and the batch takes counts[k] of them."""

    counts: tuple[int, ...]
    lookahead: int

    @property
    def sizes(self) -> np.ndarray:
        return np.asarray(self.counts, dtype=np.int64) * (1 + self.lookahead)

    @property
    def starts(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.sizes)[:-1]]).astype(np.int64)

    @property
    def columns(self) -> np.ndarray:
        """The bin of each window column."""
        return np.repeat(np.arange(len(self.counts)), self.sizes)

    def swaps(self) -> tuple[np.ndarray, np.ndarray]:
        """(out, into): every pair of distinct columns of the same bin."""
        columns = self.columns
        out, into = np.nonzero((columns[:, None] == columns[None, :]) & ~np.eye(len(columns), dtype=bool))
        return out, into

    def in_order(self) -> np.ndarray:
        """[window] True for the columns a batch takes without lookahead: the first counts[k] of each bin."""
        position = np.arange(int(self.sizes.sum())) - np.repeat(self.starts, self.sizes)
        return position < np.repeat(np.asarray(self.counts), self.sizes)


def steer(costs: np.ndarray, waited: np.ndarray, window: Window, target: float,
          passes: int = SWAP_PASSES) -> np.ndarray:
    """[..., window] costs and times passed over -> [..., window] True for the samples each batch takes.

    Starts from the oldest counts[k] of each bin and, pass by pass, makes the one swap inside a bin (a taken
    sample out, a waiting one in) that brings the batch's cost closest to `target`, while that helps. A
    pinned sample (passed over MAX_WAIT times) is never swapped out; pinned samples are the oldest, so the
    start takes them."""
    shape = np.shape(costs)
    costs = np.asarray(costs, dtype=np.float64).reshape(-1, shape[-1])
    taken = np.broadcast_to(window.in_order(), costs.shape).copy()
    if window.lookahead == 0:
        return taken.reshape(shape)
    out, into = window.swaps()
    change = costs[:, into] - costs[:, out]  # [batches, pairs]: the cost change of each swap
    movable = np.asarray(waited).reshape(costs.shape)[:, out] < MAX_WAIT
    batches = np.arange(len(costs))
    for _ in range(passes):
        gap = (costs * taken).sum(-1) - target
        allowed = taken[:, out] & ~taken[:, into] & movable
        after = np.where(allowed, np.abs(gap[:, None] + change), np.inf)
        best = after.argmin(-1)
        better = np.flatnonzero(after[batches, best] < np.abs(gap))
        if len(better) == 0:
            break
        taken[better, out[best[better]]] = False
        taken[better, into[best[better]]] = True
    return taken.reshape(shape)
