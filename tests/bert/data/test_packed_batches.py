"""One rank's packed batches (bert.data.packed_batches): every sample once, at most three a row, none kept
waiting past the window; over several ranks: tests/bert/distributed/test_row_exchange.py."""

from __future__ import annotations

import numpy as np

from bert.data.lookahead import MAX_WAIT
from bert.data.packed_batches import PackedBatches
from bert.data.row_packing import MAX_PER_ROW
from tests.helpers.samples import make_samples


def test_one_rank_packs_every_sample_once_at_most_three_a_row():
    rng = np.random.default_rng(2)
    stream = iter([make_samples(rng.integers(2, 65, 8).tolist(), seed=s) for s in range(200)])
    ids = iter(range(10**6))

    def next_samples():
        samples = next(stream)
        samples.tokens[samples.offsets[:-1]] = [next(ids) for _ in range(len(samples))]
        return samples

    packer = PackedBatches(next_samples, 8, 64, 0)
    seen, steps = {}, 60
    for step in range(steps):
        batch = next(packer)
        assert batch.num_samples == 8 and (batch.mlm_weight, batch.nsp_weight) == (1.0, 1.0)
        layout = batch.layout
        assert layout.packed and batch.input_ids.shape[1] == 64
        assert ((layout.sequence_ids.max(1).values + 1) <= MAX_PER_ROW).all()
        for b in range(batch.num_samples):
            sample_id = int(batch.input_ids.flatten()[layout.indices[int(layout.cu_seqlens[b])]])
            assert sample_id not in seen
            seen[sample_id] = step
    arrived = {i: i // 8 for i in seen}
    assert max(step - arrived[i] for i, step in seen.items()) <= MAX_WAIT + 3  # the window: 3 batches ahead
