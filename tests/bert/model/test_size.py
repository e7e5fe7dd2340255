"""The model's size as DDP sees it: the parameter count of a built model, and the bucket count of a cap."""

import pytest

from bert.model.config import named_config
from bert.model.pretraining import BertForPreTraining
from bert.model.size import FP32_BYTES, gradient_buckets, parameter_count


@pytest.mark.parametrize("name", ["micro", "tiny"])
def test_the_count_on_the_meta_device_is_the_built_models(name):
    config = named_config(name)
    assert parameter_count(config) == sum(p.numel() for p in BertForPreTraining(config).parameters())


def test_buckets_round_up_and_never_fall_below_one():
    mib = 2**20 // FP32_BYTES  # fp32 gradients per MiB
    assert gradient_buckets(mib, 1.0) == 1
    assert gradient_buckets(mib + 1, 1.0) == 2
    assert gradient_buckets(1, 25.0) == 1
    assert gradient_buckets(10 * mib, 2.5) == 4
