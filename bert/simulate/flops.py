"""Model FLOPs of BERT pre-training: the work the model needs, whatever the harness spends on padding.

Per training step of a batch (forward + backward = 3 x forward): every encoder weight costs 2 FLOPs per real
token forward (a multiply and an add), attention's scores and mixing 4 h per pair of tokens of the same
sequence, the masked-LM head (transform and the tied decoder) runs on the masked positions only, the pooler
and next-sentence head once per sequence. benchmarks/throughput.py divides it by the measured time (model
FLOP utilisation); `mlperf-bert simulate` multiplies a stated utilisation by the accelerator's peak and
divides by it (a throughput estimate).
"""

from __future__ import annotations

import numpy as np

from bert.model.config import BertConfig
from bert.prep.instances import SampleSpec


def training_flops(config: BertConfig, lengths: np.ndarray, masked: float) -> float:
    """FLOPs of one training step over sequences of `lengths` (real tokens) with `masked` masked tokens."""
    h, i, v = config.hidden_size, config.intermediate_size, config.vocab_size
    lengths = np.asarray(lengths, dtype=np.float64)
    layer = lengths.sum() * 2 * (4 * h * h + 2 * h * i) + 4 * h * (lengths**2).sum()
    head = masked * 2 * (h * h + h * v) + len(lengths) * 2 * (h * h + 2 * h)
    return 3 * (config.num_layers * layer + head)


def flops_per_sequence(config: BertConfig, lengths: np.ndarray, max_predictions: int) -> float:
    """Mean training FLOPs per sequence of the length distribution `lengths`."""
    masked = SampleSpec(max_predictions=max_predictions).masked_count(lengths)  # the reference's rule
    return training_flops(config, lengths, float(masked.sum())) / len(lengths)
