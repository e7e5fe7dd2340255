"""Unpadding: move between a padded [B, L, ...] batch and the concatenation of its real tokens [T, ...].

The encoder's dense layers and LayerNorms cost the same per token, so running them on the T real tokens
instead of B*L padded positions saves the padding's share of the compute. Only attention needs to know where
one sequence ends; `TokenLayout` carries that as cumulative sequence lengths.

A packed layout puts several sequences in one row (up to 3 per 512-token row); its rows are the "batch" of
the padded view, and it also carries each token's position inside its own sequence and which sequence of
the row it belongs to, so that positions restart and attention stays inside each sequence.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import torch


@dataclass(frozen=True)
class TokenLayout:
    """Where the real tokens of a padded batch are.

    indices: [T] positions of the real tokens in the flattened [B*L] batch, sequence by sequence.
    cu_seqlens: [B+1] int32 cumulative sequence lengths; sequence b owns rows cu_seqlens[b]:cu_seqlens[b+1].
    max_len: an upper bound of the longest sequence, known on the host (no device synchronisation).
    batch_size, padded_len: the padded view, [batch_size, padded_len] (rows of a packed layout).
    positions, sequence_ids: packed layouts only, each [rows, padded_len]: a token's position in its
    sequence, and the sequence's number within the row (-1 at padding).
    fillers, filler_tokens: a rounded layout's (bert.model.token_rounding) last `fillers` sequences, of
    `filler_tokens` tokens in all, are padding that rounds the token count to a fixed size: no loss reads them.
    """

    indices: torch.Tensor
    cu_seqlens: torch.Tensor
    max_len: int
    batch_size: int
    padded_len: int
    positions: torch.Tensor | None = None
    sequence_ids: torch.Tensor | None = None
    fillers: int = 0
    filler_tokens: int = 0

    @property
    def packed(self) -> bool:
        return self.sequence_ids is not None

    @staticmethod
    def from_lengths(lengths: torch.Tensor, padded_len: int) -> TokenLayout:
        """Builds the layout of right-padded sequences of the given lengths (a host-side tensor)."""
        lengths = lengths.to(torch.int64).cpu()
        batch_size = lengths.numel()
        positions = torch.arange(padded_len).expand(batch_size, padded_len)
        real = positions < lengths[:, None]
        indices = real.flatten().nonzero().squeeze(1)
        cu_seqlens = torch.zeros(batch_size + 1, dtype=torch.int32)
        cu_seqlens[1:] = lengths.cumsum(0)
        return TokenLayout(indices, cu_seqlens, int(lengths.max()) if batch_size else 0, batch_size, padded_len)

    def map(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> TokenLayout:
        """The same layout with `fn` applied to each of its tensors (a copy, a pin, a move)."""
        packed = {"positions": fn(self.positions), "sequence_ids": fn(self.sequence_ids)} if self.packed else {}
        return replace(self, indices=fn(self.indices), cu_seqlens=fn(self.cu_seqlens), **packed)

    def to(self, device: torch.device | str, non_blocking: bool = False) -> TokenLayout:
        return self.map(lambda t: t.to(device, non_blocking=non_blocking))

    @property
    def num_tokens(self) -> int:
        """The rows of the token stream the encoder runs on (fillers included)."""
        return self.indices.numel()

    @property
    def real_tokens(self) -> int:
        return self.num_tokens - self.filler_tokens

    @property
    def sequence_starts(self) -> torch.Tensor:
        """[S] each real sequence's first row in the token stream (its [CLS]), fillers left out."""
        return self.cu_seqlens[: self.cu_seqlens.numel() - 1 - self.fillers]


class _GatherRows(torch.autograd.Function):
    """x.index_select(0, index) for an index without repeats, so that the gradient is a plain scatter.

    torch must assume repeats and computes index_select's gradient as a scatter-add, which on CPU is about
    ten times slower than scattering with index_copy (and needs atomics on GPU).
    """

    @staticmethod
    def forward(ctx, x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(index)
        ctx.rows = x.shape[0]
        return x.index_select(0, index)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (index,) = ctx.saved_tensors
        return grad.new_zeros((ctx.rows, *grad.shape[1:])).index_copy_(0, index, grad), None


def gather_rows(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """The rows `index` of x, where `index` holds no row twice (token positions, masked positions)."""
    return _GatherRows.apply(x, index)


def unpad(x: torch.Tensor, layout: TokenLayout) -> torch.Tensor:
    """[B, L, ...] -> [T, ...]: the real tokens only."""
    return gather_rows(x.flatten(0, 1), layout.indices)


def pad(x: torch.Tensor, layout: TokenLayout) -> torch.Tensor:
    """[T, ...] -> [B, L, ...] with zeros at the padding; differentiable in x."""
    out = x.new_zeros((layout.batch_size * layout.padded_len, *x.shape[1:]))
    # In place: the zeros are fresh and need no gradient, so autograd only has to gather x's rows back.
    return out.index_copy_(0, layout.indices, x).view(layout.batch_size, layout.padded_len, *x.shape[1:])
