"""Masked-LM accuracy on the eval set: read once, split across ranks, kept on the device, summed over ranks."""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path

import numpy as np
import torch
from torch import nn

from bert.data.batch import Batch, collate
from bert.data.shards import SampleLimits, ShardError, read_shard
from bert.distributed.launch import DistContext, all_reduce_sum
from bert.model.token_rounding import TokenSizes


class EvalSet:
    """The first `num_samples` samples of the eval file; rank r evaluates samples r, r+W, r+2W, ..."""

    def __init__(self, path: Path, num_samples: int, ctx: DistContext, batch_size: int,
                 limits: SampleLimits | None = None, sizes: TokenSizes | None = None):
        """`sizes`: run.token_sizes' sizes for batches of `batch_size`, to which the batches are rounded."""
        samples = read_shard(path)
        if limits is not None:
            limits.check(samples, path)
        if len(samples) < num_samples:
            raise ShardError(f"{path}: has {len(samples)} eval samples, fewer than the {num_samples} the "
                             "descriptor asks for (run.eval.samples)")
        self.num_samples = num_samples
        mine = samples.take(np.arange(ctx.rank, num_samples, ctx.world_size))
        self.batches: list[Batch] = [
            collate(mine.take(np.arange(i, min(i + batch_size, len(mine)))), sizes=sizes)
            for i in range(0, len(mine), batch_size)
        ]
        self._on_device = False
        self.ctx = ctx

    @torch.no_grad()
    def accuracy(self, model: nn.Module, unpadded: bool, autocast: AbstractContextManager) -> float:
        """MLM accuracy over the whole eval set: correct / total masked tokens, both summed over ranks. The model
        runs as the training step runs it: `unpadded` (run.unpadded) and under the step's `autocast`
        (bert.step.StepAutocast)."""
        if not self._on_device:
            self.batches = [b.to(self.ctx.device) for b in self.batches]
            self._on_device = True
        was_training = model.training
        model.eval()
        counts = torch.zeros(2, dtype=torch.float64, device=self.ctx.device)
        for batch in self.batches:
            with autocast:
                out = model(**batch.model_inputs(unpadded))
            counts[0] += out.mlm_correct
            counts[1] += out.mlm_count
        model.train(was_training)
        all_reduce_sum(counts, self.ctx)
        correct, total = counts.tolist()
        return correct / total if total else 0.0
