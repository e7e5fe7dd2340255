"""`bucketwise_before_allreduce` (run.clip): the seed paper's bucket-wise clipping, as a DDP communication hook.

`BucketwiseBeforeAllreduce(ddp, params, clip_norm, scaler, accumulate, comm_dtype)` is a Clipping
(bert.distributed.clipping). Each micro-batch's gradient bucket is clipped on its rank, as soon as DDP has filled
it, to S * clip_norm / (A * sqrt(B)) (S the fp16 loss scale, A the step's micro-batches, B DDP's bucket count,
read from its reducer); the last micro-batch's bucket, with the clipped buckets of the others added, starts its
average over the ranks at once. A backward that reduces another number of buckets than was counted raises
RuntimeError. Why this bound, when the buckets are counted and how micro-batches accumulate:
docs/performance.md, "Bucket-wise clipping".
"""

import contextlib
import math
import weakref
from contextlib import AbstractContextManager

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from bert.distributed.clipping import BeforeAllreduce, Clipping, clip_to_norm_, loss_scale, start_allreduce_mean_


def _completed(tensor: torch.Tensor) -> torch.futures.Future[torch.Tensor]:
    future: torch.futures.Future[torch.Tensor] = torch.futures.Future()
    future.set_result(tensor)
    return future


class BucketwiseBeforeAllreduce:
    """A clipping mode (bert.distributed.clipping.Clipping) whose clipping and averaging is DDP's hook."""

    def __init__(self, ddp: DistributedDataParallel, params: list[nn.Parameter], clip_norm: float,
                 scaler: torch.amp.GradScaler, accumulate: int, comm_dtype: torch.dtype = torch.float32):
        # DDP's reducer (C++, unseen by the garbage collector) holds this object through its hook: a reference back
        # to DDP would keep DDP, its reducer and the process group alive until the interpreter's finalisation, where
        # tearing down gloo's threads can abort a rank that has finished its run (SIGABRT).
        self._ddp = weakref.ref(ddp)
        self.params, self.clip_norm, self.scaler = params, clip_norm, scaler
        self.accumulate, self.comm_dtype = accumulate, comm_dtype
        self.group = ddp.process_group
        self.num_buckets = 0
        self._counted = False  # True once the count can no longer change
        self._backwards = 0
        self._last_micro_batch = True
        self._step_bound: torch.Tensor | float = clip_norm
        self._bound: torch.Tensor | float = clip_norm
        self._held: dict[nn.Parameter, torch.Tensor] = {}
        ddp.module.register_forward_pre_hook(self._before_forward)
        ddp.register_comm_hook(None, self._clip_and_reduce)

    def micro_batch(self, last: bool) -> AbstractContextManager:
        self._last_micro_batch = last
        self._step_bound = loss_scale(self.scaler, self.params[0].device) * self.clip_norm / self.accumulate
        return contextlib.nullcontext()

    def finish(self, optimizer: torch.optim.Optimizer) -> torch.Tensor | None:
        self.scaler.unscale_(optimizer)  # the hook has clipped and averaged
        return None  # norms per bucket only; a non-finite gradient shows in the next step's loss

    def _before_forward(self, module: nn.Module, inputs: object) -> None:
        if not torch.is_grad_enabled():  # an eval forward: no backward, no rebuild
            return
        if not self._counted:
            self.num_buckets = self._count_buckets()
            self._counted = self._backwards > 0
        self._bound = self._step_bound / math.sqrt(self.num_buckets)

    def _count_buckets(self) -> int:
        # The reducer has no public bucket count; the list of zero copies of its buckets is its length.
        return len(self._ddp().reducer._get_zeros_like_grad_buckets())

    def _clip_and_reduce(self, state: object, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
        buffer = bucket.buffer()
        clip_to_norm_([buffer], self._bound)
        if bucket.is_last():
            self._check_count(bucket.index() + 1)
        if not self._last_micro_batch:
            self._hold(bucket)
            return _completed(buffer.zero_())
        if self._held:
            torch._foreach_add_(bucket.gradients(), [self._held.pop(p) for p in bucket.parameters()])
        return start_allreduce_mean_(buffer, self.group, self.comm_dtype)

    def _hold(self, bucket: dist.GradBucket) -> None:
        for param, grad in zip(bucket.parameters(), bucket.gradients()):
            held = self._held.get(param)
            if held is None:
                self._held[param] = grad.clone()
            else:
                held.add_(grad)

    def _check_count(self, seen: int) -> None:
        self._backwards += 1
        if seen != self.num_buckets:
            raise RuntimeError(f"DDP reduced {seen} gradient buckets but the clip bound assumed "
                               f"{self.num_buckets}: DDP changed its buckets after the first iterations")


def clip_bucketwise(*, ddp: DistributedDataParallel | None, params: list[nn.Parameter], clip_norm: float,
                    scaler: torch.amp.GradScaler, accumulate: int, comm_dtype: torch.dtype) -> Clipping:
    """Bucket-wise under DDP; on one process the gradient is one bucket, clipped whole (BeforeAllreduce)."""
    if ddp is None:
        return BeforeAllreduce(ddp, params, clip_norm, scaler, comm_dtype)
    return BucketwiseBeforeAllreduce(ddp, params, clip_norm, scaler, accumulate, comm_dtype)
