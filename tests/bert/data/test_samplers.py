"""Which samples a rank trains on (bert.data.samplers): each epoch deals every shard to one rank, or shares a
shard among ranks sample by sample where there are fewer shards than ranks, so that no sample is used twice in
an epoch; the order follows the seed and the epoch alone; no shards is refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bert.data.samplers import epochs, rank_shards, sample_order

PATHS = [Path(f"part-{i}.hdf5") for i in range(8)]


def test_every_shard_goes_to_one_rank_in_an_order_of_the_seed_and_epoch():
    dealt = [rank_shards(PATHS, rank, 3, seed=7, epoch=0) for rank in range(3)]
    assert sorted(p.shard_index for parts in dealt for p in parts) == list(range(8))
    assert [len(parts) for parts in dealt] == [3, 3, 2]
    assert all(p.path == PATHS[p.shard_index] and (p.part, p.parts) == (0, 1) for parts in dealt for p in parts)
    assert rank_shards(PATHS, 1, 3, 7, 0) == dealt[1]  # the same seed and epoch: the same deal
    orders = {tuple(p.shard_index for p in rank_shards(PATHS, 0, 1, seed, epoch)) for seed in (7, 8)
              for epoch in (0, 1)}
    assert len(orders) == 4


def test_ranks_sharing_a_shard_take_every_sample_once_between_them():
    samples = 11
    taken = []
    for rank in range(5):
        (part,) = rank_shards(PATHS[:2], rank, 5, seed=3, epoch=1)
        order = sample_order(samples, part, seed=3, epoch=1)
        assert np.array_equal(order, sample_order(samples, part, seed=3, epoch=1))
        taken.append((part.shard_index, order))
    for shard in (0, 1):
        used = np.concatenate([order for index, order in taken if index == shard])
        assert sorted(used.tolist()) == list(range(samples))


def test_epochs_run_on_and_no_shards_is_refused():
    stream = epochs(PATHS[:2], 0, 2, seed=1, start_epoch=4)
    assert [epoch for epoch, _ in (next(stream) for _ in range(3))] == [4, 5, 6]
    with pytest.raises(ValueError, match="no training shards"):
        rank_shards([], 0, 1, 1, 0)
