"""Samples made in memory, of chosen lengths: random tokens, half of each sequence in segment B, up to
`predictions` masked positions each (never [CLS]'s). They touch no dataset: bert.compile_warmup compiles on them, and
the tests build batches of known lengths from them."""

from __future__ import annotations

import numpy as np

from bert.data.shards import Samples


def random_samples(lengths: list[int] | np.ndarray, vocab: int = 500, predictions: int = 4, seed: int = 0,
                   masked: np.ndarray | None = None) -> Samples:
    """Samples of the `lengths` given (each at least 2), with ids from 5 to vocab - 1 (above the special pieces),
    drawn from `seed`; `masked`: how many positions each masks (default: as many as `predictions` allows)."""
    rng = np.random.default_rng(seed)
    lengths = np.asarray(lengths)
    counts = np.minimum(predictions, lengths - 1) if masked is None else np.minimum(masked, lengths - 1)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    segments = np.concatenate([(np.arange(n) >= n // 2) for n in lengths]).astype(np.int8)
    positions = np.zeros((len(lengths), predictions), np.int32)
    for i, (n, count) in enumerate(zip(lengths, counts)):
        chosen = np.sort(rng.choice(np.arange(1, n), size=count, replace=False))
        positions[i, :len(chosen)] = chosen
    ids = np.where(positions > 0, rng.integers(5, vocab, positions.shape), 0).astype(np.int32)
    return Samples(rng.integers(5, vocab, offsets[-1]).astype(np.int32), segments, offsets, positions, ids,
                   rng.integers(0, 2, len(lengths)).astype(np.int8))
