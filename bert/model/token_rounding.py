"""Static shapes for the unpadded encoder: each micro-batch's token count rounded up to one of a few sizes.

Unpadded, a micro-batch of B sequences is T tokens, the sum of its lengths, and T takes thousands of values in
an epoch. A compiled layer without dynamic shapes compiles once per shape, and a CUDA graph (torch.compile's
"reduce-overhead") records one per shape, each with its own memory: neither can follow T. Rounded up to the
smallest of `count` sizes that holds it, the count takes at most `count` values.

The padding tokens are filler sequences after the real ones, so that the varlen kernel and the CPU's padded
path both keep them apart with what they already have, the cumulative sequence lengths: attention stays inside
each sequence, so no real token attends to a filler token or is attended by one. The heads read real tokens
only (the masked positions and the [CLS] of each real sequence: TokenLayout.fillers), so fillers carry no loss
and add exactly nothing to any gradient. The number of sequences is fixed as well (`slots`: the batch's plus
at least one filler; a short last eval batch gets more fillers), so cu_seqlens has one length, and each filler
holds 1 to max_len tokens, so the longest sequence the kernel is told of (`max_len`) is a constant too.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch

from bert.model.padding import TokenLayout

MULTIPLE = 8  # every size a multiple of 8 (tensor-core friendly)


def _round_up(n: np.ndarray | int, multiple: int = MULTIPLE) -> np.ndarray | int:
    return -(-n // multiple) * multiple


@dataclass(frozen=True)
class TokenSizes:
    sizes: tuple[int, ...]  # ascending
    slots: int  # sequences of every rounded micro-batch, real and filler
    max_len: int  # the longest sequence, real or filler: the padded view's length and the kernel's bound

    @staticmethod
    def spread(count: int, batch_size: int, max_len: int) -> TokenSizes:
        """`count` sizes evenly spaced up to what a batch of `batch_size` sequences of up to `max_len` tokens
        can reach with its fillers, each a multiple of 8, with as few filler slots as the widest step needs."""
        if count < 1 or batch_size < 1 or max_len < 2:
            raise ValueError(f"token sizes need count, batch_size >= 1 and max_len >= 2, got {count}, "
                             f"{batch_size}, {max_len}")
        fillers = 1
        while True:
            top = _round_up(batch_size * max_len + fillers)  # a full batch, and one token per filler
            sizes = np.unique(_round_up(-(-np.arange(1, count + 1) * top // count)))
            # The padding a size adds is at most its step from the size below (less one) plus a token per
            # filler; the fillers must hold it at max_len tokens each.
            widest = int(np.diff(sizes, prepend=0).max())
            if widest - 1 <= fillers * (max_len - 1):
                return TokenSizes(tuple(int(s) for s in sizes), batch_size + fillers, max_len)
            fillers += 1

    def size_for(self, tokens: np.ndarray | int, sequences: np.ndarray | int) -> np.ndarray | int:
        """The rounded token count of micro-batches of `sequences` real sequences holding `tokens` tokens: the
        smallest size that also gives each filler a token."""
        needed = np.asarray(tokens) + self.slots - np.asarray(sequences)
        if np.any(needed > self.sizes[-1]) or np.any(np.asarray(sequences) >= self.slots):
            raise ValueError(f"a micro-batch of {sequences} sequences and {tokens} tokens exceeds the "
                             f"{self.slots - 1} sequences of up to {self.max_len} tokens these sizes are for")
        rounded = np.asarray(self.sizes)[np.searchsorted(self.sizes, needed)]
        return rounded if rounded.ndim else int(rounded)

    def filler_lengths(self, lengths: np.ndarray) -> np.ndarray:
        """The lengths of the fillers after real sequences of `lengths`: the padding to the size, spread as
        evenly as it goes over the free slots (each 1 to max_len tokens)."""
        if len(lengths) and int(lengths.max()) > self.max_len:
            raise ValueError(f"a sequence of {int(lengths.max())} tokens exceeds max_len {self.max_len}")
        tokens = int(lengths.sum())
        fillers = self.slots - len(lengths)
        each, more = divmod(self.size_for(tokens, len(lengths)) - tokens, fillers)
        return np.full(fillers, each, dtype=np.int64) + (np.arange(fillers) < more)

    def layout(self, lengths: np.ndarray) -> TokenLayout:
        """The rounded layout of right-padded sequences of `lengths` (host): the real sequences, then the
        fillers, as rows of a [slots, max_len] padded view."""
        fillers = self.filler_lengths(np.asarray(lengths, dtype=np.int64))
        layout = TokenLayout.from_lengths(torch.from_numpy(np.concatenate([lengths, fillers])), self.max_len)
        return replace(layout, max_len=self.max_len, fillers=len(fillers), filler_tokens=int(fillers.sum()))


def token_sizes(count: int, batch_size: int, max_len: int) -> TokenSizes | None:
    """The sizes of a descriptor's run.token_sizes (`count`) for micro-batches of `batch_size`; None when 0 (off)."""
    return TokenSizes.spread(count, batch_size, max_len) if count else None
