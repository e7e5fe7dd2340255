"""Where the time of a profiled piece of work goes: summed by kind of work (attention, matmuls, LayerNorm, the
optimizer, the rest), the kernels that took the most, and the peak memory. On a GPU it is the kernels' device
time; on a CPU the operators' own CPU time. Used by benchmarks/throughput.py (--profile) and
acceptance/layer_checks.py (the layer stage of gpu_check)."""

from __future__ import annotations

import re
import resource
import time
from collections.abc import Callable

import torch
from torch.profiler import ProfilerActivity, profile

from benchmarks.common.timing import sync

# First match wins; kernel names on Hopper: nvjet/sm90_xmma (cuBLAS GEMMs), fmha/flash/efficient (attention).
CATEGORIES = (
    ("attention", re.compile(r"attention|flash|fmha|sdpa|softmax|varlen", re.I)),
    ("matmul", re.compile(r"gemm|matmul|\bmm\b|addmm|bmm|linear|cutlass|nvjet|xmma|cublas|sm90|sm80", re.I)),
    ("optimizer", re.compile(r"foreach|multi_tensor|lamb|adam", re.I)),
    ("layer norm", re.compile(r"layer_?norm", re.I)),
)
OTHER = "elementwise and other"


def category(name: str) -> str:
    return next((label for label, pattern in CATEGORIES if pattern.search(name)), OTHER)


def profile_once(work: Callable[[], object], device: torch.device) -> tuple[profile, float]:
    """Runs `work` once under torch.profiler; returns the profile and the wall seconds it took."""
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    sync(device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    with profile(activities=activities) as prof:
        start = time.perf_counter()
        work()
        sync(device)
        seconds = time.perf_counter() - start
    return prof, seconds


def timings(prof: profile, device: torch.device) -> list[tuple[str, float]]:
    """(name, seconds) of every kernel (GPU) or of every operator's own time (CPU)."""
    if device.type == "cuda":
        return [(e.name, e.device_time_total / 1e6) for e in prof.events()
                if e.device_type == torch.autograd.DeviceType.CUDA]
    return [(e.key, e.self_cpu_time_total / 1e6) for e in prof.key_averages() if e.key.startswith("aten::")]


def peak_memory(device: torch.device) -> str:
    if device.type == "cuda":
        return f"peak GPU memory allocated {torch.cuda.max_memory_allocated(device) / 2**30:.2f} GiB"
    return f"peak resident memory of this process {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB"


def summary(prof: profile, device: torch.device, wall_s: float, top: int = 12) -> list[str]:
    """Lines: the total, the share of each kind of work, the `top` kernels or operators, the peak memory."""
    spans = timings(prof, device)
    total = sum(s for _, s in spans) or float("nan")
    what = "GPU kernel time" if device.type == "cuda" else "CPU operator time"
    lines = [f"{what} {total * 1e3:.1f} ms in {wall_s * 1e3:.1f} ms wall"]
    by_kind: dict[str, float] = {}
    by_name: dict[str, float] = {}
    for name, seconds in spans:
        by_kind[category(name)] = by_kind.get(category(name), 0.0) + seconds
        by_name[name] = by_name.get(name, 0.0) + seconds
    for label in [label for label, _ in CATEGORIES] + [OTHER]:
        lines.append(f"share {label}: {100 * by_kind.get(label, 0.0) / total:.1f}%")
    for name, seconds in sorted(by_name.items(), key=lambda kv: -kv[1])[:top]:
        lines.append(f"  {seconds * 1e3:9.2f} ms  {category(name):<22} {name[:110]}")
    lines.append(peak_memory(device))
    return lines
