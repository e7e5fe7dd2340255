"""Batches (bert.data.batch): padded and packed rows hold each sequence once, with its own positions, and the
masked-token rows of every layout point at the masked tokens."""

from __future__ import annotations

import torch

from bert.data.batch import collate, collate_packed
from tests.helpers.samples import LENGTHS, make_samples


def test_packed_rows_hold_each_sequence_once_with_restarting_positions():
    samples = make_samples(LENGTHS)
    batch = collate_packed(samples, 48)
    layout = batch.layout
    assert batch.num_samples == len(LENGTHS) and layout.batch_size < len(LENGTHS)
    assert ((layout.sequence_ids.max(1).values + 1) <= 3).all()  # at most 3 sequences a row
    assert layout.num_tokens == sum(LENGTHS) and (batch.input_ids > 0).sum() == sum(LENGTHS)
    flat_ids, flat_pos = batch.input_ids.flatten(), layout.positions.flatten()
    for b in range(len(LENGTHS)):
        rows = layout.indices[layout.cu_seqlens[b]:layout.cu_seqlens[b + 1]]
        assert flat_pos[rows].tolist() == list(range(len(rows)))  # positions restart in every sequence
    original = sorted(samples.tokens[samples.offsets[i]:samples.offsets[i + 1]].tolist() for i in range(8))
    packed = sorted(flat_ids[layout.indices[layout.cu_seqlens[b]:layout.cu_seqlens[b + 1]]].tolist()
                    for b in range(8))
    assert original == packed


def test_padded_rows_round_up_and_every_masked_row_points_at_its_masked_token():
    samples = make_samples(LENGTHS, seed=1)
    batch = collate(samples, pad_to_multiple=16)
    assert batch.input_ids.shape == (len(LENGTHS), 48) and batch.num_tokens == sum(LENGTHS)  # 40 rounds up to 48
    padded = batch.input_ids.flatten()
    unpadded = padded[batch.layout.indices]  # the real tokens, sequence after sequence
    assert unpadded.tolist() == samples.tokens.tolist()
    # The masked rows hold the masked tokens' places; the labels are the original ids the shard recorded.
    wanted = [(i, int(p)) for i in range(len(samples)) for p in samples.masked_positions[i] if p > 0]
    starts = torch.tensor(samples.offsets[:-1])
    assert batch.mlm_index_padded.tolist() == [i * 48 + p for i, p in wanted]
    assert batch.mlm_index_unpadded.tolist() == [int(starts[i]) + p for i, p in wanted]
    assert torch.equal(padded[batch.mlm_index_padded], unpadded[batch.mlm_index_unpadded])
    assert batch.mlm_labels.tolist() == samples.masked_ids[samples.masked_positions > 0].tolist()


def test_the_loss_weights_scale_each_loss_only_when_set():
    class Out:
        loss, mlm_loss, nsp_loss = torch.tensor(5.0), torch.tensor(3.0), torch.tensor(2.0)

    batch = collate(make_samples(LENGTHS[:2]))
    assert batch.loss(Out()) == 5.0  # the model's own sum, untouched
    batch.mlm_weight, batch.nsp_weight = 0.5, 2.0
    assert batch.loss(Out()) == 3.0 * 0.5 + 2.0 * 2.0
