import math

import pytest
import torch

from bert.distributed.clipping import clip_to_norm_


def test_scales_down_to_the_bound_and_leaves_small_gradients_alone():
    a, b = torch.tensor([3.0, 0.0]), torch.tensor([[4.0]])
    norm = clip_to_norm_([a, b], 1.0)
    assert norm.item() == pytest.approx(5.0)
    assert a.tolist() == pytest.approx([0.6, 0.0]) and b.item() == pytest.approx(0.8)
    small = torch.tensor([0.3, 0.4])
    clip_to_norm_([small], torch.tensor(1.0))
    assert small.tolist() == pytest.approx([0.3, 0.4])
    zero = torch.zeros(3)
    clip_to_norm_([zero], 1.0)
    assert torch.equal(zero, torch.zeros(3))


@pytest.mark.parametrize("values", [[math.inf, 1.0], [math.nan, 1.0], [3e38, 3e38]])
def test_a_non_finite_norm_leaves_the_gradient_non_finite(values):
    # The last case has finite entries whose squares overflow: scaling by bound / inf would zero them.
    g = torch.tensor(values)
    clip_to_norm_([g], 1.0)
    assert not torch.isfinite(g).all()
