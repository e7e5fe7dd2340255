"""The load-balance plans, on sequence lengths alone: length bins, per-bin draw counts, snake dealing, packing.

Both the training data path (bert.data.stratified_sampler, bert.distributed.presort, bert.data.batch) and the
load-balance simulator (bert.simulate.load_balance) call these, so the simulated figures describe the code that
runs. Everything here is numpy on the host.
"""

from __future__ import annotations

import typing

import numpy as np

from bert.system import Balance

STRATEGIES: tuple[str, ...] = typing.get_args(Balance)
PAPER_BINS = (128, 256, 384, 512)  # the seed paper's four bins: 1-128, 129-256, 257-384, 385-512
MAX_PER_ROW = 3  # sequences per packed row, as in NVIDIA's packed data


def equal_bins(count: int, max_len: int = 512) -> list[int]:
    """`count` upper edges of equal-width bins covering 1..max_len."""
    return [round(max_len * (k + 1) / count) for k in range(count)]


def bin_of(lengths: np.ndarray, edges: list[int] | tuple[int, ...]) -> np.ndarray:
    """The bin of each length: bin k holds lengths in (edges[k-1], edges[k]]; longer ones go to the last."""
    return np.minimum(np.searchsorted(np.asarray(edges), lengths, side="left"), len(edges) - 1)


def bin_counts(proportions: np.ndarray, batch: int) -> np.ndarray:
    """How many samples of each bin one batch of `batch` draws: `batch * proportions` rounded by largest
    remainder, so the counts add up to `batch` and follow the data's length mix (6/3/2/5 for 16 at the
    MLPerf mix)."""
    proportions = np.asarray(proportions, dtype=np.float64)
    if batch < 1 or proportions.sum() <= 0:
        raise ValueError("bin counts need a batch of at least 1 and a bin with samples")
    exact = batch * proportions / proportions.sum()
    counts = np.floor(exact).astype(np.int64)
    short = batch - int(counts.sum())
    # Largest remainders first; ties go to the lower bin, so every rank computes the same counts.
    order = np.lexsort((np.arange(len(exact)), -(exact - counts)))
    counts[order[:short]] += 1
    return counts


def snake_deal(lengths: np.ndarray, groups: int) -> np.ndarray:
    """The receiving group of each sequence: sorted longest first and dealt in snake order (0..g-1, g-1..0,
    ...), so that the groups' token totals end up near-equal. With len(lengths) a multiple of `groups`, every
    group receives the same number of sequences. Ties keep the input order, so every rank agrees."""
    order = np.argsort(-np.asarray(lengths), kind="stable")
    turn = np.arange(len(order))
    lap, seat = np.divmod(turn, groups)
    dealt = np.where(lap % 2 == 0, seat, groups - 1 - seat)
    receiver = np.empty(len(order), dtype=np.int64)
    receiver[order] = dealt
    return receiver


def snake_order(lengths: np.ndarray, groups: int) -> np.ndarray:
    """Indices that put group 0's sequences first, then group 1's, ... (each group's in input order)."""
    return np.argsort(snake_deal(lengths, groups), kind="stable")


def pack_rows(lengths: np.ndarray, row_len: int, max_per_row: int = MAX_PER_ROW) -> np.ndarray:
    """The packed row of each sequence: first-fit decreasing into rows of `row_len` tokens holding at most
    `max_per_row` sequences. Row numbers start at 0 and have no gaps."""
    lengths = np.asarray(lengths)
    if len(lengths) and lengths.max() > row_len:
        raise ValueError(f"a sequence of {lengths.max()} tokens does not fit a packed row of {row_len}")
    free: list[int] = []
    held: list[int] = []
    row_of = np.empty(len(lengths), dtype=np.int64)
    for i in np.argsort(-lengths, kind="stable"):
        length = int(lengths[i])
        row = next((r for r, room in enumerate(free) if room >= length and held[r] < max_per_row), len(free))
        if row == len(free):
            free.append(row_len)
            held.append(0)
        free[row] -= length
        held[row] += 1
        row_of[i] = row
    return row_of
