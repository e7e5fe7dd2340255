"""One optimizer step: micro-batches under autocast, backward (DDP averages the gradients), clipping, update.

Nothing here waits for the device: the loss is accumulated on the device and read only when asked for.
"""

from __future__ import annotations

import contextlib

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from bert.distributed.clipping import clip_global_norm
from bert.distributed.launch import DistContext
from bert.model import compile_encoder
from bert.optim.factory import set_learning_rate
from bert.optim.schedule import LrSchedule
from bert.system import System


def autocast_for(system: System, ctx: DistContext) -> torch.autocast:
    precision = system.run.precision
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision, torch.float32)
    return torch.autocast(ctx.device.type, dtype=dtype, enabled=precision != "fp32")


class TrainStep:
    def __init__(self, system: System, ctx: DistContext, model: nn.Module, optimizer: torch.optim.Optimizer,
                 schedule: LrSchedule):
        run = system.run
        self.model, self.optimizer, self.schedule, self.ctx = model, optimizer, schedule, ctx
        if run.compile:
            compile_encoder(model)
        self.trained = DistributedDataParallel(model) if ctx.distributed else model
        self.padded = not run.unpadded
        self.accumulate = run.gradient_accumulation_steps
        self.clip_norm = run.clip_norm
        self.autocast = autocast_for(system, ctx)
        self.scaler = torch.amp.GradScaler(ctx.device.type, enabled=run.precision == "fp16")
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.loss_sum = torch.zeros((), device=ctx.device)
        self.micro_batches = 0
        self.tokens = 0

    def __call__(self, loader, step: int) -> None:
        """Runs update number `step` (0-based) on the next `accumulate` batches of `loader`."""
        set_learning_rate(self.optimizer, self.schedule(step))
        for micro in range(self.accumulate):
            batch = next(loader)
            self.tokens += batch.num_tokens
            last = micro == self.accumulate - 1
            # Gradients of earlier micro-batches stay local; DDP reduces once, after the last one.
            sync = contextlib.nullcontext() if last or not self.ctx.distributed else self.trained.no_sync()
            with sync:
                with self.autocast:
                    out = self.trained(**batch.model_inputs(self.padded))
                self.scaler.scale(out.loss / self.accumulate).backward()
            self.loss_sum += out.loss.detach()
            self.micro_batches += 1
        self.scaler.unscale_(self.optimizer)
        clip_global_norm(self.params, self.clip_norm)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.optimizer.zero_grad(set_to_none=True)

    def take_window(self) -> tuple[float, int]:
        """(mean loss, real tokens of this rank) since the last call; reads the loss from the device."""
        loss = self.loss_sum.item() / max(self.micro_batches, 1)
        tokens = self.tokens
        self.loss_sum.zero_()
        self.micro_batches, self.tokens = 0, 0
        return loss, tokens
