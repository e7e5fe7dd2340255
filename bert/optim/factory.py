"""Optimizer construction from the descriptor: parameter groups, the optimizer its kind builds (bert.optim.kinds)
and the schedule.

LAMB (the closed division's) and AdamW (decoupled weight decay; open division). LAMB is
bert.optim.lamb, in foreach kernels or, with `implementation` "compiled", through torch.compile; AdamW is
torch's, fused on CUDA and foreach on the CPU. Both take GradScaler's overflow flag on the device
(`_step_supports_amp_scaling`). NVIDIA apex's FusedLAMB and FusedAdam are not used, even where apex is
importable: neither takes that flag, so under fp16 GradScaler would read it back to the host every step, and
FusedLAMB takes one trust ratio per tensor, where the fused query/key/value parameter holds three reference
tensors. Clipping is never the optimizer's job here: it happens in the step (bert.distributed.clipping), before
or after the allreduce as the descriptor says.
"""

from __future__ import annotations

import torch
from torch import nn

from bert.model.config import BertConfig
from bert.model.tf_names import fused_parts
from bert.optim.lamb import Lamb
from bert.optim.schedule import LrSchedule
from bert.optim.settings import OptimizerSpec


def excluded_from_weight_decay(name: str) -> bool:
    """The reference excludes LayerNorm parameters and all biases from weight decay and layer adaptation, by
    name ("LayerNorm", "layer_norm" or "bias" in the TF name), whatever the decay rate. This model's names say
    the same: "layer_norm" where TF says LayerNorm, and every TF bias (output_bias too) ends in "bias"."""
    return "layer_norm" in name or name.endswith("bias")


def parameter_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """The decayed and the undecayed parameters. Decay and LAMB's trust ratio follow the name alone, as in the
    reference, so a decay rate of 0 keeps the adaptation (AdamW ignores `layer_adaptation`). Each group lists the
    number of reference tensors each of its parameters holds ("parts": 3 for the fused query/key/value,
    bert.model.tf_names), for LAMB's trust ratios."""
    config = getattr(model, "config", None)
    fused = fused_parts(config) if isinstance(config, BertConfig) else {}
    decay, no_decay = {"params": [], "parts": []}, {"params": [], "parts": []}
    for name, p in model.named_parameters():
        if p.requires_grad:
            group = no_decay if excluded_from_weight_decay(name) else decay
            group["params"].append(p)
            group["parts"].append(fused.get(name, 1))
    return [{**decay, "weight_decay": weight_decay, "layer_adaptation": True},
            {**no_decay, "weight_decay": 0.0, "layer_adaptation": False}]


def build_optimizer(model: nn.Module, spec: OptimizerSpec) -> torch.optim.Optimizer:
    """The descriptor's optimizer over `model`, as its kind builds it (bert.optim.kinds)."""
    groups = parameter_groups(model, spec.weight_decay_rate)
    return spec.kind.build(groups, spec, next(model.parameters()).is_cuda)


def build_lamb(groups: list[dict], spec: OptimizerSpec, cuda: bool) -> Lamb:
    """LAMB (bert.optim.lamb), in foreach kernels or through torch.compile as run.optimizer.implementation says."""
    return Lamb(groups, lr=spec.base_learning_rate, betas=(spec.beta_1, spec.beta_2), eps=spec.epsilon,
                compiled=spec.implementation == "compiled")


def build_adamw(groups: list[dict], spec: OptimizerSpec, cuda: bool) -> torch.optim.AdamW:
    """torch's AdamW: fused on CUDA, foreach kernels on a CPU."""
    return torch.optim.AdamW(groups, lr=spec.base_learning_rate, betas=(spec.beta_1, spec.beta_2), eps=spec.epsilon,
                             **({"fused": True} if cuda else {"foreach": True}))


def build_schedule(spec: OptimizerSpec) -> LrSchedule:
    return LrSchedule(
        base_lr=spec.base_learning_rate, decay_steps=spec.training_steps, warmup_steps=spec.warmup_steps,
        start_warmup_step=spec.start_warmup_step, end_lr=spec.end_learning_rate, power=spec.poly_power,
    )


def set_learning_rate(optimizer: torch.optim.Optimizer, lr: float) -> None:
    for group in optimizer.param_groups:
        group["lr"] = lr
