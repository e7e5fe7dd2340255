"""Model FLOPs of a training step (bert.simulate.flops), counted by hand on a small model."""

import numpy as np
import pytest

from bert.model.config import BertConfig
from bert.simulate.flops import flops_per_sequence, training_flops

CONFIG = BertConfig(vocab_size=100, hidden_size=8, num_layers=2, num_heads=2, intermediate_size=32)


def test_a_step_costs_three_forwards_of_the_layers_and_the_heads():
    h, i, v = 8, 32, 100
    layer = 10 * 2 * (4 * h * h + 2 * h * i) + 4 * h * (4 * 4 + 6 * 6)  # 10 tokens in sequences of 4 and 6
    heads = 3 * 2 * (h * h + h * v) + 2 * 2 * (h * h + 2 * h)  # 3 masked tokens; pooler and NSP per sequence
    assert training_flops(CONFIG, np.array([4, 6]), 3) == 3 * (2 * layer + heads)


def test_the_mean_per_sequence_counts_the_references_masked_share():
    lengths = np.array([20, 100])  # 15% of each: 3 and 15 masked tokens
    assert flops_per_sequence(CONFIG, lengths, max_predictions=20) == pytest.approx(
        training_flops(CONFIG, lengths, 18) / 2)
    assert flops_per_sequence(CONFIG, lengths, max_predictions=5) < flops_per_sequence(CONFIG, lengths, 20)
