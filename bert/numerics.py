"""Numerical faults: a non-finite loss or gradient, or fp16 loss scaling that keeps overflowing.

Training on after such a fault only produces garbage, so the run stops, naming the step. The checks must not
add a host synchronisation to the step: `observe` only updates device tensors (the first step of each kind of
fault), and `check` reads them at the points where the loop synchronises anyway (the print interval, before
an eval), all-reduced so that every rank stops at the same point even if only one saw the fault.

Under fp16 a non-finite loss or gradient is what loss scaling handles (the step is skipped and the scale
lowered), so it is not a fault there; a run of more than `overflow_limit` consecutive overflows is.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from bert.distributed.launch import DistContext

_NONE = 2**62  # "no fault yet": larger than any step number, so the earliest fault is the minimum
_LOSS, _GRADIENT, _OVERFLOWS = range(3)


class NumericalFault(RuntimeError):
    """The run's numbers went bad at a step; the message says how and where."""


class NumericGuard:
    def __init__(self, device: torch.device, loss_scaling: bool, overflow_limit: int):
        self.loss_scaling, self.overflow_limit = loss_scaling, overflow_limit
        self.first = torch.full((3,), _NONE, dtype=torch.int64, device=device)
        self.step = torch.ones((), dtype=torch.int64, device=device)  # 1-based, as the loop prints steps
        self.overflows = torch.zeros((), dtype=torch.int64, device=device)  # consecutive, ending at this step

    def observe(self, loss: torch.Tensor, grad_norm: torch.Tensor | None,
                scale_before: torch.Tensor | float, scale_after: torch.Tensor | float) -> None:
        """Records one step: its summed loss, the gradient norm (None where clipping computes none) and the
        loss scale before and after the scaler's update. Device operations only."""
        if self.loss_scaling:
            overflow = torch.as_tensor(scale_after < scale_before, device=self.step.device)
            self.overflows = torch.where(overflow, self.overflows + 1, torch.zeros_like(self.overflows))
            self._mark(_OVERFLOWS, self.overflows > self.overflow_limit)
        else:
            self._mark(_LOSS, ~torch.isfinite(loss))
            if grad_norm is not None:
                self._mark(_GRADIENT, ~torch.isfinite(grad_norm))
        self.step += 1

    def _mark(self, kind: int, bad: torch.Tensor) -> None:
        self.first[kind] = torch.minimum(self.first[kind], torch.where(bad, self.step, _NONE))

    def check(self, ctx: DistContext) -> None:
        """Raises NumericalFault for the earliest fault on any rank. Synchronises: a collective on every
        rank at the same step, and a read of the result."""
        first = self.first.clone()
        if ctx.distributed:
            dist.all_reduce(first, op=dist.ReduceOp.MIN)
        loss, gradient, overflows = first.tolist()
        if loss < _NONE and loss <= gradient:
            raise NumericalFault(f"non-finite loss at step {loss}: the run would go on training on garbage; "
                                 "lower the learning rate or check the data and precision")
        if gradient < _NONE:
            raise NumericalFault(f"non-finite gradient at step {gradient} (no loss scaling to skip it): lower "
                                 "the learning rate or check the data and precision")
        if overflows < _NONE:
            raise NumericalFault(f"{self.overflow_limit + 1} consecutive fp16 loss-scale overflows ending at step "
                                 f"{overflows} (run.max_loss_scale_overflows = {self.overflow_limit}): the gradient "
                                 "is not finite at any scale")
