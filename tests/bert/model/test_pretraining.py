import pytest
import torch

from bert.model.config import named_config
from bert.model.padding import TokenLayout
from bert.model.pretraining import BertForPreTraining


def _batch(vocab: int, lengths: list[int], length: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    b = len(lengths)
    ids = torch.randint(5, vocab, (b, length), generator=g)
    seg = torch.zeros(b, length, dtype=torch.long)
    for i, n in enumerate(lengths):
        ids[i, n:] = 0
        seg[i, n // 2: n] = 1
    layout = TokenLayout.from_lengths(torch.tensor(lengths), length)
    masked = [(i, p) for i, n in enumerate(lengths) for p in range(1, n, 3)]
    padded_index = torch.tensor([i * length + p for i, p in masked])
    unpadded_index = torch.tensor([int(layout.cu_seqlens[i]) + p for i, p in masked])
    labels = torch.randint(0, vocab, (len(masked),), generator=g)
    nsp = torch.randint(0, 2, (b,), generator=g)
    return ids, seg, layout, padded_index, unpadded_index, labels, nsp


@pytest.mark.parametrize("config_name", ["micro", "tiny"])
def test_unpadded_forward_and_gradients_equal_padded(config_name):
    torch.manual_seed(0)
    config = named_config(config_name)
    model = BertForPreTraining(config).double()
    ids, seg, layout, p_idx, u_idx, labels, nsp = _batch(config.vocab_size, [32, 7, 19, 1, 25], 32)
    outputs, grads = [], []
    for unpadded, index in ((False, p_idx), (True, u_idx)):
        model.zero_grad()
        out = model(ids, seg, layout, index, labels, nsp, unpadded=unpadded)
        out.loss.backward()
        outputs.append(out)
        grads.append({n: p.grad.clone() for n, p in model.named_parameters()})
    assert torch.allclose(outputs[0].loss, outputs[1].loss, atol=1e-10)
    assert outputs[0].mlm_correct == outputs[1].mlm_correct
    for name in grads[0]:
        assert torch.allclose(grads[0][name], grads[1][name], atol=1e-10), name


def test_padding_does_not_change_a_sequence_result():
    torch.manual_seed(0)
    config = named_config("micro")
    model = BertForPreTraining(config).double().eval()
    short = _batch(config.vocab_size, [9], 16)
    longer = _batch(config.vocab_size, [9], 40)
    longer = (short[0].new_zeros(1, 40).index_copy(1, torch.arange(16), short[0]),
              short[1].new_zeros(1, 40).index_copy(1, torch.arange(16), short[1]),
              TokenLayout.from_lengths(torch.tensor([9]), 40), short[3] // 16 * 40 + short[3] % 16,
              *short[4:])
    a = model(short[0], short[1], short[2], short[3], short[5], short[6], unpadded=False)
    b = model(longer[0], longer[1], longer[2], longer[3], longer[5], longer[6], unpadded=False)
    assert torch.allclose(a.loss, b.loss, atol=1e-10)


def test_initialisation_is_truncated_normal_and_decoder_is_tied():
    torch.manual_seed(0)
    model = BertForPreTraining(named_config("tiny"))
    w = model.bert.encoder[0].intermediate.weight
    assert abs(w.std().item() - 0.02 * 0.88) < 0.002  # a normal truncated at 2 sigma has std 0.88 sigma
    assert w.abs().max().item() <= 0.04
    assert model.bert.encoder[0].intermediate.bias.abs().sum() == 0
    assert model.bert.encoder[0].layer_norm.weight.eq(1).all()
    names = [n for n, _ in model.named_parameters()]
    assert not any("decoder" in n for n in names)  # the decoder reuses the word embeddings


def test_mlm_head_sees_only_masked_positions():
    torch.manual_seed(0)
    config = named_config("micro")
    model = BertForPreTraining(config)
    ids, seg, layout, p_idx, u_idx, labels, nsp = _batch(config.vocab_size, [12, 5], 12)
    seen = []
    model.mlm.register_forward_hook(lambda m, inputs, out: seen.append(out.shape))
    out = model(ids, seg, layout, u_idx, labels, nsp)
    assert seen == [(len(labels), config.vocab_size)]
    assert out.mlm_count == len(labels)
