"""The CUDA kernels an eager step would launch, counted on fake CUDA (fake_cuda.py) by a dispatch recorder.

Fake tensors run no kernel, so each operator's launches come from a model of CUDA's, read from torch's CUDA sources
(aten/src/ATen/native/cuda: ForeachBinaryOp*.cu, ForeachUtils.h, MultiTensorApply.cuh, Shape.cu):
- views, aliases and allocations launch nothing;
- a foreach (multi-tensor) operator takes its fast route only where every tensor of its lists shares one device
  and one dtype and is dense, the lists match tensor for tensor in shape and strides, a scalar tensor has the
  lists' dtype and a number keeps it; there it launches one kernel per batch of tensors and 64 KiB-element chunks
  (multi_tensor_apply's limits), elsewhere one kernel per tensor (its slow route). `_foreach_norm` adds one
  clean-up kernel;
- cat and stack copy up to 128 contiguous inputs a launch;
- every other operator launches one kernel.
A model, not a measurement: acceptance/gpu_check.sh profiles the real kernels on a GPU. What it is for: a count
that per-tensor launches cannot hide in (a hundred small launches of the slow route count as a hundred).
"""

from __future__ import annotations

import contextlib
import math
from collections import Counter
from dataclasses import dataclass, field

import torch
from torch._prims_common import is_non_overlapping_and_dense_or_false
from torch.utils._python_dispatch import TorchDispatchMode

from tests.cuda_path.fake_cuda import _device

_ALLOCATIONS = {torch.ops.aten.empty.memory_format, torch.ops.aten.empty_strided.default,
                torch.ops.aten._unsafe_view.default}
CHUNK = 65536  # elements per block of multi_tensor_apply (kChunkSize)
MAX_BLOCKS = 320  # blocks per launch (depth_to_max_blocks)
MAX_TENSORS = (110, 64, 48, 36, 30)  # tensors per launch by the number of lists (depth_to_max_tensors)
CAT_BATCH = 128  # inputs per launch of the batched cat kernel
DIVISIONS = ("div", "reciprocal", "pow", "sqrt", "rsqrt")  # integer lists take the slow route (division_op)


def _lists(args: tuple) -> list[list[torch.Tensor]]:
    return [list(a) for a in args if isinstance(a, (list, tuple)) and a and isinstance(a[0], torch.Tensor)]


def _dense(t: torch.Tensor) -> bool:
    return t.layout == torch.strided and is_non_overlapping_and_dense_or_false(t)


def fast_route(func: torch._ops.OpOverload, args: tuple, kwargs: dict) -> bool:
    """Whether CUDA runs this foreach operator as multi-tensor kernels (can_use_fast_route and its callers)."""
    lists = _lists(args)
    first = lists[0]
    dtype, device = first[0].dtype, _device(first[0])
    if any(t.dtype != dtype or _device(t) != device or not _dense(t) for lst in lists for t in lst):
        return False
    if any(a.shape != b.shape or a.stride() != b.stride() for lst in lists[1:] for a, b in zip(first, lst)):
        return False
    if not dtype.is_floating_point and any(name in func.__name__ for name in DIVISIONS):
        return False
    scalars = [a for a in (*args, *kwargs.values()) if not isinstance(a, (list, tuple))]
    for s in scalars:
        if isinstance(s, torch.Tensor) and s.dtype != dtype:
            return False
        if isinstance(s, (int, float)) and not isinstance(s, bool) and torch.result_type(first[0], s) != dtype:
            return False
    scalar_lists = [a for a in args if isinstance(a, (list, tuple)) and a and not isinstance(a[0], torch.Tensor)]
    return all(torch.result_type(first[0], s) == dtype for lst in scalar_lists for s in lst)


def multi_tensor_launches(tensors: list[torch.Tensor], depth: int) -> int:
    """multi_tensor_apply's launches over `tensors` with `depth` lists: one whenever its tensor or block table fills."""
    launches = blocks = held = 0
    for t in tensors:
        if t.numel() == 0:
            continue
        held += 1
        chunks = math.ceil(t.numel() / CHUNK)
        for chunk in range(chunks):
            blocks += 1
            last = chunk == chunks - 1
            if (held == MAX_TENSORS[depth - 1] and last) or blocks == MAX_BLOCKS:
                launches, blocks = launches + 1, 0
                held = 0 if last else 1
    return launches + (blocks > 0)


def launches(func: torch._ops.OpOverload, args: tuple, kwargs: dict, out: object) -> int:
    """The kernels CUDA launches for one call (see the module's docstring)."""
    if func.is_view or func in _ALLOCATIONS:
        return 0
    name = func.__name__
    if name.startswith("_foreach_"):
        lists = _lists(args)
        if not fast_route(func, args, kwargs):
            return len(lists[0])
        depth = len(lists) + (isinstance(out, (list, tuple)) and not name.startswith("_foreach_norm"))
        return multi_tensor_launches(lists[0], min(depth, len(MAX_TENSORS))) + name.startswith("_foreach_norm")
    if func in (torch.ops.aten.cat.default, torch.ops.aten.stack.default):
        inputs = args[0]
        return math.ceil(len(inputs) / CAT_BATCH) if all(t.is_contiguous() for t in inputs) else len(inputs)
    return 1


@dataclass
class KernelCount:
    by_op: Counter[str] = field(default_factory=Counter)  # kernels launched, by operator
    slow_routes: list[str] = field(default_factory=list)  # foreach calls that launch once per tensor

    @property
    def total(self) -> int:
        return sum(self.by_op.values())


class KernelCounter(TorchDispatchMode):
    """Counts the kernels of every operator below it (`launches`) into `count`."""

    def __init__(self):
        super().__init__()
        self.count = KernelCount()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if func.namespace not in ("prim", "profiler"):
            kernels = launches(func, args, kwargs, out)
            if kernels:
                self.count.by_op[str(func)] += kernels
            if func.__name__.startswith("_foreach_") and not fast_route(func, args, kwargs):
                self.count.slow_routes.append(f"{func} over {len(_lists(args)[0])} tensors")
        return out


def lamb_update_kernels(overflow_flag: bool) -> KernelCount:
    """The kernels of one eager LAMB update of BERT-large's parameters as the step runs it (the clip factor handed
    over; with fp16's overflow flag or without), the second update (the first also creates the moments)."""
    from bert.model.config import named_config
    from bert.model.pretraining import BertForPreTraining
    from bert.optim.factory import parameter_groups
    from bert.optim.lamb import Lamb
    from tests.cuda_path.fake_cuda import CUDA, FakeCuda

    fake = FakeCuda()
    with torch.device("meta"):
        model = BertForPreTraining(named_config("large"))
    model = fake.module(model)
    counter = KernelCounter()
    with fake.mode:
        optimizer = Lamb(parameter_groups(model, 0.01), lr=1e-3)
        for p in model.parameters():
            p.grad = torch.zeros_like(p)
        for update in range(2):
            optimizer.clip_factor = torch.ones((), device=CUDA)
            if overflow_flag:
                optimizer.found_inf = torch.zeros((), device=CUDA)
            with counter if update else contextlib.nullcontext():
                optimizer.step()
    return counter.count
