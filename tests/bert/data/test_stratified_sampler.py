"""The stratified sampler: fixed per-bin counts from the length mix, each sample at most once per epoch; and
the loader builds the batches the descriptor's strategy asks for."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bert.data.balance import balance_strategy
from bert.data.balance_plans import bin_counts, bin_of, sequence_cost, snake_deal
from bert.data.loader import LoaderBalance, TrainLoader
from bert.data.lookahead import MAX_WAIT
from bert.data.stratified_sampler import plan_from_shard, stratified_batches, stratified_plan
from tests.helpers.samples import make_samples

WIDTH = 6 * 128  # attention width of a hidden size of 128


def test_counts_follow_the_mix_and_the_paper_figure():
    assert bin_counts(np.array([6, 3, 2, 5]) / 16, 16).tolist() == [6, 3, 2, 5]
    assert bin_counts(np.array([0.37, 0.19, 0.13, 0.31]), 16).tolist() == [6, 3, 2, 5]
    counts = bin_counts(np.array([0.5, 0.3, 0.2]), 7)
    assert counts.sum() == 7 and counts.tolist() == [4, 2, 1]


def test_bins_too_rare_for_one_draw_merge_into_a_neighbour():
    lengths = np.array([10] * 90 + [50] * 9 + [100])  # the last bin holds 1%: no draw in a batch of 8
    plan = stratified_plan(lengths, [32, 64, 128], 8, 128, WIDTH)
    assert plan.edges == (32, 128) and sum(plan.counts) == 8 and min(plan.counts) > 0


def test_snake_deal_gives_equal_counts_and_near_equal_tokens():
    lengths = np.random.default_rng(0).integers(1, 512, 128)
    seats = snake_deal(lengths, 8)
    assert np.bincount(seats).tolist() == [16] * 8
    totals = np.bincount(seats, lengths)
    assert totals.max() - totals.min() <= 512


@pytest.mark.parametrize("lookahead", [0, 1, 2])
def test_every_batch_draws_the_counts_and_no_sample_twice(lookahead):
    rng = np.random.default_rng(1)
    shards = []
    for s in range(5):
        samples = make_samples(rng.integers(3, 65, 200).tolist(), seed=s)
        samples.tokens[samples.offsets[:-1]] = 1000 * (s + 1) + np.arange(200)  # unique ids
        shards.append((0, samples))
    plan = stratified_plan(shards[0][1].lengths, [16, 32, 48, 64], 16, 64, WIDTH, lookahead)
    arrival = {int(i): n // 16 for n, i in enumerate(np.concatenate([s.tokens[s.offsets[:-1]] for _, s in shards]))}
    seen, used, late = [], np.zeros(len(plan.edges), np.int64), []
    for step, (_, batch) in enumerate(stratified_batches(iter(shards), plan)):
        assert len(batch) == 16
        drawn = np.bincount(bin_of(batch.lengths, plan.edges), minlength=len(plan.edges))
        assert drawn.tolist() == list(plan.counts)
        used += drawn
        ids = batch.tokens[batch.offsets[:-1]].tolist()
        seen.extend(ids)
        late.append(max(step - arrival[i] for i in ids))
    assert len(seen) == len(set(seen))  # once per epoch
    available = sum(np.bincount(bin_of(s.lengths, plan.edges), minlength=len(plan.edges)) for _, s in shards)
    window = np.array(plan.counts) * (1 + lookahead)
    assert ((available - used) < window).any()  # batches stop only when a bin cannot fill its window
    if lookahead:  # steering changes the order, within the bins, a few steps at most
        assert seen != sorted(seen, key=lambda i: (arrival[i], i))
    assert max(late) < 16 * (MAX_WAIT + lookahead + 2)


def test_lookahead_brings_every_rank_near_the_common_target():
    rng = np.random.default_rng(2)
    lengths = rng.integers(3, 65, 8_000)
    results = {}
    for lookahead in (0, 1):
        plan = stratified_plan(lengths, None, 16, 64, WIDTH, lookahead)
        samples = make_samples(lengths.tolist(), seed=3)
        costs = [float(sequence_cost(b.lengths, WIDTH).sum())
                 for _, b in stratified_batches(iter([(0, samples)]), plan)]
        results[lookahead] = np.abs(np.array(costs) / plan.target - 1)
    # The lookahead's gain is largest in the typical batch and smaller in the worst ones; both bounds leave a margin.
    assert np.median(results[1]) < np.median(results[0]) / 5
    assert np.percentile(results[1], 99) < np.percentile(results[0], 99) * 0.8


def _first_batches(dataset, balance: LoaderBalance, count: int = 3):
    paths = sorted((dataset / "train").glob("*.hdf5"))
    loader = TrainLoader(paths, 0, 1, 5, 16, torch.device("cpu"), prefetch=2, balance=balance)
    try:
        return [next(loader) for _ in range(count)], paths
    finally:
        loader.close()


def test_the_strategy_picks_the_loaders_batches(small_dataset):
    batches, paths = _first_batches(small_dataset, LoaderBalance(balance_strategy("stratified", 64), [16, 32, 48, 64]))
    plan = plan_from_shard(paths[0], [16, 32, 48, 64], 16, 64, WIDTH, 0)
    for batch in batches:
        lengths = (batch.layout.cu_seqlens[1:] - batch.layout.cu_seqlens[:-1]).numpy()
        assert np.bincount(bin_of(lengths, plan.edges), minlength=len(plan.edges)).tolist() == list(plan.counts)
    packed, _ = _first_batches(small_dataset, LoaderBalance(balance_strategy("packed", 64)))
    assert all(b.layout.packed and b.num_samples == 16 and b.input_ids.shape[1] == 64 for b in packed)
    plain, _ = _first_batches(small_dataset, LoaderBalance())
    assert not plain[0].layout.packed and plain[0].num_samples == 16
