"""The agreement behind packing by rows (bert.data.packed_batches): every rank's capacities go to every rank,
and the step's masked tokens are summed over the ranks. Both are a few integers per rank, host tensors on a
gloo group of all ranks of their own, issued in the same order on every rank; no sample leaves its rank.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist


@dataclass
class Pending:
    work: dist.Work
    tensors: list[torch.Tensor]


class RowExchange:
    """One rank's end of the agreement: the loader's bert.data.exchanges.RowAgreement."""

    def __init__(self, group: dist.ProcessGroup, world_size: int):
        self.group, self.world_size = group, world_size

    def start_offer(self, offer: np.ndarray) -> Pending:
        mine = torch.from_numpy(np.ascontiguousarray(offer, dtype=np.int64))
        gathered = [torch.empty_like(mine) for _ in range(self.world_size)]
        return Pending(dist.all_gather(gathered, mine, group=self.group, async_op=True), gathered)

    def finish_offer(self, pending: Pending) -> np.ndarray:
        """[ranks, most]: every rank's offer, in rank order."""
        pending.work.wait()
        return torch.stack(pending.tensors).numpy()

    def start_sum(self, values: np.ndarray) -> Pending:
        summed = torch.from_numpy(np.array(values, dtype=np.int64))
        return Pending(dist.all_reduce(summed, group=self.group, async_op=True), [summed])

    def finish_sum(self, pending: Pending) -> np.ndarray:
        pending.work.wait()
        return pending.tensors[0].numpy()


def build_row_exchange(world_size: int, timeout_s: float) -> RowExchange:
    """Creates the gloo group of all ranks (every rank calls this, as torch.distributed requires); it waits
    `timeout_s` (run.dist_timeout_s) for a rank that died or hangs, as the main group does."""
    group = dist.new_group(list(range(world_size)), backend="gloo", timeout=timedelta(seconds=timeout_s))
    return RowExchange(group, world_size)
