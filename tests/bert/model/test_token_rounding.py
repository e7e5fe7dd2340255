"""Rounding the unpadded token count to a few sizes (bert.model.token_rounding, run.token_sizes): the sizes, the filler
sequences that reach them, and a step on rounded batches that equals the step on the same batches unrounded."""


import numpy as np
import pytest
import torch

from bert.data.batch import collate
from bert.model.attention import unpadded_attention
from bert.model.config import named_config
from bert.model.pretraining import BertForPreTraining
from bert.model.token_rounding import TokenSizes, token_sizes
from bert.model.varlen_attention import varlen_attention
from bert.system import load_descriptor
from compliance.result_log import read_result_log
from tests.helpers.samples import make_samples


def test_sizes_are_multiples_of_8_spread_evenly_up_to_a_full_batch_and_its_fillers():
    sizes = TokenSizes.spread(16, 56, 512)
    assert len(sizes.sizes) == 16 and all(s % 8 == 0 for s in sizes.sizes)
    assert list(sizes.sizes) == sorted(set(sizes.sizes))
    steps = np.diff(sizes.sizes, prepend=0)
    assert steps.max() - steps.min() <= 8  # even steps, up to the rounding to multiples of 8
    fillers = sizes.slots - 56
    assert sizes.sizes[-1] >= 56 * 512 + fillers  # a batch of full-length sequences fits, with its fillers
    assert fillers * 511 >= steps.max() - 1  # and the fillers hold the widest step at 512 tokens each
    assert token_sizes(0, 56, 512) is None and token_sizes(16, 56, 512) == sizes


def test_every_batch_rounds_to_a_size_with_fillers_of_1_to_max_len_tokens_in_fixed_slots():
    sizes = TokenSizes.spread(4, 6, 64)
    rng = np.random.default_rng(0)
    for _ in range(2000):
        lengths = rng.integers(1, 65, int(rng.integers(1, 7)))  # a short last eval batch too
        if rng.random() < 0.1:
            lengths[:] = 64
        fillers = sizes.filler_lengths(lengths)
        assert len(lengths) + len(fillers) == sizes.slots
        assert fillers.min() >= 1 and fillers.max() <= 64 and fillers.max() - fillers.min() <= 1
        total = int(lengths.sum() + fillers.sum())
        assert total in sizes.sizes and total == sizes.size_for(int(lengths.sum()), len(lengths))
    with pytest.raises(ValueError, match="exceeds"):
        sizes.filler_lengths(np.full(sizes.slots, 8))


def test_a_rounded_layout_keeps_the_real_tokens_first_and_its_shapes_fixed():
    sizes = TokenSizes.spread(3, 4, 32)
    plain = collate(make_samples([9, 30, 4]))
    rounded = collate(make_samples([9, 30, 4]), sizes=sizes)
    layout = rounded.layout
    assert layout.num_tokens in sizes.sizes and layout.real_tokens == plain.layout.num_tokens == rounded.num_tokens
    assert layout.cu_seqlens.numel() == sizes.slots + 1 and layout.max_len == 32 == layout.padded_len
    torch.testing.assert_close(layout.sequence_starts, plain.layout.cu_seqlens[:-1])
    torch.testing.assert_close(layout.cu_seqlens[:4], plain.layout.cu_seqlens)
    torch.testing.assert_close(rounded.mlm_index_unpadded, plain.mlm_index_unpadded)
    assert rounded.input_ids.shape == (sizes.slots, 32) and not rounded.input_ids[3:].any()  # fillers: [PAD]
    torch.testing.assert_close(rounded.input_ids[:3, :plain.input_ids.shape[1]], plain.input_ids)
    # Another batch of other lengths: the same shapes wherever it lands on the same size.
    other = collate(make_samples([20, 21]), sizes=sizes).layout
    assert (other.cu_seqlens.shape, other.max_len, other.batch_size) == (layout.cu_seqlens.shape, 32, 4 + 2)


@pytest.mark.parametrize("path", ["cpu padded attention", "varlen operator (the flash kernel's reference)"])
def test_fillers_change_no_real_token_of_attention(path):
    sizes = TokenSizes.spread(2, 3, 16)
    plain = collate(make_samples([5, 16, 7])).layout
    rounded = collate(make_samples([5, 16, 7]), sizes=sizes).layout
    torch.manual_seed(0)
    qkv = torch.randn(rounded.num_tokens, 3, 2, 8, dtype=torch.float64, requires_grad=True)
    real = plain.num_tokens

    def attend(x, layout):
        if path.startswith("cpu"):
            return unpadded_attention(x, layout, 0.0)
        return varlen_attention(*x.unbind(1), layout.cu_seqlens, layout.max_len, 0.0)

    out_plain, out_rounded = attend(qkv[:real], plain), attend(qkv, rounded)
    torch.testing.assert_close(out_rounded[:real], out_plain, rtol=0, atol=1e-12)
    grad = torch.randn_like(out_rounded)
    grad[real:] = 0  # no loss reads a filler
    (g_rounded,) = torch.autograd.grad(out_rounded, qkv, grad)
    (g_plain,) = torch.autograd.grad(out_plain, qkv, grad[:real])
    torch.testing.assert_close(g_rounded[:real], g_plain[:real], rtol=0, atol=1e-12)
    assert not g_rounded[real:].any()  # nothing reaches the fillers' inputs either


def test_a_training_step_on_rounded_batches_equals_the_step_on_the_same_batches_unrounded():
    config = named_config("micro", num_layers=2)  # no dropout: the two steps draw no masks to compare
    torch.manual_seed(0)
    model = BertForPreTraining(config).train()
    samples = make_samples([37, 5, 64, 18, 29], vocab=config.vocab_size, predictions=6, seed=3)
    sizes = TokenSizes.spread(3, 5, 64)
    results = []
    for batch in (collate(samples), collate(samples, sizes=sizes)):
        model.zero_grad()
        out = model(**batch.model_inputs(unpadded=True))
        out.loss.backward()
        results.append((out, {n: p.grad.clone() for n, p in model.named_parameters()}))
    (plain, plain_grads), (rounded, rounded_grads) = results
    assert collate(samples, sizes=sizes).layout.filler_tokens > 0
    for name in ("loss", "mlm_loss", "nsp_loss", "mlm_correct"):
        torch.testing.assert_close(getattr(rounded, name), getattr(plain, name), rtol=1e-6, atol=1e-6)
    assert rounded.mlm_count == plain.mlm_count
    for name, grad in plain_grads.items():
        torch.testing.assert_close(rounded_grads[name], grad, rtol=1e-5, atol=1e-6, msg=name)


def _eval_accuracies(log) -> list[float]:
    return read_result_log(log).values("eval_accuracy")


def test_a_run_with_token_sizes_rounds_every_batch_and_trains_as_the_run_without(tmp_path, small_dataset,
                                                                                 monkeypatch):
    from bert.step import TrainStep
    from bert.train import RunRequest, run

    seen: list[tuple[int, int]] = []  # (encoder rows, real tokens) of every training batch
    step = TrainStep.__call__

    def watched(self, loader, step_index):
        def batches():
            for batch in loader:
                seen.append((batch.layout.num_tokens, batch.num_tokens))
                yield batch
        return step(self, batches(), step_index)

    monkeypatch.setattr(TrainStep, "__call__", watched)
    base = load_descriptor("cpu_micro").variant({"max_samples": 1024, "eval.interval_samples": 512, "seed": 5,
                                            "eval.target_accuracy": 0.99})
    accuracies = {}
    for count in (0, 3):
        seen.clear()
        system = base.variant({"token_sizes": count}, name=f"micro_sizes_{count}").write(tmp_path)
        assert run(RunRequest(system, 5, tmp_path / f"result_{count}.txt", small_dataset)) == 1  # the cap, as meant
        accuracies[count] = _eval_accuracies(tmp_path / f"result_{count}.txt")
        rows = {r for r, _ in seen}
        if count:
            assert rows <= set(token_sizes(count, system.per_process_batch, 64).sizes), rows
            assert all(r > real for r, real in seen)
        else:
            assert len(rows) > 3 and all(r == real for r, real in seen)  # the unrounded counts vary
    # The same data, weights and order: the fillers change nothing but float rounding.
    assert len(accuracies[0]) == 2 and accuracies[3] == pytest.approx(accuracies[0], abs=0.003)
