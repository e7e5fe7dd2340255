"""A stand-in for NVIDIA Transformer Engine, which exists only inside NVIDIA's containers (it is never installed from
a registry here): importable modules under the names bert.model.fp8 looks for, whose pieces behave as Transformer
Engine's do where the harness could tell them apart.

- transformer_engine.pytorch.Linear: a Linear module that is not nn.Linear, with its own `weight` and `bias`
  parameters (the harness must hand it the model's), which records whether it ran under fp8_autocast.
- transformer_engine.pytorch.fp8_autocast: a context manager taking `enabled` and `fp8_recipe`, as Transformer
  Engine's does; it records the recipe it was entered with.
- transformer_engine.common.recipe: DelayedScaling and Format.HYBRID (E4M3 forward, E5M2 backward).
Its Linear computes in high precision: a test that sees FP8 values here has not run this stand-in.
"""

from __future__ import annotations

import contextlib
import enum
import types
from collections.abc import Iterator
from dataclasses import dataclass

import torch
from torch import nn

from tests.helpers.stand_in_apex import importable

ENTERED: list[object] = []  # the recipe of every fp8_autocast entered, in order
_active: list[object] = []


class Linear(nn.Module):
    def __init__(self, in_features: int, out_features: int, bias: bool = True, params_dtype=torch.float32,
                 device=None):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(out_features, in_features, dtype=params_dtype, device=device))
        self.bias = nn.Parameter(torch.empty(out_features, dtype=params_dtype, device=device)) if bias else None
        self.ran_in_fp8: list[bool] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.ran_in_fp8.append(bool(_active))
        return nn.functional.linear(x, self.weight, self.bias)


@contextlib.contextmanager
def fp8_autocast(enabled: bool = True, fp8_recipe: object = None) -> Iterator[None]:
    ENTERED.append(fp8_recipe)
    _active.append(fp8_recipe)
    try:
        yield
    finally:
        _active.pop()


class Format(enum.Enum):
    E4M3 = "E4M3"
    HYBRID = "HYBRID"


@dataclass(frozen=True)
class DelayedScaling:
    fp8_format: Format = Format.HYBRID


def _modules() -> dict[str, types.ModuleType]:
    te, pytorch, common, recipe = (types.ModuleType(n) for n in (
        "transformer_engine", "transformer_engine.pytorch", "transformer_engine.common",
        "transformer_engine.common.recipe"))
    pytorch.Linear, pytorch.fp8_autocast = Linear, fp8_autocast
    recipe.DelayedScaling, recipe.Format = DelayedScaling, Format
    te.pytorch, te.common, common.recipe = pytorch, common, recipe
    return {"transformer_engine": te, "transformer_engine.pytorch": pytorch, "transformer_engine.common": common,
            "transformer_engine.common.recipe": recipe}


@contextlib.contextmanager
def transformer_engine_importable() -> Iterator[None]:
    """Inside: `import transformer_engine` (and its parts) finds the stand-in."""
    ENTERED.clear()
    with importable(_modules()):
        yield
