"""Gradient clipping to a global norm.

`after_allreduce` is the reference: the norm of the averaged gradient, computed after DDP's allreduce.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch


def clip_global_norm(params: Iterable[torch.Tensor], max_norm: float) -> torch.Tensor:
    """Scales the gradients so that their joint L2 norm is at most max_norm; returns the norm before."""
    return torch.nn.utils.clip_grad_norm_(list(params), max_norm, foreach=True)
