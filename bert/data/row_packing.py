"""Packing by rows, on sequence lengths alone: every rank trains on the same number of packed rows, and the
ranks' sequence counts add up to the global batch.

Each step:
1. Every rank looks at its window, the next WINDOW_BATCHES x (per-rank batch) samples of its own stream, the
   pinned ones (passed over MAX_WAIT times) first, then in stream order, and packs it first-fit into rows of
   `row_len` tokens, at most MAX_PER_ROW sequences a row (`first_fit`). A sample that fits no open row opens
   the next one, so the samples in the first k rows are exactly what first-fit into k rows would take; the
   rank's capacity for k rows is their count (`capacities`).
2. The ranks share their capacities (a few integers each) and every rank computes the same agreement
   (`agree`): the fewest rows k that hold the global batch, and each rank's count, at most its capacity for k
   rows, the counts adding up to the global batch; the ranks that could take the most give up the surplus.
3. Every rank takes the first `count` of its samples in the first k rows (`taken`), in those rows; the others
   wait in front of its stream, for at most MAX_WAIT steps.

So every sample of the epoch is still seen once (a few steps late at most), the global batch in sequences is
exact every step, and the order is the shuffled stream's up to that delay. The simulator runs these on all
ranks at once ([ranks, window] arrays), the loader on one rank (bert.data.packed_batches).
"""

from __future__ import annotations

import numpy as np

from bert.data.lookahead import MAX_WAIT

MAX_PER_ROW = 3  # sequences per packed row, as in NVIDIA's packed data
WINDOW_BATCHES = 3  # the window: this many per-rank batches of candidates


def window_order(waited: np.ndarray) -> np.ndarray:
    """[..., window] -> the order a window is packed in: pinned samples first, otherwise stream order."""
    return np.argsort(-(np.asarray(waited) >= MAX_WAIT).astype(np.int8), axis=-1, kind="stable")


def first_fit(lengths: np.ndarray, row_len: int, max_per_row: int = MAX_PER_ROW) -> np.ndarray:
    """[..., n] lengths, in packing order -> [..., n] the row of each: the first row with room for its tokens
    and fewer than `max_per_row` sequences, or the next new one."""
    lengths = np.asarray(lengths, dtype=np.int64)
    if lengths.size and lengths.max() > row_len:
        raise ValueError(f"a sequence of {lengths.max()} tokens does not fit a packed row of {row_len}")
    flat = lengths.reshape(-1, lengths.shape[-1])
    groups, n = flat.shape
    room = np.full((groups, n), row_len, dtype=np.int64)
    held = np.zeros((groups, n), dtype=np.int64)
    rows = np.empty((groups, n), dtype=np.int64)
    everyone = np.arange(groups)
    for j in range(n):
        fits = (room >= flat[:, j:j + 1]) & (held < max_per_row)
        row = fits.argmax(-1)  # a new row always fits, so the first fitting row exists
        rows[:, j] = row
        room[everyone, row] -= flat[:, j]
        held[everyone, row] += 1
    return rows.reshape(lengths.shape)


def pack_rows(lengths: np.ndarray, row_len: int, max_per_row: int = MAX_PER_ROW) -> np.ndarray:
    """The packed row of each of one batch's sequences, first-fit decreasing; rows from 0, without gaps."""
    lengths = np.asarray(lengths, dtype=np.int64)
    order = np.argsort(-lengths, kind="stable")
    rows = np.empty(len(lengths), dtype=np.int64)
    rows[order] = first_fit(lengths[order], row_len, max_per_row)
    return rows


def capacities(rows: np.ndarray, most: int) -> np.ndarray:
    """[..., n] rows of a first-fit window -> [..., most]: how many of its samples k = 1 .. most rows hold."""
    return (np.asarray(rows)[..., None, :] < np.arange(1, most + 1)[:, None]).sum(-1)


def agree(offers: np.ndarray, total: int) -> tuple[int, np.ndarray]:
    """[ranks, most] capacities of every rank -> (rows k, [ranks] sequence counts adding up to `total`).

    k is the fewest rows whose capacities reach `total`; a rank's count is its capacity for k rows, less its
    part of the surplus, which the ranks that could take the most give up first (ties: the lower ranks
    first). Every rank computes the same result from the same offers."""
    offers = np.asarray(offers, dtype=np.int64)
    enough = np.flatnonzero(offers.sum(0) >= total)
    if len(enough) == 0:
        raise ValueError(f"the ranks' windows hold fewer than the global batch of {total} sequences")
    rows = int(enough[0]) + 1
    capacity = offers[:, rows - 1]
    # The lowest common level that still leaves `total`; then the surplus, fewer than the ranks at that level.
    held = np.minimum(capacity[:, None], np.arange(int(capacity.max()) + 1)).sum(0)
    level = int(np.flatnonzero(held >= total)[0])
    counts = np.minimum(capacity, level)
    surplus = int(counts.sum()) - total
    counts[np.flatnonzero(counts == level)[:surplus]] -= 1
    return rows, counts


def taken(rows: np.ndarray, k: int, counts: np.ndarray | int) -> np.ndarray:
    """[..., n] True for the samples a rank takes: the first `counts` of those in rows < k, in packing order."""
    inside = np.asarray(rows) < k
    return inside & (np.cumsum(inside, axis=-1) <= np.asarray(counts)[..., None])


def leftover_order(took: np.ndarray) -> np.ndarray:
    """[..., n] -> the order that puts a window's samples not taken first, each group in its former order."""
    return np.argsort(np.asarray(took).astype(np.int8), axis=-1, kind="stable")
