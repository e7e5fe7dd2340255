"""Optimizer construction from the descriptor: parameter groups, the optimizer family and the schedule.

`lamb` (the closed division's) and `adam` (AdamW, decoupled weight decay; open division). LAMB with
`implementation` "compiled" is bert.optim.lamb compiled with torch.compile, on any device. Otherwise, on CUDA,
NVIDIA apex's fused kernels are used when apex is importable (NVIDIA containers); without apex LAMB is
bert.optim.lamb in foreach kernels and AdamW is torch's, fused on CUDA and foreach on the CPU. Clipping is
never the optimizer's job here: it happens in the step (bert.distributed.clipping), before or after the
allreduce as the descriptor says.
"""

from __future__ import annotations

import math
from types import ModuleType

import torch
from torch import nn

from bert.optim.lamb import Lamb
from bert.optim.schedule import LrSchedule
from bert.system import OptimizerSpec


def excluded_from_weight_decay(name: str) -> bool:
    """The reference excludes LayerNorm parameters and all biases from weight decay and layer adaptation, by
    name ("LayerNorm", "layer_norm" or "bias" in the TF name), whatever the decay rate. This model's names say
    the same: "layer_norm" where TF says LayerNorm, and every TF bias (output_bias too) ends in "bias"."""
    return "layer_norm" in name or name.endswith("bias")


def parameter_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """Two groups: decayed and adapted (LAMB's trust ratio), and neither. Adaptation follows the name alone, as
    in the reference, so a decay rate of 0 keeps it (AdamW ignores `layer_adaptation`)."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if p.requires_grad:
            (no_decay if excluded_from_weight_decay(name) else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay, "layer_adaptation": True},
            {"params": no_decay, "weight_decay": 0.0, "layer_adaptation": False}]


FUSED_LAMB_WITHOUT_DECAY = (
    "run.optimizer.weight_decay_rate 0 with apex's FusedLAMB: apex applies the trust ratio only to tensors with "
    "weight decay, the reference to every tensor but biases and LayerNorm; set run.optimizer.implementation "
    "to \"compiled\" (this harness's LAMB, the reference's update) or use a positive weight_decay_rate")


def apex_optimizers() -> ModuleType | None:
    """`apex.optimizers` when NVIDIA apex is importable with its CUDA extensions, else None."""
    try:
        import amp_C  # noqa: F401  (apex's fused kernels; the PyPI package named apex is something else)
        from apex import optimizers
    except ImportError:
        return None
    return optimizers


def build_optimizer(model: nn.Module, spec: OptimizerSpec, apex: ModuleType | None = None) -> torch.optim.Optimizer:
    """The descriptor's optimizer over `model`; `apex` is apex.optimizers, looked up when the model is on CUDA."""
    groups = parameter_groups(model, spec.weight_decay_rate)
    cuda = next(model.parameters()).is_cuda
    if apex is None and cuda:
        apex = apex_optimizers()
    settings = {"lr": spec.base_learning_rate, "betas": (spec.beta_1, spec.beta_2), "eps": spec.epsilon}
    if spec.name == "lamb":
        if apex is None or spec.implementation == "compiled":
            return Lamb(groups, **settings, compiled=spec.implementation == "compiled")
        # FusedLAMB clips by the global norm itself (by norm / max_grad_norm when the norm is larger); an
        # infinite maximum turns that off, so the step's clipping mode is the only clipping. use_nvlamb=False
        # keeps the reference's groups: no trust ratio for the tensors without weight decay. But apex ties the
        # trust ratio to a non-zero decay, so at 0 it would leave out the reference's adaptation of the rest.
        if spec.weight_decay_rate == 0:
            raise ValueError(FUSED_LAMB_WITHOUT_DECAY)
        return apex.FusedLAMB(groups, **settings, max_grad_norm=math.inf, use_nvlamb=False)
    if apex is not None:
        return apex.FusedAdam(groups, **settings, adam_w_mode=True)
    return torch.optim.AdamW(groups, **settings, **({"fused": True} if cuda else {"foreach": True}))


def build_schedule(spec: OptimizerSpec) -> LrSchedule:
    return LrSchedule(
        base_lr=spec.base_learning_rate, decay_steps=spec.training_steps, warmup_steps=spec.warmup_steps,
        start_warmup_step=spec.start_warmup_step, end_lr=spec.end_learning_rate, power=spec.poly_power,
    )


def set_learning_rate(optimizer: torch.optim.Optimizer, lr: float) -> None:
    for group in optimizer.param_groups:
        group["lr"] = lr
