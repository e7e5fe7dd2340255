"""Clipping's settings (bert.distributed.clip_settings): a good block loads; a bad mode, bound, bucket size or
communication dtype is refused with a message naming the field, from a descriptor as from the block itself."""

import re

import pytest

from bert.distributed.clip_kinds import CLIP_KINDS
from bert.distributed.clip_settings import ClipSpec
from bert.system import load_descriptor
from bert.typed_config import ConfigError, from_dict
from tests.helpers.systems import unchecked_descriptor, write_unchecked


def test_a_good_block_loads_and_defaults_to_the_closed_divisions_bound():
    spec = from_dict(ClipSpec, {"clip": "bucketwise_before_allreduce", "bucket_cap_mb": 0.25,
                                "grad_comm_dtype": "bf16"}, "sys.json", "run")
    assert (spec.clip, spec.clip_norm, spec.bucket_cap_mb, spec.grad_comm_dtype) == (
        "bucketwise_before_allreduce", 1.0, 0.25, "bf16")
    assert tuple(CLIP_KINDS) == ("after_allreduce", "before_allreduce", "bucketwise_before_allreduce")


@pytest.mark.parametrize("block, message", [
    ({"clip_norm": 0}, "run.clip_norm: "),
    ({"clip_norm": -1.0}, "run.clip_norm: "),
    ({"bucket_cap_mb": 0}, "run.bucket_cap_mb: "),
    ({"grad_comm_dtype": "fp16"}, "run.grad_comm_dtype: expected one of 'fp32', 'bf16'"),
])
def test_a_bad_value_is_refused_naming_the_field(block, message):
    with pytest.raises(ConfigError, match=f"^sys.json: {re.escape(message)}"):
        from_dict(ClipSpec, block, "sys.json", "run")


def test_clip_mode_typo_is_named(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_descriptor(write_unchecked(tmp_path, "bad", unchecked_descriptor({"clip": "bucketwise"})))
    assert "run.clip: expected one of 'after_allreduce', 'before_allreduce', 'bucketwise_before_allreduce'" in \
        str(info.value)
