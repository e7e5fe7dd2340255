"""Attention on the CPU (bert.model.attention): in fp32 under autocast, and its dropout. The varlen operator's
paths: test_varlen_attention.py."""

import torch
import torch.nn.functional as F

from bert.model.attention import padded_attention


def test_cpu_attention_under_autocast_runs_in_fp32_without_dropout():
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 2, 16, 8).bfloat16() for _ in range(3))
    mask = (torch.arange(16)[None, :] < torch.tensor([16, 9])[:, None])[:, None, None, :]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = padded_attention(q, k, v, mask, 0.0)
    reference = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=mask).bfloat16()
    assert out.dtype == torch.bfloat16 and torch.equal(out, reference)


def test_cpu_attention_with_dropout_keeps_the_mask_and_the_expectation():
    torch.manual_seed(0)
    q, k = (torch.randn(2, 2, 16, 8, dtype=torch.float64) for _ in range(2))
    v = torch.randn(2, 2, 16, 8, dtype=torch.float64)
    mask = (torch.arange(16)[None, :] < torch.tensor([16, 9])[:, None])[:, None, None, :]
    v_masked_off = v.clone()
    v_masked_off[1, :, 9:] = 1e6  # keys past the second sequence's end must get no weight, dropout or not
    exact = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    draws = torch.stack([padded_attention(q, k, v_masked_off, mask, 0.1) for _ in range(400)])
    assert draws.abs().max() < 1e3
    # Inverted dropout keeps the expectation: the mean of many draws approaches the exact attention.
    torch.testing.assert_close(draws.mean(0), exact, atol=0.1, rtol=0)
    assert not torch.equal(draws[0], draws[1])
