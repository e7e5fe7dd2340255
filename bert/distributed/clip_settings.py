"""Clipping's settings: where the gradient is clipped and how it travels between the ranks (fields of the run
block), read by bert.distributed.clipping and clip_hook through the step, and by the simulator. What the named
mode is, and what each part of the harness does with it, is its kind (`clip_kind`, bert.distributed.clip_kinds)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bert.distributed.clip_kinds import CLIP_KINDS, DEFAULT_CLIP, ClipKind, ClipMode
from bert.typed_config import ranged


@dataclass(frozen=True, kw_only=True)
class ClipSpec:
    clip: ClipMode = DEFAULT_CLIP
    """Where the gradient is clipped to clip_norm (the MLPerf rules allow before or after the allreduce):
    "after_allreduce" (the global norm of the averaged gradient: NVIDIA's), "before_allreduce" (each rank's whole
    gradient, then one allreduce: the reference's) or "bucketwise_before_allreduce" (each DDP bucket before its own
    allreduce, overlapping the backward pass: the seed paper's)."""
    clip_norm: float = ranged(0, low_open=True, default=1.0)
    """The gradient's largest L2 norm (the closed division's: 1.0)."""
    bucket_cap_mb: float = ranged(0, low_open=True, default=25.0)
    """DDP's gradient bucket size in MB, the unit of bucket-wise clipping."""
    grad_comm_dtype: Literal["fp32", "bf16"] = "fp32"
    """The dtype the gradient is averaged in between the ranks, with every clipping mode: "fp32" (the
    reference's) or "bf16" (half the bytes; each rank's share is rounded to bf16 before the sum)."""

    @property
    def clip_kind(self) -> ClipKind:
        """The mode `clip` names (a name read from a descriptor always has one: bert.kind_tables)."""
        return CLIP_KINDS[self.clip]
