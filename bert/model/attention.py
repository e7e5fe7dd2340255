"""Attention kernels for the two token layouts the encoder runs on.

- padded: [B, L, H] with a key-padding mask, through scaled_dot_product_attention (flash or memory-efficient
  kernels on GPU, a fused kernel on CPU).
- unpadded: [T, H] real tokens with cumulative sequence lengths. On CUDA in half precision (training, with
  dropout, and eval) this is the variable-length flash kernel, one operator for autograd and torch.compile
  (bert.model.varlen_attention); elsewhere, and where that kernel is not usable, it scatters the tokens back to a
  padded tile (or the packed rows), runs the padded kernel with the layout's mask and gathers them again,
  which is exact, so both paths agree.

On CPU, attention without dropout runs in fp32 through torch's fused kernel, whose bf16 backward is slower
than its fp32 one; attention with dropout runs as plain matmuls and softmax in the input's precision, faster
than torch's own fallback (measurements in benchmarks/throughput_notes.md).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from bert.model.padding import TokenLayout, pad, unpad
from bert.model.varlen_attention import FLASH_DTYPES, varlen_attention


def key_padding_mask(layout: TokenLayout, device: torch.device) -> torch.Tensor:
    """[B, 1, 1, L] boolean mask, True where the key is a real token."""
    lengths = (layout.cu_seqlens[1:] - layout.cu_seqlens[:-1]).to(device)
    positions = torch.arange(layout.padded_len, device=device)
    return (positions[None, :] < lengths[:, None])[:, None, None, :]


def attention_mask(layout: TokenLayout, device: torch.device) -> torch.Tensor:
    """The boolean mask (True = attend) of the layout's padded view: [B, 1, 1, L] over keys, or for packed
    rows [B, 1, L, L], where a token attends only to its own sequence. Padding attends to padding, so that no
    query row is empty (an empty row would make softmax NaN)."""
    if not layout.packed:
        return key_padding_mask(layout, device)
    sequence = layout.sequence_ids.to(device)
    return (sequence[:, :, None] == sequence[:, None, :])[:, None]


def padded_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, dropout_p: float
) -> torch.Tensor:
    """q, k, v: [B, heads, L, head_size]; mask: [B, 1, 1, L] boolean (True = attend) or None."""
    if q.device.type == "cpu":
        return _cpu_attention(q, k, v, mask, dropout_p)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)


def _cpu_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, dropout_p: float
) -> torch.Tensor:
    """torch's fused CPU kernel has no dropout and is slower backwards in bf16 than in fp32, and with dropout
    torch falls back to an unfused kernel slower than the plain composition below (in the input's dtype)."""
    dtype = q.dtype
    with torch.autocast("cpu", enabled=False):
        if dropout_p == 0.0:
            if dtype in (torch.bfloat16, torch.float16):
                q, k, v = q.float(), k.float(), v.float()
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask).to(dtype)
        # Scaling q rather than the scores, and masking in place, each save a pass over [B, heads, L, L].
        scores = torch.matmul(q * q.shape[-1] ** -0.5, k.transpose(-1, -2))
        if mask is not None:
            scores.masked_fill_(~mask, float("-inf"))
        return torch.matmul(F.dropout(torch.softmax(scores, dim=-1), dropout_p), v)


def unpadded_attention(qkv: torch.Tensor, layout: TokenLayout, dropout_p: float,
                       flash_kernel: bool = False) -> torch.Tensor:
    """qkv: [T, 3, heads, head_size] -> [T, heads, head_size]; attention never crosses sequences. `flash_kernel`:
    bert.model.varlen_attention.flash_kernel_usable for this device, decided before (never inside) a compiled region."""
    if flash_kernel and qkv.is_cuda and qkv.dtype in FLASH_DTYPES:
        q, k, v = qkv.unbind(1)
        return varlen_attention(q, k, v, layout.cu_seqlens, layout.max_len, dropout_p)
    mask = attention_mask(layout, qkv.device)
    # One scatter for all three: [B, L, 3, heads, head_size] -> three [B, heads, L, head_size].
    q, k, v = pad(qkv, layout).permute(2, 0, 3, 1, 4).unbind(0)
    out = padded_attention(q, k, v, mask, dropout_p)
    return unpad(out.transpose(1, 2), layout)
