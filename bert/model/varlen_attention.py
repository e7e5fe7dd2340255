"""Variable-length attention with dropout as one operator, `bert::varlen_attention`, for the unpadded encoder.

q, k, v: [T, heads, head_size], the real tokens of B sequences back to back; cu_seqlens: [B+1] int32; attention
stays inside each sequence. Returns the attention output [T, heads, head_size], the log-sum-exp of each query's
scores [heads, T] (fp32) and the random state of the dropout mask [2] (uint64), which the backward replays.

- CUDA: torch's flash-attention kernel with cumulative sequence lengths (`aten._flash_attention_forward` and
  `_backward`, in half precision): the dropout mask is drawn inside the kernel from a philox state the forward
  returns, so no mask is stored and nothing is padded. torch's own `varlen_attn` passes dropout 0 only.
- Anywhere else: a math reference, each sequence alone through plain matmuls and softmax, with the dropout mask
  drawn from a seed kept in the same random-state tensor. It defines what the kernel computes (the tests hold
  the two to each other on a GPU machine) and is not the CPU training path: bert.model.attention keeps its own.

torch.library registers the operator with a fake kernel (shapes only, so FakeTensor and torch.compile trace it
as one node) and an autograd formula (the backward operator, itself one node). The flash operators' schemas
changed over torch's versions; `flash_kernel_usable` checks them once per model and device, and bert.model.attention
falls back to the padded path where they differ or the GPU is older than the kernel (compute capability 8.0).
"""

from __future__ import annotations

import functools

import torch

_NAMESPACE = "bert"
FLASH_DTYPES = (torch.float16, torch.bfloat16)


@functools.cache
def _flash_schemas_match() -> bool:
    """Whether this torch's flash operators take and return what the CUDA kernels below pass (torch >= 2.7:
    one rng_state tensor between forward and backward, the varlen arguments first)."""
    try:
        forward = torch.ops.aten._flash_attention_forward.default._schema
        backward = torch.ops.aten._flash_attention_backward.default._schema
    except (AttributeError, RuntimeError):
        return False
    returns = [r.name for r in forward.returns][:3]
    forward_args = [a.name for a in forward.arguments][:10]
    backward_args = [a.name for a in backward.arguments][:14]
    return (returns == ["output", "softmax_logsumexp", "rng_state"]
            and forward_args[3:8] == ["cum_seq_q", "cum_seq_k", "max_q", "max_k", "dropout_p"]
            and backward_args[10:14] == ["dropout_p", "is_causal", "rng_state", "unused"])


@functools.cache
def _capability(index: int) -> tuple[int, int]:
    return torch.cuda.get_device_capability(index)


def flash_kernel_usable(device: torch.device, head_size: int) -> bool:
    """The one device check of the variable-length kernel: a CUDA device of compute capability 8.0 or more, a
    head size the kernel takes, flash attention enabled in torch and operator schemas that match. It asks the
    host (torch's flags, the schemas, the GPU), so it is decided once per model and device, before anything is
    compiled, and handed to the attention as a constant (bert.model.pretraining.choose_kernels): under
    torch.compile such a query is a graph break. The tensor's dtype, which the kernel also needs (FLASH_DTYPES),
    is checked where the kernel is called."""
    return (torch.device(device).type == "cuda" and head_size % 8 == 0 and head_size <= 256
            and torch.backends.cuda.flash_sdp_enabled() and _flash_schemas_match()
            and _capability(torch.device(device).index or 0) >= (8, 0))


@torch.library.custom_op(f"{_NAMESPACE}::varlen_attention", mutates_args=(),
                         tags=(torch.Tag.nondeterministic_seeded,))
def _varlen_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens: torch.Tensor, max_len: int,
                      dropout_p: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    seed = int(torch.randint(0, 2**62, ())) if dropout_p > 0 else 0
    rng_state = torch.tensor([seed, 0], dtype=torch.uint64)
    out, lse = _reference_forward(q, k, v, cu_seqlens, dropout_p, seed)
    return out, lse, rng_state.to(q.device)


@_varlen_attention.register_kernel("cuda")
def _flash_forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens: torch.Tensor, max_len: int,
                   dropout_p: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    out, lse, rng_state, _, _ = torch.ops.aten._flash_attention_forward(
        q, k, v, cu_seqlens, cu_seqlens, max_len, max_len, dropout_p, False, False)
    if dropout_p == 0:  # the kernel draws no state then; the backward still takes one
        rng_state = torch.zeros(2, dtype=torch.uint64, device=q.device)
    return out, lse, rng_state


@_varlen_attention.register_fake
def _forward_shapes(q, k, v, cu_seqlens, max_len, dropout_p):
    tokens, heads, _ = q.shape
    return (q.new_empty(q.shape), q.new_empty((heads, tokens), dtype=torch.float32),
            q.new_empty((2,), dtype=torch.uint64))


@torch.library.custom_op(f"{_NAMESPACE}::varlen_attention_backward", mutates_args=())
def _varlen_attention_backward(grad: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                               out: torch.Tensor, lse: torch.Tensor, rng_state: torch.Tensor,
                               cu_seqlens: torch.Tensor, max_len: int,
                               dropout_p: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return _reference_backward(grad, q, k, v, out, lse, cu_seqlens, dropout_p, int(rng_state[0].item()))


@_varlen_attention_backward.register_kernel("cuda")
def _flash_backward(grad, q, k, v, out, lse, rng_state, cu_seqlens, max_len, dropout_p):
    unused = torch.empty(0, device=q.device)
    return torch.ops.aten._flash_attention_backward(
        grad.contiguous(), q, k, v, out, lse, cu_seqlens, cu_seqlens, max_len, max_len, dropout_p, False,
        rng_state, unused)


@_varlen_attention_backward.register_fake
def _backward_shapes(grad, q, k, v, out, lse, rng_state, cu_seqlens, max_len, dropout_p):
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


def _save(ctx, inputs: tuple, output: tuple) -> None:
    q, k, v, cu_seqlens, max_len, dropout_p = inputs
    out, lse, rng_state = output
    ctx.save_for_backward(q, k, v, out, lse, rng_state, cu_seqlens)
    ctx.max_len, ctx.dropout_p = max_len, dropout_p


def _gradient(ctx, grad_out, grad_lse, grad_rng):
    q, k, v, out, lse, rng_state, cu_seqlens = ctx.saved_tensors
    dq, dk, dv = _varlen_attention_backward(grad_out, q, k, v, out, lse, rng_state, cu_seqlens, ctx.max_len,
                                            ctx.dropout_p)
    return dq, dk, dv, None, None, None


_varlen_attention.register_autograd(_gradient, setup_context=_save)


def varlen_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens: torch.Tensor, max_len: int,
                     dropout_p: float) -> torch.Tensor:
    """Attention within each sequence of the unpadded tokens, dropout `dropout_p` on the probabilities;
    `max_len` bounds the longest sequence (a host integer: nothing waits for the device)."""
    return _varlen_attention(q, k, v, cu_seqlens, max_len, dropout_p)[0]


# The math reference (host-side loop over the sequences; for tests and CPU, never the GPU's training path).

def _sequences(cu_seqlens: torch.Tensor) -> list[tuple[int, int]]:
    bounds = cu_seqlens.tolist()
    return list(zip(bounds[:-1], bounds[1:]))


def _keep_masks(cu_seqlens: torch.Tensor, heads: int, dropout_p: float, seed: int):
    """Per sequence, the [heads, L, L] mask of the probabilities that survive dropout (None without dropout)."""
    generator = torch.Generator().manual_seed(seed)
    for start, end in _sequences(cu_seqlens):
        n = end - start
        yield None if dropout_p == 0 else torch.rand(heads, n, n, generator=generator) >= dropout_p


def _probabilities(q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q k^T / sqrt(d)) of one sequence, [heads, L, L], and its log-sum-exp [heads, L]."""
    scores = torch.einsum("qhd,khd->hqk", q, k) * q.shape[-1] ** -0.5
    lse = torch.logsumexp(scores, dim=-1)
    return torch.exp(scores - lse[..., None]), lse


def _dropped(p: torch.Tensor, keep: torch.Tensor | None, dropout_p: float) -> torch.Tensor:
    return p if keep is None else p * keep / (1 - dropout_p)


def _compute_dtype(t: torch.Tensor) -> torch.dtype:
    return torch.promote_types(t.dtype, torch.float32)


def _reference_forward(q, k, v, cu_seqlens, dropout_p: float, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    dtype, input_dtype = _compute_dtype(q), q.dtype
    q, k, v = (t.to(dtype) for t in (q, k, v))
    out = torch.empty_like(q)
    lse = q.new_empty((q.shape[1], q.shape[0]), dtype=torch.float32)
    for (start, end), keep in zip(_sequences(cu_seqlens), _keep_masks(cu_seqlens, q.shape[1], dropout_p, seed)):
        p, lse[:, start:end] = _probabilities(q[start:end], k[start:end])
        out[start:end] = torch.einsum("hqk,khd->qhd", _dropped(p, keep, dropout_p), v[start:end])
    return out.to(input_dtype), lse


def _reference_backward(grad, q, k, v, out, lse, cu_seqlens, dropout_p: float,
                        seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """dS = P * (dP - rowsum(dO * O)), with dP the gradient of the kept, rescaled probabilities."""
    dtype, input_dtype = _compute_dtype(q), q.dtype
    grad, q, k, v, out = (t.to(dtype) for t in (grad, q, k, v, out))
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    scale = q.shape[-1] ** -0.5
    for (start, end), keep in zip(_sequences(cu_seqlens), _keep_masks(cu_seqlens, q.shape[1], dropout_p, seed)):
        s = slice(start, end)
        p, _ = _probabilities(q[s], k[s])
        dv[s] = torch.einsum("hqk,qhd->khd", _dropped(p, keep, dropout_p), grad[s])
        dp = _dropped(torch.einsum("qhd,khd->hqk", grad[s], v[s]), keep, dropout_p)
        rowsum = (grad[s] * out[s]).sum(-1).transpose(0, 1)  # [heads, L]
        ds = p * (dp - rowsum[..., None]) * scale
        dq[s] = torch.einsum("hqk,khd->qhd", ds, k[s])
        dk[s] = torch.einsum("hqk,qhd->khd", ds, q[s])
    return dq.to(input_dtype), dk.to(input_dtype), dv.to(input_dtype)
