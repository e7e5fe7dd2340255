"""Attention kernels for the two token layouts the encoder runs on.

- padded: [B, L, H] with a key-padding mask, through scaled_dot_product_attention (flash or memory-efficient
  kernels on GPU, a fused kernel on CPU).
- unpadded: [T, H] real tokens with cumulative sequence lengths. On CUDA in half precision without attention
  dropout this calls torch's variable-length flash attention; elsewhere it scatters the tokens back to a
  padded tile (or the packed rows), runs the padded kernel with the layout's mask and gathers them again,
  which is exact, so both paths agree.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from bert.padding import TokenLayout, pad, unpad

try:
    from torch.nn.attention.varlen import varlen_attn
except ImportError:  # torch < 2.9 has no variable-length attention entry point
    varlen_attn = None


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
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)


def can_use_varlen_kernel(q: torch.Tensor, dropout_p: float) -> bool:
    return (
        varlen_attn is not None
        and q.is_cuda
        and q.dtype in (torch.float16, torch.bfloat16)
        and dropout_p == 0.0
    )


def unpadded_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, layout: TokenLayout, dropout_p: float
) -> torch.Tensor:
    """q, k, v: [T, heads, head_size] -> [T, heads, head_size]; attention never crosses sequences."""
    if can_use_varlen_kernel(q, dropout_p):
        cu = layout.cu_seqlens
        return varlen_attn(q, k, v, cu, cu, layout.max_len, layout.max_len)
    mask = attention_mask(layout, q.device)
    qp, kp, vp = (pad(t, layout).transpose(1, 2) for t in (q, k, v))
    out = padded_attention(qp, kp, vp, mask, dropout_p)
    return unpad(out.transpose(1, 2), layout)
