"""The stratified sampler: fixed per-bin counts from the length mix, each sample at most once per epoch."""

from __future__ import annotations

import numpy as np
import pytest

from bert.data.balance_plans import bin_of
from bert.data.lookahead import MAX_WAIT
from bert.data.stratified_sampler import stratified_batches, stratified_plan
from tests.helpers.samples import make_samples

WIDTH = 6 * 128  # attention width of a hidden size of 128


def test_bins_too_rare_for_one_draw_merge_into_a_neighbour():
    lengths = np.array([10] * 90 + [50] * 9 + [100])  # the last bin holds 1%: no draw in a batch of 8
    plan = stratified_plan(lengths, [32, 64, 128], 8, 128, WIDTH)
    assert plan.edges == (32, 128) and sum(plan.counts) == 8 and min(plan.counts) > 0


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


