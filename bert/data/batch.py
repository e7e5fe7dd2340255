"""One training or eval batch, with every index the model needs computed on the host.

The masked-LM head gathers the masked tokens by row index; the rows differ between the padded layout
(b*L + position) and the unpadded one (cu_seqlens[b] + position). Both are computed here, in numpy, while
the batch is still on the host, so that the step never waits for the device to tell it a shape.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from bert.data.row_packing import pack_rows
from bert.data.shards import Samples, concat_ranges
from bert.model.padding import TokenLayout
from bert.model.token_rounding import TokenSizes


@dataclass
class Batch:
    input_ids: torch.Tensor  # [B, L] int64, zero-padded
    segment_ids: torch.Tensor  # [B, L] int64
    layout: TokenLayout
    mlm_index_padded: torch.Tensor  # [M] rows of the masked tokens in the flattened [B*L] batch
    mlm_index_unpadded: torch.Tensor  # [M] rows of the masked tokens among the T real tokens
    mlm_labels: torch.Tensor  # [M] original ids of the masked tokens
    nsp_labels: torch.Tensor  # [B]
    # Factors of this rank's mean losses that make the ranks' average the step's mean over all its masked tokens
    # and sequences, where ranks hold different numbers of them (packed rows: bert.data.packed_batches).
    mlm_weight: float = 1.0
    nsp_weight: float = 1.0

    @property
    def num_samples(self) -> int:
        return self.nsp_labels.shape[0]

    @property
    def num_tokens(self) -> int:
        """The real tokens (a rounded layout's fillers are padding)."""
        return self.layout.real_tokens

    def model_inputs(self, unpadded: bool) -> dict:
        return {
            "input_ids": self.input_ids, "segment_ids": self.segment_ids, "layout": self.layout,
            "mlm_index": self.mlm_index_unpadded if unpadded else self.mlm_index_padded,
            "mlm_labels": self.mlm_labels, "nsp_labels": self.nsp_labels, "unpadded": unpadded,
        }

    def loss(self, out) -> torch.Tensor:
        """This rank's part of the step's loss, from the model's output on this batch."""
        if self.mlm_weight == 1.0 and self.nsp_weight == 1.0:
            return out.loss
        return out.mlm_loss * self.mlm_weight + out.nsp_loss * self.nsp_weight

    def pin_memory(self) -> Batch:
        return self._map(lambda t: t.pin_memory())

    def to(self, device: torch.device, non_blocking: bool = False) -> Batch:
        if self.input_ids.device == device:
            return self
        return self._map(lambda t: t.to(device, non_blocking=non_blocking))

    def _map(self, fn) -> Batch:
        return Batch(fn(self.input_ids), fn(self.segment_ids), self.layout.map(fn), fn(self.mlm_index_padded),
                     fn(self.mlm_index_unpadded), fn(self.mlm_labels), fn(self.nsp_labels), self.mlm_weight,
                     self.nsp_weight)


def padded_length(samples: Samples, multiple: int) -> int:
    longest = int(samples.lengths.max()) if len(samples) else 1
    return -(-longest // multiple) * multiple


def collate(samples: Samples, pad_to_multiple: int = 8, sizes: TokenSizes | None = None) -> Batch:
    """Pads to the longest sample rounded up to `pad_to_multiple` (tensor-core friendly shapes). With `sizes`
    (run.token_sizes), the token count is rounded up to one of them by filler sequences after the samples
    (bert.model.token_rounding): rows of [PAD] in a view padded to sizes.max_len."""
    if sizes is None:
        length = padded_length(samples, pad_to_multiple)
        layout = TokenLayout.from_lengths(torch.from_numpy(samples.lengths), length)
    else:
        length, layout = sizes.max_len, sizes.layout(samples.lengths)
    ids, _, seg = samples.padded(length)
    if layout.fillers:
        ids, seg = (np.pad(a, ((0, layout.fillers), (0, 0))) for a in (ids, seg))
    row_starts = np.arange(len(samples), dtype=np.int64) * length
    return _batch(samples, ids, seg, layout, row_starts)


def collate_packed(samples: Samples, row_len: int, row_of: np.ndarray | None = None,
                   rows: int | None = None) -> Batch:
    """Packs the samples into `rows` rows of `row_len` tokens, sample i into row row_of[i] (default: first-fit
    decreasing, up to 3 a row: bert.data.row_packing.pack_rows, as few rows as that takes); each sample keeps
    its own positions, [CLS] and attention span (TokenLayout.sequence_ids). Rows left empty are padding."""
    row_of = pack_rows(samples.lengths, row_len) if row_of is None else np.asarray(row_of, dtype=np.int64)
    rows = int(row_of.max(initial=-1)) + 1 if rows is None else rows
    samples = samples.take(np.argsort(row_of, kind="stable"))  # the layout's sequence order: row by row
    row_of = np.sort(row_of)
    lengths = samples.lengths.astype(np.int64)
    before_row = np.concatenate([[0], np.cumsum(np.bincount(row_of, lengths, minlength=rows)).astype(np.int64)])
    ends_in_row = np.cumsum(lengths) - before_row[row_of]
    starts = row_of * row_len + ends_in_row - lengths  # each sequence's first place in the flat [rows*row_len]
    places = concat_ranges(starts, lengths)
    ids, seg = np.zeros(rows * row_len, np.int64), np.zeros(rows * row_len, np.int64)
    positions, sequence = np.zeros(rows * row_len, np.int64), np.full(rows * row_len, -1, np.int64)
    ids[places], seg[places] = samples.tokens, samples.segments
    positions[places] = places - np.repeat(starts, lengths)
    seat = np.arange(len(samples)) - np.searchsorted(row_of, row_of)  # the sequence's number within its row
    sequence[places] = np.repeat(seat, lengths)
    cu_seqlens = torch.zeros(len(samples) + 1, dtype=torch.int32)
    cu_seqlens[1:] = torch.from_numpy(np.cumsum(lengths))
    layout = TokenLayout(torch.from_numpy(places), cu_seqlens, int(lengths.max(initial=0)), rows, row_len,
                         torch.from_numpy(positions.reshape(rows, row_len)),
                         torch.from_numpy(sequence.reshape(rows, row_len)))
    return _batch(samples, ids.reshape(rows, row_len), seg.reshape(rows, row_len), layout, starts)


def _batch(samples: Samples, ids: np.ndarray, seg: np.ndarray, layout: TokenLayout, starts: np.ndarray) -> Batch:
    """`starts`: each sample's first place in the flattened padded view."""
    rows, cols = np.nonzero(samples.masked_positions)
    positions = samples.masked_positions[rows, cols].astype(np.int64)
    unpadded_starts = layout.cu_seqlens.numpy().astype(np.int64)[:-1]
    return Batch(
        input_ids=torch.from_numpy(ids.astype(np.int64)),
        segment_ids=torch.from_numpy(seg.astype(np.int64)),
        layout=layout,
        mlm_index_padded=torch.from_numpy(starts[rows] + positions),
        mlm_index_unpadded=torch.from_numpy(unpadded_starts[rows] + positions),
        mlm_labels=torch.from_numpy(samples.masked_ids[rows, cols].astype(np.int64)),
        nsp_labels=torch.from_numpy(samples.nsp_labels.astype(np.int64)),
    )
