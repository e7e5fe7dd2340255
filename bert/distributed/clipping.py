"""Gradient clipping to run.clip_norm where `run.clip` says, and the averaging over the ranks around it.

Each mode is a `Clipping`, which its kind builds (bert.distributed.clip_kinds: `clip_after_allreduce`, ...):
`micro_batch(last)` is the context of one micro-batch's forward and backward, and `finish(optimizer)`, after the
step's last backward, leaves in every .grad the gradient the optimizer applies (averaged over the ranks, clipped,
unscaled) and returns the norm it clipped (a device scalar; None where no one norm exists). `AfterAllreduce`: DDP
averages, then the global norm is clipped. `BeforeAllreduce`: each rank clips its accumulated local gradient, then
one coalesced allreduce averages it. `BucketwiseBeforeAllreduce`: bert.distributed.clip_hook. Each takes DDP's
wrapper (None on one process, where all three clip the whole gradient), the parameters, the bound, the step's
GradScaler and the dtype sent (COMM_DTYPES[run.grad_comm_dtype]). Nothing here reads a device value on the host.
Why each mode, and how fp16 and bf16 meet them: docs/performance.md, "Gradient clipping".
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Protocol

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

COMM_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}  # run.grad_comm_dtype


def clip_factor(tensors: Sequence[torch.Tensor], max_norm: torch.Tensor | float) -> tuple[torch.Tensor, torch.Tensor]:
    """(the joint L2 norm of `tensors`, the factor that scales it to at most `max_norm`), device scalars. A
    non-finite norm gives a NaN factor rather than zero, so that loss scaling still sees the overflow."""
    norm = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(list(tensors))))
    factor = torch.clamp(max_norm / norm, max=1.0)  # a zero norm gives inf, clamped to 1
    return norm, torch.where(torch.isfinite(norm), factor, torch.full_like(norm, math.nan))


def clip_to_norm_(tensors: Sequence[torch.Tensor], max_norm: torch.Tensor | float) -> torch.Tensor:
    """Scales `tensors` in place so that their joint L2 norm is at most `max_norm`; returns the norm before."""
    norm, factor = clip_factor(tensors, max_norm)
    torch._foreach_mul_(list(tensors), factor)
    return norm


def clip_global_norm(params: Sequence[nn.Parameter], max_norm: torch.Tensor | float,
                     optimizer: torch.optim.Optimizer | None = None) -> torch.Tensor:
    """Clips the gradients of `params` to a joint norm of at most `max_norm`; returns the norm before. An optimizer
    that takes the factor (`takes_clip_factor`, bert.optim.lamb) gets it as `clip_factor` and applies it inside its
    update, which saves a pass over the gradient."""
    grads = [p.grad for p in params if p.grad is not None]
    if getattr(optimizer, "takes_clip_factor", False):
        norm, optimizer.clip_factor = clip_factor(grads, max_norm)
        return norm
    return clip_to_norm_(grads, max_norm)


def loss_scale(scaler: torch.amp.GradScaler, device: torch.device) -> torch.Tensor | float:
    """The GradScaler's current scale as a device tensor (1.0 when loss scaling is off), without a sync."""
    return scaler.scale(torch.ones((), device=device)) if scaler.is_enabled() else 1.0


def start_allreduce_mean_(buffer: torch.Tensor, group: dist.ProcessGroup,
                          dtype: torch.dtype = torch.float32) -> torch.futures.Future[torch.Tensor]:
    """Starts averaging `buffer` in place over the ranks of `group`, sent in `dtype`; the future's value is
    `buffer`, averaged (its wait raises the collective's error, if it failed)."""
    wire = buffer.div_(group.size()).to(dtype)  # buffer itself in its own dtype, else a copy copied back
    work = dist.all_reduce(wire, group=group, async_op=True)
    return work.get_future().then(functools.partial(_averaged_into, buffer, wire))


def _averaged_into(buffer: torch.Tensor, wire: torch.Tensor, done: torch.futures.Future) -> torch.Tensor:
    done.wait()  # raises the collective's error, if it failed
    return buffer if wire is buffer else buffer.copy_(wire)


def allreduce_mean_(tensors: Sequence[torch.Tensor], group: dist.ProcessGroup,
                    dtype: torch.dtype = torch.float32) -> None:
    """Averages `tensors` over the ranks of `group` in one allreduce of their concatenation, sent in `dtype`."""
    flat = start_allreduce_mean_(torch.cat([t.reshape(-1) for t in tensors]), group, dtype).wait()
    parts = flat.split([t.numel() for t in tensors])
    torch._foreach_copy_(list(tensors), [part.view_as(t) for part, t in zip(parts, tensors)])


class Clipping(Protocol):
    """One clipping mode (run.clip): what the step does around each micro-batch and after the last one."""

    def micro_batch(self, last: bool) -> AbstractContextManager:
        """The context of one micro-batch's forward and backward; `last`: the step's last micro-batch."""
        ...

    def finish(self, optimizer: torch.optim.Optimizer) -> torch.Tensor | None:
        """After the last backward: leaves the final, unscaled gradient in .grad for the optimizer. Returns the
        norm it clipped (a device tensor; None where no one norm is computed), for the numeric guard."""
        ...


def local_accumulation(ddp: DistributedDataParallel | None, local: bool) -> AbstractContextManager:
    """DDP's no_sync when `local` (the backward accumulates into .grad without communicating), else nothing."""
    return ddp.no_sync() if ddp is not None and local else contextlib.nullcontext()


class AfterAllreduce:
    """NVIDIA's: DDP reduces after the last micro-batch, then the averaged gradient is clipped."""

    def __init__(self, ddp: DistributedDataParallel | None, params: list[nn.Parameter], clip_norm: float,
                 scaler: torch.amp.GradScaler, comm_dtype: torch.dtype = torch.float32):
        self.ddp, self.params, self.clip_norm, self.scaler = ddp, params, clip_norm, scaler
        if ddp is not None and comm_dtype != torch.float32:
            # (No annotations: DDP checks them, and this module's are strings.)
            ddp.register_comm_hook(ddp.process_group,
                                   lambda group, bucket: start_allreduce_mean_(bucket.buffer(), group, comm_dtype))

    def micro_batch(self, last: bool) -> AbstractContextManager:
        return local_accumulation(self.ddp, not last)

    def finish(self, optimizer: torch.optim.Optimizer) -> torch.Tensor | None:
        self.scaler.unscale_(optimizer)
        return clip_global_norm(self.params, self.clip_norm, optimizer)


class BeforeAllreduce:
    """The reference's: each rank clips its whole local (accumulated) gradient, then one allreduce averages it."""

    def __init__(self, ddp: DistributedDataParallel | None, params: list[nn.Parameter], clip_norm: float,
                 scaler: torch.amp.GradScaler, comm_dtype: torch.dtype = torch.float32):
        self.ddp, self.params, self.clip_norm, self.scaler = ddp, params, clip_norm, scaler
        self.comm_dtype = comm_dtype

    def micro_batch(self, last: bool) -> AbstractContextManager:
        return local_accumulation(self.ddp, True)

    def finish(self, optimizer: torch.optim.Optimizer) -> torch.Tensor | None:
        grads = [p.grad for p in self.params if p.grad is not None]
        norm = clip_to_norm_(grads, loss_scale(self.scaler, grads[0].device) * self.clip_norm)
        if self.ddp is not None:
            allreduce_mean_(grads, self.ddp.process_group, self.comm_dtype)
        self.scaler.unscale_(optimizer)
        return norm


def clip_after_allreduce(*, ddp: DistributedDataParallel | None, params: list[nn.Parameter], clip_norm: float,
                         scaler: torch.amp.GradScaler, accumulate: int, comm_dtype: torch.dtype) -> Clipping:
    return AfterAllreduce(ddp, params, clip_norm, scaler, comm_dtype)


def clip_before_allreduce(*, ddp: DistributedDataParallel | None, params: list[nn.Parameter], clip_norm: float,
                          scaler: torch.amp.GradScaler, accumulate: int, comm_dtype: torch.dtype) -> Clipping:
    return BeforeAllreduce(ddp, params, clip_norm, scaler, comm_dtype)
