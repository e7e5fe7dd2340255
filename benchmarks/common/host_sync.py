"""Catching host synchronisation: the training step must never wait for the device to tell Python a value (the
house rule of the hot path). acceptance/step_checks.py's nosync stage and the tests of the step run it inside
`host_reads_fail`."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch


@contextlib.contextmanager
def host_reads_fail(device: torch.device) -> Iterator[None]:
    """Inside: a CUDA synchronisation raises (torch's sync debug mode); on a CPU, every read of a tensor back to
    Python does (a CPU has no synchronisation to catch, and reads inside torch's C++ code are not seen)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.set_sync_debug_mode("error")
        try:
            yield
        finally:
            torch.cuda.set_sync_debug_mode("default")
        return

    def host_read(self, *args, **kwargs):
        raise RuntimeError("the step read a tensor back to the host")

    names = ("item", "tolist", "__bool__", "__int__", "__float__", "nonzero", "numpy")
    saved = {name: getattr(torch.Tensor, name) for name in names}
    for name in names:
        setattr(torch.Tensor, name, host_read)
    try:
        yield
    finally:
        for name, method in saved.items():
            setattr(torch.Tensor, name, method)
