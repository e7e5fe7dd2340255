"""LAMB as the MLPerf reference computes it (the TF `lamb_optimizer_v1` of the reference implementation).

Per reference tensor w with gradient g, at step t:
    m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g^2
    update = (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps) + weight_decay * w
    w = w - lr * ratio * update,  ratio = ||w|| / ||update|| if both norms are positive else 1
A parameter group's `layer_adaptation` (default True) says whether its tensors get the trust ratio (else ratio
is 1), and its optional `parts` (one int per parameter) how many reference tensors a parameter stacks along its
first dimension, each with its own ratio. Set before `step()`, optionally: `clip_factor` (a device scalar the
gradient is multiplied by, bert.distributed.clipping) and GradScaler's `found_inf`/`grad_scale` (an overflowed
step changes nothing). `lamb_update_` is one group's update in foreach kernels, with no host synchronisation;
`Lamb(..., compiled=True)` runs it through torch.compile. Why the update is shaped as it is (CUDA's foreach
kernels, the compiled form, the clip factor, fp16's overflow flag): docs/performance.md, "LAMB's update".
"""

from __future__ import annotations

from collections.abc import Iterable

import torch


def _undecorated(method):
    """torch.optim.Optimizer's method without its torch._disable_dynamo wrapper (the method itself in a torch
    that does not wrap it)."""
    return getattr(method, "__wrapped__", method)


class Lamb(torch.optim.Optimizer):
    # torch wraps these in torch._disable_dynamo, whose first call imports torch._dynamo: 2.5 to 3 s of every
    # process's start on a CPU, paid by a run that compiles nothing. No compiled region calls them (the compiled
    # one is lamb_update_), so LAMB runs their bodies; a run that compiles imports Dynamo anyway.
    add_param_group = _undecorated(torch.optim.Optimizer.add_param_group)
    zero_grad = _undecorated(torch.optim.Optimizer.zero_grad)
    state_dict = _undecorated(torch.optim.Optimizer.state_dict)
    load_state_dict = _undecorated(torch.optim.Optimizer.load_state_dict)

    # GradScaler.step sets `found_inf` (and `grad_scale` when the gradient is still scaled) on the optimizer
    # and calls step() unconditionally instead of syncing on the flag.
    _step_supports_amp_scaling = True
    # bert.distributed.clipping sets `clip_factor` (a device scalar) instead of scaling the gradient itself.
    takes_clip_factor = True

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
        """The update runs eager from now on (bert.compile_warmup's fallback where compiling it failed)."""
        self.compiled, self._update = False, lamb_update_

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure() if closure is not None else None
        found_inf, grad_scale = getattr(self, "found_inf", None), getattr(self, "grad_scale", None)
        clip_factor = self.__dict__.pop("clip_factor", None)  # this step's only
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
                if index not in self._lr:
                    self._lr[index] = torch.zeros((), dtype=params[0].dtype, device=params[0].device)
                lr = self._lr[index].fill_(group["lr"])
            self._update(params, [p.grad for p in params], [s["exp_avg"] for s in states],
                         [s["exp_avg_sq"] for s in states], [s["step"] for s in states], lr=lr,
                         beta1=beta1, beta2=beta2, eps=group["eps"], weight_decay=group["weight_decay"],
                         layer_adaptation=group["layer_adaptation"], found_inf=found_inf, grad_scale=grad_scale,
                         clip_factor=clip_factor, parts=parts)
        return loss


def lamb_update_(params: list[torch.Tensor], grads: list[torch.Tensor], exp_avgs: list[torch.Tensor],
                 exp_avg_sqs: list[torch.Tensor], steps: list[torch.Tensor], *, lr: float | torch.Tensor, beta1: float,
                 beta2: float, eps: float, weight_decay: float, layer_adaptation: bool = True,
                 found_inf: torch.Tensor | None = None, grad_scale: torch.Tensor | None = None,
                 clip_factor: torch.Tensor | None = None, parts: list[int] | None = None) -> None:
    """One LAMB update of a parameter group, in place: the parameters, their moments and step counts (the
    gradients too: unscaled, clipped, and zeroed on an overflow). `layer_adaptation`: the trust ratio, or none.
    `found_inf`/`grad_scale`: GradScaler's. `clip_factor`: the gradient clipping's. `parts`: how many reference
    tensors each parameter stacks (one trust ratio each; None: one per parameter)."""
    dtype = params[0].dtype
    if grad_scale is not None:
        torch._foreach_div_(grads, grad_scale.to(dtype))
    if clip_factor is not None:
        torch._foreach_mul_(grads, clip_factor.to(dtype))
    # keep: 1 for a step that counts, 0 for an overflowed one (a device tensor, or 1 without loss scaling).
    keep: torch.Tensor | float = 1.0
    if found_inf is not None:
        kept = found_inf == 0
        keep = kept.to(dtype)
        _zero_unless_(grads, kept)
    # A list: given one tensor, torch._foreach_add_ would take it as a Python scalar (a read to the host).
    torch._foreach_add_(steps, [kept.to(steps[0].dtype)] * len(steps) if found_inf is not None else 1.0)
    # b * m + (1-b) * g with the decay 1 on an overflowed step (then g is 0): m and v stay as they were.
    torch._foreach_mul_(exp_avgs, 1 - (1 - beta1) * keep)
    torch._foreach_add_(exp_avgs, grads, alpha=1 - beta1)
    torch._foreach_mul_(exp_avg_sqs, 1 - (1 - beta2) * keep)
    torch._foreach_addcmul_(exp_avg_sqs, grads, grads, value=1 - beta2)

    # (m / c1) / (sqrt(v / c2) + eps) = m / (sqrt(v) * c1 / sqrt(c2) + eps * c1), with c = 1 - beta^t: two scalars,
    # computed from the float64 step count and cast to the lists' dtype. An overflow at the first step leaves
    # t = 0; 1 keeps them finite (the update is dropped).
    t = torch.clamp(steps[0], min=1.0)
    c1, c2 = 1 - beta1**t, 1 - beta2**t
    denom = torch._foreach_sqrt(exp_avg_sqs)
    torch._foreach_mul_(denom, (c1 / torch.sqrt(c2)).to(dtype))
    torch._foreach_add_(denom, (eps * c1).to(dtype), alpha=1)  # alpha: the Tensor overload, not a host read
    update = torch._foreach_div(exp_avgs, denom)
    del denom

    if weight_decay != 0:
        torch._foreach_add_(update, params, alpha=weight_decay)
    step_size = -lr * keep
    if not layer_adaptation:
        if isinstance(step_size, torch.Tensor):
            torch._foreach_mul_(update, step_size.to(dtype))
            torch._foreach_add_(params, update)
        else:
            torch._foreach_add_(params, update, alpha=step_size)
        return
    # The reference tensors, those of one shape next to each other (for _add_scaled_).
    weights, pieces = zip(*sorted(zip(_split(params, parts), _split(update, parts)), key=lambda pair: pair[0].shape))
    weights, pieces = list(weights), list(pieces)
    norms = torch.stack(torch._foreach_norm(weights + pieces)).view(2, len(pieces))
    w_norms, u_norms = norms[0], norms[1]
    ratio = torch.where((w_norms > 0) & (u_norms > 0), w_norms / u_norms, torch.ones_like(w_norms))
    _add_scaled_(weights, pieces, (ratio * step_size).to(dtype))
def _add_scaled_(tensors: list[torch.Tensor], others: list[torch.Tensor], factors: torch.Tensor) -> None:
    """tensors[i] += factors[i] * others[i] for every i, `factors` a device vector and the tensors of one shape next
    to each other. Compiled, inductor broadcasts each factor itself; eager, CUDA's foreach kernels take no vector of
    scalars, so the factors are spread over the elements of each shape's tensors (one kernel a shape) and one
    multiply-add a shape applies them."""
    if torch.compiler.is_compiling():
        torch._foreach_add_(tensors, torch._foreach_mul(others, list(factors.unbind())))
        return
    first = 0
    while first < len(tensors):
        shape = tensors[first].shape
        last = next((i for i in range(first, len(tensors)) if tensors[i].shape != shape), len(tensors))
        spread = factors[first:last].view(-1, *[1] * len(shape)).expand(last - first, *shape).contiguous()
        torch._foreach_addcmul_(tensors[first:last], others[first:last], list(spread.unbind()))
        first = last


def _zero_unless_(tensors: list[torch.Tensor], kept: torch.Tensor) -> None:
    """Every tensor unchanged where `kept` (a device bool) is true, else all zero bits (+0.0): their bits multiplied
    by 1 or 0 as integers of their width, in one kernel, so that an inf or NaN becomes 0 too (0 x inf is NaN)."""
    bits = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[tensors[0].element_size()]
    torch._foreach_mul_([t.view(bits) for t in tensors], kept.to(bits))


def _split(tensors: list[torch.Tensor], parts: list[int] | None) -> list[torch.Tensor]:
    """Each tensor as its `parts` reference tensors (views along the first dimension)."""
    if parts is None:
        return tensors
    return [piece for t, n in zip(tensors, parts, strict=True) for piece in (t.chunk(n) if n > 1 else (t,))]
