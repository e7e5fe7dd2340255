"""LAMB with the MLPerf reference semantics (the TF `lamb_optimizer_v1` of the reference implementation).

Per tensor, with bias-corrected moments:
    m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g^2
    update = (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps) + weight_decay * w     (eps inside the Adam step)
    ratio = ||w|| / ||update|| if both norms are positive else 1                  (the trust ratio)
    w = w - lr * ratio * update
A group's `layer_adaptation` (default True) says whether its tensors get the trust ratio, whatever its weight
decay, as the reference decides adaptation by name alone: bert.optim.factory puts the bias and LayerNorm
tensors in a group with neither decay nor adaptation, and the rest in one with both, even at a decay of 0
(where the update without the trust ratio would be plain Adam's, many times the reference's). A parameter that
holds several reference tensors stacked along its first dimension (the fused query/key/value, a group's
"parts") gets one trust ratio per tensor, as the reference's variables do.

`lamb_update_` is the update of one group, in foreach kernels: one launch per operation for all tensors of a
group, about 13 passes over memory, and no host synchronisation. `Lamb(..., compiled=True)` runs the same
function through torch.compile, as torch compiles its own optimizers: inductor fuses the passes into a few
kernels over all tensors (benchmarks/optimizer_step.py measures it). The compiled update takes the learning
rate as a device tensor, so that a new rate each step does not recompile it: one compilation per parameter
group.

fp16 loss scaling: the optimizer takes GradScaler's overflow flag itself (`_step_supports_amp_scaling`), so
the scaler never reads it back to the host to decide whether to call step(). An overflowed step changes
nothing, as a skipped one would: the flag zeroes the moments' and the weights' increments and the step
count's, on the device. The step count is therefore a device tensor.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch


class Lamb(torch.optim.Optimizer):
    # GradScaler.step sets `found_inf` (and `grad_scale` when the gradient is still scaled) on the optimizer
    # and calls step() unconditionally instead of syncing on the flag.
    _step_supports_amp_scaling = True

    def __init__(self, params: Iterable, lr: float, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-6, weight_decay: float = 0.01, compiled: bool = False):
        if lr < 0 or eps < 0 or not (0 <= betas[0] < 1 and 0 <= betas[1] < 1) or weight_decay < 0:
            raise ValueError(f"invalid LAMB settings: lr={lr}, betas={betas}, eps={eps}, "
                             f"weight_decay={weight_decay}")
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                                  "layer_adaptation": True})
        self.compiled = compiled
        self._update = torch.compile(lamb_update_, fullgraph=True, dynamic=False) if compiled else lamb_update_
        self._lr: dict[int, torch.Tensor] = {}  # compiled: each group's learning rate on its device

    def run_eagerly(self) -> None:
        """The update runs eager from now on (bert.warmup's fallback where compiling it failed)."""
        self.compiled, self._update = False, lamb_update_

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure() if closure is not None else None
        found_inf, grad_scale = getattr(self, "found_inf", None), getattr(self, "grad_scale", None)
        for index, group in enumerate(self.param_groups):
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            parts = [n for p, n in zip(group["params"], group.get("parts", ())) if p.grad is not None] or None
            states = [self.state[p] for p in params]
            for p, s in zip(params, states):
                if not s:
                    s["step"] = torch.zeros((), dtype=torch.float64, device=p.device)
                    s["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    s["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            beta1, beta2 = group["betas"]
            lr = group["lr"]
            if self.compiled:  # written on the device (no host synchronisation), read by the compiled update
                lr = self._lr.setdefault(index, torch.zeros((), dtype=torch.float64, device=params[0].device))
                lr.fill_(group["lr"])
            self._update(params, [p.grad for p in params], [s["exp_avg"] for s in states],
                         [s["exp_avg_sq"] for s in states], [s["step"] for s in states], lr=lr,
                         beta1=beta1, beta2=beta2, eps=group["eps"], weight_decay=group["weight_decay"],
                         layer_adaptation=group["layer_adaptation"], found_inf=found_inf, grad_scale=grad_scale,
                         parts=parts)
        return loss


def lamb_update_(params: list[torch.Tensor], grads: list[torch.Tensor], exp_avgs: list[torch.Tensor],
                 exp_avg_sqs: list[torch.Tensor], steps: list[torch.Tensor], *, lr: float | torch.Tensor, beta1: float,
                 beta2: float, eps: float, weight_decay: float, layer_adaptation: bool = True,
                 found_inf: torch.Tensor | None = None, grad_scale: torch.Tensor | None = None,
                 parts: list[int] | None = None) -> None:
    """One LAMB update of a parameter group, in place: the parameters, their moments and step counts (the
    gradients too: unscaled, and zeroed on an overflow). `layer_adaptation`: the trust ratio, or none.
    `found_inf`/`grad_scale`: GradScaler's. `parts`: how many reference tensors each parameter stacks (one trust
    ratio each; None: one per parameter)."""
    if grad_scale is not None:
        torch._foreach_div_(grads, grad_scale)
    # keep: 1 for a step that counts, 0 for an overflowed one (a device tensor, or 1 without loss scaling).
    keep: torch.Tensor | float = 1.0
    if found_inf is not None:
        keep = 1.0 - found_inf.to(torch.float64)
        for g in grads:  # finite, so that keep = 0 makes every increment below exactly zero
            g.nan_to_num_(nan=0.0, posinf=0.0, neginf=0.0)
        torch._foreach_mul_(grads, keep.to(grads[0].dtype))
    # A list: given one tensor, torch._foreach_add_ would take it as a Python scalar (a read to the host).
    torch._foreach_add_(steps, [keep] * len(steps) if isinstance(keep, torch.Tensor) else keep)
    # b * m + (1-b) * g with the decay 1 on an overflowed step (then g is 0): m and v stay as they were.
    torch._foreach_mul_(exp_avgs, 1 - (1 - beta1) * keep)
    torch._foreach_add_(exp_avgs, grads, alpha=1 - beta1)
    torch._foreach_mul_(exp_avg_sqs, 1 - (1 - beta2) * keep)
    torch._foreach_addcmul_(exp_avg_sqs, grads, grads, value=1 - beta2)

    # An overflow at the first step leaves t = 0; 1 keeps the corrections finite (the update is dropped).
    t = torch.clamp(steps[0], min=1.0)
    denom = torch._foreach_sqrt(exp_avg_sqs)
    torch._foreach_div_(denom, torch.sqrt(1 - beta2**t))
    torch._foreach_add_(denom, eps)
    update = torch._foreach_div(exp_avgs, denom)
    torch._foreach_div_(update, 1 - beta1**t)

    if weight_decay != 0:
        torch._foreach_add_(update, params, alpha=weight_decay)
    if layer_adaptation:
        pieces = _split(update, parts)
        w_norms = torch.stack(torch._foreach_norm(_split(params, parts)))
        u_norms = torch.stack(torch._foreach_norm(pieces))
        ratio = torch.where((w_norms > 0) & (u_norms > 0), w_norms / u_norms, torch.ones_like(w_norms))
        torch._foreach_mul_(pieces, list((ratio * (-lr * keep)).unbind()))
    else:
        torch._foreach_mul_(update, -lr * keep)
    torch._foreach_add_(params, update)


def _split(tensors: list[torch.Tensor], parts: list[int] | None) -> list[torch.Tensor]:
    """Each tensor as its `parts` reference tensors (views along the first dimension)."""
    if parts is None:
        return tensors
    return [piece for t, n in zip(tensors, parts, strict=True) for piece in (t.chunk(n) if n > 1 else (t,))]
