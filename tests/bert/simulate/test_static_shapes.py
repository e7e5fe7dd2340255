"""The epoch model of rounded token counts (bert.simulate.static_shapes): the shapes an epoch meets before and
after rounding, and the filler tokens it pays, against a case counted by hand."""

import numpy as np
import pytest

from bert.model.token_rounding import TokenSizes
from bert.simulate.static_shapes import epoch_shapes


def test_an_epoch_meets_the_sizes_its_batches_reach_and_pays_their_fillers():
    sizes = TokenSizes.spread(4, 4, 300)  # 2 filler slots; sizes 304, 608, 912, 1208
    assert (sizes.sizes, sizes.slots) == ((304, 608, 912, 1208), 6)
    lengths = np.array([100, 300])
    [shapes] = epoch_shapes(lengths, 4000, 4, [sizes], chunk=64)
    assert shapes.micro_batches == 1000
    # 4 sequences of 100 or 300: 400, 600, 800, 1000 or 1200 tokens, each with 2 fillers of at least a token:
    # 402 and 602 -> 608, 802 -> 912, 1002 and 1202 -> 1208.
    assert shapes.distinct_tokens == 5 and shapes.distinct_rounded == 3
    # Each count's chance is binomial(4, 1/2): 1, 4, 6, 4, 1 in 16.
    chance = np.array([1, 4, 6, 4, 1]) / 16
    expected = chance @ [608, 608, 912, 1208, 1208] / (chance @ [400, 600, 800, 1000, 1200])
    assert shapes.cost == pytest.approx(expected, rel=0.02)


def test_more_sizes_mean_more_shapes_and_fewer_fillers():
    rng = np.random.default_rng(0)
    lengths = rng.integers(20, 513, 10_000)
    few, many = epoch_shapes(lengths, 56 * 2000, 56, [TokenSizes.spread(k, 56, 512) for k in (8, 32)])
    assert few.distinct_tokens == many.distinct_tokens > 1000
    assert few.distinct_rounded < many.distinct_rounded <= 32
    assert 0 < many.padding < few.padding
