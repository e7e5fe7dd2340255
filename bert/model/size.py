"""The model's size as data parallelism sees it: its parameter count, and the gradient buckets DDP cuts it into
(the unit of bucket-wise clipping and of the allreduce messages that `mlperf-bert simulate` charges)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from bert.model.config import BertConfig

if TYPE_CHECKING:  # torch is imported when a model is built: the simulator's callers may need no more
    from torch.overrides import TorchFunctionMode

    from bert.model.pretraining import BertForPreTraining

FP32_BYTES = 4  # DDP buckets hold the parameters' (fp32) gradients


def meta_model(config: BertConfig) -> BertForPreTraining:
    """BertForPreTraining(config) on the meta device, uninitialised: its parameters' shapes, nothing allocated or
    computed."""
    import torch

    from bert.model.pretraining import BertForPreTraining

    with torch.device("meta"), _no_initialisation():
        return BertForPreTraining(config)


def _no_initialisation() -> TorchFunctionMode:
    """Inside it, in-place tensor functions (the initialisers: trunc_normal_, zeros_, ...) return their tensor
    untouched. On the meta device they compute nothing anyway, but some reach torch's Python references, whose
    first call imports Dynamo: seconds of a command that only wants the shapes (`simulate`, the pre-flight)."""
    from torch.overrides import TorchFunctionMode

    class NoInitialisation(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            name = getattr(func, "__name__", "")
            if name.endswith("_") and not name.startswith("__"):
                return kwargs.get("tensor", args[0] if args else None)
            return func(*args, **kwargs)

    return NoInitialisation()


def parameter_count(config: BertConfig) -> int:
    """The parameters of BertForPreTraining(config), counted on the meta device: nothing is allocated."""
    return sum(p.numel() for p in meta_model(config).parameters())


def gradient_buckets(parameters: int, bucket_cap_mb: float) -> int:
    """DDP's gradient buckets for `parameters` at a bucket cap of `bucket_cap_mb`."""
    return max(1, math.ceil(parameters * FP32_BYTES / (bucket_cap_mb * 2**20)))
