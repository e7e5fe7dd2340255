"""One optimizer step: micro-batches under autocast (and FP8 where run.precision says so), backward, clipping and
averaging over the ranks (in the order the descriptor's run.clip says: its kind's Clipping,
bert.distributed.clip_kinds), update.

Nothing here waits for the device: the loss is accumulated on the device and read only when asked for, and
numerical faults are recorded on the device (bert.numerics) and checked only when asked for.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack, nullcontext

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from bert.distributed.clipping import COMM_DTYPES, loss_scale
from bert.distributed.launch import DistContext
from bert.model.fp8 import encoder_to_fp8, fp8_context
from bert.model.pretraining import choose_kernels, compile_encoder
from bert.numerics import NumericGuard
from bert.optim.factory import set_learning_rate
from bert.optim.schedule import LrSchedule
from bert.step_settings import Precision, StepSpec

# run.precision's autocast dtype (fp8: bf16 around the encoder's FP8 Linear layers, bert.model.fp8)
PRECISION_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16, "fp8": torch.bfloat16}


class StepAutocast:
    """The context of every forward of a run: torch's autocast in run.precision's dtype, and the FP8
    implementation's own context where it has one (bert.model.fp8.fp8_context). Reusable, as torch.autocast is."""

    def __init__(self, precision: Precision, ctx: DistContext, fp8: Callable[[], AbstractContextManager] = nullcontext):
        self.autocast = torch.autocast(ctx.device.type, dtype=PRECISION_DTYPES[precision], enabled=precision != "fp32")
        self.fp8 = fp8
        self._open: list[ExitStack] = []

    def __enter__(self) -> StepAutocast:
        stack = ExitStack()
        stack.enter_context(self.autocast)
        stack.enter_context(self.fp8())
        self._open.append(stack)
        return self

    def __exit__(self, *exc) -> bool:
        return self._open.pop().__exit__(*exc)


def data_parallel(model: nn.Module, bucket_cap_mb: float) -> DistributedDataParallel:
    """DDP over the default group. The gradients live in DDP's buckets (gradient_as_bucket_view): DDP then
    keeps no second copy of them, and every clipping mode works on .grad as before."""
    return DistributedDataParallel(model, bucket_cap_mb=bucket_cap_mb, gradient_as_bucket_view=True)


class TrainStep:
    def __init__(self, run: StepSpec, ctx: DistContext, model: nn.Module, optimizer: torch.optim.Optimizer,
                 schedule: LrSchedule, nan_at_step: int | None = None):
        self.model, self.optimizer, self.schedule, self.ctx = model, optimizer, schedule, ctx
        choose_kernels(model, ctx.device)  # before anything is compiled: no compiled layer asks the host
        self.fp8 = encoder_to_fp8(model.bert.encoder, ctx.device) if run.precision == "fp8" else None
        if run.compile:
            compile_encoder(model, run.token_sizes, run.cuda_graphs)
        self.ddp = data_parallel(model, run.bucket_cap_mb) if ctx.distributed else None
        self.unpadded = run.unpadded
        self.accumulate = run.gradient_accumulation_steps
        self.autocast = StepAutocast(run.precision, ctx, fp8_context(self.fp8))
        self.scaler = torch.amp.GradScaler(ctx.device.type, init_scale=run.initial_loss_scale,
                                           enabled=run.precision == "fp16")
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.stable_grads = run.cuda_graphs
        if self.stable_grads:  # see zero_grad
            for p in self.params:
                p.grad = torch.zeros_like(p)
        self.clipping = run.clip_kind.build(ddp=self.ddp, params=self.params, clip_norm=run.clip_norm,
                                            scaler=self.scaler, accumulate=self.accumulate,
                                            comm_dtype=COMM_DTYPES[run.grad_comm_dtype])
        self.loss_sum = torch.zeros((), device=ctx.device)
        self.micro_batches = 0
        self.tokens = 0
        self.guard = NumericGuard(ctx.device, self.scaler.is_enabled(), run.max_loss_scale_overflows)
        self.nan_at_step = nan_at_step  # fault-injection tests only: this 1-based step's loss becomes NaN

    def __call__(self, loader, step: int) -> None:
        """Runs update number `step` (0-based) on the next `accumulate` batches of `loader`."""
        set_learning_rate(self.optimizer, self.schedule(step))
        step_loss = torch.zeros((), device=self.ctx.device)
        module = self.model if self.ddp is None else self.ddp
        for micro in range(self.accumulate):
            batch = next(loader)
            self.tokens += batch.num_tokens
            with self.clipping.micro_batch(last=micro == self.accumulate - 1):
                loss = self.forward_backward(batch, module, poison=step + 1 == self.nan_at_step)
            step_loss += loss.detach()
            self.micro_batches += 1
        self.loss_sum += step_loss
        norm, scale = self.update()
        self.guard.observe(step_loss, norm, scale, loss_scale(self.scaler, self.ctx.device))
        self.zero_grad()

    def forward_backward(self, batch, module: nn.Module, poison: bool = False) -> torch.Tensor:
        """One micro-batch through `module` (the model, or DDP's wrapper of it) under the step's autocast, and
        its scaled backward; returns the micro-batch's loss. `poison`: the loss becomes NaN (fault injection)."""
        with self.autocast:
            out = module(**batch.model_inputs(self.unpadded))
        loss = batch.loss(out)
        loss = loss * math.nan if poison else loss
        self.scaler.scale(loss / self.accumulate).backward()
        return loss

    def update(self) -> tuple[torch.Tensor | None, torch.Tensor | float]:
        """The update from the accumulated gradients: clipped and averaged as run.clip says, unscaled, applied
        (skipped on an fp16 overflow), the loss scale updated. Returns the clipped norm and the scale before."""
        norm = self.clipping.finish(self.optimizer)  # .grad: averaged over ranks, clipped, unscaled
        scale = loss_scale(self.scaler, self.ctx.device)
        self.scaler.step(self.optimizer)  # skipped when the gradient has an inf or NaN
        self.scaler.update()
        return norm, scale

    def zero_grad(self) -> None:
        """The gradients are set to None after each step. Under DDP the first backward of a step then copies
        each into its bucket, divided on the way (DDP points .grad at the bucket again): zeroing the bucket views
        in place instead would add a zeroing pass and a read-modify-write accumulation, 16 bytes more per
        parameter and step (8 with the bucket-wise clip hook; counted over a gloo step's operators). Under CUDA
        graphs the gradients keep their memory and are zeroed in place: a .grad that the first backward of a
        step allocated would be an output of the layers' backward graph, which the next replay (the next
        micro-batch's, with accumulation) overwrites."""
        if self.stable_grads:
            torch._foreach_zero_([p.grad for p in self.params])
        else:
            self.optimizer.zero_grad()

    def check_numerics(self) -> None:
        """Raises bert.numerics.NumericalFault if any rank saw one; a collective: call it on every rank."""
        self.guard.check(self.ctx)

    def pop_loss_and_tokens(self) -> tuple[float, int]:
        """(mean loss, real tokens of this rank) since the last pop, and starts counting anew; reads the loss from
        the device."""
        loss = self.loss_sum.item() / max(self.micro_batches, 1)
        tokens = self.tokens
        self.loss_sum.zero_()
        self.micro_batches, self.tokens = 0, 0
        return loss, tokens
