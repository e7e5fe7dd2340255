"""A stand-in for NVIDIA apex, which exists only inside NVIDIA's containers with their CUDA extensions (the
`apex` on PyPI is an unrelated project): importable modules under the names the harness looks for, whose
classes behave as apex's do where the harness could tell them apart.

- apex.normalization.FusedLayerNorm: a LayerNorm module that is not nn.LayerNorm (apex's calls its CUDA
  extension, which Dynamo cannot trace).
- apex.optimizers.FusedLAMB and FusedAdam: optimizers without `_step_supports_amp_scaling`, as apex's (FusedAdam
  has it only when built `capturable`): GradScaler reads their overflow flag back to the host every fp16 step.
  Their update is plain SGD; a test that sees it run has caught the harness choosing them.
- amp_C: apex's multi-tensor kernels, which code probes for before it trusts apex's optimizers.
"""

from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Iterator

import torch
from torch import nn


class FusedLayerNorm(nn.Module):
    def __init__(self, normalized_shape: int, eps: float = 1e-5):
        super().__init__()
        self.normalized_shape = (normalized_shape,)
        self.weight, self.bias = nn.Parameter(torch.ones(normalized_shape)), nn.Parameter(torch.zeros(normalized_shape))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)


class _FusedOptimizer(torch.optim.Optimizer):
    def __init__(self, params, lr: float, **settings):
        super().__init__(params, {"lr": lr, **settings})

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.add_(p.grad, alpha=-group["lr"])


class FusedLAMB(_FusedOptimizer):
    pass


class FusedAdam(_FusedOptimizer):
    pass


def _modules() -> dict[str, types.ModuleType]:
    apex, normalization, optimizers = (types.ModuleType(n) for n in ("apex", "apex.normalization", "apex.optimizers"))
    normalization.FusedLayerNorm = FusedLayerNorm
    optimizers.FusedLAMB, optimizers.FusedAdam = FusedLAMB, FusedAdam
    apex.normalization, apex.optimizers = normalization, optimizers
    return {"apex": apex, "apex.normalization": normalization, "apex.optimizers": optimizers,
            "amp_C": types.ModuleType("amp_C")}


@contextlib.contextmanager
def importable(modules: dict[str, types.ModuleType]) -> Iterator[None]:
    """Inside: `import <name>` finds each of `modules` (stand-ins); bert.model.fused looks again, on the way in and
    out."""
    from bert.model import fused

    saved = {name: sys.modules.get(name) for name in modules}
    sys.modules.update(modules)
    fused.optional_module.cache_clear()
    try:
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
        fused.optional_module.cache_clear()


def apex_importable() -> contextlib.AbstractContextManager:
    """Inside: `import apex` (and its parts, and amp_C) finds the stand-in."""
    return importable(_modules())
