"""Samples made in memory (bert.data.random_samples): the lengths asked for, ids above the special pieces, half
of each sequence in segment B, masked positions inside the sequence and never its [CLS], one seed one set."""

from __future__ import annotations

import numpy as np

from bert.data.random_samples import random_samples

LENGTHS = [2, 3, 9, 20]


def test_samples_have_the_lengths_ids_segments_and_masks_asked_for():
    samples = random_samples(LENGTHS, vocab=50, predictions=4, seed=1)
    assert samples.lengths.tolist() == LENGTHS and len(samples) == 4
    assert samples.tokens.min() >= 5 and samples.tokens.max() < 50
    assert [int(samples.segments[samples.offsets[i]:samples.offsets[i + 1]].sum()) for i in range(4)] == [1, 2, 5, 10]
    counts = (samples.masked_positions > 0).sum(1)
    assert counts.tolist() == [1, 2, 4, 4]  # at most `predictions`, and never more than the tokens after [CLS]
    for row, n in zip(samples.masked_positions, LENGTHS):
        chosen = row[row > 0]
        assert (np.diff(chosen) > 0).all() and chosen.max() < n
    assert ((samples.masked_ids > 0) == (samples.masked_positions > 0)).all()
    assert set(samples.nsp_labels.tolist()) <= {0, 1}


def test_one_seed_gives_one_set_and_masked_sets_each_count():
    a, b = random_samples(LENGTHS, seed=5), random_samples(LENGTHS, seed=5)
    assert np.array_equal(a.tokens, b.tokens) and np.array_equal(a.masked_positions, b.masked_positions)
    assert not np.array_equal(a.tokens, random_samples(LENGTHS, seed=6).tokens)
    fewer = random_samples(LENGTHS, predictions=4, masked=np.array([0, 2, 3, 4]))
    assert (fewer.masked_positions > 0).sum(1).tolist() == [0, 2, 3, 4]  # the 3-token one: 2 after [CLS]
