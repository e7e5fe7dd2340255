"""Timing work on a device: waiting for the device, the median wall time of a piece of work, and the peak
FLOP rate that model FLOP utilisation divides by."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch

# Dense bf16/fp16 tensor-core peaks from NVIDIA's datasheets (SXM parts), in FLOP/s.
DATASHEET_PEAKS = {"H200": 989e12, "H100": 989e12, "A100": 312e12}


def sync(device: torch.device) -> None:
    """Waits for the device's queued work (a CPU has none)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def median_seconds(work: Callable[[], object], device: torch.device, repeats: int) -> float:
    """The median wall time of `work` over `repeats` calls, the device's work included."""
    times = []
    for _ in range(repeats):
        sync(device)
        start = time.perf_counter()
        work()
        sync(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def peak_flops(device: torch.device, dtype: torch.dtype, override_tflops: float | None = None,
               n: int = 2048) -> tuple[float, str]:
    """The device's peak in `dtype` (FLOP/s) and how it was obtained: `override_tflops` where given, the datasheet
    of a GPU it knows in half precision, else the best of a few n x n matmuls."""
    if override_tflops:
        return override_tflops * 1e12, "given with --peak-tflops"
    if device.type == "cuda" and dtype != torch.float32:
        name = torch.cuda.get_device_name(device)
        for model, peak in DATASHEET_PEAKS.items():
            if model in name:
                return peak, f"{model} datasheet dense bf16/fp16"
    repeats = 5
    a, b = (torch.randn(n, n, device=device, dtype=dtype) for _ in range(2))
    best = min(median_seconds(lambda: a @ b, device, 1) for _ in range(repeats + 1))
    return 2 * n**3 / best, f"measured: best of {repeats} {n}x{n} {str(dtype).removeprefix('torch.')} matmuls"
