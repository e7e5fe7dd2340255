"""One rank's packed batches: the same number of packed rows on every rank, sequence counts that add up to the
global batch, and loss weights that make the step the unpacked step of the same sequences.

The rank keeps a window of its own stream (bert.data.row_packing), offers its capacities to the other ranks,
and after they agree takes its count into the agreed rows. The offer of the next step goes out as soon as
this step's samples are taken, so that it travels during the step (the same one-step-ahead rhythm as the
presort exchange); every rank starts one offer per batch, so all of them finish.

Loss: a rank with n_r of the step's N sequences and M_r of its M masked tokens weights its mean masked-LM loss
by R M_r / M and its mean next-sentence loss by R n_r / N (R ranks). Averaged over the ranks, as the gradient
allreduce does, the step is then the masked-LM mean over all M masked tokens plus the next-sentence mean over
all N sequences: what one process computes from the same sequences unpacked, however they were split. M is
one more sum over the ranks, started before the batch is collated. train_samples and epoch_num count N = the
global batch per step, exactly as unpacked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from bert.data.batch import Batch, collate_packed
from bert.data.exchanges import RowAgreement
from bert.data.row_packing import WINDOW_BATCHES, agree, capacities, first_fit, leftover_order, taken, window_order
from bert.data.shards import Samples


class LocalRows:
    """The agreement of a single process: its own offer is everyone's."""

    world_size = 1

    def start_offer(self, offer: np.ndarray) -> np.ndarray:
        return offer

    def finish_offer(self, pending: np.ndarray) -> np.ndarray:
        return pending[None, :]

    def start_sum(self, values: np.ndarray) -> np.ndarray:
        return values

    def finish_sum(self, pending: np.ndarray) -> np.ndarray:
        return pending


class PackedBatches:
    """Packed batches of one rank from `next_samples` (its shuffled stream, a batch at a time); `exchange`
    carries the agreement between the ranks (None: LocalRows, one process)."""

    def __init__(self, next_samples: Callable[[], Samples], batch_size: int, row_len: int, rank: int,
                 exchange: RowAgreement | None = None):
        self.next_samples, self.batch_size, self.row_len, self.rank = next_samples, batch_size, row_len, rank
        self.exchange: RowAgreement = exchange if exchange is not None else LocalRows()
        self.pool: Samples | None = None
        self.waited = np.zeros(0, np.int64)
        self._pending = None  # (packing order of the window, first-fit rows, the offer in flight)

    def _offer(self) -> None:
        size = WINDOW_BATCHES * self.batch_size
        while self.pool is None or len(self.pool) < size:
            fresh = self.next_samples()
            self.pool = fresh if self.pool is None else Samples.concat([self.pool, fresh])
            self.waited = np.concatenate([self.waited, np.zeros(len(fresh), np.int64)])
        order = window_order(self.waited[:size])
        rows = first_fit(self.pool.lengths[order], self.row_len)
        offer = capacities(rows, self.batch_size)
        self._pending = (order, rows, self.exchange.start_offer(offer))

    def __next__(self) -> Batch:
        if self._pending is None:
            self._offer()
        order, rows, pending = self._pending
        offers = self.exchange.finish_offer(pending)
        total = self.batch_size * len(offers)
        count_rows, counts = agree(offers, total)
        took = taken(rows, count_rows, int(counts[self.rank]))
        samples = self.pool.take(order[took])
        masked = np.count_nonzero(samples.masked_positions)
        summing = self.exchange.start_sum(np.array([masked], np.int64))
        self._advance(order, took)
        self._offer()  # every rank starts the next offer here, so that it travels during the step
        batch = collate_packed(samples, self.row_len, rows[took], count_rows)
        ranks, everyone_masked = len(offers), int(self.exchange.finish_sum(summing)[0])
        return replace(batch, mlm_weight=ranks * masked / everyone_masked, nsp_weight=ranks * len(samples) / total)

    def _advance(self, order: np.ndarray, took: np.ndarray) -> None:
        """The window's samples not taken go back to the front, in stream order, each passed over once more."""
        size = len(order)
        was_taken = np.zeros(size, bool)
        was_taken[order[took]] = True
        keep = leftover_order(was_taken)[:size - int(was_taken.sum())]
        rest = np.arange(size, len(self.pool))
        self.pool = self.pool.take(np.concatenate([keep, rest]))
        self.waited = np.concatenate([self.waited[keep] + 1, self.waited[size:]])

    def close(self) -> None:
        """Completes the offer in flight (every rank started one)."""
        if self._pending is not None:
            self.exchange.finish_offer(self._pending[2])
            self._pending = None
