"""The training batch stream of one rank, produced by a background thread.

The thread reads the next shard, shuffles it, cuts per-rank batches, collates them (all index work on the
host) and pins them, so the training loop only dequeues and starts an asynchronous copy to the device.
Samples left over at the end of a shard carry into the next one; an epoch never ends mid-run.

The load-balance strategy (run.balance, `LoaderBalance`) picks how the thread cuts batches (at random, or a
fixed count per length bin: bert.data.stratified_sampler) and how they are laid out (padded, or packed rows:
bert.data.packed_batches). With a presort exchange or packing the reading thread hands over the rank's
samples uncollated, and a second thread, the finisher, exchanges them (or packs them with the agreement of
the other ranks), collates and pins: the loop's `next` asks the finisher for the following batch and takes
the one it finished during the last step, so the exchange overlaps a whole step and the training thread
does none of the work. Every rank asks for one batch per `next`, so the ranks' collectives stay in step.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from bert.data.balance import BalanceStrategy
from bert.data.balance_plans import BERT_LARGE_ATTENTION_WIDTH
from bert.data.batch import Batch, collate
from bert.data.exchanges import RowAgreement, SampleExchange
from bert.data.packed_batches import PackedBatches
from bert.data.samplers import epochs, sample_order
from bert.data.shards import SampleLimits, Samples, read_shard
from bert.data.stratified_sampler import (
    BinnedShards,
    binned_batches,
    plan_from_bins,
    plan_from_shard,
    stratified_batches,
)
from bert.model.token_rounding import TokenSizes


@dataclass(frozen=True)
class LoaderBalance:
    # run.balance, parsed where the descriptor is read (Descriptor.balance); its row_len is run.max_seq_length, the
    # longest sequence and a packed row's length.
    strategy: BalanceStrategy
    length_bins: list[int] | None = None  # None: the first shard's length quantiles, one bin per batch sequence
    # The presort exchange (stratified+local_presort, global_presort), or for packing the agreement between the
    # ranks; None: nothing to exchange (one process, or a strategy without either).
    exchange: SampleExchange | RowAgreement | None = None
    lookahead: int = 0  # run.balance_lookahead
    attention_width: int = BERT_LARGE_ATTENTION_WIDTH  # of the model: bert.data.balance_plans.sequence_cost


class TrainLoader:
    def __init__(self, paths: list[Path], rank: int, world_size: int, seed: int, batch_size: int,
                 device: torch.device, balance: LoaderBalance, prefetch: int = 8, pad_to_multiple: int = 8,
                 limits: SampleLimits | None = None,
                 pin: bool | None = None, sizes: TokenSizes | None = None, bins: BinnedShards | None = None):
        if bins is not None and not balance.strategy.stratified:
            raise ValueError(f"length-bin shard sets are read by a stratified strategy, not {balance.strategy.name!r}")
        self.paths, self.rank, self.world_size, self.seed = paths, rank, world_size, seed
        self.bins = bins  # `paths` as the shard sets of `data stratify`, per bin (bert.data.dataset.DatasetFiles)
        self.batch_size, self.device, self.pad_to_multiple = batch_size, device, pad_to_multiple
        self.sizes = sizes  # run.token_sizes: each batch's token count rounded up to one of them
        self.pin = device.type == "cuda" if pin is None else pin  # page-locked batches copy to a GPU asynchronously
        self.balance = balance
        self.limits = limits  # set: every shard read is checked against it (a bad id is named, not an IndexError)
        # (epoch, shard index in sorted name order) of every training shard this rank has read, in order:
        # what a launch's per-rank report compares with the plan (bert.launch.plan.rank_slots).
        self.shards_read: list[tuple[int, int]] = []
        self._shard_index = {path: i for i, path in enumerate(paths)}
        self.epoch = 0  # of the samples of the batch last returned
        self._drawn_epoch = 0  # of the samples packing drew last
        self._packed = (PackedBatches(self._take_samples, batch_size, balance.strategy.row_len, rank, balance.exchange)
                        if balance.strategy.packed else None)
        finishing = self._packed is not None or balance.exchange is not None
        self._finisher = ThreadPoolExecutor(1, f"train-finisher-{rank}") if finishing else None
        self._next: Future | None = None  # the finisher's job: the batch after the one in use
        self._queue: queue.Queue = queue.Queue(maxsize=prefetch)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._produce, name=f"train-loader-{rank}", daemon=True)
        self._thread.start()

    def _shards(self, paths: list[Path] | None = None) -> Iterator[tuple[int, Samples]]:
        for epoch, part in epochs(paths or self.paths, self.rank, self.world_size, self.seed):
            self.shards_read.append((epoch, self._shard_index[part.path]))
            shard = read_shard(part.path)
            if self.limits is not None:
                self.limits.check(shard, part.path)
            yield epoch, shard.take(sample_order(len(shard), part, self.seed, epoch))

    def _random_batches(self) -> Iterator[tuple[int, Samples]]:
        leftover: Samples | None = None
        for epoch, shard in self._shards():
            pool = Samples.concat([leftover, shard]) if leftover is not None else shard
            full = len(pool) // self.batch_size * self.batch_size
            for start in range(0, full, self.batch_size):
                yield epoch, pool.take(np.arange(start, start + self.batch_size))
            leftover = pool.take(np.arange(full, len(pool)))

    def _sample_batches(self) -> Iterator[tuple[int, Samples]]:
        if not self.balance.strategy.stratified:
            return self._random_batches()
        balance = self.balance
        if self.bins is not None:  # shard sets of `data stratify`: the folders' bins, one stream each
            plan = plan_from_bins(self.bins, self.batch_size, balance.attention_width, balance.lookahead)
            return binned_batches([self._shards(paths) for _, paths in self.bins], plan)
        plan = plan_from_shard(self.paths[0], balance.length_bins, self.batch_size, balance.strategy.row_len,
                               balance.attention_width, balance.lookahead)
        return stratified_batches(self._shards(), plan)

    def _batches(self) -> Iterator[tuple[int, Batch | Samples]]:
        for epoch, samples in self._sample_batches():
            yield epoch, samples if self._finisher is not None else self._collate(samples)

    def _collate(self, samples: Samples) -> Batch:
        return collate(samples, self.pad_to_multiple, self.sizes)

    def _produce(self) -> None:
        try:
            for epoch, batch in self._batches():
                item = (epoch, batch.pin_memory() if self.pin and isinstance(batch, Batch) else batch)
                while not self._stop.is_set():
                    try:
                        self._queue.put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if self._stop.is_set():
                    return
        except BaseException as e:  # handed to the training loop, which raises it with its message
            self._queue.put(e)

    def shards_read_by_epoch(self) -> dict[int, list[int]]:
        """The shards read so far, per epoch, in reading order (the reading thread may be ahead of training)."""
        by_epoch: dict[int, list[int]] = {}
        for epoch, index in list(self.shards_read):
            by_epoch.setdefault(epoch, []).append(index)
        return by_epoch

    def __iter__(self) -> TrainLoader:
        return self

    def _take(self) -> tuple[int, Batch | Samples]:
        item = self._queue.get()
        if isinstance(item, BaseException):
            self._queue.put(item)  # for every later take too (the finisher may have asked for one more)
            raise item
        return item

    def _take_samples(self) -> Samples:
        self._drawn_epoch, samples = self._take()
        return samples

    def _finish(self) -> tuple[int, Batch]:
        """On the finisher thread: the next batch, exchanged or packed, collated and pinned (on the host)."""
        if self._packed is not None:
            batch, epoch = next(self._packed), self._drawn_epoch
        else:
            epoch, samples = self._take()
            batch = self._collate(self.balance.exchange.share(samples))
        return epoch, batch.pin_memory() if self.pin else batch

    def __next__(self) -> Batch:
        if self._finisher is None:
            self.epoch, batch = self._take()
        else:
            current = self._next or self._finisher.submit(self._finish)
            self._next = self._finisher.submit(self._finish)  # its exchange travels during this step
            self.epoch, batch = current.result()
        return batch.to(self.device, non_blocking=True)

    def close(self) -> None:
        if self._finisher is not None:  # the batch in the works: every rank asked for it, so it completes
            self._finisher.shutdown(wait=True)
            self._next = None
        if self._packed is not None:
            self._packed.close()
        self._stop.set()
        while self._thread.is_alive():
            try:
                self._queue.get(timeout=0.05)
            except queue.Empty:
                pass
            self._thread.join(timeout=0.05)
