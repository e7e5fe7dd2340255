"""The training batch stream of one rank, produced by a background thread.

The thread reads the next shard, shuffles it, cuts per-rank batches, collates them (all index work on the
host) and pins them, so the training loop only dequeues and starts an asynchronous copy to the device.
Samples left over at the end of a shard carry into the next one; an epoch never ends mid-run.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch

from bert.data.batch import Batch, collate
from bert.data.samplers import epochs, sample_order
from bert.data.shards import Samples, read_shard

_DONE = object()


class TrainLoader:
    def __init__(self, paths: list[Path], rank: int, world_size: int, seed: int, batch_size: int,
                 device: torch.device, prefetch: int = 8, pad_to_multiple: int = 8):
        self.paths, self.rank, self.world_size, self.seed = paths, rank, world_size, seed
        self.batch_size, self.device, self.pad_to_multiple = batch_size, device, pad_to_multiple
        self.epoch = 0
        self._queue: queue.Queue = queue.Queue(maxsize=prefetch)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._produce, name=f"train-loader-{rank}", daemon=True)
        self._thread.start()

    def _batches(self) -> Iterator[tuple[int, Batch]]:
        leftover: Samples | None = None
        for epoch, part in epochs(self.paths, self.rank, self.world_size, self.seed):
            shard = read_shard(part.path)
            shard = shard.take(sample_order(len(shard), part, self.seed, epoch))
            pool = Samples.concat([leftover, shard]) if leftover is not None else shard
            full = len(pool) // self.batch_size * self.batch_size
            for start in range(0, full, self.batch_size):
                yield epoch, collate(pool.take(np.arange(start, start + self.batch_size)), self.pad_to_multiple)
            leftover = pool.take(np.arange(full, len(pool)))

    def _produce(self) -> None:
        pin = self.device.type == "cuda"
        try:
            for epoch, batch in self._batches():
                item = (epoch, batch.pin_memory() if pin else batch)
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

    def __iter__(self) -> TrainLoader:
        return self

    def __next__(self) -> Batch:
        item = self._queue.get()
        if isinstance(item, BaseException):
            raise item
        self.epoch, batch = item
        return batch.to(self.device, non_blocking=True)

    def close(self) -> None:
        self._stop.set()
        while self._thread.is_alive():
            try:
                self._queue.get(timeout=0.05)
            except queue.Empty:
                pass
            self._thread.join(timeout=0.05)
