"""The load-balance simulator against figures worked out by hand (its command line: tests/bert/cli/test_simulate.py)."""

from __future__ import annotations

import numpy as np
import pytest

from bert.data.balance import BalanceStrategy, balance_strategy
from bert.data.balance_plans import PAPER_BINS
from bert.simulate.load_balance import named_lengths, shard_lengths, simulate_balance

W = 6144.0  # BERT-large attention width
LOCAL = "stratified+local_presort"


def _mlperf(name: str) -> BalanceStrategy:
    """The strategy `name` for MLPerf's sequences of up to 512 tokens."""
    return balance_strategy(name, 512)


def test_two_lengths_split_by_bins_balance_every_rank_exactly():
    # Lengths 10 and 30 in bins (..20], (20..40]: every rank draws one of each, so each computes 40 tokens.
    lengths = np.array([10, 30] * 50)
    stats = simulate_balance(lengths, 2, 2, 2, balance_strategy("stratified", 64), steps=5, bins=[20, 40])
    assert stats.bin_counts == (1, 1)
    assert stats.max_over_mean == 1.0 and stats.padding_waste == 0.0
    assert stats.step_time_ratio == pytest.approx(1.0)
    assert stats.tokens_per_rank == 40


def test_padded_and_packed_cost_by_hand():
    lengths = np.array([10, 30] * 50)
    padded = simulate_balance(lengths, 1, 2, 2, balance_strategy("stratified", 64), steps=3, bins=[20, 40],
                              unpadded=False)
    # Each rank pads both sequences to 32 (a multiple of 8): 64 tokens computed for 40 real ones.
    assert padded.padding_waste == pytest.approx(1 - 40 / 64)
    ideal = 40 + (10**2 + 30**2) / W
    assert padded.step_time_ratio == pytest.approx((64 + 2 * 32**2 / W) / ideal)
    # Packed rows of 40: four 10s fill one row with 3 (the most a row holds) and a second with 1.
    packed = simulate_balance(np.full(8, 10), 1, 1, 4, balance_strategy("packed", 40), steps=2)
    assert packed.tokens_per_rank == 80 and packed.padding_waste == pytest.approx(0.5)
    # Two 30s cannot share a row of 40.
    assert simulate_balance(np.full(8, 30), 1, 1, 2, balance_strategy("packed", 40), steps=2).tokens_per_rank == 80


def test_global_presort_of_fixed_lengths_is_perfect():
    # 4 ranks x 2 draws of lengths {1, 3}: whatever is drawn, the snake deal of 8 sorted lengths over 4 ranks
    # gives rank totals that differ by at most 2 tokens; with all-equal lengths, exactly equal.
    stats = simulate_balance(np.full(10, 7), 2, 2, 2, balance_strategy("global_presort", 8), steps=4)
    assert stats.max_over_mean == 1.0 and stats.step_time_ratio == pytest.approx(1.0)


def test_random_sampling_is_worse_than_local_presort_at_scale():
    lengths = named_lengths("mlperf-wiki", count=50_000)
    none = simulate_balance(lengths, 16, 8, 16, _mlperf("none"), steps=8)
    paper = simulate_balance(lengths, 16, 8, 16, _mlperf(LOCAL), steps=8, bins=list(PAPER_BINS), deal_how="snake",
                             lookahead=0)
    assert paper.bin_counts == (6, 3, 2, 5)  # the paper's mix for 16
    assert paper.max_over_mean < 1.06 < none.max_over_mean
    default = simulate_balance(lengths, 16, 8, 16, _mlperf(LOCAL), steps=8)
    assert len(default.bin_counts) > 8  # quantile bins: about one draw each (more from the bin of length 512)
    assert default.max_over_mean < 1.01


def test_each_part_of_the_default_improves_balance_at_128_nodes():
    """The seed paper's plan, then quantile bins, then the balanced deal, then lookahead: each rung improves on
    the one before."""
    lengths = named_lengths("mlperf-wiki", count=50_000)
    rungs = [dict(bins=list(PAPER_BINS), deal_how="snake", lookahead=0), dict(deal_how="snake", lookahead=0),
             dict(lookahead=0), {}]
    figures = [simulate_balance(lengths, 128, 8, 16, _mlperf(LOCAL), steps=6, **rung).max_over_mean
               for rung in rungs]
    assert figures == sorted(figures, reverse=True) and figures[-1] < 1.01 < 1.03 < figures[0]


def test_mlperf_wiki_packs_about_two_per_row():
    from bert.data.row_packing import pack_rows

    lengths = named_lengths("mlperf-wiki", count=4000)
    assert 1.7 < len(lengths) / (pack_rows(lengths, 512).max() + 1) < 2.2


def test_lengths_beyond_the_strategys_row_are_a_one_line_error():
    with pytest.raises(ValueError, match="lengths must be between 1 and max_len 512"):
        simulate_balance(np.array([600]), 1, 1, 1, _mlperf("none"))


def test_reads_lengths_from_shards(small_dataset):
    lengths = shard_lengths(small_dataset / "train", limit=300)
    assert len(lengths) == 300 and lengths.min() >= 1 and lengths.max() <= 64
