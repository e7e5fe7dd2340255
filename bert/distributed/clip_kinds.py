"""The clipping modes a descriptor may name (run.clip), one kind each, in one table.

A kind carries what every part of the harness needs of its mode: the step's Clipping (bert.distributed.clipping,
clip_hook), how the simulator charges its allreduce and norm (bert.simulate.time_to_train), the launch plan's line
(bert.launch.plan) and whether the closed division allows it (bert.system; the rules allow clipping before or
after the allreduce). No MLPerf key names the mode. The name is compared here and nowhere else: every other module
reads `ClipSpec.clip_kind`'s attributes (a test holds it).

Adding a mode: its name in `ClipMode` and its entry in `CLIP_KINDS` (the two are checked against each other at
import, bert.kind_tables). Nothing here imports torch: the builders are deferred.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from bert.kind_tables import deferred, kind_table

if TYPE_CHECKING:
    from bert.distributed.clip_settings import ClipSpec
    from bert.distributed.clipping import Clipping

ClipMode = Literal["after_allreduce", "before_allreduce", "bucketwise_before_allreduce"]
DEFAULT_CLIP: ClipMode = "after_allreduce"


@dataclass(frozen=True)
class ClipKind:
    name: str  # as run.clip names it
    # The step's Clipping, called with keywords: ddp (DDP's wrapper, None on one process), params, clip_norm,
    # scaler (the step's GradScaler), accumulate (micro-batches per step), comm_dtype (the dtype sent).
    build: Callable[..., Clipping]
    # The gradient is averaged bucket by bucket as the backward fills DDP's buckets (a message each, overlapping
    # the backward); False: in one message after the backward, all of it exposed.
    per_bucket: bool
    norm_after_allreduce: bool  # a pass over the averaged gradient for its global norm
    # (the clip settings, the parameters, DDP's buckets) -> what the launch plan says the mode does.
    plan: Callable[[ClipSpec, int, int], str]
    closed_division: bool  # the closed division allows it


def _after_allreduce(clip: ClipSpec, params: int, buckets: int) -> str:
    return f"the averaged gradient's global norm clipped to {clip.clip_norm:g}; {buckets} DDP bucket(s), " \
           f"{params:,} parameters"


def _before_allreduce(clip: ClipSpec, params: int, buckets: int) -> str:
    return f"each rank's whole gradient clipped to {clip.clip_norm:g}; {buckets} DDP bucket(s), {params:,} parameters"


def _bucketwise(clip: ClipSpec, params: int, buckets: int) -> str:
    return (f"DDP communication hook BucketwiseBeforeAllreduce, {buckets} bucket(s) of <= {clip.bucket_cap_mb:g} MB "
            f"for {params:,} parameters, each clipped to clip_norm/sqrt({buckets}) = "
            f"{clip.clip_norm / math.sqrt(buckets):.4g} before its allreduce")


CLIP_KINDS: dict[str, ClipKind] = kind_table(ClipMode, [
    ClipKind("after_allreduce", deferred("bert.distributed.clipping", "clip_after_allreduce"),
             per_bucket=True, norm_after_allreduce=True, plan=_after_allreduce, closed_division=True),
    ClipKind("before_allreduce", deferred("bert.distributed.clipping", "clip_before_allreduce"),
             per_bucket=False, norm_after_allreduce=False, plan=_before_allreduce, closed_division=True),
    ClipKind("bucketwise_before_allreduce", deferred("bert.distributed.clip_hook", "clip_bucketwise"),
             per_bucket=True, norm_after_allreduce=False, plan=_bucketwise, closed_division=True),
], __name__)

