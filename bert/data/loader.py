"""The training batch stream of one rank, produced by a background thread.

The thread reads the next shard, shuffles it, cuts per-rank batches, collates them (all index work on the
host) and pins them, so the training loop only dequeues and starts an asynchronous copy to the device.
Samples left over at the end of a shard carry into the next one; an epoch never ends mid-run.

The load-balance strategy (run.balance, `LoaderBalance`) picks how the thread cuts batches (at random, or a
fixed count per length bin: bert.data.stratified_sampler) and how it lays them out (padded or packed rows). With a
presort exchange the thread hands over the rank's batch uncollated; the loop's `next` starts the exchange of
the following batch before collating the current one, so the all-gather overlaps a whole step.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from bert.data.balance_plans import PAPER_BINS, equal_bins
from bert.data.batch import Batch, collate, collate_packed
from bert.data.samplers import epochs, sample_order
from bert.data.shards import Samples, read_shard
from bert.data.stratified_sampler import (
    binned_batches,
    binned_shards,
    plan_from_bins,
    plan_from_shard,
    stratified_batches,
)


@dataclass(frozen=True)
class LoaderBalance:
    strategy: str = "none"
    length_bins: list[int] | None = None  # None: 4 equal bins up to row_len
    row_len: int = 512  # the longest sequence; the length of a packed row
    exchange: object | None = None  # bert.distributed.presort.PresortExchange (start / finish)

    @property
    def edges(self) -> list[int]:
        if self.length_bins is not None:
            return self.length_bins
        return list(PAPER_BINS) if self.row_len == 512 else equal_bins(len(PAPER_BINS), self.row_len)


class TrainLoader:
    def __init__(self, paths: list[Path], rank: int, world_size: int, seed: int, batch_size: int,
                 device: torch.device, prefetch: int = 8, pad_to_multiple: int = 8,
                 balance: LoaderBalance = LoaderBalance()):
        self.paths, self.rank, self.world_size, self.seed = paths, rank, world_size, seed
        self.batch_size, self.device, self.pad_to_multiple = batch_size, device, pad_to_multiple
        self.balance = balance
        self.epoch = 0
        # (epoch, shard index in sorted name order) of every training shard this rank has read, in order:
        # what a launch's per-rank report compares with the plan (bert.distributed.plan.rank_slots).
        self.shards_read: list[tuple[int, int]] = []
        self._shard_index = {path: i for i, path in enumerate(paths)}
        self._pending = None  # (epoch, the presort exchange in flight)
        self._queue: queue.Queue = queue.Queue(maxsize=prefetch)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._produce, name=f"train-loader-{rank}", daemon=True)
        self._thread.start()

    def _shards(self, paths: list[Path] | None = None) -> Iterator[tuple[int, Samples]]:
        for epoch, part in epochs(paths or self.paths, self.rank, self.world_size, self.seed):
            self.shards_read.append((epoch, self._shard_index[part.path]))
            shard = read_shard(part.path)
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
        if not self.balance.strategy.startswith("stratified"):
            return self._random_batches()
        bins = binned_shards(self.paths)
        if bins is not None:  # shard sets of `data stratify`: the folders' bins, one stream each
            return binned_batches([self._shards(paths) for _, paths in bins], plan_from_bins(bins, self.batch_size))
        plan = plan_from_shard(self.paths[0], self.balance.edges, self.batch_size)
        return stratified_batches(self._shards(), plan)

    def _collate(self, samples: Samples) -> Batch:
        if self.balance.strategy == "packed":
            return collate_packed(samples, self.balance.row_len)
        return collate(samples, self.pad_to_multiple)

    def _batches(self) -> Iterator[tuple[int, Batch | Samples]]:
        for epoch, samples in self._sample_batches():
            yield epoch, samples if self.balance.exchange is not None else self._collate(samples)

    def _produce(self) -> None:
        pin = self.device.type == "cuda"
        try:
            for epoch, batch in self._batches():
                item = (epoch, batch.pin_memory() if pin and isinstance(batch, Batch) else batch)
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
            raise item
        return item

    def __next__(self) -> Batch:
        exchange = self.balance.exchange
        if exchange is None:
            self.epoch, batch = self._take()
            return batch.to(self.device, non_blocking=True)
        if self._pending is None:
            epoch, samples = self._take()
            self._pending = (epoch, exchange.start(samples))
        self.epoch, current = self._pending
        epoch, samples = self._take()
        self._pending = (epoch, exchange.start(samples))  # every rank starts one exchange per call
        batch = self._collate(exchange.finish(current))
        if self.device.type == "cuda":
            batch = batch.pin_memory()
        return batch.to(self.device, non_blocking=True)

    def close(self) -> None:
        if self._pending is not None:  # every rank started it, so it completes
            self.balance.exchange.finish(self._pending[1])
            self._pending = None
        self._stop.set()
        while self._thread.is_alive():
            try:
                self._queue.get(timeout=0.05)
            except queue.Empty:
                pass
            self._thread.join(timeout=0.05)
