"""LAMB with the MLPerf reference semantics (the TF `lamb_optimizer_v1` of the reference implementation).

Per tensor, with bias-corrected moments:
    m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g^2
    update = (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps) + weight_decay * w     (eps inside the Adam step)
    ratio = ||w|| / ||update|| if both norms are positive else 1                  (the trust ratio)
    w = w - lr * ratio * update
Tensors in a group with weight_decay 0 (bias and LayerNorm, see bert.optim.factory) get neither decay nor
the trust ratio, as the reference excludes them from both. Implemented with foreach kernels: one launch per
operation for all tensors of a group, and no host synchronisation.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch


class Lamb(torch.optim.Optimizer):
    def __init__(self, params: Iterable, lr: float, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-6, weight_decay: float = 0.01):
        if lr < 0 or eps < 0 or not (0 <= betas[0] < 1 and 0 <= betas[1] < 1) or weight_decay < 0:
            raise ValueError(f"invalid LAMB settings: lr={lr}, betas={betas}, eps={eps}, "
                             f"weight_decay={weight_decay}")
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay})

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if params:
                self._update_group(group, params)
        return loss

    def _update_group(self, group: dict, params: list[torch.Tensor]) -> None:
        beta1, beta2 = group["betas"]
        grads = [p.grad for p in params]
        states = [self.state[p] for p in params]
        for p, s in zip(params, states):
            if not s:
                s["step"] = 0
                s["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                s["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            s["step"] += 1
        step = states[0]["step"]
        m = [s["exp_avg"] for s in states]
        v = [s["exp_avg_sq"] for s in states]
        torch._foreach_lerp_(m, grads, 1 - beta1)
        torch._foreach_mul_(v, beta2)
        torch._foreach_addcmul_(v, grads, grads, value=1 - beta2)

        denom = torch._foreach_sqrt(v)
        torch._foreach_div_(denom, math.sqrt(1 - beta2**step))
        torch._foreach_add_(denom, group["eps"])
        update = torch._foreach_div(m, denom)
        torch._foreach_div_(update, 1 - beta1**step)

        lr, wd = group["lr"], group["weight_decay"]
        if wd != 0:
            torch._foreach_add_(update, params, alpha=wd)
            w_norms = torch.stack(torch._foreach_norm(params))
            u_norms = torch.stack(torch._foreach_norm(update))
            ratio = torch.where((w_norms > 0) & (u_norms > 0), w_norms / u_norms, torch.ones_like(w_norms))
            torch._foreach_mul_(update, list((ratio * -lr).unbind()))
            torch._foreach_add_(params, update)
        else:
            torch._foreach_add_(params, update, alpha=-lr)
