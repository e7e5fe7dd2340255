"""The model's size as data parallelism sees it: its parameter count, and the gradient buckets DDP cuts it into
(the unit of bucket-wise clipping and of the allreduce messages that `mlperf-bert simulate` charges)."""

from __future__ import annotations

import math

from bert.model.config import BertConfig

FP32_BYTES = 4  # DDP buckets hold the parameters' (fp32) gradients


def parameter_count(config: BertConfig) -> int:
    """The parameters of BertForPreTraining(config), counted on the meta device: nothing is allocated."""
    import torch

    from bert.model.pretraining import BertForPreTraining

    with torch.device("meta"):
        return sum(p.numel() for p in BertForPreTraining(config).parameters())


def gradient_buckets(parameters: int, bucket_cap_mb: float) -> int:
    """DDP's gradient buckets for `parameters` at a bucket cap of `bucket_cap_mb`."""
    return max(1, math.ceil(parameters * FP32_BYTES / (bucket_cap_mb * 2**20)))
