"""Lookahead (bert.data.lookahead): the steering keeps each bin's count and never passes over a pinned sample,
and it brings every rank's batch near the common cost target."""

from __future__ import annotations

import numpy as np

from bert.data.balance_plans import sequence_cost
from bert.data.lookahead import MAX_WAIT, Window, steer
from bert.data.stratified_sampler import stratified_batches, stratified_plan
from tests.helpers.samples import make_samples

WIDTH = 6 * 128  # attention width of a hidden size of 128


def test_steer_keeps_the_counts_and_never_passes_over_a_pinned_sample():
    window = Window((2, 1), lookahead=1)  # bin 0: columns 0-3, bin 1: columns 4-5
    costs = np.array([[50, 50, 10, 12, 7, 9], [50, 50, 10, 12, 7, 9]])
    waited = np.array([[0, 0, 0, 0, 0, 0], [MAX_WAIT, MAX_WAIT, 0, 0, 0, 0]])
    taken = steer(costs, waited, window, target=30.0)
    assert taken[:, :4].sum(1).tolist() == [2, 2] and taken[:, 4:].sum(1).tolist() == [1, 1]
    assert (costs[0] * taken[0]).sum() == 29  # 10 + 12 + 7: the closest to 30
    assert taken[1, :2].all()  # the pinned ones stay, whatever the target
    assert steer(costs[:, :3], waited[:, :3], Window((2, 1), 0), 30.0).all()  # no lookahead: all, in order


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
