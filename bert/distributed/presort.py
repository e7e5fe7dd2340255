"""Presorting: the ranks of a group exchange their batches and deal the gathered sequences out again
(bert.data.balance_plans.deal, run.presort_deal: balanced largest differencing, or the seed paper's snake
order of the sorted lengths), so that every rank gets as many sequences as it gave and a near-equal cost
(tokens plus the attention term, bert.data.balance_plans.sequence_cost).

Local presorting (the seed paper) groups the ranks of one node of the launch shape: processes_per_node
consecutive ranks, on the fast intra-node links; stratified sampling has already balanced the nodes. Global
presorting (NVIDIA's exchange padding) groups all ranks. The exchange is one all-gather of fixed-size host
tensors on a gloo group of its own, made a step ahead on the loader's finisher thread (bert.data.loader), so
the step itself never waits for it and the device is not involved.
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist

from bert.data.balance import BalanceStrategy
from bert.data.balance_plans import BERT_LARGE_ATTENTION_WIDTH, deal, sequence_cost
from bert.data.shards import Samples


def presort_groups(world_size: int, ranks_per_node: int, strategy: BalanceStrategy) -> list[list[int]]:
    """The ranks that exchange batches: one group per node, or all ranks; none for other strategies."""
    size = strategy.presort_group(world_size, ranks_per_node)
    return [list(range(first, first + size)) for first in range(0, world_size, size)] if size else []


def encode(samples: Samples, row_len: int, predictions: int) -> torch.Tensor:
    """[N, 2 + 2*row_len + 2*predictions] int32: length, nsp label, tokens, segments, masked positions, ids."""
    n = len(samples)
    ids, _, seg = samples.padded(row_len)
    width = samples.max_predictions
    if width > predictions:
        raise ValueError(f"samples with {width} masked positions exceed run.max_predictions_per_seq {predictions}")
    masked = np.zeros((n, 2, predictions), np.int32)
    masked[:, 0, :width], masked[:, 1, :width] = samples.masked_positions, samples.masked_ids
    head = np.stack([samples.lengths, samples.nsp_labels], axis=1)
    rows = np.concatenate([head, ids, seg, masked.reshape(n, -1)], axis=1).astype(np.int32)
    return torch.from_numpy(rows)


def decode(rows: torch.Tensor, row_len: int, predictions: int) -> Samples:
    rows = rows.numpy()
    lengths = rows[:, 0].astype(np.int64)
    real = np.arange(row_len)[None, :] < lengths[:, None]
    ids, seg = rows[:, 2:2 + row_len], rows[:, 2 + row_len:2 + 2 * row_len]
    masked = rows[:, 2 + 2 * row_len:].reshape(len(rows), 2, predictions)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return Samples(ids[real].astype(np.int32), seg[real].astype(np.int8), offsets, masked[:, 0].copy(),
                   masked[:, 1].copy(), rows[:, 1].astype(np.int8))


class PresortExchange:
    """One rank's end of the exchange within its group (`members`, ranks in launch order): the loader's
    bert.data.exchanges.SampleExchange."""

    def __init__(self, group: dist.ProcessGroup, members: list[int], rank: int, row_len: int, predictions: int,
                 how: str = "balanced", attention_width: int = BERT_LARGE_ATTENTION_WIDTH):
        self.group, self.members, self.seat = group, members, members.index(rank)
        self.row_len, self.predictions = row_len, predictions
        self.how, self.attention_width = how, attention_width

    def share(self, samples: Samples) -> Samples:
        mine = encode(samples, self.row_len, self.predictions)
        gathered = [torch.empty_like(mine) for _ in self.members]
        dist.all_gather(gathered, mine, group=self.group)
        everything = torch.cat(gathered)
        costs = sequence_cost(everything[:, 0].numpy(), self.attention_width)  # from the lengths alone
        mine = np.flatnonzero(deal(costs, len(self.members), self.how) == self.seat)
        return decode(everything[torch.from_numpy(mine)], self.row_len, self.predictions)  # only this rank's share


def build_exchange(rank: int, world_size: int, ranks_per_node: int, strategy: BalanceStrategy, predictions: int,
                   timeout_s: float, how: str = "balanced",
                   attention_width: int = BERT_LARGE_ATTENTION_WIDTH) -> PresortExchange | None:
    """Creates the gloo groups of the strategy (every rank creates every group, in the same order, as
    torch.distributed requires) and returns this rank's exchange; None when there is nothing to exchange.
    A group waits `timeout_s` (run.dist_timeout_s) for a rank that died or hangs, as the main group does."""
    groups = [g for g in presort_groups(world_size, ranks_per_node, strategy) if len(g) > 1]
    mine = None
    for members in groups:
        group = dist.new_group(members, backend="gloo", timeout=timedelta(seconds=timeout_s))
        if rank in members:
            mine = PresortExchange(group, members, rank, strategy.row_len, predictions, how, attention_width)
    return mine
