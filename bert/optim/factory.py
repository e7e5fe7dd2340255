"""Optimizer construction from the descriptor: parameter groups and the learning-rate schedule."""

from __future__ import annotations

import torch
from torch import nn

from bert.optim.lamb import Lamb
from bert.optim.schedule import LrSchedule
from bert.system import OptimizerSpec


def excluded_from_weight_decay(name: str) -> bool:
    """The reference excludes LayerNorm parameters and all biases from weight decay and layer adaptation."""
    return "layer_norm" in name or name.endswith("bias")


def parameter_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if p.requires_grad:
            (no_decay if excluded_from_weight_decay(name) else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def build_optimizer(model: nn.Module, spec: OptimizerSpec) -> torch.optim.Optimizer:
    groups = parameter_groups(model, spec.weight_decay_rate)
    return Lamb(groups, lr=spec.base_learning_rate, betas=(spec.beta_1, spec.beta_2), eps=spec.epsilon)


def build_schedule(spec: OptimizerSpec) -> LrSchedule:
    return LrSchedule(
        base_lr=spec.base_learning_rate, decay_steps=spec.training_steps, warmup_steps=spec.warmup_steps,
        start_warmup_step=spec.start_warmup_step, end_lr=spec.end_learning_rate, power=spec.poly_power,
    )


def set_learning_rate(optimizer: torch.optim.Optimizer, lr: float) -> None:
    for group in optimizer.param_groups:
        group["lr"] = lr
