"""Memory traffic of one optimizer update, in bytes per parameter, for the update a descriptor runs.

An update is memory-bound: its time is the bytes it moves over the memory bandwidth (bert.simulate). Eager
LAMB (bert.optim.lamb.lamb_update_ in foreach kernels) is counted here by running it on meta tensors and
adding up what every operator reads and writes, with GradScaler's unscaling and overflow handling under fp16.
A fused update moves each tensor once per pass over memory; that is a model of the kernels torch.compile (or
apex, or torch's fused AdamW) emits, not a count: LAMB's trust ratio needs the norms of the weights and of the
whole update before any weight is written, so it takes two passes, AdamW one.
"""

from __future__ import annotations

import functools

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from bert.model.size import FP32_BYTES
from bert.optim.lamb import lamb_update_
from bert.optim.settings import OptimizerSpec

# Tensors moved per parameter by a fused update. LAMB: read g, m, v, w and write m, v while the norms are
# summed, then read m, v, w again to write w. AdamW: read g, m, v, w and write m, v, w, once.
FUSED_LAMB_TENSORS = 6 + 4
FUSED_ADAMW_TENSORS = 7
_COUNTED_ELEMENTS = 1 << 20  # per tensor; per-tensor scalars (norms, step counts) then round to nothing


class _TrafficCounter(TorchDispatchMode):
    """Adds up the bytes of the full-size tensors each operator reads (its inputs), writes in place (its
    mutated inputs) and writes out (its outputs that alias no input)."""

    def __init__(self, elements: int):
        super().__init__()
        self.elements, self.bytes = elements, 0

    def _size(self, value: object) -> int:
        tensors = value if isinstance(value, (list, tuple)) else [value]
        return sum(t.numel() * t.element_size() for t in tensors
                   if isinstance(t, torch.Tensor) and t.numel() >= self.elements)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        schema = func._schema
        values = dict(zip((a.name for a in schema.arguments), args)) | kwargs
        for argument in schema.arguments:
            value = values.get(argument.name)
            written = argument.alias_info is not None and argument.alias_info.is_write
            self.bytes += self._size(value) * (2 if written else 1)
        results = out if isinstance(out, tuple) and len(schema.returns) > 1 else (out,)
        for returned, value in zip(schema.returns, results):
            if returned.alias_info is None:
                self.bytes += self._size(value)
        return out


@functools.cache
def eager_lamb_bytes_per_parameter(loss_scaling: bool) -> float:
    """Counted: what the foreach LAMB update reads and writes per fp32 parameter of a decayed tensor (nearly
    all of BERT's), with GradScaler's overflow flag and scale when `loss_scaling` (fp16)."""
    n = _COUNTED_ELEMENTS
    with torch.device("meta"):
        params, grads, exp_avgs, exp_avg_sqs = ([torch.empty(n)] for _ in range(4))
        steps = [torch.zeros((), dtype=torch.float64)]
        scaling = {"found_inf": torch.zeros(()), "grad_scale": torch.ones(())} if loss_scaling else {}
        with _TrafficCounter(n) as counter:
            lamb_update_(params, grads, exp_avgs, exp_avg_sqs, steps, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-6,
                         weight_decay=0.01, **scaling)
    return counter.bytes / n


def optimizer_bytes_per_parameter(spec: OptimizerSpec, precision: str) -> float:
    """Bytes one update moves per parameter, for the optimizer and implementation of `spec` on a GPU without
    apex, as its kind counts them (bert.optim.kinds)."""
    return spec.kind.update_bytes(spec, precision)


def lamb_update_bytes(spec: OptimizerSpec, precision: str) -> float:
    """LAMB's update: eager counted, compiled modelled as fused passes."""
    if spec.implementation == "compiled":
        return FUSED_LAMB_TENSORS * FP32_BYTES
    return eager_lamb_bytes_per_parameter(precision == "fp16")


def adamw_update_bytes(spec: OptimizerSpec, precision: str) -> float:
    """torch's fused AdamW, modelled as one fused pass."""
    return FUSED_ADAMW_TENSORS * FP32_BYTES
