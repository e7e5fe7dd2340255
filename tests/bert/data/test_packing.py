"""The model on packed rows: it computes on them what it computes on the same samples padded or unpadded, and
never attends across the sequences of a row (the rows themselves: tests/bert/data/test_batch.py)."""

from __future__ import annotations

import pytest
import torch

from bert.data.batch import collate, collate_packed
from bert.model.config import named_config
from bert.model.pretraining import BertForPreTraining
from tests.helpers.samples import LENGTHS, make_samples


@pytest.mark.parametrize("unpadded", [False, True])
def test_packed_model_equals_the_padded_model_on_the_same_samples(unpadded):
    torch.manual_seed(0)
    model = BertForPreTraining(named_config("micro", max_position_embeddings=64)).eval()
    samples = make_samples(LENGTHS)
    reference = model(**collate(samples).model_inputs(unpadded=False))
    out = model(**collate_packed(samples, 48).model_inputs(unpadded=unpadded))
    assert torch.allclose(out.loss, reference.loss, atol=1e-5)  # fp32 tolerance
    assert torch.allclose(out.nsp_loss, reference.nsp_loss, atol=1e-5)
    assert out.mlm_correct == reference.mlm_correct


@pytest.mark.parametrize("unpadded", [False, True])
def test_packed_attention_never_attends_across_sequences(unpadded):
    torch.manual_seed(0)
    model = BertForPreTraining(named_config("micro", max_position_embeddings=64)).double().eval()
    batch = collate_packed(make_samples(LENGTHS), 64)
    layout = batch.layout
    states, _ = model.bert(batch.input_ids, batch.segment_ids, layout, unpadded)
    changed = batch.input_ids.clone().flatten()
    victim = layout.indices[layout.cu_seqlens[0]:layout.cu_seqlens[1]]  # the first sequence's tokens
    changed[victim[1:]] = 7
    states2, _ = model.bert(changed.view_as(batch.input_ids), batch.segment_ids, layout, unpadded)
    rows = torch.arange(layout.num_tokens) if unpadded else layout.indices
    own = torch.zeros(len(rows), dtype=torch.bool)
    own[: int(layout.cu_seqlens[1])] = True
    others = rows[~own]
    assert layout.sequence_ids.flatten()[layout.indices[~own]].ne(-1).all()
    assert (layout.indices[~own] // 64 == int(victim[0]) // 64).any()  # another sequence shares its row
    assert torch.equal(states[others], states2[others])
    assert not torch.allclose(states[rows[own]], states2[rows[own]])
