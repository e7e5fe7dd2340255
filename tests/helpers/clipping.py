"""The clipping modes on a few gloo ranks (tests/bert/distributed): cpu_micro in each mode, and the micro-batch
each rank takes at each step, so that a test can compute what every rank did."""

from __future__ import annotations

import numpy as np

from bert.data.batch import Batch, collate
from bert.data.shards import Samples
from bert.system import Descriptor, load_descriptor

GLOBAL_BATCH, CLIP_NORM = 16, 0.05


def clipping_system(world_size: int, clip: str, accumulate: int = 1, precision: str = "fp32",
                    bucket_cap_mb: float = 0.25, grad_comm_dtype: str = "fp32") -> Descriptor:
    """cpu_micro on `world_size` ranks of one node, clipping in mode `clip` to CLIP_NORM."""
    return load_descriptor("cpu_micro").cpu_variant({
        "processes_per_node": world_size, "clip": clip, "clip_norm": CLIP_NORM, "global_batch_size": GLOBAL_BATCH,
        "gradient_accumulation_steps": accumulate, "bucket_cap_mb": bucket_cap_mb, "grad_comm_dtype": grad_comm_dtype,
        "precision": precision})


def micro_batch(samples: Samples, system: Descriptor, step: int, rank: int, micro: int) -> Batch:
    """Micro-batch `micro` of `rank` at `step`: consecutive samples, in order of step, rank and micro-batch."""
    size, run = system.per_process_batch, system.run
    start = ((step * system.world_size + rank) * run.gradient_accumulation_steps + micro) * size
    return collate(samples.take(np.arange(start, start + size)))
