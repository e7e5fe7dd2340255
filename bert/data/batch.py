"""One training or eval batch, with every index the model needs computed on the host.

The masked-LM head gathers the masked tokens by row index; the rows differ between the padded layout
(b*L + position) and the unpadded one (cu_seqlens[b] + position). Both are computed here, in numpy, while
the batch is still on the host, so that the step never waits for the device to tell it a shape.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from bert.data.shards import Samples
from bert.padding import TokenLayout


@dataclass
class Batch:
    input_ids: torch.Tensor  # [B, L] int64, zero-padded
    segment_ids: torch.Tensor  # [B, L] int64
    layout: TokenLayout
    mlm_index_padded: torch.Tensor  # [M] rows of the masked tokens in the flattened [B*L] batch
    mlm_index_unpadded: torch.Tensor  # [M] rows of the masked tokens among the T real tokens
    mlm_labels: torch.Tensor  # [M] original ids of the masked tokens
    nsp_labels: torch.Tensor  # [B]

    @property
    def num_samples(self) -> int:
        return self.input_ids.shape[0]

    @property
    def num_tokens(self) -> int:
        return self.layout.num_tokens

    def model_inputs(self, padded: bool) -> dict:
        return {
            "input_ids": self.input_ids, "segment_ids": self.segment_ids, "layout": self.layout,
            "mlm_index": self.mlm_index_padded if padded else self.mlm_index_unpadded,
            "mlm_labels": self.mlm_labels, "nsp_labels": self.nsp_labels, "padded": padded,
        }

    def pin_memory(self) -> Batch:
        return self._map(lambda t: t.pin_memory())

    def to(self, device: torch.device, non_blocking: bool = False) -> Batch:
        if self.input_ids.device == device:
            return self
        return self._map(lambda t: t.to(device, non_blocking=non_blocking))

    def _map(self, fn) -> Batch:
        layout = TokenLayout(fn(self.layout.indices), fn(self.layout.cu_seqlens), self.layout.max_len,
                             self.layout.batch_size, self.layout.padded_len)
        return Batch(fn(self.input_ids), fn(self.segment_ids), layout, fn(self.mlm_index_padded),
                     fn(self.mlm_index_unpadded), fn(self.mlm_labels), fn(self.nsp_labels))


def padded_length(samples: Samples, multiple: int) -> int:
    longest = int(samples.lengths.max()) if len(samples) else 1
    return -(-longest // multiple) * multiple


def collate(samples: Samples, pad_to_multiple: int = 8) -> Batch:
    """Pads to the longest sample rounded up to `pad_to_multiple` (tensor-core friendly shapes)."""
    length = padded_length(samples, pad_to_multiple)
    ids, _, seg = samples.padded(length)
    lengths = samples.lengths
    layout = TokenLayout.from_lengths(torch.from_numpy(lengths), length)
    rows, cols = np.nonzero(samples.masked_positions)
    positions = samples.masked_positions[rows, cols].astype(np.int64)
    starts = layout.cu_seqlens.numpy().astype(np.int64)[:-1]
    return Batch(
        input_ids=torch.from_numpy(ids.astype(np.int64)),
        segment_ids=torch.from_numpy(seg.astype(np.int64)),
        layout=layout,
        mlm_index_padded=torch.from_numpy(rows * length + positions),
        mlm_index_unpadded=torch.from_numpy(starts[rows] + positions),
        mlm_labels=torch.from_numpy(samples.masked_ids[rows, cols].astype(np.int64)),
        nsp_labels=torch.from_numpy(samples.nsp_labels.astype(np.int64)),
    )
