"""NVIDIA apex's fused LayerNorm when apex is importable, torch's own otherwise.

apex exists only inside NVIDIA's containers (the `apex` package on PyPI is an unrelated project), so the model
asks for `layer_norm(...)` here and gets torch's when apex is missing. apex's optimizers are chosen in
bert.optim.factory.
"""

from __future__ import annotations

import functools
import importlib
from types import ModuleType

from torch import nn


@functools.cache
def optional_module(name: str) -> ModuleType | None:
    """The module, or None when it (apex, Transformer Engine, torchao, or one of their compiled extensions) is not
    installed; asked once per process (a test's stand-in clears the cache)."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def fused_layer_norm_available() -> bool:
    module = optional_module("apex.normalization")
    return module is not None and hasattr(module, "FusedLayerNorm")


def layer_norm(size: int, eps: float) -> nn.Module:
    """apex FusedLayerNorm when available (it falls back to torch's kernel for CPU tensors), else torch's.

    Both hold `weight` and `bias` of shape [size], so parameter names and checkpoints do not change."""
    if fused_layer_norm_available():
        return optional_module("apex.normalization").FusedLayerNorm(size, eps=eps)
    return nn.LayerNorm(size, eps=eps)


def is_layer_norm(module: nn.Module) -> bool:
    if isinstance(module, nn.LayerNorm):
        return True
    return fused_layer_norm_available() and isinstance(module, optional_module("apex.normalization").FusedLayerNorm)
