"""The shared plans: quantile bins, the cost of a sequence, the counts drawn from each bin and the balanced deal."""

from __future__ import annotations

import numpy as np
import pytest

from bert.data.balance_plans import (
    balanced_deal,
    bin_counts,
    deal,
    length_histogram,
    quantile_bins,
    sequence_cost,
    snake_deal,
)
from bert.simulate.load_balance import named_lengths


def test_quantile_bins_split_the_lengths_into_near_equal_shares():
    lengths = np.repeat(np.arange(1, 101), 10)  # 1..100, ten of each
    edges = quantile_bins(length_histogram(lengths, 128), 4)
    assert edges == [25, 50, 75, 128]
    # A length that holds more than a share is never split: the 512s of mlperf-wiki get a bin of their own.
    wiki = named_lengths("mlperf-wiki", count=20_000)
    edges = quantile_bins(length_histogram(wiki, 512), 16)
    assert edges[-2:] == [511, 512] and len(edges) < 16
    # The other lengths share the bins left: 40 of 100 samples at 64 take two of five shares, 1..30 the other three.
    assert quantile_bins(length_histogram(np.r_[np.repeat(np.arange(1, 31), 2), [64] * 40], 64), 5) == [
        10, 20, 63, 64]
    shares = np.bincount(np.searchsorted(edges, wiki), minlength=len(edges)) / len(wiki)
    assert shares[:-1].max() < 2.2 / 16 and shares[-1] > 2.5 / 16  # the bin of 512: about 3 shares


def test_sequence_cost_is_tokens_plus_the_attention_term_in_whole_numbers():
    assert sequence_cost(np.array([1, 10, 512]), 6144).tolist() == [6145, 61540, 512 * 6144 + 512**2]


@pytest.mark.parametrize("per_rank", [16, 64])
def test_balanced_deal_gives_equal_counts_and_beats_snake(per_rank):
    rng = np.random.default_rng(0)
    wiki = named_lengths("mlperf-wiki", count=20_000)
    snake, balanced = [], []
    for _ in range(50):
        costs = sequence_cost(rng.choice(wiki, 8 * per_rank), 6144)
        for how, spreads in (("snake", snake), ("balanced", balanced)):
            seats = deal(costs, 8, how)
            assert np.bincount(seats, minlength=8).tolist() == [per_rank] * 8
            totals = np.bincount(seats, costs, minlength=8)
            spreads.append(totals.max() / totals.mean())
        assert np.array_equal(balanced_deal(costs, 8), balanced_deal(costs.copy(), 8))  # every rank agrees
    assert np.mean(balanced) - 1 < (np.mean(snake) - 1) / 5  # over an order of magnitude closer; 5 leaves a margin


def test_balanced_deal_of_a_known_case_and_its_errors():
    # Snake: 19+6+3+... = 36 against 30; the balanced deal finds 19+10+3+1 = 15+10+6+2 = 33.
    costs = np.array([19, 15, 10, 10, 6, 3, 2, 1])
    seats = balanced_deal(costs, 2)
    assert np.bincount(seats, costs).tolist() == [33, 33] and np.bincount(seats).tolist() == [4, 4]
    assert sorted(np.bincount(snake_deal(costs, 2), costs).tolist()) == [30, 36]
    with pytest.raises(ValueError, match="cannot be dealt equally"):
        balanced_deal(np.arange(7), 2)
    with pytest.raises(ValueError, match="unknown deal"):
        deal(costs, 2, "round_robin")


def test_counts_follow_the_mix_and_the_paper_figure():
    assert bin_counts(np.array([6, 3, 2, 5]) / 16, 16).tolist() == [6, 3, 2, 5]
    assert bin_counts(np.array([0.37, 0.19, 0.13, 0.31]), 16).tolist() == [6, 3, 2, 5]
    counts = bin_counts(np.array([0.5, 0.3, 0.2]), 7)
    assert counts.sum() == 7 and counts.tolist() == [4, 2, 1]


def test_snake_deal_gives_equal_counts_and_near_equal_tokens():
    lengths = np.random.default_rng(0).integers(1, 512, 128)
    seats = snake_deal(lengths, 8)
    assert np.bincount(seats).tolist() == [16] * 8
    totals = np.bincount(seats, lengths)
    assert totals.max() - totals.min() <= 512
