"""How many shapes the unpadded encoder meets in an epoch, unrounded and rounded to run.token_sizes' sizes
(bert.model.token_rounding), and what the filler tokens of the rounding cost.

Unpadded, a micro-batch's token count is the sum of its lengths and takes thousands of values in an epoch;
rounded, it takes at most as many as there are sizes, for the filler tokens that reach them. The micro-batches
here draw their sequences at random from a length distribution (with replacement, as run.balance "none"
draws them; the stratified strategies draw a fixed count per length bin, so their counts spread less), in
chunks, so that an MLPerf epoch of about 1.5e8 sequences fits in memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bert.model.token_rounding import TokenSizes


@dataclass(frozen=True)
class EpochShapes:
    micro_batches: int
    distinct_tokens: int  # distinct unpadded token counts
    distinct_rounded: int  # distinct token counts after rounding: the shapes the encoder meets
    padding: float  # filler tokens, as a share of the real tokens

    @property
    def cost(self) -> float:
        """The encoder's tokens per real token (1 + padding)."""
        return 1 + self.padding


def epoch_shapes(lengths: np.ndarray, samples: int, batch: int, rounding: Sequence[TokenSizes], seed: int = 0,
                 chunk: int = 1 << 16) -> list[EpochShapes]:
    """For each of `rounding`, the token counts of the micro-batches of `batch` sequences in an epoch of
    `samples` sequences drawn from `lengths`, before and after rounding (one draw of the epoch for all)."""
    rng = np.random.default_rng(seed)
    micro_batches = samples // batch
    raw: set[int] = set()
    kept: list[set[int]] = [set() for _ in rounding]
    real, rounded_totals = 0, [0] * len(rounding)
    for first in range(0, micro_batches, chunk):
        tokens = rng.choice(lengths, (min(chunk, micro_batches - first), batch)).sum(axis=1)
        raw.update(np.unique(tokens).tolist())
        real += int(tokens.sum())
        for i, sizes in enumerate(rounding):
            rounded = sizes.size_for(tokens, batch)
            kept[i].update(np.unique(rounded).tolist())
            rounded_totals[i] += int(rounded.sum())
    return [EpochShapes(micro_batches, len(raw), len(k), total / real - 1 if real else 0.0)
            for k, total in zip(kept, rounded_totals)]
