"""FP8 for the encoder's Linear layers (run.precision "fp8"), bf16 autocast everywhere else.

`encoder_to_fp8(encoder, device)` swaps the encoder's Linear layers for FP8 ones in place and returns the
implementation it chose: Transformer Engine's Linear where it is importable (NVIDIA's containers; never
installed from a registry), else torchao's Float8Linear (`fp8_backend()` says which, None for neither).
`fp8_context(backend)` is the context the step enters with torch's autocast (Transformer Engine's fp8_autocast;
nothing for torchao). Each Linear keeps its fp32 `weight` and `bias` under their names. A GPU below compute
capability 8.9 raises Fp8Unavailable. The formats, scales and what the tests hold: docs/performance.md, "Compiled
by default, and FP8".
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Callable
from contextlib import AbstractContextManager

import torch
from torch import nn

from bert.model.fused import optional_module

TRANSFORMER_ENGINE, TORCHAO = "transformer_engine", "torchao"
MIN_CAPABILITY = (8, 9)  # FP8 tensor cores: Ada and Hopper on


class Fp8Unavailable(RuntimeError):
    """run.precision "fp8" cannot run here; the message says why and what to do."""


@functools.cache
def _torchao_float8():
    """torchao.float8, or None. torchao loads its compiled extensions at import and warns for each that does not
    match this torch or Python (none of them is needed here): those warnings are kept out of the run's output."""
    logger = logging.getLogger("torchao")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        return optional_module("torchao.float8")
    finally:
        logger.setLevel(level)


def fp8_backend() -> str | None:
    """Which FP8 implementation this machine has: Transformer Engine first, then torchao; None: neither."""
    if optional_module("transformer_engine.pytorch") is not None:
        return TRANSFORMER_ENGINE
    return TORCHAO if _torchao_float8() is not None else None


def fp8_problem(device: torch.device) -> str | None:
    """Why run.precision "fp8" cannot run on `device` here (no implementation, a GPU without FP8 tensor cores), or
    None: what encoder_to_fp8 refuses, asked by the pre-flight before any run starts."""
    if fp8_backend() is None:
        return ("run.precision \"fp8\" needs torchao (pip install 'torchao==0.18.0', see setup.cfg's fp8 extra) or "
                "NVIDIA Transformer Engine; install torchao, or use bf16")
    if device.type == "cuda" and torch.cuda.get_device_capability(device) < MIN_CAPABILITY:
        capability = ".".join(map(str, torch.cuda.get_device_capability(device)))
        return (f"run.precision \"fp8\" needs FP8 tensor cores (compute capability 8.9 or more: L4, L40, H100, "
                f"H200, B200); {torch.cuda.get_device_name(device)} has {capability}: use bf16")
    return None


def encoder_to_fp8(encoder: nn.Module, device: torch.device) -> str:
    """Makes every Linear layer of `encoder` an FP8 one, in place (its parameters kept); returns the backend."""
    problem = fp8_problem(device)
    if problem is not None:
        raise Fp8Unavailable(problem)
    backend = fp8_backend()
    if backend == TRANSFORMER_ENGINE:
        _swap_linears(encoder, _transformer_engine_linear)
    else:
        float8 = _torchao_float8()
        config = float8.Float8LinearConfig(emulate=device.type != "cuda", pad_inner_dim=True)
        float8.convert_to_float8_training(encoder, config=config)
    return backend


def fp8_context(backend: str | None) -> Callable[[], AbstractContextManager]:
    """What the step enters around each forward beside torch's autocast: Transformer Engine's fp8_autocast for its
    layers; nothing for torchao's (each Float8Linear casts by itself) or without FP8."""
    if backend != TRANSFORMER_ENGINE:
        return contextlib.nullcontext
    te = optional_module("transformer_engine.pytorch")
    recipe = optional_module("transformer_engine.common.recipe")
    hybrid = recipe.DelayedScaling(fp8_format=recipe.Format.HYBRID)  # E4M3 forward, E5M2 backward
    return functools.partial(te.fp8_autocast, enabled=True, fp8_recipe=hybrid)


def _transformer_engine_linear(linear: nn.Linear) -> nn.Module:
    te = optional_module("transformer_engine.pytorch")
    fp8 = te.Linear(linear.in_features, linear.out_features, bias=linear.bias is not None,
                    params_dtype=linear.weight.dtype, device=linear.weight.device)
    fp8.weight = linear.weight  # the same parameters: the optimizer and the checkpoints keep them
    if linear.bias is not None:
        fp8.bias = linear.bias
    return fp8


def _swap_linears(module: nn.Module, make: Callable[[nn.Linear], nn.Module]) -> None:
    for name, child in module.named_children():
        if type(child) is nn.Linear:
            setattr(module, name, make(child))
        else:
            _swap_linears(child, make)
