"""NVIDIA apex's fused kernels when apex is importable, torch's own otherwise.

apex exists only inside NVIDIA's containers (the `apex` package on PyPI is an unrelated project), so every
use goes through these helpers: the model asks for `layer_norm(...)`, the optimizer factory may ask for
`fused_lamb(...)`, and both fall back to torch when apex (or its CUDA extensions) is missing.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterable
from types import ModuleType

import torch
from torch import nn


@functools.cache
def _optional_module(name: str) -> ModuleType | None:
    """The module, or None when it (apex, or one of its compiled extensions) is not installed."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def fused_layer_norm_available() -> bool:
    module = _optional_module("apex.normalization")
    return module is not None and hasattr(module, "FusedLayerNorm")


def fused_lamb_available() -> bool:
    """apex.optimizers imports without its CUDA extensions; FusedLAMB needs them (amp_C)."""
    module = _optional_module("apex.optimizers")
    return module is not None and hasattr(module, "FusedLAMB") and _optional_module("amp_C") is not None


def layer_norm(size: int, eps: float) -> nn.Module:
    """apex FusedLayerNorm when available (it falls back to torch's kernel for CPU tensors), else torch's.

    Both hold `weight` and `bias` of shape [size], so parameter names and checkpoints do not change."""
    if fused_layer_norm_available():
        return _optional_module("apex.normalization").FusedLayerNorm(size, eps=eps)
    return nn.LayerNorm(size, eps=eps)


def is_layer_norm(module: nn.Module) -> bool:
    if isinstance(module, nn.LayerNorm):
        return True
    return fused_layer_norm_available() and isinstance(module, _optional_module("apex.normalization").FusedLayerNorm)


def fused_lamb(params: Iterable, lr: float, betas: tuple[float, float], eps: float, weight_decay: float,
               max_grad_norm: float) -> torch.optim.Optimizer:
    """apex FusedLAMB with the reference semantics of bert.optim.lamb.Lamb; raises if it is unavailable.

    The reference semantics: bias-corrected moments, epsilon inside the Adam step, decoupled weight decay, and
    the trust ratio only for tensors with weight decay (use_nvlamb=False). apex clips the gradients to the
    global norm `max_grad_norm` inside the step, so a step that uses it must not clip again. It cannot be
    told not to clip: max_grad_norm 0 would divide every gradient by infinity.
    """
    if not fused_lamb_available():
        raise RuntimeError("apex FusedLAMB is not available (apex with its CUDA extensions is not importable); "
                           "use bert.optim.lamb.Lamb")
    if max_grad_norm <= 0:
        raise ValueError(f"max_grad_norm must be positive, got {max_grad_norm}")
    return _optional_module("apex.optimizers").FusedLAMB(
        params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, bias_correction=True,
        adam_w_mode=True, grad_averaging=True, max_grad_norm=max_grad_norm, use_nvlamb=False,
    )
